// `/loaddata/CRCP`: bulk loads of condition record items, with or without splicing. The flow:
// `planCrcp` (header + options → plan, no database) → sets of the call resolved in one query →
// every row checked in JS (values through the engine's checkValue, the set's keys and groups,
// overlaps between rows of the load) → per chunk, one transaction: lock the chunk's sets, COPY into
// a staging table, then set-based SQL — find the existing items each new one overlaps, and either
// report those rows (no splicing options) or cut them: covered items removed (to CRCIH when
// `supersedeRecords`), the others shrunk to their first remaining piece, further pieces inserted
// (splits), then the new items inserted. Nothing is done row by row; record history (issue 12) is
// written by the same statements (historyCte).
// The stages live apart: splice-plan.ts (plan and row checks, no database), splice-apply.ts (the SQL
// of a chunk); this file is the entry (`loadConditionRecords`) that runs them.

import { inUserGroup, type Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { DeadlineError, committedBeforeDeadline } from '../../db/deadline.ts';
import { loadTypeContext, type TypeContext } from '../../engine/context.ts';
import { boundByIndexes, indexedColumns } from '../../engine/indexes.ts';
import { requireAccess } from '../../engine/crud.ts';
import type { LoadBody, RowError } from '../../engine/loaddata.ts';
import { ITEM_TYPE } from '../../engine/registry-condrec.ts';
import { loadRunning, wroteRows } from '../../engine/statistics.ts';
import { isObj } from '../../engine/values.ts';
import { runChunk, type ChunkCounts } from './splice-apply.ts';
import {
  checkRows,
  dropOverlapsWithinLoad,
  planCrcp,
  typedSplicing,
  type Plan,
  type SetInfo,
} from './splice-plan.ts';

export interface CrcpResult {
  readonly inserted: number;
  readonly cut: number;
  readonly split: number;
  readonly superseded: number;
  readonly invalid: number;
  readonly total: number;
  readonly errors: readonly RowError[];
  readonly errorsTruncated: boolean;
}

const CHUNK_ROWS = 10_000;
const MAX_ERRORS = 1_000;

/**
 * The sets the rows name, one query for the call: a JSON number is a set's id, a string its
 * uniqueName or (all digits) its id. A string of digits that is one set's uniqueName and another
 * set's id names neither (the row's error says so: the id goes as a JSON number).
 */
async function resolveSets(db: Db, principal: Principal, plan: Plan, rows: readonly unknown[]) {
  const ids = new Set<number>();
  const names = new Set<string>();
  for (const r of rows) {
    const v: unknown = Array.isArray(r) ? r[plan.setAt] : undefined;
    if (typeof v === 'number' && Number.isSafeInteger(v)) ids.add(v);
    else if (typeof v === 'string' && /^\d+$/.test(v)) {
      // Digits past a safe integer name no id (ids are far below), only a uniqueName: as a bigint
      // parameter they failed the whole load ("out of range for type bigint").
      if (Number.isSafeInteger(Number(v))) ids.add(Number(v));
      names.add(v);
    }
    // A name with NUL names no set (the database cannot take it as text): the row's error says so.
    else if (typeof v === 'string' && v !== '' && !v.includes('\u0000')) names.add(v);
  }
  const r = await db.query<{
    id: number;
    name: string;
    key_size: number;
    edit: string | null;
    view: string | null;
  }>(
    `SELECT id, unique_name AS name, key_size, user_group_edit AS edit, user_group_view_details AS view
       FROM condition_record_sets WHERE partition_id = $1 AND (id = ANY($2::bigint[]) OR unique_name = ANY($3::text[]))`,
    [principal.partitionId, [...ids], [...names]],
  );
  const byId = new Map<number, SetInfo>();
  const byName = new Map<string, SetInfo>();
  for (const s of r.rows) {
    // A set hidden from the caller (its userGroupViewDetails) is named by no row, as an unknown one.
    if (!inUserGroup(principal, s.view)) continue;
    const info = { id: Number(s.id), name: s.name, keySize: s.key_size, edit: s.edit, view: s.view };
    byId.set(info.id, info);
    byName.set(info.name, info);
  }
  const setOf = (v: unknown): SetInfo | 'ambiguous' | undefined => {
    if (typeof v === 'number') return byId.get(v);
    if (typeof v !== 'string') return undefined;
    const named = byName.get(v);
    const numbered = /^\d+$/.test(v) ? byId.get(Number(v)) : undefined;
    if (named !== undefined && numbered !== undefined && named !== numbered) return 'ambiguous';
    return named ?? numbered;
  };
  return { setOf, sets: [...byId.values()] };
}

/**
 * `/loaddata/CRCP` (and `/loaddata/CRCI`, `/loaddata/CRCIn`: the same load without splicing; CRCIn
 * only into sets of that key size): the whole flow of a load; chunks are transactions of their own.
 */
export async function loadConditionRecords(
  db: Db,
  principal: Principal,
  body: LoadBody,
  limits: {
    maxBatchRows: number;
    chunkRows?: number;
    onChunkError?: (err: unknown, first: number, last: number) => void;
  },
  via = 'CRCP',
): Promise<CrcpResult> {
  requireAccess(principal, ITEM_TYPE.access.write);
  const tc = await loadTypeContext(db, principal, ITEM_TYPE);
  const sized = /^CRCI(\d+)$/.exec(via);
  let plan = planCrcp(tc, body, limits.maxBatchRows, via);
  const errors: RowError[] = [];
  const { setOf, sets } = await resolveSets(db, principal, plan, body.data);
  const contexts = new Map<number, TypeContext>();
  const indexed = sets.length === 0 ? new Set<string>() : await indexedColumns(db, ITEM_TYPE.table);
  for (const set of sets) {
    const setContext = await loadTypeContext(db, principal, ITEM_TYPE, String(set.id));
    contexts.set(set.id, boundByIndexes(setContext, indexed));
  }
  const fieldsOf = (set: SetInfo) => contexts.get(set.id)!.fields;
  const writable = sets.filter(
    (x) =>
      inUserGroup(principal, x.view) &&
      inUserGroup(principal, x.edit) &&
      (sized === null || x.keySize === Number(sized[1])),
  );
  plan = typedSplicing(plan, writable, fieldsOf);
  const rows = dropOverlapsWithinLoad(
    checkRows(principal, plan, setOf, fieldsOf, body.data, errors, sized ? Number(sized[1]) : undefined),
    errors,
  );
  rows.sort((a, b) => a.row - b.row);
  const total: ChunkCounts = { inserted: 0, cut: 0, split: 0, superseded: 0 };
  const chunkRows = limits.chunkRows ?? CHUNK_ROWS;
  // Vacuumed and analyzed once the loads settle (engine/statistics.ts), as the general loader's tables.
  const ended = loadRunning(db, ITEM_TYPE.table);
  try {
    for (let start = 0; start < rows.length; start += chunkRows) {
      const chunk = rows.slice(start, start + chunkRows);
      const chunkErrors: RowError[] = [];
      try {
        const c = await db.transaction((tx) => runChunk(tx, tc, principal, plan, chunk, chunkErrors));
        total.inserted += c.inserted;
        total.cut += c.cut;
        total.split += c.split;
        total.superseded += c.superseded;
        errors.push(...chunkErrors);
        wroteRows(db, ITEM_TYPE.table, c.inserted + c.cut + c.split + c.superseded);
      } catch (err) {
        // Past the deadline (or a statement cut at it) the call stops; chunks committed stay (503).
        if (err instanceof DeadlineError || (isObj(err) && err.code === '57014')) {
          if (start === 0) throw err instanceof DeadlineError ? err : new DeadlineError();
          throw committedBeforeDeadline(
            `rows up to ${rows[start - 1]!.row}`,
            `${total.inserted} inserted, ${total.cut} cut, ${total.split} split, ${total.superseded} superseded`,
          );
        }
        // Only database refusals become row errors; anything else fails the call.
        const sqlState = isObj(err) && typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code);
        if (!sqlState) throw err;
        // A set deleted (force) while the chunk was written: each row's error names its set.
        const setGone =
          err.code === '23503' &&
          err.constraint === 'condition_records_partition_id_condition_record_set_id_key_fkey';
        if (!setGone) limits.onChunkError?.(err, chunk[0]!.row, chunk.at(-1)!.row);
        const message =
          err.code === '23P01'
            ? 'overlaps an item written at the same time by another load (nothing of this chunk was written)'
            : setGone
              ? 'its condition record set was deleted meanwhile (nothing of this chunk was written)'
              : 'the chunk could not be written (nothing of it was)';
        for (const r of chunk)
          errors.push({ row: r.row, ...(setGone ? { field: 'conditionRecordSetId' } : {}), message });
      }
    }
  } finally {
    ended();
  }
  errors.sort((a, b) => a.row - b.row);
  return {
    ...total,
    invalid: errors.length,
    total: body.data.length,
    errors: errors.slice(0, MAX_ERRORS),
    errorsTruncated: errors.length > MAX_ERRORS,
  };
}
