// The lookup table manager: tables (LT) and their values (LTV, MLTV, MLTV2..MLTV6, JLTV, JLTV2);
// logics read tables through their own set-based data port (src/modules/formulas/data.ts). Every
// value operation is the generic engine on a per-table TypeDef (`valueTypeOf`): the engine scopes
// each read and write to the table through the type's `fixed` column and checks the operation's
// permission, so paging, filters, validation, version checks and bulk loads are the engine's. The
// rules of their own: a table's kind never changes, nor its value type while it holds values; ranges
// never overlap (checked here in advance, guaranteed by the trigger of migration 008); resetcolumn is
// for matrix tables only.

import type { Writable } from 'node:stream';
import ExcelJS from 'exceljs';
import type { Principal } from '../../access/access.ts';
import { can } from '../../access/access.ts';
import type { Permission } from '../../access/catalogue.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import {
  addRecords,
  checkValue,
  deleteByFilter,
  deleteRecords,
  fetchOne,
  fetchRecords,
  integrateRecords,
  massEdit,
  requireAccess,
  resetColumn,
  updateRecords,
  type FetchBody,
  type FetchResult,
  type MassEditBody,
  type UpdateItem,
} from '../../engine/crud.ts';
import {
  loadData,
  type LoadBody,
  type LoadLimits,
  type LoadResult,
  type RowError,
} from '../../engine/loaddata.ts';
import type { FieldDef, TypeDef } from '../../engine/registry.ts';
import {
  isMatrix,
  tableTypeFor,
  valueCodeOf,
  valueDeclaration,
  valueTypeOf,
  type LookupTable,
} from '../../engine/registry-lookup.ts';
import { coerceValue } from '../../engine/values.ts';
import * as store from './store.ts';
import { logicsReferencingTable } from '../formulas/service.ts';

type Obj = Record<string, unknown>;
type Row = Record<string, unknown>;

/** The table of reads: `LT` as declared (any user may read company parameters). */
const TABLES = tableTypeFor('LOOKUPTABLE_UPDATE');

// ---------------------------------------------------------------------------------------------
// Tables and their values as types

const TABLE_ID = /^\d{1,15}$/;

export function parseTableId(text: string): number {
  if (!TABLE_ID.test(text)) throw validationError('tableId', `${JSON.stringify(text)} is not a table id`);
  return Number(text);
}

async function findTableOrFail(q: Queryable, principal: Principal, id: number): Promise<LookupTable> {
  const table = await store.tableById(q, principal, id);
  if (!table) throw notFound(`Lookup table ${id}`);
  return table;
}

/**
 * The values of table `id` as a type, after the permission of the operation (so a caller without it
 * learns nothing, not even whether the table exists). Reads pass no permission: the type's own
 * fetch access applies.
 */
async function valuesOf(
  q: Queryable,
  principal: Principal,
  id: number,
  write?: Permission,
): Promise<{ table: LookupTable; type: TypeDef }> {
  if (write !== undefined) requireAccess(principal, write);
  const table = await findTableOrFail(q, principal, id);
  return { table, type: valueTypeOf(table, write) };
}

/** The database's own guards of lookup values, as catalogue errors naming the field at fault. */
function translate(err: unknown): unknown {
  const e = err as { code?: unknown; constraint?: unknown; detail?: unknown; message?: unknown };
  if (e.code === '23P01' && e.constraint === 'lookup_values_ranges') {
    // The trigger's message names both ranges (no SQL), and its DETAIL the bound at fault.
    const field = e.detail === 'upperBound' ? 'upperBound' : 'lowerBound';
    return new AppError('CONFLICT', String(e.message), { field });
  }
  if (e.code === '23514' && e.constraint === 'lookup_values_bounds') {
    return validationError('upperBound', 'must be greater than lowerBound');
  }
  // A value written while its table was being deleted.
  if (e.code === '23503') return notFound('Lookup table');
  return err;
}

async function guarded<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw translate(err);
  }
}

// ---------------------------------------------------------------------------------------------
// Tables

export function fetchTables(
  db: Db,
  principal: Principal,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  return fetchRecords(db, principal, TABLES, body, maxPageSize);
}

/** Creates tables; `valueType` defaults to STRING and `status` to ACTIVE. */
export function addTables(db: Db, principal: Principal, items: readonly Obj[]): Promise<Row[]> {
  requireAccess(principal, 'LOOKUPTABLE_ADD');
  const withDefaults = items.map((d) => ({
    ...d,
    valueType: d.valueType ?? 'STRING',
    status: d.status ?? 'ACTIVE',
  }));
  return addRecords(db, principal, tableTypeFor('LOOKUPTABLE_ADD'), withDefaults);
}

/** The table an update names (typedId, id or uniqueName), if it names one that exists. */
async function addressedTable(
  q: Queryable,
  principal: Principal,
  data: Obj,
): Promise<LookupTable | undefined> {
  const ref = data.typedId ?? data.id;
  if (ref !== undefined && ref !== null) {
    const m =
      typeof ref === 'string' || typeof ref === 'number' ? /^(\d{1,15})(?:\.LT)?$/.exec(String(ref)) : null;
    return m ? store.tableById(q, principal, Number(m[1])) : undefined;
  }
  return typeof data.uniqueName === 'string' ? store.tableByName(q, principal, data.uniqueName) : undefined;
}

/** Updates tables (version-checked); the kind never changes, the value type only while empty. */
export async function updateTables(
  db: Db,
  principal: Principal,
  items: readonly UpdateItem[],
): Promise<Row[]> {
  requireAccess(principal, 'LOOKUPTABLE_UPDATE');
  for (const { data } of items) {
    const table = await addressedTable(db, principal, data);
    if (!table) continue; // the engine answers the 404 or the -4 of a bad address
    if (data.type !== undefined && data.type !== table.type) {
      throw validationError('type', `${table.type} cannot be changed: copy the values into a new table`);
    }
    if (
      data.valueType !== undefined &&
      data.valueType !== table.valueType &&
      (await store.hasValues(db, principal, valueTypeOf(table)))
    ) {
      throw validationError('valueType', 'cannot be changed while the table holds values');
    }
  }
  return updateRecords(db, principal, tableTypeFor('LOOKUPTABLE_UPDATE'), items, false);
}

/** Deletes tables named by typedId (or uniqueName); their values go with them (ON DELETE CASCADE). */
export function deleteTables(db: Db, principal: Principal, items: readonly Obj[]): Promise<Row[]> {
  requireAccess(principal, 'LOOKUPTABLE_REMOVE');
  return deleteRecords(db, principal, tableTypeFor('LOOKUPTABLE_REMOVE'), items);
}

function fieldOf(type: TypeDef, name: string): FieldDef {
  return type.fields.find((f) => f.name === name)!;
}

/** Copies a table and its values as `uniqueName` (and `label`, else the original's), in one transaction. */
export async function copyTable(db: Db, principal: Principal, tableId: number, data: Obj): Promise<Row> {
  requireAccess(principal, 'LOOKUPTABLE_COPY');
  const from = await findTableOrFail(db, principal, tableId);
  const type = tableTypeFor('LOOKUPTABLE_COPY');
  const name = checkValue(fieldOf(type, 'uniqueName'), data.uniqueName);
  if (typeof name === 'string') throw validationError('uniqueName', name);
  const label = 'label' in data ? checkValue(fieldOf(type, 'label'), data.label) : undefined;
  if (typeof label === 'string') throw validationError('label', label);
  const uniqueName = name.value as string;
  return guarded(
    db.transaction(async (tx) => {
      if (await store.tableByName(tx, principal, uniqueName)) {
        throw new AppError(
          'DUPLICATE_KEY',
          `Lookup table uniqueName=${JSON.stringify(uniqueName)} already exists`,
          {
            field: 'uniqueName',
          },
        );
      }
      const copy = await store.copyTable(
        tx,
        principal,
        from,
        type,
        valueTypeOf(from),
        uniqueName,
        label === undefined ? undefined : (label.value as string | null),
      );
      return { ...(await fetchOne(tx, principal, TABLES, String(copy.id))), copiedValues: copy.copiedValues };
    }),
  );
}

/**
 * The logics (and their elements) that reference the table: every `lookup`/`lookupRow` call naming
 * it, read from the compiled logic (table names are literals there), never by text search.
 */
export async function findReferences(db: Db, principal: Principal, tableId: number): Promise<Row[]> {
  requireAccess(principal, 'LOOKUPTABLE_UPDATE');
  const table = await findTableOrFail(db, principal, tableId);
  return logicsReferencingTable(db, principal.partitionId, table.uniqueName);
}

// ---------------------------------------------------------------------------------------------
// Values

export async function fetchValues(
  db: Db,
  principal: Principal,
  tableId: number,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  const { type } = await valuesOf(db, principal, tableId);
  return fetchRecords(db, principal, type, body, maxPageSize);
}

export async function addValues(db: Db, principal: Principal, tableId: number, items: readonly Obj[]) {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_ADD');
  return guarded(addRecords(db, principal, type, items));
}

export async function updateValues(
  db: Db,
  principal: Principal,
  tableId: number,
  items: readonly UpdateItem[],
) {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_UPDATE');
  return guarded(updateRecords(db, principal, type, items, false));
}

/** Upsert by name (or key1..keyN); unspecified fields keep their values. */
export async function integrateValues(db: Db, principal: Principal, tableId: number, items: readonly Obj[]) {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLEVALUES_INTEGRATE');
  return guarded(integrateRecords(db, principal, type, items, false));
}

export async function deleteValues(db: Db, principal: Principal, tableId: number, items: readonly Obj[]) {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_REMOVE');
  return deleteRecords(db, principal, type, items);
}

/** Deletes the values matching the filter; an invalid clause is a -4 (never a wider delete). */
export async function deleteValuesByFilter(
  db: Db,
  principal: Principal,
  tableId: number,
  body: FetchBody,
): Promise<number> {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_REMOVE');
  return (await deleteByFilter(db, principal, type, body, false)).count;
}

/** Sets (=, null) or computes (+ - * /) value columns of the matching values of an LTV or MLTV table. */
export async function massEditValues(
  db: Db,
  principal: Principal,
  tableId: number,
  body: MassEditBody,
): Promise<number> {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_UPDATE');
  return guarded(massEdit(db, principal, type, body));
}

export async function resetValueColumn(
  db: Db,
  principal: Principal,
  tableId: number,
  column: string,
): Promise<number> {
  const { table, type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_REMOVE');
  if (!isMatrix(table.type)) {
    throw validationError(
      'tableId',
      `resetcolumn applies to matrix tables only; ${table.uniqueName} is ${table.type}`,
    );
  }
  return resetColumn(db, principal, type, column);
}

// ---------------------------------------------------------------------------------------------
// Export to XLSX

export interface ValueExport {
  readonly table: LookupTable;
  readonly fields: readonly FieldDef[];
  /** Pages of rows (arrays in `fields` order); the first is read before anything is sent. */
  readonly pages: AsyncIterable<readonly unknown[][]>;
}

/**
 * The values matching the body (filter, sort, `startRow`/`endRow` when given, else all of them),
 * with the columns of `resultFields` (default: the table's keys and values), read page by page
 * through the engine. The first page is read here, so a bad filter is still an error envelope.
 */
export async function exportValues(
  db: Db,
  principal: Principal,
  tableId: number,
  body: FetchBody,
  maxPageSize: number,
): Promise<ValueExport> {
  const { table, type } = await valuesOf(db, principal, tableId);
  const param = body.valueFields !== undefined ? 'valueFields' : 'resultFields';
  const names =
    body.resultFields ?? body.valueFields ?? type.fields.filter((f) => !f.system).map((f) => f.name);
  const fields = names.map((n): FieldDef => {
    if (n === 'typedId') return { name: n, column: 'id', type: 'string' };
    const f = type.fields.find((d) => d.name === n);
    if (!f) throw validationError(param, `unknown field ${JSON.stringify(n)}`);
    return f;
  });
  const start = body.startRow ?? 0;
  const end = body.endRow ?? Number.MAX_SAFE_INTEGER;
  const read = (from: number) =>
    fetchRecords(
      db,
      principal,
      type,
      {
        ...body,
        resultFields: undefined,
        valueFields: names,
        startRow: from,
        endRow: Math.min(end, from + maxPageSize),
      },
      maxPageSize,
    );
  const first = await read(start);
  async function* pages(): AsyncGenerator<unknown[][]> {
    let page = first;
    for (;;) {
      yield page.rows as unknown[][];
      const wanted = Math.min(end, page.startRow + maxPageSize) - page.startRow;
      if (page.rows.length < wanted || page.endRow >= end) return;
      page = await read(page.endRow);
    }
  }
  return { table, fields, pages: pages() };
}

/** A cell as a spreadsheet holds it: numbers as numbers, JSON as its text. */
function cell(f: FieldDef, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if ((f.type === 'decimal' || f.type === 'integer') && typeof v === 'string') {
    const n = Number(v);
    return Number.isFinite(n) ? n : v;
  }
  if (typeof v === 'object' && !(v instanceof Date)) return JSON.stringify(v);
  return v;
}

/** Writes the export as one worksheet (header row of field names) with exceljs's streaming writer. */
export async function writeXlsx(exp: ValueExport, out: Writable): Promise<void> {
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({
    stream: out,
    useStyles: false,
    useSharedStrings: false,
  });
  const sheet = workbook.addWorksheet(
    exp.table.uniqueName.replace(/[[\]:*?/\\]/g, '_').slice(0, 31) || 'values',
  );
  sheet.addRow(exp.fields.map((f) => f.name)).commit();
  for await (const page of exp.pages) {
    for (const row of page) sheet.addRow(row.map((v, i) => cell(exp.fields[i]!, v))).commit();
  }
  sheet.commit();
  await workbook.commit();
}

// ---------------------------------------------------------------------------------------------
// Bulk loads

const MAX_ERRORS = 1_000;
/** The header column that names each row's table (when the table is not given as `?tableId=`). */
export const TABLE_COLUMN = 'lookupTable';

/** A bulk load adds and updates values: either permission will do (integrations hold the first). */
export function loadPermission(principal: Principal): Permission {
  const held = (['LOOKUPTABLEVALUES_INTEGRATE', 'LOOKUPTABLE_ADD'] as const).find((p) => can(principal, p));
  if (held === undefined) {
    throw new AppError('FORBIDDEN', 'Permission LOOKUPTABLEVALUES_INTEGRATE or LOOKUPTABLE_ADD required');
  }
  return held;
}

function wrongKind(table: LookupTable, code: string): string | undefined {
  const expected = valueCodeOf(table.type);
  return expected === code
    ? undefined
    : `${table.uniqueName} is a ${table.type} table: load its values as ${expected}`;
}

/**
 * `/lookuptablemanager.loaddata/{TypeCode}`: the rows go to the table `?tableId=`, or to the table
 * whose id each row holds in a `lookupTable` header column (rows are then loaded table by table).
 * Each table's rows are one `loadData` call of the engine on its per-table type; row numbers in the
 * answer are those of the request.
 */
export async function loadValues(
  db: Db,
  principal: Principal,
  code: string,
  tableIdText: string | undefined,
  body: LoadBody,
  limits: LoadLimits,
): Promise<LoadResult> {
  const write = loadPermission(principal);
  if (valueDeclaration(code) === undefined) {
    throw validationError(
      'typeCode',
      `${code} is not a lookup value type (LTV, MLTV, MLTV2..MLTV6, JLTV, JLTV2)`,
    );
  }
  if (body.data.length > limits.maxBatchRows) {
    throw validationError('data', `at most ${limits.maxBatchRows} rows per call (got ${body.data.length})`);
  }
  const at = body.header.indexOf(TABLE_COLUMN);
  if (tableIdText !== undefined) {
    if (at >= 0)
      throw validationError('header', `name the table in ?tableId= or in a ${TABLE_COLUMN} column, not both`);
    const table = await findTableOrFail(db, principal, parseTableId(tableIdText));
    const problem = wrongKind(table, code);
    if (problem !== undefined) throw validationError('typeCode', problem);
    const all = body.data.map((_, i) => i);
    const part = await loadTable(db, principal, table, write, body, all, limits);
    return summarise([part], [], body.data.length);
  }
  if (at < 0) throw validationError('header', `name the table: ?tableId=<id> or a ${TABLE_COLUMN} column`);

  // Rows by table; a row without a usable table id is an error of its own.
  const errors: RowError[] = [];
  const groups = new Map<number, { rows: unknown[][]; index: number[] }>();
  const header = body.header.filter((_, i) => i !== at);
  body.data.forEach((raw, row) => {
    if (!Array.isArray(raw)) return void errors.push({ row, message: 'must be an array of values' });
    const id = coerceValue('integer', raw[at]);
    if (typeof id !== 'number' || id <= 0) {
      return void errors.push({
        row,
        field: TABLE_COLUMN,
        message: `${JSON.stringify(raw[at])} is not a table id`,
      });
    }
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { rows: [], index: [] }));
    g.rows.push(raw.filter((_, i) => i !== at));
    g.index.push(row);
  });
  const tables = new Map((await store.tablesByIds(db, principal, [...groups.keys()])).map((t) => [t.id, t]));
  const parts: LoadPart[] = [];
  for (const [id, g] of groups) {
    const table = tables.get(id);
    const problem = table === undefined ? `no lookup table has id ${id}` : wrongKind(table, code);
    if (problem !== undefined || table === undefined) {
      errors.push(...g.index.map((row) => ({ row, field: TABLE_COLUMN, message: problem! })));
      continue;
    }
    parts.push(
      await loadTable(db, principal, table, write, { ...body, header, data: g.rows }, g.index, limits),
    );
  }
  return summarise(parts, errors, body.data.length);
}

interface LoadPart {
  readonly result: LoadResult;
  /** Errors found before the engine saw the rows (overlapping ranges), in request row numbers. */
  readonly refused: readonly RowError[];
}

/** One table's rows through the engine; `index[i]` is the request row number of `body.data[i]`. */
async function loadTable(
  db: Db,
  principal: Principal,
  table: LookupTable,
  write: Permission,
  body: LoadBody,
  index: readonly number[],
  limits: LoadLimits,
): Promise<LoadPart> {
  const type = valueTypeOf(table, write);
  let rows = body.data;
  let rowIndex = index;
  let refused: RowError[] = [];
  if (table.type === 'RANGE') {
    const clashes = await rangeClashes(db, principal, table, type, body);
    if (clashes.size > 0) {
      refused = [...clashes].map(([i, e]) => ({ ...e, row: index[i]! }));
      const kept = body.data.map((_, i) => i).filter((i) => !clashes.has(i));
      rows = kept.map((i) => body.data[i]);
      rowIndex = kept.map((i) => index[i]!);
    }
  }
  const result = await loadData(
    db,
    principal,
    type,
    { ...body, data: rows },
    { ...limits, maxErrors: MAX_ERRORS },
  );
  const errors = result.errors.map((e) => ({ ...e, row: rowIndex[e.row]! }));
  return { result: { ...result, errors }, refused };
}

function summarise(parts: readonly LoadPart[], errors: readonly RowError[], total: number): LoadResult {
  const listed = [...errors, ...parts.flatMap((p) => [...p.refused, ...p.result.errors])].sort(
    (a, b) => a.row - b.row,
  );
  const invalid = errors.length + parts.reduce((n, p) => n + p.refused.length + p.result.invalid, 0);
  return {
    inserted: parts.reduce((n, p) => n + p.result.inserted, 0),
    updated: parts.reduce((n, p) => n + p.result.updated, 0),
    invalid,
    total,
    errors: listed.slice(0, MAX_ERRORS),
    errorsTruncated: invalid > Math.min(listed.length, MAX_ERRORS),
  };
}

interface Interval {
  readonly lo: number;
  readonly hi: number;
  readonly name: string;
  /** Position in the load (undefined: a stored range). */
  readonly at?: number;
}

const show = (iv: Interval) =>
  `[${iv.lo === -Infinity ? '-inf' : iv.lo}, ${iv.hi === Infinity ? 'inf' : iv.hi}) of ${iv.name}`;

/**
 * The rows of a RANGE load whose range overlaps a stored range or an earlier-starting range of the
 * load, as per-row errors (by position in `body.data`). Only rows the engine would accept are
 * considered, and stored ranges that the load replaces by name (join on name) are left out. The
 * trigger of migration 008 remains the guarantee; this gives each refused row its own reason.
 */
async function rangeClashes(
  db: Db,
  principal: Principal,
  table: LookupTable,
  type: TypeDef,
  body: LoadBody,
): Promise<Map<number, Omit<RowError, 'row'>>> {
  const fields = body.header.map((n) => type.fields.find((f) => f.name === n));
  const pos = (n: string) => body.header.indexOf(n);
  const [nameAt, loAt, hiAt] = [pos('name'), pos('lowerBound'), pos('upperBound')];
  const options = body.options ?? {};
  const joinsOnName = options.detectJoinFields === true || (options.joinFields ?? []).includes('name');

  const loaded: Interval[] = [];
  body.data.forEach((raw, at) => {
    if (!Array.isArray(raw) || raw.length !== fields.length || nameAt < 0) return;
    if (fields.some((f, i) => f === undefined || f.system || typeof checkValue(f, raw[i]) === 'string'))
      return;
    const bound = (i: number, open: number) => {
      const v = i < 0 ? undefined : coerceValue('decimal', raw[i]);
      return v === undefined ? open : Number(v);
    };
    const iv = { lo: bound(loAt, -Infinity), hi: bound(hiAt, Infinity), name: String(raw[nameAt]), at };
    if (iv.lo < iv.hi) loaded.push(iv);
  });
  if (loaded.length === 0) return new Map();
  const replaced = joinsOnName ? new Set(loaded.map((iv) => iv.name)) : new Set<string>();
  const stored: Interval[] = (await store.rangesOf(db, principal, table))
    .filter((r) => !replaced.has(r.name))
    .map((r) => ({
      lo: r.lowerBound === null ? -Infinity : Number(r.lowerBound),
      hi: r.upperBound === null ? Infinity : Number(r.upperBound),
      name: r.name,
    }));

  const clashes = new Map<number, Omit<RowError, 'row'>>();
  // Against the stored ranges (disjoint, sorted by lo): only the last one starting before iv.hi can
  // overlap iv, since every earlier one ends at or before that one's start.
  for (const iv of loaded) {
    let lo = 0;
    let hi = stored.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (stored[mid]!.lo < iv.hi) lo = mid + 1;
      else hi = mid;
    }
    const candidate = stored[lo - 1];
    if (candidate !== undefined && candidate.hi > iv.lo) {
      clashes.set(iv.at!, {
        field: candidate.lo <= iv.lo ? 'lowerBound' : 'upperBound',
        message: `the range ${show(iv)} overlaps the stored range ${show(candidate)}`,
      });
    }
  }
  // Among the load: sorted by start, each range must start at or after the end of the last accepted.
  let last: Interval | undefined;
  for (const iv of loaded
    .filter((i) => !clashes.has(i.at!))
    .sort((a, b) => a.lo - b.lo || a.hi - b.hi || a.at! - b.at!)) {
    if (last !== undefined && iv.lo < last.hi) {
      clashes.set(iv.at!, {
        field: 'lowerBound',
        message: `the range ${show(iv)} overlaps the range ${show(last)} of row ${last.at!}`,
      });
    } else {
      last = iv;
    }
  }
  return clashes;
}

// ---------------------------------------------------------------------------------------------
// Request bodies
