// Imports over HTTP: `/importmanager.*` (all POST, permission IMPORT_EDIT; the submit also needs the
// target type's write permission). `{typedId}` is the import's id or typedId (`5.IM`). Each handler
// is one service call.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createBlobStore } from '../../db/blob-store.ts';
import { envelopeSchema, noArgumentsBody, ok } from '../../http/envelope.ts';
import { validationError } from '../../http/errors.ts';
import { fetchBodySchema, itemsOf, massEditRecordsSchema } from '../general/routes.ts';
import { fetchChanges, massDeleteChanges, massEditChanges, saveChanges } from './changes.ts';
import { createImport, submitImport } from './service.ts';
import { isObj } from '../../engine/values.ts';

const idParams = {
  type: 'object',
  required: ['typedId'],
  properties: { partition: { type: 'string' }, typedId: { type: 'string', maxLength: 40 } },
} as const;

const idOf = (req: FastifyRequest): string => (req.params as { typedId: string }).typedId;

export function importRoutes(app: FastifyInstance): void {
  const cfg = app.config;
  const blobs = createBlobStore(app.db, cfg.blobStore);
  const route = (summary: string, withId: boolean, listed = false, body: object = {}) => ({
    config: { access: 'IMPORT_EDIT' as const },
    schema: {
      summary,
      tags: ['imports'],
      ...(withId ? { params: idParams } : {}),
      body,
      response: { 200: envelopeSchema({}, listed) },
    },
  });

  app.post(
    '/importmanager.add',
    route(
      'Create an import: {data: {targetType, lookupTable?, label?, slotId? (a CSV/XLSX upload), delimiter?}}',
      false,
    ),
    async (req) => {
      const body = req.body as { data?: unknown } | undefined;
      if (!isObj(body?.data)) throw validationError('data', 'must be an object');
      return ok(req, [await createImport(app.db, blobs, req.principal!, body.data)]);
    },
  );
  app.post(
    '/importmanager.save/:typedId',
    route('Save changes: {data: {changeType?, targetColumn, <key fields>, value}} or an array', true),
    async (req) => ok(req, await saveChanges(app.db, req.principal!, idOf(req), itemsOf(req.body))),
  );
  app.post(
    '/importmanager.fetch/:typedId',
    route('The staged changes of an import (filter and paging)', true, true, fetchBodySchema),
    async (req) => {
      const r = await fetchChanges(app.db, req.principal!, idOf(req), req.body ?? {}, cfg.maxPageSize);
      return ok(req, r.rows, r);
    },
  );
  app.post(
    '/importmanager.massedit/:typedId',
    route('Mass-edit staged changes: {filterCriteria, massEditRecords}', true, false, {
      type: 'object',
      required: ['massEditRecords'],
      additionalProperties: false,
      properties: {
        operationType: { type: 'string' },
        filterCriteria: {},
        massEditRecords: massEditRecordsSchema,
      },
    }),
    async (req) =>
      ok(req, [
        {
          updated: await massEditChanges(
            app.db,
            req.principal!,
            idOf(req),
            req.body as Record<string, unknown>,
          ),
        },
      ]),
  );
  app.post(
    '/importmanager.massdelete/:typedId',
    route('Delete staged changes by filter ({data: criteria})', true, false, fetchBodySchema),
    async (req) =>
      ok(req, [{ deleted: await massDeleteChanges(app.db, req.principal!, idOf(req), req.body ?? {}) }]),
  );
  app.post(
    '/importmanager.submit/:typedId',
    route(
      'Validate every change and write them all in one transaction (none if any fails)',
      true,
      false,
      noArgumentsBody,
    ),
    async (req) => ok(req, [await submitImport(app.db, req.principal!, idOf(req))]),
  );
}
