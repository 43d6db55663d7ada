// Data change requests over HTTP: `/dcrmanager.*` (all POST, permission DCR_EDIT). `{id}` is the
// DCR's id or typedId (`12.DCR`); items and mass changes are named in the body by their typedId
// (`7.DCRI`, `3.DCRM`). Each handler is one service call; the engine checks the target's rules.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { envelopeSchema, noArgumentsBody, ok } from '../../http/envelope.ts';
import { validationError } from '../../http/errors.ts';
import { fetchBodySchema, itemsOf, updateItemsOf } from '../general/routes.ts';
import { submitDcr, submitDcrAsync } from './apply.ts';
import { registerDcrApprovable } from './approval.ts';
import { deleteItems, updateItems } from './item-changes.ts';
import { addDcr, addItems, fetchItems } from './service.ts';
import { changesOnly } from './changes-only.ts';
import { addMassOps, deleteMassOps, fetchMassOps, updateMassOps } from './massops.ts';

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { partition: { type: 'string' }, id: { type: 'string', maxLength: 40 } },
} as const;

const records = { 200: envelopeSchema() };
const list = { 200: envelopeSchema({}, true) };

const idOf = (req: FastifyRequest): string => (req.params as { id: string }).id;

export function dcrRoutes(app: FastifyInstance): void {
  registerDcrApprovable(app.db);
  const cfg = app.config;
  const route = (summary: string, withId: boolean, listed = false, body: object = {}) => ({
    config: { access: 'DCR_EDIT' as const },
    schema: {
      summary,
      tags: ['dcr'],
      ...(withId ? { params: idParams } : {}),
      body,
      response: listed ? list : records,
    },
  });

  app.post(
    '/dcrmanager.add',
    route('Create a DCR from a DCR type: {data: {dcrType, label}}', false),
    async (req) => {
      const items = itemsOf(req.body);
      // One DCR per call: of an array, the elements after the first were dropped in silence.
      if (items.length > 1) throw validationError('data', 'one DCR per call: {data: {dcrType, label}}');
      const [data] = items;
      if (data === undefined) throw validationError('data', 'is required');
      return ok(req, [await addDcr(app.db, req.principal!, data)]);
    },
  );
  app.post(
    '/dcrmanager.add/:id',
    route('Propose items: {data: {changeType, typedId or business key, fields...}} or an array', true),
    async (req) => ok(req, await addItems(app.db, req.principal!, idOf(req), itemsOf(req.body))),
  );
  app.post(
    '/dcrmanager.fetch/:id',
    route('The items of a DCR (filter and paging)', true, true, fetchBodySchema),
    async (req) => {
      const r = await fetchItems(app.db, req.principal!, idOf(req), req.body ?? {}, cfg.maxPageSize);
      return ok(req, r.rows, r);
    },
  );
  app.post(
    '/dcrmanager.fetch/:id/changesOnly',
    route(
      'The items with only the fields that differ from the current record (`changes`)',
      true,
      true,
      fetchBodySchema,
    ),
    async (req) => {
      const r = await changesOnly(app.db, req.principal!, idOf(req), req.body ?? {}, cfg.maxPageSize);
      return ok(req, r.rows, r);
    },
  );
  app.post(
    '/dcrmanager.update/:id',
    route('Change proposed values: {data: {typedId: "<n>.DCRI", fields...}, oldValues: {version}}', true),
    async (req) => ok(req, await updateItems(app.db, req.principal!, idOf(req), updateItemsOf(req.body))),
  );
  app.post(
    '/dcrmanager.delete/:id',
    route('Remove items: {data: {typedId: "<n>.DCRI"}} or an array', true),
    async (req) => ok(req, await deleteItems(app.db, req.principal!, idOf(req), itemsOf(req.body))),
  );
  app.post(
    '/dcrmanager.submit/:id',
    route(
      'Submit: approved at once without a workflow and applied in the same transaction (a DCR_SUBMIT job above asyncSubmitDCRThreshold)',
      true,
      false,
      noArgumentsBody,
    ),
    async (req) => ok(req, [await submitDcr(app.db, req.principal!, idOf(req))]),
  );
  app.post(
    '/dcrmanager.submit/:id/async',
    route(
      'Submit as a DCR_SUBMIT job; answers the job (JST, as /admin.fetchjst) with jstId',
      true,
      false,
      noArgumentsBody,
    ),
    async (req) => ok(req, [await submitDcrAsync(app.db, req.principal!, idOf(req))]),
  );
  app.post(
    '/dcrmanager.addmassop/:id',
    route(
      'Add a mass change: {data: {filterCriteria, massEditRecords: [{fieldName, massEditOperator, fieldValue}]}}',
      true,
    ),
    async (req) => ok(req, await addMassOps(app.db, req.principal!, idOf(req), itemsOf(req.body))),
  );
  app.post(
    '/dcrmanager.fetchmassop/:id',
    route('The mass changes of a DCR', true, true, fetchBodySchema),
    async (req) => {
      const r = await fetchMassOps(app.db, req.principal!, idOf(req), req.body ?? {}, cfg.maxPageSize);
      return ok(req, r.rows, r);
    },
  );
  app.post(
    '/dcrmanager.updatemassop/:id',
    route(
      'Change mass changes: {data: {typedId: "<n>.DCRM", filterCriteria?, massEditRecords?, label?}}',
      true,
    ),
    async (req) => ok(req, await updateMassOps(app.db, req.principal!, idOf(req), updateItemsOf(req.body))),
  );
  app.post(
    '/dcrmanager.deletemassop/:id',
    route('Remove mass changes: {data: {typedId: "<n>.DCRM"}} or an array', true),
    async (req) => ok(req, await deleteMassOps(app.db, req.principal!, idOf(req), itemsOf(req.body))),
  );
}
