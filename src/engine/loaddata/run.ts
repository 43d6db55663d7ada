// Bulk loads, stage 4, run: the whole flow of a load (`loadData`, `loadDataStream`): permission,
// plan, then chunk by chunk check in JS and write in one transaction (COPY straight into the table
// when no key exists yet, else the staged merge); counts and row errors, capped, in the LoadResult.

import type { Principal } from '../../access/access.ts';
import type { Db, Tx } from '../../db/db.ts';
import { Params, ident, qualified } from '../../db/sql.ts';
import { toAppError } from '../../http/envelope.ts';
import { AppError } from '../../http/errors.ts';
import { DeadlineError } from '../../db/deadline.ts';
import { loadTypeContext, parentsEditable, type TypeContext } from '../context.ts';
import { requireAccess } from '../access-check.ts';
import { addedColumnsRead, historyCte, historyEnabled, trackedFields } from '../history.ts';
import type { FieldDef, TypeDef } from '../registry.ts';
import { loadRunning, wroteRows } from '../statistics.ts';
import { planLoad, type LoadBody, type LoadPlan } from './plan.ts';
import { ChunkCheck, Contexts, nameOf, type RowError, type ValidRow } from './check.ts';
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
  const contexts = new Contexts(db, principal, base);
  const sql = buildMergeSql(plan, base, principal);
  const errors = new ErrorList(limits.maxErrors ?? MAX_ERRORS);
  let seen = new Set<string>();
  let inserted = 0;
  let updated = 0;
  let start = limits.firstRow ?? 0;
  const keyColumns = [...plan.key, ...plan.join].map((i) => plan.header[i]!.column);

  for await (const raw of chunks) {
    if (!limits.dedupeAcrossChunks) seen = new Set<string>();
    if (plan.nameAt !== undefined) await contexts.prepare(raw.map((r) => nameOf(plan, r)));
    const check = new ChunkCheck(plan, contexts, raw, start, seen);
    const write = async (): Promise<ChunkOutcome | undefined> => {
      // Both paths check the rows while COPY takes the first ones.
      const direct =
        plan.join.length === 0 ? await insertDirectly(db, plan, principal, base, check) : undefined;
      if (direct !== undefined) return direct;
      return runChunk(db, plan, sql, check);
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
      const message = `not written: the transaction of rows ${valid[0]!.row}..${valid.at(-1)!.row} failed and was rolled back (${reasonOf(err)})`;
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

const ARRAY_TYPE: Readonly<Record<FieldDef['type'], string>> = {
  string: 'text[]',
  integer: 'bigint[]',
  decimal: 'numeric[]',
  boolean: 'boolean[]',
  date: 'date[]',
  datetime: 'timestamptz[]',
  json: 'jsonb[]',
};

/**
 * Columns a new row can get a value in without the writer: those with a default (identity and
 * generated ones too), by table; every column (`'*'`) for a table with a BEFORE INSERT row trigger,
 * which may set any of them. The schema changes only with migrations.
 */
const defaultsOf = new Map<string, Set<string>>();

async function columnsWithDefaults(db: Db, table: string): Promise<Set<string>> {
  let known = defaultsOf.get(table);
  if (known === undefined) {
    const r = await db.query<{ c: string }>(
      `SELECT column_name AS c FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = $1
          AND (column_default IS NOT NULL OR is_identity = 'YES' OR is_generated <> 'NEVER')
       UNION ALL
       SELECT '*' FROM pg_trigger
        WHERE tgrelid = to_regclass($1) AND NOT tgisinternal AND tgtype & 7 = 7`,
      [table],
    );
    known = new Set(r.rows.map((x) => x.c));
    defaultsOf.set(table, known);
  }
  return known;
}

/**
 * The names of the tracked fields a COPY of these rows sets (non-null), in the order record history
 * lists them, when they are the same for every row and no tracked field outside the header has a
 * default; else undefined (the history's SQL then tests each field of each row).
 */
function sameFieldsSet(
  plan: LoadPlan,
  rows: readonly ValidRow[],
  defaulted: ReadonlySet<string>,
): string[] | undefined {
  const tracked = trackedFields(plan.type);
  const at = new Map(plan.header.map((f, i) => [f.name, i]));
  if (defaulted.has('*') || tracked.some((f) => !at.has(f.name) && defaulted.has(f.column))) return undefined;
  const columns = tracked.flatMap((f) => (at.has(f.name) ? [at.get(f.name)!] : []));
  const first = rows[0];
  if (first === undefined) return undefined;
  for (const r of rows) {
    for (const i of columns) if ((r.values[i] === null) !== (first.values[i] === null)) return undefined;
  }
  return tracked.filter((f) => at.has(f.name) && first.values[at.get(f.name)!] !== null).map((f) => f.name);
}

/**
 * The fast path of an insert-only chunk (no join fields): COPY the rows straight into the target —
 * no staging table, no merge. A business key that exists already (live or soft-deleted, or just
 * inserted by a concurrent load) fails the COPY with a unique violation, which rolls this attempt
 * back whole; the answer is then undefined and the chunk takes the merge path, which reports or
 * replaces those rows. (Checking the keys first cost a probe per row of every chunk, to spare only
 * loads that repeat keys without join fields.)
 */
async function insertDirectly(
  db: Db,
  plan: LoadPlan,
  principal: Principal,
  base: TypeContext,
  check: ChunkCheck,
): Promise<ChunkOutcome | undefined> {
  const { type } = plan;
  if (plan.missingForInsert !== undefined || type.fixed !== undefined) return undefined;
  // Rows describing a parent record (scopedBy) need it editable; the merge's SQL names those that
  // do not, so a chunk with one goes there (the COPY rolled back). The scoped field's values:
  const scoped = plan.header.findIndex((f) => f.column === type.scopedBy?.column);
  /**
   * The rows of the table with the chunk's business keys (alias `t`): a semi-join on the key list.
   * Its worst plan — statistics that do not know the partition yet — reads the partition once; a
   * probe per key (a lateral subquery) was planned on a partition-leading index of another column
   * then and read the partition once per key (20 s a chunk).
   */
  const ofChunk = (p: Params, rows: readonly ValidRow[]) => {
    const partition = p.add(principal.partitionId);
    const keys = plan.key.map((i) => {
      const f = plan.header[i]!;
      return {
        col: qualified('t', f.column),
        list: p.add(rows.map((r) => r.values[i])),
        type: ARRAY_TYPE[f.type],
      };
    });
    return `${ident(type.table)} t
     WHERE t.partition_id = ${partition} AND (${keys.map((k) => k.col).join(', ')}) IN
           (SELECT * FROM unnest(${keys.map((k) => `${k.list}::${k.type}`).join(', ')}))`;
  };
  // After the COPY, the chunk's rows (all new) are read back once for their record history: only the
  // columns it reads when the fields set are the same for every row, and `w` read by the history
  // alone, so that it is not kept aside (10,000 rows of a wide table spilled to disk on PostgreSQL).
  const defaulted = historyEnabled() ? await columnsWithDefaults(db, type.table) : new Set<string>();
  const recorded = (history: Params, rows: readonly ValidRow[]) => {
    const names = sameFieldsSet(plan, rows, defaulted);
    const setFields = names === undefined ? undefined : `${history.add(names)}::text[]`;
    const read =
      names === undefined
        ? 't.*'
        : addedColumnsRead(type)
            .map((c) => qualified('t', c))
            .join(', ');
    return `WITH w AS (SELECT ${read} FROM ${ofChunk(history, rows)}),
    ${historyCte('h', 'w', { tc: base, principal, params: history, kind: 'add', setFields })}
    SELECT 1 AS done`;
  };
  const prefix = [principal.partitionId, principal.userId, principal.userId];
  try {
    return await db.transaction(async (tx: Tx) => {
      const columns = ['partition_id', 'created_by', 'last_update_by', ...plan.header.map((f) => f.column)];
      await tx.copyFrom(
        type.table,
        columns,
        check.pieces((r) => csvLine(prefix, r.values), PIECE_ROWS),
      );
      const rows = check.valid; // every row is checked once the COPY has taken its pieces
      if (
        scoped >= 0 &&
        !(await parentsEditable(
          tx,
          principal,
          type,
          rows.map((r) => r.values[scoped]),
        ))
      )
        throw new ParentRefused();
      if (historyEnabled() && rows.length > 0) {
        const history = new Params();
        await tx.query(recorded(history, rows), history.values);
      }
      return { inserted: rows.length, updated: 0, errors: [] };
    });
  } catch (err) {
    if (err instanceof ParentRefused || (err as { code?: unknown }).code === '23505') return undefined;
    throw err;
  }
}

/** A direct insert's chunk names a parent record the principal may not change: the merge answers it. */
class ParentRefused extends Error {}

/**
 * One chunk in one transaction: stage by COPY (the rows checked as it takes them), update the
 * matches, insert the rest. Memory stays proportional to the chunk, not to the call.
 */
async function runChunk(db: Db, plan: LoadPlan, sql: MergeSql, check: ChunkCheck): Promise<ChunkOutcome> {
  return db.transaction(async (tx: Tx) => {
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
  if (matched)
    return { row: r.row, message: `not allowed to change the matching ${type.label} (user group)` };
  const by = type.scopedBy;
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
