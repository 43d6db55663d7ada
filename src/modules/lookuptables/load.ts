// Bulk loads of lookup table values (`/lookuptablemanager.loaddata/{TypeCode}`, and the file loads
// of src/modules/files/loadlookups.ts): rows go to one table or, by a `lookupTable` column, table by
// table, each through the engine's `loadData` on the table's per-table type. Ranges of a RANGE load
// that overlap are refused row by row in advance (ranges.ts `rangeClashes`); the trigger of
// migration 008 remains the guarantee. Each chunk of a load holds its table's row (`holdTable`, the engine's
// `beforeChunk`), as the other writes of values do (tables.ts `writingValues`).

import type { Principal } from '../../access/access.ts';
import { can } from '../../access/access.ts';
import type { Permission } from '../../access/catalogue.ts';
import type { Db, Tx } from '../../db/db.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import {
  loadData,
  type LoadBody,
  type LoadLimits,
  type LoadResult,
  type RowError,
} from '../../engine/loaddata.ts';
import {
  valueCodeOf,
  valueDeclaration,
  valueTypeOf,
  type LookupTable,
} from '../../engine/registry-lookup.ts';
import { coerceValue } from '../../engine/values.ts';
import { rangeClashes } from './ranges.ts';
import * as store from './store.ts';
import { findTableOrFail, parseTableId } from './tables.ts';

const MAX_ERRORS = 1_000;
/** Rows per transaction of the engine (its own default): the overlap check follows its chunks. */
const CHUNK_ROWS = 10_000;
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
    // Row numbers without reading the rows (a large body's are parsed as the load reads them).
    const all = Array.from({ length: body.data.length }, (_, i) => i);
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

/**
 * The hold of a load into `table`: its row locked FOR KEY SHARE (a change of its valueType waits for
 * the chunk's commit, updateTables) and still of the valueType the load's rows are checked by. A
 * change committed since the load read the table (between two chunks, or before the first) is a
 * 409: the rows would be checked by the old type. Chunks committed before it stay.
 */
function holdTable(principal: Principal, table: LookupTable): (tx: Tx) => Promise<void> {
  return async (tx) => {
    const now = await store.tableById(tx, principal, table.id, 'FOR KEY SHARE');
    if (!now) throw notFound(`Lookup table ${table.id}`, 'tableId');
    if (now.valueType !== table.valueType) {
      throw new AppError(
        'CONFLICT',
        `Lookup table ${table.uniqueName} changed its valueType from ${table.valueType} to ${now.valueType} during the load: load the rows again`,
        { field: 'valueType' },
      );
    }
  };
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
  const chunkRows = limits.chunkRows ?? CHUNK_ROWS;
  let rows = body.data;
  let rowIndex = index;
  let refused: RowError[] = [];
  if (table.type === 'RANGE') {
    const clashes = await rangeClashes(db, principal, table, type, body, chunkRows, (i) => index[i]!);
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
    { ...limits, chunkRows, maxErrors: MAX_ERRORS, beforeChunk: holdTable(principal, table) },
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
