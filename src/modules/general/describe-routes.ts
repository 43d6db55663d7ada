// `/metadata.describe` (interface.md: "The type of a field in a partition is obtained with
// `/metadata.describe`"): the fields of a type with their types, custom attributes typed by the
// partition's attribute meta. An extension type (PX, CX, SX) types its attributes per table, so its
// describe may name the table — `data.name` in the body or `?name=` — and then answers that table's
// types (an unknown table is a 404 naming it). The body may be a client's usual fetch body, as for
// every read of one record (`recordReadBody`): its fields are taken and ignored, `null` meaning
// absent; paging only as its first page, the sort and result shape as `null` alone.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import { describeType, type DescribedTable } from '../../engine/describe.ts';
import { requireType } from '../../engine/registry.ts';
import { isObj } from '../../engine/values.ts';
import { envelopeSchema, ok } from '../../http/envelope.ts';
import { validationError } from '../../http/errors.ts';
import { recordReadBody } from './routes.ts';

/** The fetch body a describe takes, as every read of one record (`data` is each route's own). */
const fetchFields = recordReadBody.properties;

const tableName = { type: 'string', minLength: 1, maxLength: 255 } as const;

/** `/metadata.describe/{TypeCode}`: `data` may name the table. */
const byPathBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    ...fetchFields,
    data: { type: ['object', 'null'], additionalProperties: false, properties: { name: tableName } },
  },
} as const;

/** `/metadata.describe`: the type code (and the table) at the top level or in `data`. */
const byBodyBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    ...fetchFields,
    typeCode: {},
    name: tableName,
    data: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: { typeCode: {}, name: tableName },
    },
  },
} as const;

const query = { type: 'object', properties: { name: tableName } } as const;
const params = {
  type: 'object',
  required: ['typeCode'],
  properties: { partition: { type: 'string' }, typeCode: { type: 'string', maxLength: 40 } },
} as const;
const records = { response: { 200: envelopeSchema() } };

type Obj = Record<string, unknown>;

/**
 * A value the body gives beside `data` or in it (`data.<key>`), with the field that gave it; the
 * same value in both places is one value, two different ones a -4.
 */
function given(b: Obj, key: string): { value: unknown; field: string } | undefined {
  const inData = isObj(b.data) ? b.data[key] : undefined;
  const beside = b[key];
  if (inData !== undefined && beside !== undefined && inData !== beside) {
    throw validationError(`data.${key}`, `differs from ${key} beside data: give one`);
  }
  if (inData !== undefined) return { value: inData, field: `data.${key}` };
  return beside === undefined ? undefined : { value: beside, field: key };
}

/** The table a request names: in its body (`name` or `data.name`) or by `?name=`; -4 when they differ. */
function tableOf(req: FastifyRequest, b: Obj): DescribedTable | undefined {
  const inQuery = (req.query as { name?: string } | undefined)?.name;
  const inBody = given(b, 'name');
  if (inBody !== undefined && inQuery !== undefined && inBody.value !== inQuery) {
    throw validationError(inBody.field, `names another table than ?name=`);
  }
  if (inBody !== undefined) return { name: inBody.value, field: inBody.field };
  return inQuery === undefined ? undefined : { name: inQuery, field: 'name' };
}

export function describeRoutes(app: FastifyInstance): void {
  const describe = async (req: FastifyRequest, code: unknown, table: DescribedTable | undefined) => {
    if (typeof code !== 'string' || code === '') throw validationError('typeCode', 'name the type code');
    return ok(req, [await describeType(app.db, req.principal!, requireType(code), table)]);
  };
  app.post(
    '/metadata.describe',
    {
      config: { access: AUTHENTICATED },
      schema: {
        summary: 'Field types of a type (body: {typeCode, name} or {data: {typeCode, name}})',
        tags: ['general'],
        querystring: query,
        body: byBodyBody,
        ...records,
      },
    },
    (req) => {
      const b = isObj(req.body) ? req.body : {};
      return describe(req, given(b, 'typeCode')?.value, tableOf(req, b));
    },
  );
  app.post(
    '/metadata.describe/:typeCode',
    {
      config: { access: AUTHENTICATED },
      schema: {
        summary: 'Field types of a type; of an extension table with data.name or ?name=',
        tags: ['general'],
        params,
        querystring: query,
        body: byPathBody,
        ...records,
      },
    },
    (req) => {
      const b = isObj(req.body) ? req.body : {};
      return describe(req, (req.params as { typeCode: string }).typeCode, tableOf(req, b));
    },
  );
}
