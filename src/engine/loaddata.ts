// Bulk loads (`/loaddata/{TypeCode}`): a header of API field names and rows of values. `loadData`
// shows the flow: `planLoad` (header + options → LoadPlan, no database) → per chunk of rows
// `checkChunk` (every value through crud's `checkValue`, in JS) → `runChunk` (one transaction: COPY
// into a temporary staging table, then the set-based UPDATE and INSERT ... ON CONFLICT of
// `buildMergeSql`). Refused rows are reported per row; a chunk is all-or-nothing, and the chunks
// before a failed one stay committed (the architecture's chunked-transaction rule).
// `loadDataStream` is the same flow over chunks that arrive as an async iterable (file loads).

import type { Principal } from '../access/access.ts';
import type { Db, Queryable, Tx } from '../db/db.ts';
import { Params, ident, qualified } from '../db/sql.ts';
import { AppError, validationError } from '../http/errors.ts';
import { DeadlineError } from '../db/deadline.ts';
import { loadTypeContext, rowScope, type TypeContext } from './context.ts';
import { requireAccess } from './access-check.ts';
import { checkValue } from './value-check.ts';
import { historyCte, historyEnabled, withHistory } from './history.ts';
import type { FieldDef, TypeDef } from './registry.ts';
import { wroteRows } from './statistics.ts';

export interface LoadOptions {
  readonly detectJoinFields?: boolean;
  readonly joinFields?: readonly string[];
  /** Only for CRCP loads (condition records, a later area): refused with a -4 for every type there is. */
  readonly conditionRecords?: unknown;
  /**
   * A soft-deleted match is replaced by the row (columns absent from the header become NULL)
   * instead of being restored with its old values; needs join fields (file loads).
   */
  readonly replaceSoftDeleted?: boolean;
}

export interface LoadBody {
  readonly header: readonly string[];
  readonly data: readonly unknown[];
  readonly options?: LoadOptions;
}

export interface RowError {
  /** 0-based index of the row in `data`. */
  readonly row: number;
  readonly field?: string;
  readonly message: string;
}

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

/** Everything decided from the header and options, before any row is read. */
export interface LoadPlan {
  readonly type: TypeDef;
  /** Registry fields in header order (custom attributes are re-typed per context when checked). */
  readonly header: readonly FieldDef[];
  /** Join fields (as header positions); empty: every row is an insert of an entire record. */
  readonly join: readonly number[];
  /** Header positions of the business key; a duplicate key within the call is a row error. */
  readonly key: readonly number[];
  /** A required field absent from the header: rows can update, never insert. */
  readonly missingForInsert: FieldDef | undefined;
  /** Header position of the extension table `name` (types with attribute meta per table). */
  readonly nameAt: number | undefined;
  readonly replaceSoftDeleted: boolean;
}

const STAGE = 'rc_load_stage';
const ROWNUM = 'rownum';
const CHUNK_ROWS = 10_000;
const MAX_ERRORS = 1_000;

// ---------------------------------------------------------------------------------------------
// Plan: header and options → LoadPlan (no database)

export function planLoad(type: TypeDef, body: LoadBody, maxBatchRows: number): LoadPlan {
  if (!type.bulkLoadable) throw validationError('typeCode', `${type.code} cannot be bulk-loaded`);
  const options = body.options ?? {};
  if (options.conditionRecords !== undefined && type.code !== 'CRCP') {
    throw validationError('options.conditionRecords', 'applies only to CRCP loads');
  }
  if (body.data.length > maxBatchRows) {
    throw validationError('data', `at most ${maxBatchRows} rows per call (got ${body.data.length})`);
  }
  if (body.header.length === 0) throw validationError('header', 'must name at least one field');

  const byName = new Map(type.fields.map((f) => [f.name, f]));
  const seen = new Map<string, number>();
  const header = body.header.map((name, i) => {
    const f = byName.get(name);
    if (name === 'typedId' || f?.system)
      throw validationError(`header.${i}`, `${name} is set by the server, not loaded`);
    if (!f) throw validationError(`header.${i}`, `unknown field ${JSON.stringify(name)} of ${type.code}`);
    if (seen.has(name)) throw validationError(`header.${i}`, `${name} is already column ${seen.get(name)}`);
    seen.set(name, i);
    return f;
  });
  const at = (name: string) => seen.get(name);

  const nameAt = type.metaPerName ? at('name') : undefined;
  if (type.metaPerName && nameAt === undefined) {
    throw validationError('header', 'must contain name (the extension table each row belongs to)');
  }

  // detectJoinFields: the server's join fields (the business key); otherwise the given ones.
  const detect = options.detectJoinFields === true;
  const join: number[] = [];
  (detect ? type.businessKey : (options.joinFields ?? [])).forEach((name, i) => {
    const pos = at(name);
    if (pos === undefined) {
      throw validationError(
        detect ? 'header' : `options.joinFields.${i}`,
        `join field ${name} must appear in the header`,
      );
    }
    if (!join.includes(pos)) join.push(pos);
  });
  // An extension row belongs to one table: matching across tables would update the wrong ones.
  if (join.length > 0 && nameAt !== undefined && !join.includes(nameAt)) join.unshift(nameAt);

  if (options.replaceSoftDeleted === true && join.length === 0) {
    throw validationError(
      'replaceSoftDeleted',
      'needs join fields: give joinFields or set detectJoinFields to true',
    );
  }

  const key = type.businessKey.map((k) => at(k));
  const missingForInsert = type.fields.find(
    (f) => (f.required || type.businessKey.includes(f.name)) && !f.system && at(f.name) === undefined,
  );
  if (join.length === 0 && missingForInsert !== undefined) {
    throw validationError(
      'header',
      `must contain ${missingForInsert.name}: without join fields every row is a new record`,
    );
  }
  return {
    type,
    header,
    join,
    key: key.every((k) => k !== undefined) ? key : [],
    missingForInsert,
    nameAt,
    replaceSoftDeleted: options.replaceSoftDeleted === true,
  };
}

// ---------------------------------------------------------------------------------------------
// Check: rows → validated values (JS only)

export type Stored = string | number | boolean | null;

/** checkValue's output as COPY text will carry it (json fields are already their JSON text). */
function stored(v: unknown): Stored {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return JSON.stringify(v);
}

interface ValidRow {
  readonly row: number;
  /** Values in header order, in stored form (checkValue's output). */
  readonly values: readonly Stored[];
}

/** The per-table contexts of one call (extension types: attribute types differ per table). */
class Contexts {
  private readonly byName = new Map<string, TypeContext>();
  private readonly base: TypeContext;
  private readonly q: Queryable;
  private readonly principal: Principal;

  constructor(q: Queryable, principal: Principal, base: TypeContext) {
    this.q = q;
    this.principal = principal;
    this.base = base;
  }

  /** Loads the contexts of the given table names not seen yet: one query for which have meta. */
  async prepare(names: readonly (string | undefined)[]): Promise<void> {
    const type = this.base.type;
    const fresh = [...new Set(names)].filter((n): n is string => n !== undefined && !this.byName.has(n));
    if (!type.metaPerName || fresh.length === 0) return;
    // A load may name many tables; only those with attribute meta need their own context (a table
    // without meta types its attributes as text, exactly like the base context).
    const r = await this.q.query<{ name: string }>(
      `SELECT DISTINCT name FROM attribute_meta
        WHERE partition_id = $1 AND owner_type = $2 AND name = ANY($3::text[])`,
      [this.principal.partitionId, type.code, fresh],
    );
    for (const n of fresh) this.byName.set(n, this.base);
    for (const { name } of r.rows) {
      this.byName.set(name, await loadTypeContext(this.q, this.principal, type, name));
    }
  }

  of(name: string | undefined): TypeContext {
    return name === undefined ? this.base : (this.byName.get(name) ?? this.base);
  }
}

function nameOf(plan: LoadPlan, raw: unknown): string | undefined {
  if (plan.nameAt === undefined || !Array.isArray(raw)) return undefined;
  const v = checkValue(plan.header[plan.nameAt]!, raw[plan.nameAt]);
  return typeof v === 'string' ? undefined : (v.value as string);
}

/** The row's values in stored form, or why it is refused (first problem only: one error per row). */
function checkRow(plan: LoadPlan, contexts: Contexts, raw: unknown, row: number): ValidRow | RowError {
  if (!Array.isArray(raw)) return { row, message: 'must be an array of values' };
  if (raw.length !== plan.header.length) {
    return { row, message: `has ${raw.length} values; the header has ${plan.header.length}` };
  }
  const tc = contexts.of(nameOf(plan, raw));
  const values: Stored[] = new Array<Stored>(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const f = tc.fields.get(plan.header[i]!.name)!;
    const v = checkValue(f, raw[i]);
    if (typeof v === 'string') return { row, field: f.name, message: v };
    values[i] = stored(v.value);
  }
  if (plan.type.validate) {
    const problem = plan.type.validate(Object.fromEntries(plan.header.map((f, i) => [f.name, raw[i]])));
    const first = problem && Object.entries(problem)[0];
    if (first) return { row, field: first[0], message: first[1].errorMessage };
  }
  return { row, values };
}

/** Checks the rows of one chunk; `seen` holds the dedupe keys of the call's earlier valid rows. */
function checkChunk(
  plan: LoadPlan,
  contexts: Contexts,
  raw: readonly unknown[],
  start: number,
  seen: Set<string>,
): { valid: ValidRow[]; errors: RowError[] } {
  const valid: ValidRow[] = [];
  const errors: RowError[] = [];
  const identity = plan.join.length > 0 ? plan.join : plan.key;
  raw.forEach((r, i) => {
    const checked = checkRow(plan, contexts, r, start + i);
    if (!('values' in checked)) return void errors.push(checked);
    const key = dedupeKey(plan, checked.values);
    if (key !== undefined && seen.has(key)) {
      return void errors.push({
        row: checked.row,
        field: plan.header[identity.at(-1)!]!.name,
        message: `repeats the ${plan.join.length > 0 ? 'join fields' : 'business key'} of an earlier row`,
      });
    }
    if (key !== undefined) seen.add(key);
    valid.push(checked);
  });
  return { valid, errors };
}

/** The identity of a row for "duplicate within the call": its join key, or its business key. */
function dedupeKey(plan: LoadPlan, values: readonly Stored[]): string | undefined {
  const at = plan.join.length > 0 ? plan.join : plan.key;
  if (at.length === 0) return undefined;
  const key = at.map((i) => values[i]);
  // NULL matches nothing in SQL, so rows with a NULL join value never collide.
  return key.some((v) => v === null) ? undefined : JSON.stringify(key);
}

// ---------------------------------------------------------------------------------------------
// CSV for COPY

/**
 * One CSV line: `prefix` (numbers: the row number, or partition and audit ids) then every non-null
 * value quoted (quotes doubled); NULL is an unquoted empty field.
 */
export function csvLine(prefix: number | readonly number[], values: readonly Stored[]): string {
  let line = typeof prefix === 'number' ? String(prefix) : prefix.join(',');
  for (const v of values) {
    line += ',';
    if (v === null) continue;
    // checkValue refuses NUL, which no PostgreSQL text can hold.
    const text = typeof v === 'string' ? v : String(v);
    line += `"${text.replaceAll('"', '""')}"`;
  }
  return line;
}

// ---------------------------------------------------------------------------------------------
// Merge: the SQL of one chunk (built once per call; identifiers from the registry only)

/** A statement of the merge; with `rowsParam`, `$1` is the chunk's row numbers it works on. */
interface Stmt {
  readonly sql: string;
  readonly params: readonly unknown[];
  readonly rowsParam: boolean;
}

function paramsOf(stmt: Stmt, rows: readonly number[]): readonly unknown[] {
  return stmt.rowsParam ? [rows, ...stmt.params.slice(1)] : stmt.params;
}

interface MergeSql {
  readonly create: string;
  readonly columns: readonly string[];
  /** Statistics for the join of the update (a fresh temp table has none). */
  readonly analyze: boolean;
  /** Join mode: the matches the principal may edit get the header columns (RETURNING rownum). */
  readonly update: Stmt | undefined;
  /** The given rows as new records (RETURNING rownum); absent when the header lacks a key field. */
  readonly insert: Stmt | undefined;
  /** Of the given rows, those matching a record the principal may not edit (user groups). */
  readonly matched: Stmt | undefined;
}

function buildMergeSql(plan: LoadPlan, base: TypeContext, principal: Principal): MergeSql {
  const { type } = plan;
  const table = ident(type.table);
  const stage = ident(STAGE);
  const rownum = ident(ROWNUM);
  const cols = plan.header.map((f) => f.column);
  if (cols.includes(ROWNUM)) throw new Error(`${type.table} has a column named ${ROWNUM}`);
  const joinCols = plan.join.map((i) => cols[i]!);
  const keyCols = type.businessKey.map((k) => type.fields.find((f) => f.name === k)!.column);
  const joinMatch = joinCols.map((c) => `${qualified('t', c)} = ${qualified('s', c)}`).join(' AND ');
  // Can a match be one the principal may not edit? Only through user groups, for a non-admin; else
  // "matched" and "updated" are the same rows and the insert needs no anti-join.
  const restricted = (type.userGroups || type.scopedBy !== undefined) && !principal.admin;

  // Column types of the staging table = those of the target (CTAS copies no constraints), so COPY
  // parses each value as the column's type and the merge needs no casts.
  const create = `CREATE TEMP TABLE ${stage} ON COMMIT DROP AS
    SELECT NULL::int AS ${rownum}, ${cols.map((c) => qualified('t', c)).join(', ')}
      FROM ${table} t WITH NO DATA`;

  // A record of the partition matching the join fields, whether or not the principal may edit it.
  const matchExists = (p: Params) =>
    `EXISTS (SELECT 1 FROM ${table} t WHERE t.partition_id = ${p.add(principal.partitionId)}::bigint${
      type.fixed ? ` AND ${qualified('t', type.fixed.column)} = ${p.add(type.fixed.value)}::text` : ''
    } AND ${joinMatch})`;

  let update: Stmt | undefined;
  let matched: Stmt | undefined;
  if (joinCols.length > 0) {
    const p = new Params();
    const sets = plan.header
      .filter((f, i) => !f.key && !plan.join.includes(i))
      .map((f) => `${ident(f.column)} = ${qualified('s', f.column)}`);
    sets.push(
      'version = t.version + 1',
      'last_update_at = now()',
      `last_update_by = ${p.add(principal.userId)}`,
    );
    if (type.deleteMode === 'soft' && plan.replaceSoftDeleted) {
      // Replaced, not restored: what the row does not carry is emptied on soft-deleted matches.
      for (const f of type.fields) {
        if (f.system || f.key || plan.header.includes(f)) continue;
        sets.push(`${ident(f.column)} = CASE WHEN t.deleted_at IS NULL THEN t.${ident(f.column)} END`);
      }
    }
    if (type.deleteMode === 'soft') sets.push('deleted_at = NULL'); // a soft-deleted match is restored
    const scope = rowScope(base, principal, p, 't', { forEdit: true, includeDeleted: true });
    // With its record history (src/engine/history.ts): old values from the statement's snapshot.
    update = {
      sql: withHistory(
        `UPDATE ${table} t SET ${sets.join(', ')} FROM ${stage} s WHERE ${scope} AND ${joinMatch}`,
        {
          tc: base,
          principal,
          params: p,
          kind: 'write',
          // Only the header's fields can change (all of them when soft-deleted matches are replaced).
          changing: plan.replaceSoftDeleted ? undefined : plan.header.map((f) => f.name),
        },
        `w.${rownum}`,
        `s.${rownum}`,
      ),
      params: p.values,
      rowsParam: false,
    };
    if (restricted) {
      const m = new Params();
      const rows = m.add(null);
      matched = {
        sql: `SELECT s.${rownum} FROM ${stage} s WHERE s.${rownum} = ANY(${rows}::int[]) AND ${matchExists(m)}`,
        params: m.values,
        rowsParam: true,
      };
    }
  }

  let insert: Stmt | undefined;
  if (plan.missingForInsert === undefined) {
    const p = new Params();
    const where: string[] = [];
    if (joinCols.length > 0) {
      // Only the rows the update did not take; a row matching a record the principal may not
      // edit must not become a new record either.
      where.push(`s.${rownum} = ANY(${p.add(null)}::int[])`);
      if (restricted) where.push(`NOT ${matchExists(p)}`);
    }
    const values = [`${p.add(principal.partitionId)}::bigint`];
    const targetCols = ['partition_id'];
    if (type.fixed) {
      targetCols.push(type.fixed.column);
      values.push(`${p.add(type.fixed.value)}::text`);
    }
    const uid = `${p.add(principal.userId)}::bigint`;
    targetCols.push('created_by', 'last_update_by', ...cols);
    values.push(uid, uid, ...cols.map((c) => qualified('src', c)));
    const distinct = keyCols.map((c) => qualified('s', c)).join(', ');
    const conflictTarget = ['partition_id', ...type.uniqueColumns].map(ident).join(', ');
    let conflict = 'DO NOTHING';
    if (type.deleteMode === 'soft') {
      // As /add: a new row for the key of a soft-deleted record replaces that record whole.
      const replace = type.fields
        .filter((f) => !f.system && !f.key)
        .map((f) => `${ident(f.column)} = EXCLUDED.${ident(f.column)}`);
      replace.push(
        'deleted_at = NULL',
        'version = t.version + 1',
        'last_update_at = now()',
        'last_update_by = EXCLUDED.last_update_by',
      );
      const scope = rowScope(base, principal, p, 't', { forEdit: true, includeDeleted: true });
      conflict = `DO UPDATE SET ${replace.join(', ')} WHERE t.deleted_at IS NOT NULL AND ${scope}`;
    }
    const keyJoin = keyCols.map((c) => `${qualified('ins', c)} = ${qualified('src', c)}`).join(' AND ');
    const insertFrom = (source: string) =>
      `INSERT INTO ${table} AS t (${targetCols.map(ident).join(', ')})
       SELECT ${values.join(', ')} FROM ${source}
       ON CONFLICT (${conflictTarget}) ${conflict}
       RETURNING t.*`;
    const history = historyCte('h', 'ins', { tc: base, principal, params: p, kind: 'write' });
    // INSERT ... RETURNING cannot name the staging row, so the inserted keys are joined back to it.
    // Without join fields the keys of the stage are unique already (checked in JS), and its rows
    // are in row order as COPY wrote them. With join fields, DISTINCT ON the business key: of rows
    // sharing a new key the first is inserted and the others are duplicates (ON CONFLICT never
    // meets the same key twice in one command).
    const sql =
      joinCols.length === 0
        ? `WITH ins AS (${insertFrom(`${stage} src`)}), ${history}
           SELECT src.${rownum} FROM ${stage} src JOIN ins ON ${keyJoin}`
        : `WITH src AS (
             SELECT DISTINCT ON (${distinct}) s.* FROM ${stage} s WHERE ${where.join(' AND ')}
              ORDER BY ${distinct}, s.${rownum}
           ), ins AS (${insertFrom(`(SELECT * FROM src ORDER BY src.${rownum}) src`)}), ${history}
           SELECT src.${rownum} FROM src JOIN ins ON ${keyJoin}`;
    insert = {
      sql,
      params: p.values,
      rowsParam: joinCols.length > 0,
    };
  }
  return { create, columns: [ROWNUM, ...cols], analyze: joinCols.length > 0, update, insert, matched };
}

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
  function* chunks() {
    for (let start = 0; start < body.data.length; start += chunkRows) {
      yield body.data.slice(start, start + chunkRows);
    }
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

async function runLoad(
  db: Db,
  principal: Principal,
  plan: LoadPlan,
  chunks: Iterable<readonly unknown[]> | AsyncIterable<readonly unknown[]>,
  limits: StreamLimits & { readonly dedupeAcrossChunks: boolean },
): Promise<LoadResult> {
  const base = await loadTypeContext(db, principal, plan.type);
  const contexts = new Contexts(db, principal, base);
  const sql = buildMergeSql(plan, base, principal);
  const errors = new ErrorList(limits.maxErrors ?? MAX_ERRORS);
  let seen = new Set<string>();
  let inserted = 0;
  let updated = 0;
  let start = limits.firstRow ?? 0;

  for await (const raw of chunks) {
    if (!limits.dedupeAcrossChunks) seen = new Set<string>();
    await contexts.prepare(raw.map((r) => nameOf(plan, r)));
    const { valid, errors: chunkErrors } = checkChunk(plan, contexts, raw, start, seen);
    if (valid.length > 0) {
      const write = async (): Promise<ChunkOutcome> =>
        (plan.join.length === 0 ? await insertDirectly(db, plan, principal, base, valid) : undefined) ??
        runChunk(db, plan, sql, valid);
      const outcome = await write().catch((err: unknown): ChunkOutcome => {
        // Past the request's deadline the whole call stops (503); committed chunks stay whole.
        if (err instanceof DeadlineError) throw err;
        // PostgreSQL cut a statement at the deadline (statement_timeout): the same stop.
        if ((err as { code?: unknown }).code === '57014') throw new DeadlineError();
        limits.onChunkError?.(err, valid[0]!.row, valid.at(-1)!.row);
        const message = `not written: the transaction of rows ${valid[0]!.row}..${valid.at(-1)!.row} failed and was rolled back (${reasonOf(err)})`;
        return { updated: 0, inserted: 0, errors: valid.map((v) => ({ row: v.row, message })) };
      });
      inserted += outcome.inserted;
      updated += outcome.updated;
      chunkErrors.push(...outcome.errors);
    }
    errors.addChunk(chunkErrors);
    start += raw.length;
    const rows = start - (limits.firstRow ?? 0);
    await limits.afterChunk?.({ rows, inserted, updated, invalid: errors.count });
  }
  // Fresh planner statistics once the load settles (a large share of the table may be new).
  wroteRows(db, plan.type.table, inserted + updated);
  return {
    inserted,
    updated,
    invalid: errors.count,
    total: start - (limits.firstRow ?? 0),
    errors: errors.listed,
    errorsTruncated: errors.count > errors.listed.length,
  };
}

/** A failed chunk's reason without SQL text: our own message, or the SQLSTATE. */
function reasonOf(err: unknown): string {
  if (err instanceof AppError) return err.message;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? `database error ${code}` : 'database error';
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
 * The fast path of an insert-only chunk (no join fields): when none of its business keys exists yet
 * (live or soft-deleted), COPY the rows straight into the target — no staging table, no merge.
 * Answers undefined when the chunk needs the merge path instead: a key exists, or a concurrent
 * insert of the same key won the race (the unique violation rolls this attempt back whole).
 */
async function insertDirectly(
  db: Db,
  plan: LoadPlan,
  principal: Principal,
  base: TypeContext,
  rows: readonly ValidRow[],
): Promise<ChunkOutcome | undefined> {
  const { type } = plan;
  if (plan.missingForInsert !== undefined || type.fixed !== undefined) return undefined;
  /** The rows of the table with the chunk's business keys. */
  const ofChunk = (p: Params) => {
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
  const params = new Params();
  const existing = `SELECT 1 FROM ${ofChunk(params)} LIMIT 1`;
  // After the COPY, the chunk's rows (all new) are read back once for their record history.
  const history = new Params();
  const recorded = `WITH w AS (SELECT t.* FROM ${ofChunk(history)}),
    ${historyCte('h', 'w', { tc: base, principal, params: history, kind: 'add' })}
    SELECT count(*)::int AS n FROM w`;
  const prefix = [principal.partitionId, principal.userId, principal.userId];
  let csv = '';
  for (const r of rows) csv += `${csvLine(prefix, r.values)}\n`;
  try {
    return await db.transaction(async (tx: Tx) => {
      if ((await tx.query(existing, params.values)).rows.length > 0) return undefined;
      const columns = ['partition_id', 'created_by', 'last_update_by', ...plan.header.map((f) => f.column)];
      await tx.copyFrom(type.table, columns, csv);
      if (historyEnabled()) await tx.query(recorded, history.values);
      return { inserted: rows.length, updated: 0, errors: [] };
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === '23505') return undefined;
    throw err;
  }
}

/** One chunk in one transaction: stage by COPY, update the matches, insert the rest. */
async function runChunk(
  db: Db,
  plan: LoadPlan,
  sql: MergeSql,
  rows: readonly ValidRow[],
): Promise<ChunkOutcome> {
  // One CSV text per chunk: memory stays proportional to the chunk, not to the call.
  let csv = '';
  for (const r of rows) csv += `${csvLine(r.row, r.values)}\n`;

  return db.transaction(async (tx: Tx) => {
    await tx.query(sql.create);
    await tx.copyFrom(STAGE, sql.columns, csv);
    if (sql.analyze) await tx.query(`ANALYZE ${ident(STAGE)}`);
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
    let matched = new Set<number>();
    if (sql.matched && left.length > 0) {
      const r = await tx.query<{ rownum: number }>(sql.matched.sql, paramsOf(sql.matched, left));
      matched = new Set(r.rows.map((m) => m.rownum));
    }
    const byRow = new Map(rows.map((r) => [r.row, r]));
    return {
      updated,
      inserted,
      errors: left.map((n) => refusal(plan, byRow.get(n)!, matched.has(n))),
    };
  });
}

/** Why a valid row was neither an update nor an insert. */
function refusal(plan: LoadPlan, r: ValidRow, matched: boolean): RowError {
  const { type } = plan;
  if (matched)
    return { row: r.row, message: `not allowed to change the matching ${type.label} (user group)` };
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
