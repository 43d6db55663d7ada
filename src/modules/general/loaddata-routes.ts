// `POST /loaddata/{TypeCode}`: bulk load of rows under a header of field names, with optional join
// fields (update the matches, insert the rest). The route only needs an authenticated user: the
// permission depends on the type, and the engine (src/engine/loaddata.ts) checks it. `?name=` names
// the extension table (PX, CX, SX) the rows belong to, as for `/loaddata.file`: a header without a
// `name` column loads every row into it, a row naming another table is a row error
// (src/engine/loaddata/named.ts, shared with the file load).

import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import { envelopeSchema, ok, requestCheck } from '../../http/envelope.ts';
import { requireAccess } from '../../engine/access-check.ts';
import { typedPerRow } from '../../engine/context.ts';
import { loadData, type LoadBody, type RowError } from '../../engine/loaddata.ts';
import { callTable } from '../../engine/loaddata/named.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { validationError } from '../../http/errors.ts';
import { typeOf } from './routes.ts';

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

/**
 * The body a load of `type` runs with `?name=` (undefined: none given): its header and rows as the
 * call's table makes them, and the errors of the rows refused before the loader (which counts each
 * such row, passed on as null, as invalid at its place).
 */
function ofCallTable(
  type: TypeDef,
  body: LoadBody,
  name: string | undefined,
  maxRows: number,
): { body: LoadBody; refused: Map<number, RowError> } {
  const refused = new Map<number, RowError>();
  if (name === undefined) return { body, refused };
  if (!typedPerRow(type))
    throw validationError('name', `applies to extension tables (PX, CX, SX), not to ${type.code}`);
  const call = callTable(type, body.header, name);
  // (More rows than a call takes are refused whole by the loader, before any is read.)
  if (body.data.length > maxRows) return { body: { ...body, header: call.header }, refused };
  const data = Array.from(body.data, (raw: unknown, row) => {
    const e = call.refusal(raw, row);
    if (e === undefined) return call.rowOf(raw);
    refused.set(row, e);
    return null;
  });
  return { body: { ...body, header: call.header, data }, refused };
}

/**
 * preValidation: an unknown type code is a 404, a caller without the type's write permission a 403,
 * before the body is looked at (as the other general operations answer).
 */
const loadableTypeCode = requestCheck((req) => requireAccess(req.principal!, typeOf(req).access.write));

export function loaddataRoutes(app: FastifyInstance): void {
  app.post(
    '/loaddata/:typeCode',
    {
      // The rows of a large body are parsed as the load reads them (src/http/json-rows.ts).
      config: { access: AUTHENTICATED, lazyRows: true },
      preValidation: loadableTypeCode,
      schema: {
        summary: 'Bulk load rows (insert, or update on join fields); per-row error report',
        tags: ['general'],
        params: {
          type: 'object',
          required: ['typeCode'],
          properties: { partition: { type: 'string' }, typeCode: { type: 'string', maxLength: 40 } },
        },
        // A load option sent as a query parameter would be ignored: a -4 naming it (`token` is auth's).
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, token: { type: 'string' } },
        },
        body: loaddataBodySchema,
        response: { 200: envelopeSchema(loadResultSchema) },
      },
    },
    async function loaddata(req) {
      const type = typeOf(req);
      const { body, refused } = ofCallTable(
        type,
        (req.body as { data: LoadBody }).data,
        (req.query as { name?: string } | undefined)?.name,
        app.config.maxBatchRows,
      );
      const result = await loadData(app.db, req.principal!, type, body, {
        maxBatchRows: app.config.maxBatchRows,
        onChunkError: (err, first, last) =>
          req.log.error({ err, firstRow: first, lastRow: last }, 'loaddata chunk failed'),
      });
      const errors = refused.size === 0 ? result.errors : result.errors.map((e) => refused.get(e.row) ?? e);
      return ok(req, [{ ...result, errors }]);
    },
  );
}
