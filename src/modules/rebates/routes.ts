// Rebate record groups over HTTP: `/rebaterecordgroup.calculate/{typedId}`,
// `/rebaterecordgroup.submit/{typedId}` and its `/async` variant (all POST). Rebate types (RBT), their
// attribute meta (RBTAM) and the groups themselves (RRG: /fetch, /add, /update, /delete, ...) go
// through the general operations on the registry (src/engine/registry-rebates.ts). See docs/rebates.md.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { envelopeSchema, noArgumentsBody, ok } from '../../http/envelope.ts';
import { calculateGroup } from './calculate.ts';
import { registerRebateApprovable, submitGroup, submitGroupAsync } from './submit.ts';

const params = {
  type: 'object',
  required: ['typedId'],
  properties: { partition: { type: 'string' }, typedId: { type: 'string', maxLength: 40 } },
} as const;
const records = { 200: envelopeSchema() };
const tags = ['rebates'];

const idOf = (req: FastifyRequest): string => (req.params as { typedId: string }).typedId;

export function rebateRoutes(app: FastifyInstance): void {
  registerRebateApprovable();
  const limits = { maxSteps: app.config.logicMaxSteps, maxMs: app.config.logicMaxMs };

  app.post(
    '/rebaterecordgroup.calculate/:typedId',
    {
      config: { access: 'REBATERECORD_EDIT' },
      schema: {
        summary:
          'Calculate a rebate record group: {data: {rebateRecordGroup: <fields to update first>}}; runs its logic, stores the results, answers the group',
        tags,
        params,
        body: {
          type: ['object', 'null'],
          additionalProperties: false,
          properties: { operationType: { type: 'string' }, data: {} },
        },
        response: records,
      },
    },
    async (req) => ok(req, [await calculateGroup(app.db, req.principal!, idOf(req), req.body, limits)]),
  );
  app.post(
    '/rebaterecordgroup.submit/:typedId',
    {
      config: { access: 'REBATERECORD_SUBMIT' },
      schema: {
        summary: 'Submit a rebate record group to its workflow ({}); answers the group',
        tags,
        params,
        body: noArgumentsBody,
        response: records,
      },
    },
    async (req) => ok(req, [await submitGroup(app.db, req.principal!, idOf(req))]),
  );
  app.post(
    '/rebaterecordgroup.submit/:typedId/async',
    {
      config: { access: 'REBATERECORD_SUBMIT' },
      schema: {
        summary: 'Submit a rebate record group as a REBATERECORD job; answers the job (JST) with jstId',
        tags,
        params,
        body: noArgumentsBody,
        response: records,
      },
    },
    async (req) => ok(req, [await submitGroupAsync(app.db, req.principal!, idOf(req))]),
  );
}
