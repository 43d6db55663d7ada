// Record history (issue 12): `/fetch/{TC}/{id}/history` — the history of one record, for whoever may
// fetch that record — and `/history.fetch` — history across types, for auditors (HISTORY_FETCH).
// Both take the fetch body (filter, sort, paging) over the history fields: typeCode, recordId,
// businessKey, action, field (a changed field's name), changes, version, userId, user, tokenId,
// externalSystem, requestId, operation, jobId, changedAt. The reading is the engine's
// (src/engine/history-read.ts); `?asOf=` on `/fetch/{TC}/{id}` is served by the general routes.

import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import { envelopeSchema, ok } from '../../http/envelope.ts';
import { fetchHistory, fetchRecordHistory } from '../../engine/history-read.ts';
import { requireType } from '../../engine/registry.ts';
import { fetchBodySchema } from '../general/routes.ts';

const list = { response: { 200: envelopeSchema({}, true) } };

export function historyRoutes(app: FastifyInstance): void {
  const cfg = app.config;

  app.post(
    '/fetch/:typeCode/:id/history',
    {
      // The record's own fetch permission is checked by the engine (it depends on the type).
      config: { access: AUTHENTICATED },
      schema: {
        summary: 'History of one record: who changed which fields, when, from what, through which call',
        tags: ['history'],
        params: {
          type: 'object',
          required: ['typeCode', 'id'],
          properties: {
            partition: { type: 'string' },
            typeCode: { type: 'string', maxLength: 40 },
            id: { type: 'string', maxLength: 40 },
          },
        },
        body: fetchBodySchema,
        ...list,
      },
    },
    async (req) => {
      const { typeCode, id } = req.params as { typeCode: string; id: string };
      // Manager-only types (lookup values, ...) have a history too: only the type must exist.
      const type = requireType(typeCode);
      const r = await fetchRecordHistory(app.db, req.principal!, type, id, req.body ?? {}, cfg.maxPageSize);
      return ok(req, r.rows, r);
    },
  );

  app.post(
    '/history.fetch',
    {
      config: { access: 'HISTORY_FETCH' },
      schema: {
        summary: 'Record history across types (auditors)',
        tags: ['history'],
        body: fetchBodySchema,
        ...list,
      },
    },
    async (req) => {
      const r = await fetchHistory(app.db, req.principal!, req.body ?? {}, cfg.maxPageSize);
      return ok(req, r.rows, r);
    },
  );
}
