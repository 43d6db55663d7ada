// File loads of lookup table values (`/loaddata.file/LTV|MLTV|JLTV`, sync and async): the rows of the
// file go, chunk by chunk, through the lookup table manager's own bulk loader (`loadValues`, the one
// behind `/lookuptablemanager.loaddata/{TC}`), so keys, value types, join fields, range overlaps and
// permissions are checked exactly as for JSON loads. This file only names the table, turns JSON text
// into JSON for JSON tables, keeps the file's row numbering and, for `syncOnTargetTable`, deletes the
// values of the loaded tables that the load did not touch.
//
// The file-load codes are families: `LTV` for SIMPLE*/RANGE tables, `MLTV` for MATRIX..MATRIX6,
// `JLTV` for JSON and JSON2; the table decides the exact code (`MLTV2`, `JLTV2`, ...).

import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { requireAccess } from '../../engine/crud.ts';
import type { LoadOptions, LoadResult, RowError } from '../../engine/loaddata.ts';
import { valueCodeOf, type LookupTable } from '../../engine/registry-lookup.ts';
import { coerceValue } from '../../engine/values.ts';
import { notFound, validationError } from '../../http/errors.ts';
import { TABLE_COLUMN, loadPermission, loadValues } from '../lookuptables/load.ts';
import { parseTableId } from '../lookuptables/tables.ts';
import { deleteValuesByFilter } from '../lookuptables/values.ts';
import * as tables from '../lookuptables/store.ts';
import { chunked } from './rows.ts';

export const LOOKUP_FILE_CODES: readonly string[] = ['LTV', 'MLTV', 'JLTV'];

export const isLookupFileCode = (code: string): boolean => LOOKUP_FILE_CODES.includes(code);

/** The file-load code of a table's kind: its value code without the key count (MLTV2 → MLTV). */
const familyOf = (table: LookupTable): string => valueCodeOf(table.type).replace(/\d+$/, '');

/** Refused before the file is read: a load needs what `/lookuptablemanager.loaddata` needs. */
export function requireLookupLoadAccess(principal: Principal, syncOnTargetTable: boolean): void {
  loadPermission(principal);
  // syncOnTargetTable deletes values.
  if (syncOnTargetTable) requireAccess(principal, 'LOOKUPTABLE_REMOVE');
}

export interface LookupTarget {
  /** `?name=<uniqueName>` */
  readonly name?: string;
  /** `?tableId=<id>` */
  readonly tableId?: string;
}

/** The table the call names (undefined: each row names its own in a `lookupTable` column). */
export async function namedTable(
  db: Db,
  principal: Principal,
  code: string,
  target: LookupTarget,
): Promise<LookupTable | undefined> {
  if (target.name !== undefined && target.tableId !== undefined) {
    throw validationError('tableId', 'name the table by ?name= or by ?tableId=, not both');
  }
  let table: LookupTable | undefined;
  if (target.tableId !== undefined) {
    const id = parseTableId(target.tableId);
    table = await tables.tableById(db, principal, id);
    if (!table) throw notFound(`Lookup table ${id}`, 'tableId');
  } else if (target.name !== undefined) {
    table = await tables.tableByName(db, principal, target.name);
    if (!table) throw notFound(`Lookup table ${JSON.stringify(target.name)}`, 'name');
  } else {
    return undefined;
  }
  if (familyOf(table) !== code) {
    throw validationError(
      'typeCode',
      `${table.uniqueName} is a ${table.type} table: load its values as ${familyOf(table)}`,
    );
  }
  return table;
}

export interface LookupLoadLimits {
  /** File row number of the first row given (a resumed load skips the rows before it). */
  readonly firstRow: number;
  readonly chunkRows: number;
  readonly maxErrors: number;
  readonly onChunkError?: (err: unknown, firstRow: number, lastRow: number) => void;
  /** After each chunk (all of its tables committed); may throw to stop. */
  readonly afterChunk?: (done: {
    rows: number;
    inserted: number;
    updated: number;
    invalid: number;
  }) => Promise<void>;
}

export interface LookupFileResult {
  readonly result: LoadResult;
  /** The tables the file loaded into (for syncOnTargetTable), skipped rows included. */
  readonly tableIds: readonly number[];
}

/** A row refused here travels as null (the loader counts it invalid at its place); its message is ours. */
type Refusal = Omit<RowError, 'row'>;

/**
 * The rows of a file (after its header) into lookup values through `loadValues`, one call per chunk
 * (one per table and chunk when the rows name their tables). Row numbers are the file's.
 */
export async function loadLookupFile(
  db: Db,
  principal: Principal,
  code: string,
  table: LookupTable | undefined,
  header: readonly string[],
  rows: AsyncIterable<(string | null)[]>,
  options: LoadOptions,
  limits: LookupLoadLimits,
): Promise<LookupFileResult> {
  const at = header.indexOf(TABLE_COLUMN);
  if (table !== undefined && at >= 0) {
    throw validationError(
      'header',
      `name the table in ?name= or ?tableId=, or in a ${TABLE_COLUMN} column, not both`,
    );
  }
  if (table === undefined && at < 0) {
    throw validationError(
      'header',
      `name the table: ?name=<uniqueName>, ?tableId=<id> or a ${TABLE_COLUMN} column of table ids`,
    );
  }
  // JSON tables: the cells of `value` are JSON text.
  const jsonAt = code === 'JLTV' ? header.indexOf('value') : -1;

  const ids = new Set<number>(table === undefined ? [] : [table.id]);
  const skip = limits.firstRow;
  let rowNo = -1;
  async function* fresh(): AsyncIterable<(string | null)[]> {
    for await (const r of rows) {
      rowNo++;
      if (at >= 0 && ids.size < 10_000) {
        const id = coerceValue('integer', r[at]);
        if (typeof id === 'number' && id > 0) ids.add(id);
      }
      if (rowNo >= skip) yield r;
    }
  }

  const errors: RowError[] = [];
  let [inserted, updated, invalid, total] = [0, 0, 0, 0];
  let start = skip;
  for await (const chunk of chunked(fresh(), limits.chunkRows)) {
    const refused = new Map<number, Refusal>();
    const data = chunk.map((raw, i): unknown[] | null => {
      // Empty cells are null (a CSV's are '', an XLSX's none): as the README says, and as an XLSX loads.
      const r = raw.map((v) => (v === '' ? null : v));
      if (jsonAt < 0) return r;
      const cell = r[jsonAt];
      if (cell === null || cell === undefined || cell.trim() === '') return r;
      try {
        return r.map((v, j) => (j === jsonAt ? (JSON.parse(cell) as unknown) : v));
      } catch (e) {
        refused.set(i, { field: 'value', message: `is not valid JSON (${(e as Error).message})` });
        return null;
      }
    });
    const parts =
      table !== undefined
        ? [{ code: valueCodeOf(table.type), rows: data, index: null }]
        : await byCode(db, principal, code, at, data);
    const chunkErrors: RowError[] = [];
    for (const part of parts) {
      const r = await loadValues(
        db,
        principal,
        part.code,
        table === undefined ? undefined : String(table.id),
        { header, data: part.rows, options },
        {
          maxBatchRows: limits.chunkRows,
          ...(limits.onChunkError
            ? { onChunkError: (err: unknown) => limits.onChunkError!(err, start, start + chunk.length - 1) }
            : {}),
        },
      );
      inserted += r.inserted;
      updated += r.updated;
      invalid += r.invalid;
      for (const e of r.errors) {
        const i = part.index === null ? e.row : part.index[e.row]!;
        const mine = refused.get(i);
        chunkErrors.push(mine === undefined ? { ...e, row: start + i } : { row: start + i, ...mine });
      }
    }
    chunkErrors.sort((a, b) => a.row - b.row);
    errors.push(...chunkErrors.slice(0, Math.max(0, limits.maxErrors - errors.length)));
    total += chunk.length;
    start += chunk.length;
    await limits.afterChunk?.({ rows: total, inserted, updated, invalid });
  }
  return {
    result: { inserted, updated, invalid, total, errors, errorsTruncated: invalid > errors.length },
    tableIds: [...ids],
  };
}

/**
 * A chunk whose rows name their tables, split by the exact value code of those tables (an `MLTV`
 * file may fill MATRIX and MATRIX3 tables alike). Rows naming no table of the family stay under the
 * file's code, so `loadValues` reports them (unknown table, or a table of another kind).
 */
async function byCode(
  db: Db,
  principal: Principal,
  code: string,
  at: number,
  data: readonly (unknown[] | null)[],
): Promise<{ code: string; rows: (unknown[] | null)[]; index: number[] }[]> {
  const idOf = (r: unknown[] | null) => {
    const id = r === null ? undefined : coerceValue('integer', r[at]);
    return typeof id === 'number' && id > 0 ? id : undefined;
  };
  const wanted = [...new Set(data.map(idOf).filter((id) => id !== undefined))];
  const found = new Map((await tables.tablesByIds(db, principal, wanted)).map((t) => [t.id, t]));
  const parts = new Map<string, { code: string; rows: (unknown[] | null)[]; index: number[] }>();
  data.forEach((r, i) => {
    const t = found.get(idOf(r) ?? 0);
    const exact = t !== undefined && familyOf(t) === code ? valueCodeOf(t.type) : code;
    let p = parts.get(exact);
    if (!p) parts.set(exact, (p = { code: exact, rows: [], index: [] }));
    p.rows.push(r);
    p.index.push(i);
  });
  return [...parts.values()];
}

/**
 * syncOnTargetTable: the values of the loaded tables (those of the file's family, in the caller's
 * partition) last updated before `mark`, i.e. not touched by the load, are deleted.
 */
export async function syncLookupTables(
  db: Db,
  principal: Principal,
  code: string,
  tableIds: readonly number[],
  mark: string,
): Promise<number> {
  const targets = (await tables.tablesByIds(db, principal, tableIds)).filter((t) => familyOf(t) === code);
  let deleted = 0;
  for (const t of targets) {
    deleted += await deleteValuesByFilter(db, principal, t.id, {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'lastUpdateDate', operator: 'lessThan', value: mark }],
      },
    });
  }
  return deleted;
}
