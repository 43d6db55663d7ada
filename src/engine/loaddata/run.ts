// Bulk loads, stage 4, run: the whole flow of a load (`loadData`, `loadDataStream`): permission,
// plan, then chunk by chunk check in JS and write in one transaction (COPY straight into the table
// when no key exists yet, else the staged merge); counts and row errors, capped, in the LoadResult.

import type { Principal } from '../../access/access.ts';
import { batchTransaction, type Db, type Tx } from '../../db/db.ts';
import { toAppError } from '../../http/envelope.ts';
import { AppError } from '../../http/errors.ts';
import { DeadlineError, committedBeforeDeadline } from '../../db/deadline.ts';
import { loadTypeContext } from '../context.ts';
import { indexedColumns } from '../indexes.ts';
import { requireAccess } from '../access-check.ts';
import type { TypeDef } from '../registry.ts';
import { loadRunning, wroteRows } from '../statistics.ts';
import { planLoad, type LoadBody, type LoadPlan } from './plan.ts';
import { ChunkCheck, Contexts, nameOf, type RowError, type ValidRow } from './check.ts';
import { insertDirectly } from './direct.ts';
import {
  PIECE_ROWS,
  STAGE,
  buildMergeSql,
  csvLine,
  paramsOf,
  type MergeSql,
  type Stmt,
} from './merge-sql.ts';

export interface LoadResult {
  readonly inserted: number;
  readonly updated: number;
  readonly invalid: number;
  readonly total: number;
  readonly errors: readonly RowError[];
  readonly errorsTruncated: boolean;
}

export interface LoadLimits {
  /** Most rows in one call (config `maxBatchRows`). */
  readonly maxBatchRows: number;
  /** Rows per transaction; 10,000 unless given. */
  readonly chunkRows?: number;
  /** Most row errors listed in the answer (all are counted); 1,000 unless given. */
  readonly maxErrors?: number;
  /** Told about a chunk whose SQL failed (the route logs it; the answer holds no SQL text). */
  readonly onChunkError?: (err: unknown, firstRow: number, lastRow: number) => void;
  /**
   * Run first in each chunk's transaction, before its rows are written: a module's own lock or check
   * that must hold until the chunk commits (a lookup table's row, lookuptables/load.ts). Throwing
   * refuses the chunk and the rest of the load (an AppError is the answer); chunks committed stay.
   */
  readonly beforeChunk?: (tx: Tx) => Promise<void>;
}

const CHUNK_ROWS = 10_000;
const MAX_ERRORS = 1_000;

// ---------------------------------------------------------------------------------------------
// Run: the whole flow of a load

/** Row errors in row order, at most `cap` of them listed, all of them counted. */
class ErrorList {
  readonly listed: RowError[] = [];
  count = 0;
  private readonly cap: number;

  constructor(cap: number) {
    this.cap = cap;
  }

  /** Errors of one chunk; chunks come in row order, so the list stays sorted. */
  addChunk(errors: RowError[]): void {
    this.count += errors.length;
    errors.sort((a, b) => a.row - b.row);
    for (const e of errors) {
      if (this.listed.length >= this.cap) return;
      this.listed.push(e);
    }
  }
}

interface ChunkOutcome {
  readonly updated: number;
  readonly inserted: number;
  readonly errors: RowError[];
}

/**
 * `/loaddata/{TC}`: permission, plan, then chunk by chunk: check in JS, merge in one transaction.
 * Counts are exact (`invalid` = every row not written); `errors` lists the first `maxErrors`.
 */
export async function loadData(
  db: Db,
  principal: Principal,
  type: TypeDef,
  body: LoadBody,
  limits: LoadLimits,
): Promise<LoadResult> {
  requireAccess(principal, type.access.write);
  const plan = planLoad(type, body, limits.maxBatchRows);
  const chunkRows = limits.chunkRows ?? CHUNK_ROWS;
  // A body's rows may be parsed only as they are read (src/http/json-rows.ts). One chunk reads them
  // as its COPY takes them (a malformed row rolls it back); several chunks read all of them first, so
  // that none is written when one is malformed.
  const rows = body.data.length > chunkRows ? body.data.slice() : body.data;
  function* chunks() {
    if (rows.length <= chunkRows) return void (yield rows);
    for (let start = 0; start < rows.length; start += chunkRows) yield rows.slice(start, start + chunkRows);
  }
  return runLoad(db, principal, plan, chunks(), { ...limits, dedupeAcrossChunks: true });
}

/** What a streamed load has done so far (counted from its `firstRow`). */
export interface LoadProgress {
  readonly rows: number;
  readonly inserted: number;
  readonly updated: number;
  readonly invalid: number;
}

export interface StreamLimits extends Omit<LoadLimits, 'maxBatchRows' | 'chunkRows'> {
  /** File row number of the first row given (a resumed load keeps the file's numbering). */
  readonly firstRow?: number;
  /** Told after each chunk; may throw to stop the load between chunks (cancellation). */
  readonly afterChunk?: (done: LoadProgress) => Promise<void>;
}

/**
 * File loads: the same plan, checks and merge as `loadData`, over rows that arrive as an async
 * iterable of chunks (each chunk one transaction), without the per-call row limit. Memory stays
 * bounded by a chunk: a row repeating the key of a row of an earlier chunk is not refused in JS but
 * meets that row in the database (an update, or a duplicate-key row error without join fields).
 */
export async function loadDataStream(
  db: Db,
  principal: Principal,
  type: TypeDef,
  head: Omit<LoadBody, 'data'>,
  chunks: AsyncIterable<readonly unknown[]>,
  limits: StreamLimits,
): Promise<LoadResult> {
  requireAccess(principal, type.access.write);
  const plan = planLoad(type, { ...head, data: [] }, Number.POSITIVE_INFINITY);
  return runLoad(db, principal, plan, chunks, { ...limits, dedupeAcrossChunks: false });
}

type Chunks = Iterable<readonly unknown[]> | AsyncIterable<readonly unknown[]>;
type RunLimits = StreamLimits & { readonly dedupeAcrossChunks: boolean };

/** The load, marked as running on its table (statistics wait for the end of a many-call load). */
async function runLoad(
  db: Db,
  principal: Principal,
  plan: LoadPlan,
  chunks: Chunks,
  limits: RunLimits,
): Promise<LoadResult> {
  const ended = loadRunning(db, plan.type.table);
  try {
    return await loadChunks(db, principal, plan, chunks, limits);
  } finally {
    ended();
  }
}

async function loadChunks(
  db: Db,
  principal: Principal,
  plan: LoadPlan,
  chunks: Chunks,
  limits: RunLimits,
): Promise<LoadResult> {
  const base = await loadTypeContext(db, principal, plan.type);
  const contexts = new Contexts(db, principal, base, await indexedColumns(db, plan.type.table));
  const sql = buildMergeSql(plan, base, principal);
  const errors = new ErrorList(limits.maxErrors ?? MAX_ERRORS);
  let seen = new Set<string>();
  let inserted = 0;
  let updated = 0;
  let start = limits.firstRow ?? 0;
  const keyColumns = [...plan.key, ...plan.join].map((i) => plan.header[i]!.column);

  try {
    for await (const raw of chunks) {
      if (!limits.dedupeAcrossChunks) seen = new Set<string>();
      if (plan.nameAt !== undefined) await contexts.prepare(raw.map((r) => nameOf(plan, r)));
      const check = new ChunkCheck(plan, contexts, raw, start, seen);
      const write = async (): Promise<ChunkOutcome | undefined> => {
        // Both paths check the rows while COPY takes the first ones.
        const direct =
          plan.join.length === 0
            ? await insertDirectly(db, plan, principal, base, check, limits.beforeChunk)
            : undefined;
        if (direct !== undefined) return direct;
        return runChunk(db, plan, sql, check, limits.beforeChunk);
      };
      const outcome = await write().catch((err: unknown): ChunkOutcome | undefined => {
        // Past the request's deadline the whole call stops (503); committed chunks stay whole.
        if (err instanceof DeadlineError) throw err;
        // A refusal of the request (a malformed row of a body parsed as it is read), not of the chunk.
        if (err instanceof AppError) throw err;
        // PostgreSQL cut a statement at the deadline (statement_timeout): the same stop.
        if ((err as { code?: unknown }).code === '57014') throw new DeadlineError();
        const { valid } = check.all();
        if (valid.length === 0) throw err;
        limits.onChunkError?.(err, valid[0]!.row, valid.at(-1)!.row);
        // One row: the database's reason is its own; of several, each is named with the chunk.
        const message =
          valid.length === 1
            ? reasonOf(err)
            : `not written: the transaction of rows ${valid[0]!.row}..${valid.at(-1)!.row} failed and was rolled back (${reasonOf(err)})`;
        return { updated: 0, inserted: 0, errors: valid.map((v) => ({ row: v.row, message })) };
      });
      const { errors: chunkErrors } = check.all();
      if (outcome !== undefined) {
        inserted += outcome.inserted;
        updated += outcome.updated;
        chunkErrors.push(...outcome.errors);
        // Fresh planner statistics: of the key columns while the load runs, of all once it settles.
        wroteRows(db, plan.type.table, outcome.inserted + outcome.updated, { keyColumns });
      }
      errors.addChunk(chunkErrors);
      start += raw.length;
      const rows = start - (limits.firstRow ?? 0);
      await limits.afterChunk?.({ rows, inserted, updated, invalid: errors.count });
    }
  } catch (err) {
    // Chunks committed before the deadline stay: the answer says so (not "rolled back").
    const done = start - (limits.firstRow ?? 0);
    if (err instanceof DeadlineError && done > 0) {
      throw committedBeforeDeadline(
        `the first ${done} rows`,
        `${inserted} inserted, ${updated} updated, ${errors.count} invalid`,
      );
    }
    throw err;
  }
  return {
    inserted,
    updated,
    invalid: errors.count,
    total: start - (limits.firstRow ?? 0),
    errors: errors.listed,
    errorsTruncated: errors.count > errors.listed.length,
  };
}

/** A failed chunk's reason without SQL text: our own message, or the database's as answered. */
function reasonOf(err: unknown): string {
  return toAppError(err).message;
}

/**
 * One chunk in one transaction: stage by COPY (the rows checked as it takes them), update the
 * matches, insert the rest. Memory stays proportional to the chunk, not to the call. Two loads
 * (or a load and a batch) writing the same keys in other orders can deadlock on PostgreSQL: the
 * chunk PostgreSQL rolls back runs again (batchTransaction; its rows, checked by then, copied anew).
 */
async function runChunk(
  db: Db,
  plan: LoadPlan,
  sql: MergeSql,
  check: ChunkCheck,
  beforeChunk: LoadLimits['beforeChunk'],
): Promise<ChunkOutcome> {
  return batchTransaction(db, async (tx: Tx) => {
    await beforeChunk?.(tx);
    await tx.query(sql.create);
    await tx.copyFrom(
      STAGE,
      sql.columns,
      check.pieces((r) => csvLine(r.row, r.values), PIECE_ROWS),
    );
    const rows = check.valid;
    if (rows.length === 0) return { updated: 0, inserted: 0, errors: [] };
    if (sql.analyze !== undefined) await tx.query(sql.analyze);
    let left = rows.map((r) => r.row);
    let updated = 0;
    if (sql.update) {
      // (PGlite runs one transaction at a time: nothing to queue behind.)
      if (sql.lockMatches && db.kind === 'postgres')
        await tx.query(sql.lockMatches.sql, sql.lockMatches.params);
      const r = await tx.query<{ rownum: number }>(sql.update.sql, sql.update.params);
      // A row whose join fields match several records updates them all; it counts once.
      const done = new Set(r.rows.map((u) => u.rownum));
      updated = done.size;
      left = left.filter((n) => !done.has(n));
    }
    let inserted = 0;
    if (sql.insert && left.length > 0) {
      const r = await tx.query<{ rownum: number }>(sql.insert.sql, paramsOf(sql.insert, left));
      const done = new Set(r.rows.map((u) => u.rownum));
      inserted = done.size;
      left = left.filter((n) => !done.has(n));
    }
    const byRow = new Map(rows.map((r) => [r.row, r]));
    // Keys a concurrent load inserted after this chunk's UPDATE looked (each statement sees what had
    // committed when it began) are matches now. A key given by two rows of the chunk stays a
    // repeated key, as without a concurrent load.
    const racing = sql.updateLeft && sql.insert && left.length > 0 ? onceGivenKeys(plan, rows, left) : [];
    if (sql.updateLeft && racing.length > 0) {
      const r = await tx.query<{ rownum: number }>(sql.updateLeft.sql, paramsOf(sql.updateLeft, racing));
      const done = new Set(r.rows.map((u) => u.rownum));
      updated += done.size;
      left = left.filter((n) => !done.has(n));
    }
    const rowsOf = async (stmt: Stmt | undefined): Promise<Set<number>> => {
      if (!stmt || left.length === 0) return new Set();
      const r = await tx.query<{ rownum: number }>(stmt.sql, paramsOf(stmt, left));
      return new Set(r.rows.map((m) => m.rownum));
    };
    const matched = await rowsOf(sql.matched);
    const parentRefused = await rowsOf(sql.parentRefused);
    return {
      updated,
      inserted,
      errors: left.map((n) => refusal(plan, byRow.get(n)!, matched.has(n), parentRefused.has(n))),
    };
  });
}

/** Of the rows numbered `left`, those whose business key no other row of the chunk gives. */
function onceGivenKeys(plan: LoadPlan, rows: readonly ValidRow[], left: readonly number[]): number[] {
  const keyOf = (r: ValidRow) => JSON.stringify(plan.key.map((i) => r.values[i]));
  const count = new Map<string, number>();
  for (const r of rows) count.set(keyOf(r), (count.get(keyOf(r)) ?? 0) + 1);
  const byRow = new Map(rows.map((r) => [r.row, r]));
  return left.filter((n) => count.get(keyOf(byRow.get(n)!)) === 1);
}

/** Why a valid row was neither an update nor an insert. */
function refusal(plan: LoadPlan, r: ValidRow, matched: boolean, parentRefused: boolean): RowError {
  const { type } = plan;
  const by = type.scopedBy;
  if (matched) {
    // Named by the key of the record whose user group refuses it: the described record's (a row of
    // a product extension: its sku), else the row's own.
    const keyName = type.businessKey.at(-1);
    const field =
      by !== undefined
        ? type.fields.find((f) => f.column === by.column)
        : type.fields.find((f) => f.name === keyName);
    const at = field === undefined ? -1 : plan.header.indexOf(field);
    return {
      row: r.row,
      ...(field === undefined ? {} : { field: field.name }),
      message: `not allowed to change the matching ${type.label}${at < 0 ? '' : ` of ${JSON.stringify(r.values[at])}`} (user group)`,
    };
  }
  if (parentRefused && by) {
    const field = type.fields.find((f) => f.column === by.column)!;
    const at = plan.header.indexOf(field);
    return {
      row: r.row,
      field: field.name,
      message: `not allowed to change the record ${JSON.stringify(r.values[at])} this ${type.label} describes (user group)`,
    };
  }
  if (plan.missingForInsert !== undefined) {
    return {
      row: r.row,
      field: plan.missingForInsert.name,
      message: `no ${type.label} matches the join fields, and a new record needs ${plan.missingForInsert.name}`,
    };
  }
  const key = plan.key.map((i) => `${plan.header[i]!.name}=${JSON.stringify(r.values[i])}`).join(', ');
  return {
    row: r.row,
    field: plan.header[plan.key.at(-1)!]!.name,
    message: `duplicate key: a ${type.label} with ${key} already exists or is loaded by an earlier row`,
  };
}
