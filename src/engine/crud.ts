// The generic operations on any registered type: fetch, add, update, integrate, delete (one, batch,
// by filter), massedit and resetcolumn. Each starts with the type's permission, validates every
// value against the registry (custom attributes against the partition's attribute meta), and runs
// as one transaction: a batch either applies whole or not at all.

import type { Principal } from '../access/access.ts';
import { can } from '../access/access.ts';
import { AUTHENTICATED, PUBLIC, type RouteAccess } from '../access/catalogue.ts';
import type { Db, Queryable, Tx } from '../db/db.ts';
import { Params, ident, qualified } from '../db/sql.ts';
import { AppError, notFound, validationError, type FieldErrors } from '../http/errors.ts';
import {
  compileCriteria,
  compileSort,
  parseCriteria,
  resolveCriteria,
  type CriteriaNode,
} from './criteria.ts';
import { loadTypeContext, rowScope, selectList, toRecord, type TypeContext } from './context.ts';
import { withHistory } from './history.ts';
import type { FieldDef, TypeDef } from './registry.ts';
import { EXPECTED, coerceValue } from './values.ts';

type Obj = Record<string, unknown>;
type Row = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export function requireAccess(principal: Principal, access: RouteAccess): void {
  if (access === AUTHENTICATED || access === PUBLIC) return;
  if (!can(principal, access)) throw new AppError('FORBIDDEN', `Permission ${access} required`);
}

// ---------------------------------------------------------------------------------------------
// Fetch

export interface FetchBody {
  readonly startRow?: number;
  readonly endRow?: number;
  readonly sortBy?: unknown;
  readonly data?: unknown;
  readonly textMatchStyle?: string;
  readonly resultFields?: readonly string[];
  readonly valueFields?: readonly string[];
  readonly distinctResults?: boolean;
}

export interface FetchResult {
  readonly rows: unknown[];
  readonly startRow: number;
  readonly endRow: number;
  readonly totalRows: number;
}

/** The extension table a request is about: `name` in simple criteria or a top-level `name equals`. */
export function extensionNameOf(criteria: unknown): string | undefined {
  if (!isObj(criteria)) return undefined;
  if (typeof criteria.name === 'string') return criteria.name;
  if (criteria.fieldName === 'name' && criteria.operator === 'equals' && typeof criteria.value === 'string') {
    return criteria.value;
  }
  if (criteria.operator === 'and' && Array.isArray(criteria.criteria)) {
    for (const c of criteria.criteria) {
      const n = extensionNameOf(c);
      if (n !== undefined) return n;
    }
  }
  return undefined;
}

function paging(body: FetchBody, maxPageSize: number): { start: number; end: number } {
  const start = body.startRow ?? 0;
  const end = body.endRow ?? start + Math.min(300, maxPageSize);
  if (end < start) throw validationError('endRow', 'must not be less than startRow');
  if (end - start > maxPageSize) throw validationError('endRow', `a page holds at most ${maxPageSize} rows`);
  return { start, end };
}

function outputFields(
  tc: TypeContext,
  names: readonly string[] | undefined,
  param: string,
): string[] | undefined {
  if (names === undefined) return undefined;
  if (names.length === 0) throw validationError(param, 'must name at least one field');
  for (const n of names) {
    if (n !== 'typedId' && !tc.fields.has(n))
      throw validationError(param, `unknown field ${JSON.stringify(n)}`);
  }
  return [...new Set(names)];
}

/**
 * `restrict`: AdvancedCriteria the server ANDs to the client's filter (a manager operation's own
 * condition, such as "these ids" or "this extension table"); compiled separately, so the client's
 * simple criteria and textMatchStyle keep their meaning.
 */
export async function fetchRecords(
  db: Queryable,
  principal: Principal,
  type: TypeDef,
  body: FetchBody,
  maxPageSize: number,
  restrict?: Obj,
): Promise<FetchResult> {
  requireAccess(principal, type.access.fetch);
  const extName = extensionNameOf(restrict) ?? extensionNameOf(body.data);
  const tc = await loadTypeContext(db, principal, type, extName);
  const { start, end } = paging(body, maxPageSize);
  if (body.resultFields !== undefined && body.valueFields !== undefined) {
    throw validationError('valueFields', 'give resultFields or valueFields, not both');
  }
  const asArrays = body.valueFields !== undefined;
  const names = outputFields(
    tc,
    body.valueFields ?? body.resultFields,
    asArrays ? 'valueFields' : 'resultFields',
  );
  const distinct = body.distinctResults === true;
  if (distinct && names === undefined)
    throw validationError('distinctResults', 'needs resultFields or valueFields');

  const params = new Params();
  const where =
    `${rowScope(tc, principal, params)} AND ${filterSql(tc, body.data, body.textMatchStyle, params)}` +
    (restrict === undefined ? '' : ` AND ${filterSql(tc, restrict, undefined, params)}`);
  // The filter's parameters alone (before LIMIT and OFFSET): what a count by itself binds.
  const filterParams = params.values.slice();
  const select = selectList(tc, names);
  const limit = params.add(end - start);
  const offset = params.add(start);
  const from = `${ident(type.table)} t WHERE ${where}`;
  // totalRows: a count of its own, not `count(*) OVER ()` (which builds the whole match set before the
  // first row of the page). It rides along as an uncorrelated scalar subquery — evaluated once, able
  // to use an index-only or bitmap scan — so page and count still take one round trip.
  const counted = distinct ? `(SELECT DISTINCT ${distinctColumns(tc, names!)} FROM ${from}) c` : from;
  const count = `SELECT count(*) AS n FROM ${counted}`;
  const total$ = `(${count}) AS "__total"`;
  const sql = distinct
    ? distinctSql(tc, names!, body.sortBy, from, limit, offset, total$)
    : `SELECT ${select}, ${total$} FROM ${from}
        ORDER BY ${compileSort(body.sortBy, tc.fields, 't', 'id')} LIMIT ${limit} OFFSET ${offset}`;
  const r = await db.query<Row>(sql, params.values);
  let total = Number(r.rows[0]?.__total ?? 0);
  if (r.rows.length === 0 && start > 0) {
    // Past the last page there is no row to carry the count: count alone (same filter, same params).
    const c = await db.query<{ n: unknown }>(count, filterParams);
    total = Number(c.rows[0]!.n);
  }
  const rows = r.rows.map((row) => {
    delete row.__total;
    const rec = toRecord(tc, row);
    return asArrays ? names!.map((n) => rec[n] ?? null) : rec;
  });
  return { rows, startRow: start, endRow: start + rows.length, totalRows: total };
}

/** The stored columns behind the requested fields (typedId is the id). */
function distinctColumns(tc: TypeContext, names: readonly string[]): string {
  return [...new Set(names.map((n) => (n === 'typedId' ? 'id' : tc.fields.get(n)!.column)))]
    .map((c) => qualified('t', c))
    .join(', ');
}

/**
 * DISTINCT rows carry no id of their own: the distinct columns come from an inner query, the API
 * names from the outer one, and the order defaults to the selected fields (which identify a row).
 */
function distinctSql(
  tc: TypeContext,
  names: readonly string[],
  sortBy: unknown,
  from: string,
  limit: string,
  offset: string,
  total: string,
): string {
  const sortable = names.filter((n) => n !== 'typedId');
  const requested =
    sortBy === undefined || sortBy === null ? sortable : Array.isArray(sortBy) ? sortBy : [sortBy];
  for (const s of requested) {
    if (typeof s !== 'string' || !names.includes(s.replace(/^-/, ''))) {
      throw validationError(
        'sortBy',
        `with distinctResults, sort only by the selected fields (${JSON.stringify(s)})`,
      );
    }
  }
  const first = names[0] === 'typedId' ? 'id' : tc.fields.get(names[0]!)!.column;
  const order = compileSort(requested, tc.fields, 'd', first);
  return `SELECT ${selectList(tc, names, 'd')}, ${total}
            FROM (SELECT DISTINCT ${distinctColumns(tc, names)} FROM ${from}) d
           ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`;
}

function filterSql(
  tc: TypeContext,
  data: unknown,
  textMatchStyle: string | undefined,
  params: Params,
): string {
  const tree = parseCriteria(data, textMatchStyle === undefined ? {} : { textMatchStyle });
  const { criteria } = resolveCriteria(tree, tc.fields);
  return compileCriteria(criteria, params, 't');
}

/** `/fetch/{TC}/{id}`: the id as a number or a typedId. */
export async function fetchOne(
  db: Queryable,
  principal: Principal,
  type: TypeDef,
  idText: string,
): Promise<Row> {
  requireAccess(principal, type.access.fetch);
  const id = parseId(type, idText, 'id');
  const tc = await loadTypeContext(db, principal, type);
  const row = await selectOne(db, tc, principal, { id }, false);
  if (!row) throw notFound(`${type.label} ${idText}`);
  // Extension rows: type the attributes with their own table's meta.
  if (type.metaPerName && typeof row.name === 'string') {
    return toRecord(await loadTypeContext(db, principal, type, row.name), row);
  }
  return toRecord(tc, row);
}

// ---------------------------------------------------------------------------------------------
// Addressing and values

type Address = { readonly id: number } | { readonly key: readonly unknown[] };

export function parseId(type: TypeDef, v: unknown, field: string): number {
  const text = typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim() : '';
  const m = /^(\d{1,15})(?:\.([A-Za-z0-9]+))?$/.exec(text);
  if (!m || (m[2] !== undefined && m[2] !== type.code)) {
    throw validationError(field, `${JSON.stringify(v)} is not an id or typedId of type ${type.code}`);
  }
  return Number(m[1]);
}

/** A record is addressed by `typedId`, `id`, or its whole business key. */
function addressOf(type: TypeDef, data: Obj): Address | undefined {
  if (data.typedId !== undefined && data.typedId !== null)
    return { id: parseId(type, data.typedId, 'typedId') };
  if (data.id !== undefined && data.id !== null) return { id: parseId(type, data.id, 'id') };
  const given = (v: unknown) => (typeof v === 'string' && v !== '') || typeof v === 'number';
  if (type.businessKey.every((k) => given(data[k]))) {
    return { key: type.businessKey.map((k) => data[k]) };
  }
  return undefined;
}

function requireAddress(type: TypeDef, data: Obj): Address {
  const a = addressOf(type, data);
  if (!a) throw validationError('typedId', `give typedId or ${type.businessKey.join(' + ')}`);
  return a;
}

async function selectOne(
  q: Queryable,
  tc: TypeContext,
  principal: Principal,
  address: Address,
  forUpdate: boolean,
  includeDeleted = false,
): Promise<Row | undefined> {
  const params = new Params();
  const scope = rowScope(tc, principal, params, 't', { includeDeleted });
  const match =
    'id' in address
      ? `t.id = ${params.add(address.id)}`
      : tc.type.businessKey
          .map((k, i) => `${qualified('t', tc.fields.get(k)!.column)} = ${params.add(address.key[i])}`)
          .join(' AND ');
  const extra = includeDeleted && tc.type.deleteMode === 'soft' ? ', t.deleted_at AS "__deleted"' : '';
  const r = await q.query<Row>(
    `SELECT ${selectList(tc)}${extra} FROM ${ident(tc.type.table)} t WHERE ${scope} AND ${match}${forUpdate ? ' FOR UPDATE' : ''}`,
    params.values,
  );
  return r.rows[0];
}

/** Validated column values of a write; all errors of the record are collected into one -4. */
function prepareValues(tc: TypeContext, data: Obj, mode: 'add' | 'update'): Map<FieldDef, unknown> {
  const errors: FieldErrors = {};
  const out = new Map<FieldDef, unknown>();
  for (const [name, raw] of Object.entries(data)) {
    if (name === 'typedId') continue;
    const f = tc.fields.get(name);
    if (!f) {
      errors[name] = { errorMessage: 'unknown field' };
      continue;
    }
    if (f.system) continue;
    if (f.key && mode === 'update') continue; // keys address the record; they are not changed
    const err = checkValue(f, raw);
    if (typeof err === 'string') errors[name] = { errorMessage: err };
    else out.set(f, err.value);
  }
  if (mode === 'add') {
    for (const f of tc.fields.values()) {
      if (f.required && (out.get(f) === undefined || out.get(f) === null) && !errors[f.name]) {
        errors[f.name] = { errorMessage: 'is required' };
      }
    }
  }
  const problem = tc.type.validate?.(data);
  if (problem) Object.assign(errors, problem);
  const first = Object.entries(errors)[0];
  if (first) throw new AppError('VALIDATION', `${first[0]}: ${first[1].errorMessage}`, { errors });
  return out;
}

/** A value in its stored form, or the reason it is refused. */
export function checkValue(f: FieldDef, raw: unknown): { value: unknown } | string {
  if (raw === null || raw === undefined || (raw === '' && f.type !== 'string')) {
    return f.required ? 'is required' : { value: null };
  }
  if (f.type === 'json') return { value: JSON.stringify(raw) };
  const v = coerceValue(f.type, raw);
  if (v === undefined) return `${JSON.stringify(raw)} is not ${EXPECTED[f.type]}`;
  if (f.required && v === '') return 'is required';
  if (typeof v === 'string' && f.maxLength !== undefined && v.length > f.maxLength) {
    return `is longer than ${f.maxLength} characters`;
  }
  if (f.oneOf && !f.oneOf.includes(String(v))) return `must be one of ${f.oneOf.join(', ')}`;
  return { value: f.custom ? String(v) : v };
}

function canEdit(tc: TypeContext, principal: Principal, row: Row): boolean {
  if (!tc.type.userGroups || principal.admin) return true;
  const g = row.userGroupEdit;
  return typeof g !== 'string' || g === '' || principal.groups.includes(g);
}

/** Contexts per extension table name within one request (attribute types differ per table). */
function contextCache(q: Queryable, principal: Principal, type: TypeDef) {
  const cache = new Map<string, Promise<TypeContext>>();
  return (data: Obj): Promise<TypeContext> => {
    const name = type.metaPerName && typeof data.name === 'string' ? data.name : '';
    let c = cache.get(name);
    if (!c) {
      c = loadTypeContext(q, principal, type, type.metaPerName ? name : undefined);
      cache.set(name, c);
    }
    return c;
  };
}

function duplicate(type: TypeDef, data: Obj): AppError {
  const key = type.businessKey.map((k) => `${k}=${JSON.stringify(data[k])}`).join(', ');
  return new AppError('DUPLICATE_KEY', `${type.label} ${key} already exists`, {
    field: type.businessKey[type.businessKey.length - 1]!,
  });
}

function auditColumns(principal: Principal, params: Params): { cols: string[]; vals: string[] } {
  const p = params.add(principal.userId);
  return { cols: ['created_by', 'last_update_by'], vals: [p, p] };
}

// ---------------------------------------------------------------------------------------------
// History: every write statement below goes through `written` (src/engine/history.ts)

/**
 * A write statement (alias `t`, no RETURNING) with its record history in the same statement;
 * answers the written rows as API records (`rows`) or their number (`count`, column `n`).
 */
function written(
  stmt: string,
  tc: TypeContext,
  principal: Principal,
  params: Params,
  result: 'rows' | 'count',
): string {
  const kind = stmt.trimStart().startsWith('DELETE') ? 'delete' : 'write';
  const select = result === 'rows' ? selectList(tc, undefined, 'w') : 'count(*)::int AS n';
  return withHistory(stmt, { tc, principal, params, kind }, select);
}

async function countWritten(tx: Queryable, sql: string, params: Params): Promise<number> {
  const r = await tx.query<{ n: number }>(sql, params.values);
  return r.rows[0]!.n;
}

// ---------------------------------------------------------------------------------------------
// Add, update, integrate

export async function addRecords(
  db: Db,
  principal: Principal,
  type: TypeDef,
  items: readonly Obj[],
): Promise<Row[]> {
  requireAccess(principal, type.access.write);
  const add = async (q: Queryable, ctx: ReturnType<typeof contextCache>, data: Obj): Promise<Row> => {
    const tc = await ctx(data);
    const values = prepareValues(tc, data, 'add');
    await type.beforeInsert?.(q, principal, data);
    const row = await insertRow(q, tc, principal, values, 'revive-deleted');
    if (!row) throw duplicate(type, data);
    return toRecord(tc, row);
  };
  // One record is one INSERT statement, atomic without BEGIN/COMMIT round trips.
  if (items.length === 1) return [await add(db, contextCache(db, principal, type), items[0]!)];
  return db.transaction(async (tx) => {
    const ctx = contextCache(tx, principal, type);
    const out: Row[] = [];
    for (const data of items) out.push(await add(tx, ctx, data));
    return out;
  });
}

/**
 * INSERT of one record. On a business-key conflict: `revive-deleted` replaces a soft-deleted row
 * (live rows stay untouched: no row comes back, a duplicate); `merge` updates the given columns of
 * the existing row if the principal may edit it (integrate).
 */
async function insertRow(
  tx: Queryable,
  tc: TypeContext,
  principal: Principal,
  values: Map<FieldDef, unknown>,
  onConflict: 'revive-deleted' | 'merge',
): Promise<Row | undefined> {
  const { type } = tc;
  const params = new Params();
  const cols = ['partition_id'];
  const vals = [params.add(principal.partitionId)];
  if (type.fixed) {
    cols.push(type.fixed.column);
    vals.push(params.add(type.fixed.value));
  }
  const audit = auditColumns(principal, params);
  cols.push(...audit.cols);
  vals.push(...audit.vals);
  for (const [f, v] of values) {
    cols.push(f.column);
    vals.push(params.add(v));
  }
  const target = ['partition_id', ...type.uniqueColumns].map(ident).join(', ');
  const bump = `version = t.version + 1, last_update_at = now(), last_update_by = EXCLUDED.last_update_by`;
  let conflict: string;
  if (onConflict === 'merge') {
    const sets = [...values.keys()]
      .filter((f) => !f.key)
      .map((f) => `${ident(f.column)} = EXCLUDED.${ident(f.column)}`);
    if (type.deleteMode === 'soft') sets.push('deleted_at = NULL');
    const editable = rowScope(tc, principal, params, 't', { forEdit: true, includeDeleted: true });
    conflict = `ON CONFLICT (${target}) DO UPDATE SET ${[...sets, bump].join(', ')} WHERE ${editable}`;
  } else if (type.deleteMode === 'soft') {
    // Re-adding a soft-deleted record replaces it whole: unspecified fields become NULL.
    const replace = tc.type.fields
      .filter((f) => !f.system && !f.key)
      .map((f) => `${ident(f.column)} = EXCLUDED.${ident(f.column)}`);
    conflict = `ON CONFLICT (${target}) DO UPDATE SET ${[...replace, 'deleted_at = NULL', bump].join(', ')}
                WHERE t.deleted_at IS NOT NULL`;
  } else {
    conflict = 'ON CONFLICT DO NOTHING';
  }
  const insert = `INSERT INTO ${ident(type.table)} AS t (${cols.map(ident).join(', ')}) VALUES (${vals.join(', ')})
     ${conflict}`;
  const r = await tx.query<Row>(written(insert, tc, principal, params, 'rows'), params.values);
  return r.rows[0];
}

async function updateRow(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  id: number,
  values: Map<FieldDef, unknown>,
) {
  const params = new Params();
  const sets = [...values].map(([f, v]) => `${ident(f.column)} = ${params.add(v)}`);
  sets.push(
    'version = t.version + 1',
    'last_update_at = now()',
    `last_update_by = ${params.add(principal.userId)}`,
  );
  if (tc.type.deleteMode === 'soft') sets.push('deleted_at = NULL');
  const update = `UPDATE ${ident(tc.type.table)} t SET ${sets.join(', ')}
      WHERE t.partition_id = ${params.add(principal.partitionId)} AND t.id = ${params.add(id)}`;
  const r = await tx.query<Row>(written(update, tc, principal, params, 'rows'), params.values);
  return r.rows[0]!;
}

export interface UpdateItem {
  readonly data: Obj;
  readonly oldValues?: Obj | null;
}

export async function updateRecords(
  db: Db,
  principal: Principal,
  type: TypeDef,
  items: readonly UpdateItem[],
  returnOld: boolean,
): Promise<Row[]> {
  requireAccess(principal, type.access.write);
  return db.transaction(async (tx) => {
    const out: Row[] = [];
    for (const item of items) {
      const address = requireAddress(type, item.data);
      const base = await loadTypeContext(tx, principal, type);
      const old = await selectOne(tx, base, principal, address, true);
      if (!old)
        throw notFound(
          `${type.label} ${JSON.stringify(item.data.typedId ?? type.businessKey.map((k) => item.data[k]))}`,
        );
      const tc = type.metaPerName ? await loadTypeContext(tx, principal, type, String(old.name)) : base;
      if (!canEdit(tc, principal, old))
        throw new AppError('FORBIDDEN', `Not allowed to change ${old.typedId as string}`);
      checkVersion(type, item.oldValues, old);
      for (const k of type.businessKey) {
        if (item.data[k] !== undefined && item.data[k] !== old[k] && !('key' in address)) {
          throw validationError(k, 'is part of the business key and cannot be changed');
        }
      }
      const row = await updateRow(tx, tc, principal, Number(old.id), prepareValues(tc, item.data, 'update'));
      out.push(withOld(toRecord(tc, row), returnOld ? toRecord(tc, old) : undefined));
    }
    return out;
  });
}

function checkVersion(type: TypeDef, oldValues: Obj | null | undefined, current: Row): void {
  const v = oldValues?.version;
  if (v === undefined || v === null) {
    if (type.updateNeedsVersion) throw validationError('oldValues.version', 'is required for this type');
    return;
  }
  if (typeof v !== 'number' || !Number.isInteger(v))
    throw validationError('oldValues.version', 'must be an integer');
  if (v !== current.version) {
    throw new AppError(
      'VERSION_CONFLICT',
      `${current.typedId as string} is at version ${current.version as number}, not ${v}: reload it and retry`,
    );
  }
}

function withOld(row: Row, old: Row | undefined): Row {
  if (old !== undefined) row.oldValues = old;
  return row;
}

/** Upsert by typedId or business key; partial: unspecified fields keep their values; no version check. */
export async function integrateRecords(
  db: Db,
  principal: Principal,
  type: TypeDef,
  items: readonly Obj[],
  returnOld: boolean,
): Promise<Row[]> {
  requireAccess(principal, type.access.write);
  const only = items.length === 1 ? items[0]! : undefined;
  const byKey = only !== undefined && !returnOld ? addressOf(type, only) : undefined;
  if (only !== undefined && byKey !== undefined && 'key' in byKey) {
    // The common case — one record by business key — is a single upsert statement, atomic on its
    // own: no BEGIN/COMMIT round trips.
    const tc = await contextCache(db, principal, type)(only);
    const values = prepareValues(tc, only, 'add');
    await type.beforeInsert?.(db, principal, only);
    const row = await insertRow(db, tc, principal, values, 'merge');
    if (!row)
      throw new AppError('FORBIDDEN', `Not allowed to change ${type.label} ${JSON.stringify(byKey.key)}`);
    return [toRecord(tc, row)];
  }
  return db.transaction(async (tx) => {
    const ctx = contextCache(tx, principal, type);
    const out: Row[] = [];
    for (const data of items) {
      const address = addressOf(type, data);
      if (!address) {
        throw validationError(type.businessKey[0]!, `a new record needs ${type.businessKey.join(' + ')}`);
      }
      if ('id' in address || returnOld) {
        const base = await loadTypeContext(tx, principal, type);
        const old = await selectOne(tx, base, principal, address, true, true);
        if (old) {
          const tc = type.metaPerName ? await ctx({ name: old.name }) : base;
          if (!canEdit(tc, principal, old))
            throw new AppError('FORBIDDEN', `Not allowed to change ${old.typedId as string}`);
          const wasDeleted = old.__deleted !== null && old.__deleted !== undefined;
          delete old.__deleted;
          const row = await updateRow(tx, tc, principal, Number(old.id), prepareValues(tc, data, 'update'));
          out.push(withOld(toRecord(tc, row), returnOld ? (wasDeleted ? {} : toRecord(tc, old)) : undefined));
          continue;
        }
        if ('id' in address) throw notFound(`${type.label} ${JSON.stringify(data.typedId ?? data.id)}`);
      }
      const tc = await ctx(data);
      const values = prepareValues(tc, data, 'add');
      await type.beforeInsert?.(tx, principal, data);
      const row = await insertRow(tx, tc, principal, values, 'merge');
      if (!row)
        throw new AppError('FORBIDDEN', `Not allowed to change ${type.label} ${JSON.stringify(address.key)}`);
      out.push(withOld(toRecord(tc, row), returnOld ? {} : undefined));
    }
    return out;
  });
}

// ---------------------------------------------------------------------------------------------
// Delete

export async function deleteRecords(
  db: Db,
  principal: Principal,
  type: TypeDef,
  items: readonly Obj[],
): Promise<Row[]> {
  requireAccess(principal, type.access.write);
  return db.transaction(async (tx) => {
    const tc = await loadTypeContext(tx, principal, type);
    const out: Row[] = [];
    for (const data of items) {
      const old = await selectOne(tx, tc, principal, requireAddress(type, data), true);
      if (!old)
        throw notFound(
          `${type.label} ${JSON.stringify(data.typedId ?? type.businessKey.map((k) => data[k]))}`,
        );
      if (!canEdit(tc, principal, old))
        throw new AppError('FORBIDDEN', `Not allowed to delete ${old.typedId as string}`);
      const params = new Params();
      const match = `t.partition_id = ${params.add(principal.partitionId)} AND t.id = ${params.add(old.id)}`;
      const stmt =
        type.deleteMode === 'soft'
          ? `UPDATE ${ident(type.table)} t SET deleted_at = now(), version = t.version + 1, last_update_at = now(),
                    last_update_by = ${params.add(principal.userId)} WHERE ${match}`
          : `DELETE FROM ${ident(type.table)} t WHERE ${match}`;
      await tx.query(written(stmt, tc, principal, params, 'count'), params.values);
      out.push(toRecord(tc, old));
    }
    return out;
  });
}

function countLeaves(node: CriteriaNode): number {
  if (node.kind === 'leaf' || node.kind === 'match') return 1;
  return node.children.reduce((n: number, c) => n + countLeaves(c), 0);
}

export interface BatchResult {
  readonly count: number;
  readonly ignored: readonly { field: string; message: string }[];
}

/**
 * Deletes every visible, editable record matching the filter. `lenient` is the legacy
 * `/delete/{TC}/batch`: invalid clauses are dropped and reported — but a filter whose clauses were
 * all invalid is refused rather than deleting the whole type.
 */
export async function deleteByFilter(
  db: Db,
  principal: Principal,
  type: TypeDef,
  body: FetchBody,
  lenient: boolean,
): Promise<BatchResult> {
  requireAccess(principal, type.access.write);
  return db.transaction(async (tx) => {
    const tc = await loadTypeContext(tx, principal, type, extensionNameOf(body.data));
    const tree = parseCriteria(
      body.data,
      body.textMatchStyle === undefined ? {} : { textMatchStyle: body.textMatchStyle },
    );
    const { criteria, dropped } = resolveCriteria(tree, tc.fields, { lenient });
    const leaves = countLeaves(tree.root);
    if (lenient && dropped.length > 0 && dropped.length >= leaves) {
      throw new AppError(
        'VALIDATION',
        'Every filter clause is invalid: refusing to delete without a filter',
        {
          errors: Object.fromEntries(dropped.map((d) => [d.field, { errorMessage: d.message }])),
        },
      );
    }
    const params = new Params();
    const where = `${rowScope(tc, principal, params, 't', { forEdit: true })} AND ${compileCriteria(criteria, params, 't')}`;
    const sql =
      type.deleteMode === 'soft'
        ? `UPDATE ${ident(type.table)} t SET deleted_at = now(), version = t.version + 1, last_update_at = now(),
                  last_update_by = ${params.add(principal.userId)} WHERE ${where}`
        : `DELETE FROM ${ident(type.table)} t WHERE ${where}`;
    return {
      count: await countWritten(tx, written(sql, tc, principal, params, 'count'), params),
      ignored: dropped,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Mass edit and reset column

export interface MassEditBody {
  readonly filterCriteria?: unknown;
  readonly massEditRecords: readonly { fieldName: string; massEditOperator: string; fieldValue?: unknown }[];
}

const ARITHMETIC: Readonly<Record<string, string>> = { '+': '+', '-': '-', '*': '*', '/': '/' };

function editableField(tc: TypeContext, name: string, param: string): FieldDef {
  const f = tc.fields.get(name);
  if (!f) throw validationError(param, `unknown field ${JSON.stringify(name)}`);
  if (f.system || f.key) throw validationError(param, `${name} cannot be changed`);
  return f;
}

export async function massEdit(
  db: Db,
  principal: Principal,
  type: TypeDef,
  body: MassEditBody,
): Promise<number> {
  requireAccess(principal, type.access.write);
  if (!type.massEditable) throw validationError('typeCode', `${type.code} is not mass-editable`);
  if (body.massEditRecords.length === 0)
    throw validationError('massEditRecords', 'must name at least one change');
  return db.transaction(async (tx) => {
    const tc = await loadTypeContext(tx, principal, type, extensionNameOf(body.filterCriteria));
    const params = new Params();
    const sets: string[] = [];
    const seen = new Set<string>();
    body.massEditRecords.forEach((edit, i) => {
      const at = `massEditRecords.${i}`;
      const f = editableField(tc, edit.fieldName, `${at}.fieldName`);
      if (seen.has(f.name)) throw validationError(`${at}.fieldName`, `${f.name} is changed twice`);
      seen.add(f.name);
      const col = ident(f.column);
      const op = edit.massEditOperator;
      if (op === 'null') {
        if (f.required) throw validationError(`${at}.massEditOperator`, `${f.name} is required`);
        sets.push(`${col} = NULL`);
      } else if (op === '=') {
        const v = checkValue(f, edit.fieldValue);
        if (typeof v === 'string') throw validationError(`${at}.fieldValue`, v);
        sets.push(`${col} = ${params.add(v.value)}`);
      } else if (ARITHMETIC[op] !== undefined) {
        if (f.type !== 'decimal' && f.type !== 'integer') {
          throw validationError(
            `${at}.massEditOperator`,
            `${op} needs a numeric field; ${f.name} is ${f.type}`,
          );
        }
        const operand = coerceValue('decimal', edit.fieldValue);
        if (operand === undefined) throw validationError(`${at}.fieldValue`, 'must be a number');
        if (op === '/' && Number(operand) === 0)
          throw validationError(`${at}.fieldValue`, 'division by zero');
        const current = f.storedAsText ? `rc_try_numeric(${col})` : col;
        let expr = `${current} ${ARITHMETIC[op]} ${params.add(operand)}::numeric`;
        if (f.type === 'integer') expr = `round(${expr})`;
        sets.push(`${col} = (${expr})${f.storedAsText ? '::text' : ''}`);
      } else {
        throw validationError(
          `${at}.massEditOperator`,
          `unknown operator ${JSON.stringify(op)} (=, +, -, *, /, null)`,
        );
      }
    });
    sets.push(
      'version = t.version + 1',
      'last_update_at = now()',
      `last_update_by = ${params.add(principal.userId)}`,
    );
    const tree = parseCriteria(body.filterCriteria);
    const where = `${rowScope(tc, principal, params, 't', { forEdit: true })} AND ${compileCriteria(
      resolveCriteria(tree, tc.fields).criteria,
      params,
      't',
    )}`;
    const update = `UPDATE ${ident(type.table)} t SET ${sets.join(', ')} WHERE ${where}`;
    return countWritten(tx, written(update, tc, principal, params, 'count'), params);
  });
}

export async function resetColumn(
  db: Db,
  principal: Principal,
  type: TypeDef,
  column: string,
): Promise<number> {
  requireAccess(principal, type.access.write);
  const tc = await loadTypeContext(db, principal, type);
  const f = editableField(tc, column, 'columnName');
  if (f.required) throw validationError('columnName', `${column} is required and cannot be emptied`);
  return db.transaction(async (tx) => {
    const params = new Params();
    const update = `UPDATE ${ident(type.table)} t SET ${ident(f.column)} = NULL, version = t.version + 1, last_update_at = now(),
              last_update_by = ${params.add(principal.userId)}
        WHERE ${rowScope(tc, principal, params, 't', { forEdit: true })} AND t.${ident(f.column)} IS NOT NULL`;
    return countWritten(tx, written(update, tc, principal, params, 'count'), params);
  });
}
