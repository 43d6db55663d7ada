// Job status over HTTP: `/admin.fetchjst/{jstId}`, `/admin.canceljst/{jstId}`, and `/fetch/JST`,
// `/fetch/JST/{id}` (static paths, so they take precedence over the general `/fetch/{TypeCode}`).
// Any authenticated user may read jobs, but only their own unless admin: the engine's row scope
// (the JST type's `ownedRows`, src/engine/registry.ts).

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../access/access.ts';
import { AUTHENTICATED } from '../access/catalogue.ts';
import { fetchRecords, type FetchBody } from '../engine/crud.ts';
import { findType } from '../engine/registry.ts';
import { envelopeSchema, noArgumentsBody, ok } from '../http/envelope.ts';
import { AppError, notFound, validationError } from '../http/errors.ts';
import { fetchBodySchema, recordReadBody, refuseAsOf, refuseListAsOf } from '../modules/general/routes.ts';
import { requestCancel } from './store.ts';

const JST = findType('JST')!;

/** `123` or `123.JST`. */
export function jobIdOf(text: string): number {
  const m = /^(\d+)(?:\.JST)?$/.exec(text.trim());
  if (!m) throw validationError('jstId', `${JSON.stringify(text)} is not a job id`);
  // An id of more digits than any id has names no job, as an unknown record id (404).
  if (m[1]!.length > 15) throw notFound(`Job ${text}`, 'jstId');
  return Number(m[1]);
}

/** One job the principal may see, as the engine maps it (404 otherwise). */
export async function findJobOrFail(
  app: FastifyInstance,
  principal: Principal,
  idText: string,
): Promise<Record<string, unknown>> {
  const id = jobIdOf(idText);
  const restrict = {
    _constructor: 'AdvancedCriteria',
    operator: 'and',
    criteria: [{ fieldName: 'id', operator: 'equals', value: id }],
  };
  const r = await fetchRecords(app.db, principal, JST, {}, 1, restrict);
  if (r.rows.length === 0) throw notFound(`Job ${idText}`, 'jstId');
  return r.rows[0] as Record<string, unknown>;
}

const jstParams = {
  type: 'object',
  required: ['jstId'],
  properties: { partition: { type: 'string' }, jstId: { type: 'string', maxLength: 40 } },
} as const;
const one = { response: { 200: envelopeSchema() } };
const list = { response: { 200: envelopeSchema({}, true) } };

export function jobRoutes(app: FastifyInstance): void {
  const config = { access: AUTHENTICATED } as const;
  const fetchjst = {
    config,
    schema: { summary: 'Status of a job (JST)', tags: ['jobs'], params: jstParams, ...one },
  };
  const handler = async (req: FastifyRequest) => {
    // Jobs keep no record history (the JST type's `noHistory`): a job "as it stood" would be the job
    // as it is now, so `?asOf` is a -4 here as on /fetch/{TC}/{id}, not ignored.
    refuseAsOf(req, JST.noHistory!);
    return ok(req, [await findJobOrFail(app, req.principal!, (req.params as { jstId: string }).jstId)]);
  };
  app.post(
    '/admin.fetchjst/:jstId',
    { ...fetchjst, schema: { ...fetchjst.schema, body: recordReadBody } },
    handler,
  );
  app.get('/admin.fetchjst/:jstId', fetchjst, handler);

  app.post(
    '/admin.canceljst/:jstId',
    {
      config,
      schema: {
        summary: 'Cancel a job: at once when not running, else at its next check (cancelRequested)',
        tags: ['jobs'],
        params: jstParams,
        body: noArgumentsBody,
        ...one,
      },
    },
    async (req) => {
      const principal = req.principal!;
      const idText = (req.params as { jstId: string }).jstId;
      const status = await requestCancel(
        app.db,
        principal.partitionId,
        jobIdOf(idText),
        principal.admin ? undefined : principal.userId,
      );
      if (status === undefined) throw notFound(`Job ${idText}`, 'jstId');
      // Cancelled (now or before) is what was asked; a job that finished or failed is left as it is.
      if (status === 'FINISHED' || status === 'FAILED') {
        throw new AppError('CONFLICT', `Job ${idText} has ended already (${status})`);
      }
      return ok(req, [await findJobOrFail(app, principal, idText)]);
    },
  );

  app.post(
    '/fetch/JST',
    {
      config,
      schema: { summary: 'Jobs (own ones unless admin)', tags: ['jobs'], body: fetchBodySchema, ...list },
    },
    async (req) => {
      refuseListAsOf(req);
      const principal = req.principal!;
      const body = (req.body ?? {}) as FetchBody;
      const r = await fetchRecords(app.db, principal, JST, body, app.config.maxPageSize);
      return ok(req, r.rows, r);
    },
  );

  app.post(
    '/fetch/JST/:jstId',
    {
      config,
      // The fetch body of a read of one record, as /fetch/{TC}/{id} takes it.
      schema: {
        summary: 'One job (own ones unless admin)',
        tags: ['jobs'],
        params: jstParams,
        body: recordReadBody,
        ...one,
      },
    },
    handler,
  );
}
