// `POST /loaddata/{TypeCode}`: bulk load of rows under a header of field names, with optional join
// fields (update the matches, insert the rest). The route only needs an authenticated user: the
// permission depends on the type, and the engine (src/engine/loaddata.ts) checks it.

import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import { envelopeSchema, ok } from '../../http/envelope.ts';
import { loadData, type LoadBody } from '../../engine/loaddata.ts';
import { knownTypeCode, typeOf } from './routes.ts';

/** The body of every `loaddata` operation (also `/lookuptablemanager.loaddata/{TypeCode}`). */
export const loaddataBodySchema = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string' },
    data: {
      type: 'object',
      required: ['header', 'data'],
      additionalProperties: false,
      properties: {
        header: { type: 'array', items: { type: 'string' } },
        // Each row's shape (an array as wide as the header) is checked per row by the engine, so a
        // bad row is reported and skipped instead of failing the whole load.
        data: { type: 'array' },
        options: {
          type: 'object',
          additionalProperties: false,
          properties: {
            detectJoinFields: { type: 'boolean' },
            joinFields: { type: 'array', items: { type: 'string' } },
            conditionRecords: {
              type: 'object',
              additionalProperties: false,
              properties: {
                splicing: {
                  type: 'object',
                  additionalProperties: false,
                  properties: {
                    setFields: { type: 'object' },
                    resetFields: { type: 'array', items: { type: 'string' } },
                    supersedeRecords: { type: 'boolean', default: false },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
} as const;

/** The per-row errors of a load's answer (`errors: [{row, field?, message}]`). */
export const rowErrorsSchema = {
  type: 'array',
  items: {
    type: 'object',
    required: ['row', 'message'],
    properties: { row: { type: 'integer' }, field: { type: 'string' }, message: { type: 'string' } },
  },
} as const;

/** The answer of every `loaddata` operation. */
export const loadResultSchema = {
  type: 'object',
  required: ['inserted', 'updated', 'invalid', 'total', 'errors', 'errorsTruncated'],
  properties: {
    inserted: { type: 'integer' },
    updated: { type: 'integer' },
    invalid: { type: 'integer' },
    total: { type: 'integer' },
    errors: rowErrorsSchema,
    errorsTruncated: { type: 'boolean' },
  },
} as const;

export function loaddataRoutes(app: FastifyInstance): void {
  app.post(
    '/loaddata/:typeCode',
    {
      // The rows of a large body are parsed as the load reads them (src/http/json-rows.ts).
      config: { access: AUTHENTICATED, lazyRows: true },
      preValidation: knownTypeCode,
      schema: {
        summary: 'Bulk load rows (insert, or update on join fields); per-row error report',
        tags: ['general'],
        params: {
          type: 'object',
          required: ['typeCode'],
          properties: { partition: { type: 'string' }, typeCode: { type: 'string', maxLength: 40 } },
        },
        body: loaddataBodySchema,
        response: { 200: envelopeSchema(loadResultSchema) },
      },
    },
    async function loaddata(req) {
      const result = await loadData(
        app.db,
        req.principal!,
        typeOf(req),
        (req.body as { data: LoadBody }).data,
        {
          maxBatchRows: app.config.maxBatchRows,
          onChunkError: (err, first, last) =>
            req.log.error({ err, firstRow: first, lastRow: last }, 'loaddata chunk failed'),
        },
      );
      return ok(req, [result]);
    },
  );
}
