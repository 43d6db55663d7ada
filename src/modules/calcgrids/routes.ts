// Calculation grids over HTTP: `/calculationgridmanager.*` (all POST). `{id}` is a grid's id or
// typedId (`7.CG`) — for `update`, an item's (`12.CGI2`). The grid and item records themselves are
// served by the general operations (`/fetch|update|delete/CG`, `/add|fetch|delete/CGI{k}`) through
// the engine (src/engine/registry-calcgrids.ts). Each handler is one service call.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RouteAccess } from '../../access/catalogue.ts';
import { envelopeSchema, ok } from '../../http/envelope.ts';
import { validationError } from '../../http/errors.ts';
import { fetchOne } from '../../engine/fetch.ts';
import { findType } from '../../engine/registry.ts';
import { notifyJobQueued } from '../../jobs/runner.ts';
import { registerGridApprovable } from './approval.ts';
import { acceptItems, rejectItems } from './decisions.ts';
import { addGrid, overrideItem, queueCalculation } from './service.ts';
import { isObj } from '../../engine/values.ts';

type Obj = Record<string, unknown>;

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { partition: { type: 'string' }, id: { type: 'string', maxLength: 40 } },
} as const;
/** `{data}` (checked by the service); `update` also takes `oldValues`. Other fields are unknown (-4). */
const body = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: { operationType: { type: 'string' }, data: {} },
} as const;
const updateBody = { ...body, properties: { ...body.properties, oldValues: {} } } as const;

const idOf = (req: FastifyRequest): string => (req.params as { id: string }).id;
const dataOf = (req: FastifyRequest): Obj => {
  const b: unknown = req.body;
  if (b === undefined || b === null) return {};
  if (!isObj(b)) throw validationError('body', 'must be an object');
  if (b.data === undefined || b.data === null) return {};
  if (!isObj(b.data)) throw validationError('data', 'must be an object');
  return b.data;
};

export function calcGridRoutes(app: FastifyInstance): void {
  registerGridApprovable();
  const limits = { maxSteps: app.config.logicMaxSteps, maxMs: app.config.logicMaxMs };
  const route = (summary: string, access: RouteAccess, withId = true, bodySchema: object = body) => ({
    config: { access },
    schema: {
      summary,
      tags: ['calculation grids'],
      ...(withId ? { params: idParams } : {}),
      body: bodySchema,
      response: { 200: envelopeSchema() },
    },
  });

  app.post(
    '/calculationgridmanager.addgrid',
    route(
      'Create a grid: {data: {label, formulaName, keyNumber, productFilter | keySources, targetDate, inputs}}',
      'CALCULATIONGRID_EDIT',
      false,
    ),
    async (req) => ok(req, [await addGrid(app.db, req.principal!, dataOf(req))]),
  );
  app.post(
    '/calculationgridmanager.calculate/:id',
    route(
      'Start the CALCULATIONGRID job of a grid ({data: {batchSize}} optional); answers the JST',
      'CALCULATIONGRID_EDIT',
    ),
    async (req) => {
      const job = await queueCalculation(app.db, req.principal!, idOf(req), dataOf(req));
      notifyJobQueued();
      const jst = await fetchOne(app.db, req.principal!, findType('JST')!, String(job.id));
      return ok(req, [{ ...jst, jstId: Number(job.id) }]);
    },
  );
  app.post(
    '/calculationgridmanager.update/:id',
    route(
      'Override element results of one item: {data: {overrides: {<element>: value | null}}, oldValues: {version}}',
      'CALCULATIONGRID_EDIT',
      true,
      updateBody,
    ),
    async (req) => {
      const b: unknown = req.body;
      if (!isObj(b)) throw validationError('data', 'must be {overrides: {<element>: value}}');
      return ok(req, [await overrideItem(app.db, req.principal!, idOf(req), b, limits)]);
    },
  );
  app.post(
    '/calculationgridmanager.accept/:id',
    route(
      'Submit items of a grid to their workflow: {data: {items: [ids]} | {filter}}',
      'CALCULATIONGRID_SUBMIT',
    ),
    async (req) => ok(req, await acceptItems(app.db, req.principal!, idOf(req), dataOf(req))),
  );
  app.post(
    '/calculationgridmanager.reject/:id',
    route('Deny items of a grid: {data: {items: [ids]} | {filter}}', 'CALCULATIONGRID_SUBMIT'),
    async (req) => ok(req, await rejectItems(app.db, req.principal!, idOf(req), dataOf(req))),
  );
}
