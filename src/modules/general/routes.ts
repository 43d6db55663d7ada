// The general operations of the interface on any registered type code: fetch, add, update,
// integrate, delete (one, batch, by filter), massedit, resetcolumn and the type list
// (metadata.describe: ./describe-routes.ts). Each handler is one call into the engine; the engine
// checks the type's permission (routes only require an authenticated user, since the permission
// depends on the type).

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AUTHENTICATED, type RouteAccess } from '../../access/catalogue.ts';
import { sendJsonArray } from '../../http/answer-bytes.ts';
import { envelopeSchema, noArgumentsBody, ok, requestCheck } from '../../http/envelope.ts';
import { validationError } from '../../http/errors.ts';
import {
  addRecords,
  deleteByFilter,
  deleteRecords,
  fetchOne,
  integrateRecords,
  massEdit,
  resetColumn,
  updateRecords,
  type MassEditBody,
  type UpdateItem,
} from '../../engine/crud.ts';
import { requireWrite } from '../../engine/access-check.ts';
import { listTypes } from '../../engine/describe.ts';
import { fetchForAnswer, fetchOneJson } from '../../engine/fetch-json.ts';
import { fetchOneAsOf } from '../../engine/history-asof.ts';
import { UNTAKEN_LIST_FIELDS, pageOfList } from '../../engine/paging.ts';
import { requireType, type TypeDef } from '../../engine/registry.ts';
import { isAttributeMeta, metaDeletedWith, queueIndexSync } from '../admin/indexes.ts';
import { isObj } from '../../engine/values.ts';

type Obj = Record<string, unknown>;

/** The mass-edit operations of a body (`massEditRecords`), as every mass edit takes them. */
export const massEditRecordsSchema = {
  type: 'array',
  items: {
    type: 'object',
    required: ['fieldName', 'massEditOperator'],
    additionalProperties: false,
    properties: { fieldName: { type: 'string' }, massEditOperator: { type: 'string' }, fieldValue: {} },
  },
} as const;

/** The filter and paging body of fetch-style operations (conventions.md "Fetch bodies"). */
export const fetchBodySchema = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string', enum: ['fetch'] },
    textMatchStyle: { type: 'string', enum: ['exact', 'exactCase', 'substring', 'startsWith'] },
    // Row numbers the database's OFFSET/LIMIT take exactly (safe integers, far past any table).
    startRow: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    endRow: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    // Means nothing to a read, but is typed as everywhere (interface.md: object or null).
    oldValues: { type: ['object', 'null'] },
    data: {},
    sortBy: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }] },
    resultFields: { type: 'array', items: { type: 'string' } },
    valueFields: { type: 'array', items: { type: 'string' } },
    distinctResults: { type: 'boolean' },
    componentId: { type: 'string' },
    dataSource: { type: 'string' },
    operationId: { type: 'string' },
  },
} as const;

/**
 * The fetch body's fields in an operation with nothing to filter, page, sort or pick: a client that
 * sends one body shape everywhere may send them; the paging/sort/pick fields only as `null` (not
 * given, issue 19: a value is a -4 naming the field), `data` only empty; `oldValues` means nothing.
 */
const UNPAGED_BODY_FIELDS = {
  operationType: { type: 'string' },
  textMatchStyle: fetchBodySchema.properties.textMatchStyle,
  startRow: { type: 'null' },
  endRow: { type: 'null' },
  oldValues: { type: ['object', 'null'] },
  data: { type: ['object', 'null'], maxProperties: 0 },
  componentId: fetchBodySchema.properties.componentId,
  dataSource: fetchBodySchema.properties.dataSource,
  operationId: fetchBodySchema.properties.operationId,
  ...UNTAKEN_LIST_FIELDS,
} as const;

/**
 * The fetch body of lists read by their path (`POST /fetch`, the type codes; the logics referencing a
 * lookup table): the fields above with its paging, no filter (`data` empty).
 */
export const pagedListBody = {
  ...fetchBodySchema,
  properties: {
    ...UNPAGED_BODY_FIELDS,
    operationType: fetchBodySchema.properties.operationType,
    startRow: fetchBodySchema.properties.startRow,
    endRow: fetchBodySchema.properties.endRow,
  },
} as const;

/**
 * Operations that read one record named by their path (`/fetch/{TC}/{id}`, `/accountmanager.audit`,
 * `/admin.fetchjst/{id}`): the fetch body a client sends to every operation (interface.md "Filter and
 * paging body"), with nothing to filter (`data` empty) and nothing to sort or pick (those fields only
 * as `null`, issue 19; a value is a -4 naming the field). Its paging may name the first page —
 * `startRow` 0 (the default) and any `endRow` past it, which holds the one record; another page is a
 * -4 naming the field. `oldValues` means nothing here.
 */
export const recordReadBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    ...UNPAGED_BODY_FIELDS,
    startRow: { type: ['integer', 'null'], minimum: 0, maximum: 0 },
    endRow: { type: ['integer', 'null'], minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
  },
} as const;

/**
 * `/massedit/{TC}` and a lookup table's massedit: the filter (`filterCriteria`, required: `{}` edits
 * every record) and the changes, plus what a client sends in every fetch-style body: `operationType`,
 * `textMatchStyle` (applied to simple criteria, as by a fetch), `oldValues` (meaning nothing here),
 * an empty `data`, and the paging/sort/pick fields as `null` (a value is a -4 naming the field).
 */
export const massEditBodySchema = {
  type: 'object',
  // Without a filter the change would reach every record: `{}` says so on purpose.
  required: ['filterCriteria', 'massEditRecords'],
  additionalProperties: false,
  properties: {
    filterCriteria: {},
    massEditRecords: massEditRecordsSchema,
    ...UNPAGED_BODY_FIELDS,
  },
} as const;

const typeParams = {
  type: 'object',
  required: ['typeCode'],
  properties: { partition: { type: 'string' }, typeCode: { type: 'string', maxLength: 40 } },
} as const;

const anyBody = {} as const;
const records = { response: { 200: envelopeSchema() } };
const list = { response: { 200: envelopeSchema({}, true) } };

/** preValidation of the routes on a type code: an unknown one is a 404 before the body is checked. */
export const knownTypeCode = requestCheck((req) => typeOf(req));
const fetchableTypeCode = requestCheck((req) => typeOf(req, 'fetch'));
/**
 * Also the right to write it (the handler's requireWrite, before the body is read): a type the
 * general operations never write (jobs, CRCIH, ...) is its -4 on typeCode, whatever the body.
 */
const writableTypeCode = requestCheck((req) => requireWrite(req.principal!, typeOf(req)));

/**
 * The type of the request's path. `use`: the general fetch also serves the `managerOnly` types that
 * declare `generalFetch` (lookup tables); every other general operation refuses them with a -4.
 */
export function typeOf(req: FastifyRequest, use: 'fetch' | 'write' = 'write'): TypeDef {
  const code = (req.params as { typeCode: string }).typeCode;
  const type = requireType(code);
  if (type.managerOnly !== undefined && !(use === 'fetch' && type.generalFetch === true)) {
    throw validationError(
      'typeCode',
      `${code} is not handled by the general operations: use ${type.managerOnly}`,
    );
  }
  return type;
}

/**
 * The keys a write's wrapper `{data, ...}` may have: the interface's (`operation: 'add'`, the fetch
 * body's `operationType` and `oldValues`, checked where an operation uses it); any other is a -4.
 */
const WRAPPER_KEYS: ReadonlySet<string> = new Set(['data', 'operation', 'operationType', 'oldValues']);
/** `?asOf=` where no record history answers it: a -4 saying `why` (it was ignored in silence). */
export function refuseAsOf(req: FastifyRequest, why: string): void {
  if ((req.query as { asOf?: unknown } | undefined)?.asOf !== undefined) throw validationError('asOf', why);
}

/** `?asOf=` reads one record as it stood (`/fetch/{TC}/{id}`), never a list. */
export const refuseListAsOf = (req: FastifyRequest): void =>
  refuseAsOf(req, 'reads one record as it stood: /fetch/{TypeCode}/{id}?asOf=<date-time>');

function refuseUnknownKeys(e: unknown, at = ''): void {
  if (!isObj(e)) return;
  const unknown = Object.keys(e).find((k) => !WRAPPER_KEYS.has(k));
  if (unknown !== undefined) throw validationError(`${at}${unknown}`, 'unknown field');
  // The wrapper's own fields are typed as everywhere else (they were taken as anything on add and
  // integrate): `oldValues` an object or null, `operation`/`operationType` text or null.
  const old = e.oldValues;
  if (old !== undefined && old !== null && !isObj(old))
    throw validationError(`${at}oldValues`, 'must be an object');
  for (const k of ['operation', 'operationType']) {
    const v = e[k];
    if (v !== undefined && v !== null && typeof v !== 'string')
      throw validationError(`${at}${k}`, 'must be text');
  }
}

/** `{data: {...}}`, `{data: [...]}` or `[{data: {...}}, ...]` → the records. */
export function itemsOf(body: unknown): Obj[] {
  if (Array.isArray(body)) body.forEach((e, i) => isObj(e) && isObj(e.data) && refuseUnknownKeys(e, `${i}.`));
  else refuseUnknownKeys(body);
  const raw: unknown[] = Array.isArray(body)
    ? body.map((e: unknown) => (isObj(e) && isObj(e.data) ? e.data : e))
    : isObj(body) && Array.isArray(body.data)
      ? body.data
      : isObj(body) && isObj(body.data)
        ? [body.data]
        : [];
  if (raw.length === 0) throw validationError('data', 'give a record as {data: {...}} or an array of them');
  raw.forEach((r, i) => {
    if (!isObj(r)) throw validationError(`data.${i}`, 'must be an object');
  });
  return raw as Obj[];
}

/**
 * The `oldValues` of a delete body's records (`{data: {...}, oldValues}` or an array of them), in
 * the order itemsOf answers the records; a record without them has none. `oldValues.version`, when
 * given, must be the stored version (409), as for an update.
 */
export function deleteOldValuesOf(body: unknown): (Obj | null)[] {
  const entries = Array.isArray(body) ? body : isObj(body) && isObj(body.data) ? [body] : [];
  if (isObj(body) && Array.isArray(body.data) && body.oldValues !== undefined && body.oldValues !== null)
    throw validationError('oldValues', 'give each record as {data, oldValues} to check its version');
  return entries.map((e: unknown, i) => {
    const old = isObj(e) ? e.oldValues : undefined;
    if (old === undefined || old === null) return null;
    if (!isObj(old))
      throw validationError(`${entries.length > 1 ? `${i}.` : ''}oldValues`, 'must be an object');
    return old;
  });
}

/** `{data: {...}, oldValues}` or an array of them: the body of every update-style operation. */
export function updateItemsOf(body: unknown): UpdateItem[] {
  const entries = Array.isArray(body) ? body : [body];
  if (entries.length === 0) throw validationError('data', 'give a record as {data: {...}}');
  return entries.map((e, i) => {
    const at = entries.length > 1 ? `${i}.` : '';
    if (!isObj(e) || !isObj(e.data)) throw validationError(`${at}data`, 'must be an object');
    refuseUnknownKeys(e, at);
    if (e.oldValues !== undefined && e.oldValues !== null && !isObj(e.oldValues)) {
      throw validationError(`${at}oldValues`, 'must be an object');
    }
    return { data: e.data, oldValues: e.oldValues ?? null };
  });
}

export function generalRoutes(app: FastifyInstance): void {
  const cfg = app.config;
  /** After a committed write: attribute meta may have changed which indexes are wanted. */
  const written = async <T>(req: FastifyRequest, type: TypeDef, result: T): Promise<T> => {
    if (isAttributeMeta(type)) await queueIndexSync(app.db, req.principal!, type);
    return result;
  };
  /** After a committed delete: of attribute meta, or of records that take attribute meta with them. */
  const deleted = async <T>(req: FastifyRequest, type: TypeDef, result: T): Promise<T> => {
    const meta = metaDeletedWith(type);
    if (meta !== undefined) await queueIndexSync(app.db, req.principal!, meta);
    return written(req, type, result);
  };
  const opts = (summary: string, schema: object = {}, typeChecked: boolean | 'fetch' | 'write' = true) => ({
    config: { access: AUTHENTICATED as RouteAccess },
    ...(typeChecked === 'fetch'
      ? { preValidation: fetchableTypeCode }
      : typeChecked === 'write'
        ? { preValidation: writableTypeCode }
        : typeChecked
          ? { preValidation: knownTypeCode }
          : {}),
    schema: { summary, tags: ['general'], params: typeParams, ...schema },
  });

  app.post(
    '/fetch',
    {
      config: { access: AUTHENTICATED },
      schema: { summary: 'List of all type codes', tags: ['general'], body: pagedListBody, ...list },
    },
    (req) => {
      const page = pageOfList(listTypes(), req.body, cfg.maxPageSize);
      return ok(req, page.rows, page);
    },
  );

  app.post(
    '/fetch/:typeCode',
    opts('Fetch records with filter and paging', { body: fetchBodySchema, ...list }, 'fetch'),
    async (req, reply) => {
      const type = typeOf(req, 'fetch');
      refuseListAsOf(req);
      const r = await fetchForAnswer(app.db, req.principal!, type, req.body ?? {}, cfg.maxPageSize);
      if ('rows' in r) return ok(req, r.rows, r);
      // Rows written as JSON bytes straight into the answer (src/engine/fetch-json.ts).
      return sendJsonArray(req, reply, r.writeData, r);
    },
  );

  app.post(
    '/fetch/:typeCode/:id',
    opts(
      'Fetch one record by id or typedId; with ?asOf=<date-time> as it stood then (record history)',
      {
        params: { ...typeParams, properties: { ...typeParams.properties, id: { type: 'string' } } },
        querystring: { type: 'object', properties: { asOf: { type: 'string', maxLength: 64 } } },
        body: recordReadBody,
        ...records,
      },
      'fetch',
    ),
    async (req, reply) => {
      const { id } = req.params as { id: string };
      const { asOf } = req.query as { asOf?: string };
      const type = typeOf(req, 'fetch');
      if (asOf !== undefined) return ok(req, [await fetchOneAsOf(app.db, req.principal!, type, id, asOf)]);
      const writeData = await fetchOneJson(app.db, req.principal!, type, id);
      if (writeData === undefined) return ok(req, [await fetchOne(app.db, req.principal!, type, id, true)]);
      return sendJsonArray(req, reply, writeData);
    },
  );

  app.post('/add/:typeCode', opts('Create records', { body: anyBody, ...records }, 'write'), async (req) =>
    ok(
      req,
      await written(
        req,
        typeOf(req),
        await addRecords(app.db, req.principal!, typeOf(req), itemsOf(req.body)),
      ),
    ),
  );

  for (const returnOld of [false, true]) {
    const suffix = returnOld ? '/returnolddata' : '';
    app.post(
      `/update/:typeCode${suffix}`,
      opts('Update records (version-checked)', { body: anyBody, ...records }, 'write'),
      async (req) =>
        ok(
          req,
          await written(
            req,
            typeOf(req),
            await updateRecords(app.db, req.principal!, typeOf(req), updateItemsOf(req.body), returnOld),
          ),
        ),
    );
    app.post(
      `/integrate/:typeCode${suffix}`,
      opts('Upsert by typedId or business key', { body: anyBody, ...records }, 'write'),
      async (req) =>
        ok(
          req,
          await written(
            req,
            typeOf(req),
            await integrateRecords(app.db, req.principal!, typeOf(req), itemsOf(req.body), returnOld),
          ),
        ),
    );
  }

  app.post(
    '/delete/:typeCode',
    opts('Delete records by typedId or business key', { body: anyBody, ...records }),
    async (req) =>
      ok(
        req,
        await deleted(
          req,
          typeOf(req),
          await deleteRecords(
            app.db,
            req.principal!,
            typeOf(req),
            itemsOf(req.body),
            deleteOldValuesOf(req.body),
          ),
        ),
      ),
  );

  for (const force of [false, true]) {
    app.post(
      `/delete/:typeCode/batch${force ? '/forcefilter' : ''}`,
      opts(force ? 'Delete all records matching the filter' : 'Delete by filter, ignoring invalid clauses', {
        body: fetchBodySchema,
        ...records,
      }),
      async (req) => {
        const r = await deleted(
          req,
          typeOf(req),
          await deleteByFilter(app.db, req.principal!, typeOf(req), req.body ?? {}, !force),
        );
        return ok(req, [{ deletedRecords: r.count, ...(force ? {} : { ignoredCriteria: r.ignored }) }]);
      },
    );
  }

  app.post(
    '/massedit/:typeCode',
    opts('Change fields of all records matching a filter', { body: massEditBodySchema, ...records }, 'write'),
    async (req) =>
      ok(req, [
        { updatedRecords: await massEdit(app.db, req.principal!, typeOf(req), req.body as MassEditBody) },
      ]),
  );

  app.post(
    '/resetcolumn/:typeCode/:columnName',
    opts(
      'Remove the values of a column',
      {
        params: { ...typeParams, properties: { ...typeParams.properties, columnName: { type: 'string' } } },
        body: noArgumentsBody,
        ...records,
      },
      'write',
    ),
    async (req) => {
      const column = (req.params as { columnName: string }).columnName;
      return ok(req, [{ updatedRecords: await resetColumn(app.db, req.principal!, typeOf(req), column) }]);
    },
  );
}
