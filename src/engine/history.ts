// Record history (issue 12): every change of every record, who made it, through which call or job.
// One table, `record_history` (migration 013): a row per changed record per write, with only the
// fields that changed (read as {"field": {"old": v, "new": v}}, API names, values as to_jsonb of the
// column), their names again in `changed_fields` (text[], for filtering; a bulk add's rows point to
// a list stored once instead: registry-history.ts `changedFieldsSql`), the action, the record's new
// version (a hard delete: the last one + 1), the actor and the origin. History is written in
// the same transaction — in the same statement where possible — as the change, so a failed or
// rolled-back write leaves none.
//
// API for code that writes records (the engine's crud and loaddata use it; so must any module that
// writes with its own SQL, inside its own transaction):
//
// 1. SQL writers — `withHistory(stmt, source, select)` wraps ONE data-modifying statement on a
//    registered type's table (alias `t`, no RETURNING clause of its own) into
//        WITH w AS (<stmt> RETURNING t.*[, extra]), h AS (INSERT INTO record_history ...)
//        SELECT <select> FROM w
//    The old values come from the statement's snapshot of the table (a CTE sees the rows as they
//    were before the statement), the new ones from RETURNING: ADD / UPDATE / DELETE / RESTORE and
//    the field diff are decided per row in SQL, set-based. `select` is read over `w`, whose
//    columns are the table's columns (use `selectList(tc, names, 'w')`, `count(*)`, or the extra
//    RETURNING expressions). A statement with WITH clauses of its own can instead add
//    `historyCte(name, written, source)` after a CTE `written` that returns `t.*`.
//    `source.kind`: 'write' for INSERT/UPDATE (soft deletes and restores included), 'delete' for a
//    hard DELETE (the changes list every non-null field of the deleted row as {old, new: null}).
//
// 2. JS writers — `recordHistory(q, principal, entries)` inserts entries whose diff the caller
//    computed (account role assignments, password changes: the fact, never the secret), in one
//    statement.
//
// 3. Origin — the HTTP layer calls `enterHistoryOrigin({ requestId, operation })` per request and
//    the job runner runs each job inside `runWithHistoryOrigin({ jobId }, fn)`; the writers above
//    read it (AsyncLocalStorage, like the request deadline), so no signature carries it. The actor
//    is the principal: user id and login, `tokenId` for api/OAuth tokens, `externalSystem` for
//    external JWTs.
//
// Reading (history of a record, across types, as of a time) lives in ./history-read.ts.

import { AsyncLocalStorage } from 'node:async_hooks';
import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { Params, ident, qualified } from '../db/sql.ts';
import type { TypeContext } from './context.ts';
import type { FieldDef, TypeDef } from './types.ts';

export type HistoryAction = 'ADD' | 'UPDATE' | 'DELETE' | 'RESTORE';

/** Where a write comes from: a request (id and operation) or an asynchronous job. */
export interface HistoryOrigin {
  readonly requestId?: string;
  readonly operation?: string;
  readonly jobId?: number;
}

const origins = new AsyncLocalStorage<HistoryOrigin>();

/** Gives the rest of the current async context (one request) its origin. */
export function enterHistoryOrigin(origin: HistoryOrigin): void {
  origins.enterWith(origin);
}

/** Runs `fn` (a job) with the given origin. */
export function runWithHistoryOrigin<T>(origin: HistoryOrigin, fn: () => T): T {
  return origins.run(origin, fn);
}

export function currentHistoryOrigin(): HistoryOrigin {
  return origins.getStore() ?? {};
}

// Whether writes record history: configuration (RECORD_HISTORY), set once at start-up by buildApp.
let enabled = true;

export function historyEnabled(): boolean {
  return enabled;
}

/** RECORD_HISTORY=false turns recording off (benchmarks, initial migrations); reading still works. */
export function configureHistory(options: { readonly enabled: boolean }): void {
  enabled = options.enabled;
}

/** The fields whose changes are recorded: everything but the server-maintained ones. */
export function trackedFields(type: TypeDef): FieldDef[] {
  return type.fields.filter((f) => !f.system);
}

const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
/** jsonb_build_object takes at most 100 arguments: 40 pairs per call, joined with ||. */
const PAIRS_PER_CALL = 40;

/**
 * A field's value as history stores it: a decimal as its exact text (as the API answers it), since
 * a JSON number read back is a double (0.1000000000000000000001 → 0.1, 1e400 → null).
 */
function valueSql(f: FieldDef, alias: string): string {
  const col = qualified(alias, f.column);
  return f.type === 'decimal' && !f.custom ? `${col}::text` : col;
}

/**
 * A stored row as JSON (`to_jsonb`, keyed by column) with its decimal columns as their exact text,
 * as history stores them: the state that reads of history rebuild values from.
 */
export function rowJsonSql(type: TypeDef, alias: string): string {
  const decimals = type.fields.filter((f) => f.type === 'decimal' && !f.custom);
  const row = `to_jsonb(${ident(alias)})`;
  if (decimals.length === 0) return row;
  const pairs = decimals.map((f) => `'${f.column}', ${qualified(alias, f.column)}::text`);
  return `(${row} || jsonb_build_object(${pairs.join(', ')}))`;
}

/**
 * `{name: value}` of the fields whose value is not null (a record's values when it is added or
 * deleted), in one jsonb_build_object per 40 fields stripped of nulls. A null left out reads as null
 * (presentChanges: the names are in `changed_fields`). JSON fields are added one by one, since
 * stripping would reach inside them.
 */
function presentJsonSql(fields: readonly FieldDef[], alias: string): string {
  const value = (f: FieldDef) => {
    if (!FIELD_NAME.test(f.name)) throw new Error(`bad field name ${f.name}`);
    return valueSql(f, alias);
  };
  const plain = fields.filter((f) => f.type !== 'json');
  const parts: string[] = [];
  for (let i = 0; i < plain.length; i += PAIRS_PER_CALL) {
    const pairs = plain.slice(i, i + PAIRS_PER_CALL).map((f) => `'${f.name}', ${value(f)}`);
    parts.push(`jsonb_strip_nulls(jsonb_build_object(${pairs.join(', ')}))`);
  }
  for (const f of fields.filter((j) => j.type === 'json')) {
    parts.push(
      `CASE WHEN ${value(f)} IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('${f.name}', ${value(f)}) END`,
    );
  }
  return parts.length === 0 ? `'{}'::jsonb` : parts.join(' || ');
}

/**
 * `{name: value}` of the fields whose `when` holds and whose value is not null (an update's old
 * values of the changed fields): a one-pair object per such field, `||`-joined. Where a few fields of
 * many hold this is ~4× cheaper than one jsonb_build_object of every pair, null or not, stripped
 * after (PGlite, 10,000 rows of 32 fields, one changed: ~35 ms against ~130 ms).
 */
function someJsonSql(fields: readonly FieldDef[], alias: string, when: (f: FieldDef) => string): string {
  if (fields.length === 0) return `'{}'::jsonb`;
  return fields
    .map((f) => {
      if (!FIELD_NAME.test(f.name)) throw new Error(`bad field name ${f.name}`);
      const col = qualified(alias, f.column);
      return `CASE WHEN ${col} IS NOT NULL AND ${when(f)} THEN jsonb_build_object('${f.name}', ${valueSql(f, alias)}) ELSE '{}'::jsonb END`;
    })
    .join(' || ');
}

/** The actor and origin columns of a history row, as parameters of `params`. */
const ACTOR_COLUMNS = [
  'actor_user_id',
  'actor_login',
  'actor_token_id',
  'actor_external_system',
  'request_id',
  'operation',
  'job_id',
] as const;

function actorValues(principal: Principal, params: Params): string[] {
  const o = currentHistoryOrigin();
  return [
    `${params.add(principal.userId)}::bigint`,
    `${params.add(principal.loginName)}::text`,
    `${params.add(principal.tokenId ?? null)}::bigint`,
    `${params.add(principal.externalSystem ?? null)}::text`,
    `${params.add(o.requestId ?? null)}::text`,
    `${params.add(o.operation ?? null)}::text`,
    `${params.add(o.jobId ?? null)}::bigint`,
  ];
}

export interface HistorySource {
  readonly tc: TypeContext;
  readonly principal: Principal;
  /** The statement's parameters; the history part adds its own. */
  readonly params: Params;
  /**
   * 'write': INSERT or UPDATE (incl. soft delete / restore), old values from the table's snapshot;
   * 'delete': a hard DELETE; 'add': rows known to be new, already in the table (after a COPY);
   * their ADD rows store the names of the fields set, not the values (rebuilt when read).
   */
  readonly kind: 'write' | 'delete' | 'add';
  /**
   * For 'write': the only fields (API names) the statement can change — the diff is computed over
   * them alone (a spliced condition-record load cuts validity and sets a few fields: comparing the
   * ~50 others per row was most of its cost). Default: every tracked field. Server-kept fields named
   * here are recorded too: a writer that sets them on purpose (a rebate group's calculation, submit
   * or decision) changes the record as a client's write does.
   */
  readonly changing?: readonly string[];
  /**
   * For 'add': the names of the fields set, when the writer knows them to be the same for every row
   * (a parameter of `params`, `text[]`), instead of testing each field of each row in SQL. The rows
   * then point to the list, stored once (`record_history_field_lists`, migration 042).
   */
  readonly setFields?: string;
  /**
   * For 'write': a test on `w` true only for rows that may have an old version (the others are new):
   * the old row is probed for those alone.
   */
  readonly oldRowIf?: string;
}

/** `array_remove(ARRAY[CASE WHEN <test> THEN 'name' END, ...], NULL)`: the names passing a test. */
function namesWhere(fields: readonly FieldDef[], test: (f: FieldDef) => string): string {
  if (fields.length === 0) return `'{}'::text[]`;
  return `array_remove(ARRAY[${fields.map((f) => `CASE WHEN ${test(f)} THEN '${f.name}' END`).join(', ')}]::text[], NULL)`;
}

/**
 * The CTE `name AS (INSERT INTO record_history ...)` recording the rows of CTE `written` (which
 * returns `t.*` of the type's table), old values from the statement's snapshot of the table.
 * Stored form of `changes`: {"old": {changed fields' old values}} for an UPDATE or RESTORE,
 * {"new": {values}} for a single ADD, {"old": {last values}} for a DELETE, `{}` for a bulk ADD; a
 * new value not stored is the record's own until the next change of that field, whose "old" it is
 * (history-read.ts rebuilds it). Per-field comparisons are plain SQL on the typed columns, so a
 * chunk of 10,000 rows costs one pass (the reading side presents {field: {old, new}}).
 */
export function historyCte(name: string, written: string, source: HistorySource): string {
  // Off (or a type that keeps no history: `noHistory`), the CTE still names the writer's `setFields`
  // list: its parameter is in `params` and must be in the statement (PostgreSQL cannot type a
  // parameter no expression uses).
  if (!enabled || source.tc.type.noHistory !== undefined)
    return `${ident(name)} AS (SELECT ${source.setFields ?? '1'})`;
  const { tc, principal, params, kind, changing, setFields, oldRowIf } = source;
  const { type } = tc;
  // (`OFFSET 0` below keeps an update's subquery whole: pulled up, its field list was computed
  // twice per row, once for the filter and once for the insert. An ADD or DELETE passes the filter by
  // its constant action, which the planner folds away once the subquery is pulled up.)
  const tracked = trackedFields(type);
  const fields =
    kind === 'write' && changing !== undefined
      ? type.fields.filter((f) => changing.includes(f.name))
      : tracked;
  for (const f of [...tracked, ...fields])
    if (!FIELD_NAME.test(f.name)) throw new Error(`bad field name ${f.name}`);
  const soft = type.deleteMode === 'soft';
  const col = (alias: string, f: FieldDef) => qualified(alias, f.column);
  const present = (alias: string) => namesWhere(tracked, (f) => `${col(alias, f)} IS NOT NULL`);
  const added = `jsonb_build_object('new', ${presentJsonSql(tracked, 'w')})`;
  const deleted = (alias: string) => `jsonb_build_object('old', ${presentJsonSql(tracked, alias)})`;
  let action: string;
  let changed: string;
  let changes: string;
  let fieldList = 'NULL::integer';
  let listCte = '';
  if (kind === 'add') {
    // Bulk-inserted records: the names of the fields set, not their values (which are the record's
    // own until a later change records them as "old"); the reading side rebuilds them
    // (history-read.ts), so a 100,000-row load does not write its data twice.
    [action, changed, changes] = [`'ADD'`, setFields ?? present('w'), `'{}'::jsonb`];
    if (setFields !== undefined) {
      // The same names for every row: stored once, the rows pointing to them. Should a concurrent
      // transaction add the same list first, this statement's snapshot may not see it: the rows
      // then keep the names themselves.
      const [added, list] = [ident(`${name}_list_added`), ident(`${name}_list`)];
      listCte = `${added} AS (INSERT INTO record_history_field_lists (fields)
        SELECT ${setFields} WHERE NOT EXISTS (SELECT 1 FROM record_history_field_lists WHERE fields = ${setFields})
        ON CONFLICT (fields) DO NOTHING RETURNING id),
        ${list} AS (SELECT coalesce((SELECT id FROM ${added}),
          (SELECT id FROM record_history_field_lists WHERE fields = ${setFields})) AS id), `;
      fieldList = `(SELECT id FROM ${list})`;
      changed = `CASE WHEN ${fieldList} IS NULL THEN ${setFields} ELSE '{}'::text[] END`;
    }
  } else if (kind === 'delete') {
    [action, changed, changes] = [`'DELETE'`, present('w'), deleted('w')];
  } else {
    const differs = (f: FieldDef) => `${col('o', f)} IS DISTINCT FROM ${col('w', f)}`;
    const diff = namesWhere(fields, differs);
    // An update stores the old values only: the new ones are the record's until a later change
    // records them as its "old" (history-read.ts rebuilds them), so each change is written once.
    const updated = `jsonb_build_object('old', ${someJsonSql(fields, 'o', differs)})`;
    const isDelete = '(o.deleted_at IS NULL AND w.deleted_at IS NOT NULL)';
    action = soft
      ? `CASE WHEN o.id IS NULL THEN 'ADD' WHEN o.deleted_at IS NOT NULL AND w.deleted_at IS NULL THEN 'RESTORE'
              WHEN ${isDelete} THEN 'DELETE' ELSE 'UPDATE' END`
      : `CASE WHEN o.id IS NULL THEN 'ADD' ELSE 'UPDATE' END`;
    // A soft delete keeps the values: like a hard delete, it records the last ones as "old".
    changed = `CASE WHEN o.id IS NULL THEN ${present('w')}${soft ? ` WHEN ${isDelete} THEN ${present('o')}` : ''} ELSE ${diff} END`;
    changes = `CASE WHEN o.id IS NULL THEN ${added}${soft ? ` WHEN ${isDelete} THEN ${deleted('o')}` : ''} ELSE ${updated} END`;
  }
  const keyColumn = (k: string) => `${qualified('w', type.fields.find((f) => f.name === k)!.column)}::text`;
  const keyExpr =
    type.historyKey !== undefined
      ? `concat_ws('|', ${type.historyKey.map(keyColumn).join(', ')})`
      : type.businessKey.length === 0
        ? 'NULL'
        : type.businessKey.map(keyColumn).join(` || '|' || `);
  const group = viewGroupSql(type, 'w');
  // The old row by its primary key, one probe per written row (LATERAL ... LIMIT 1 keeps it a probe):
  // joined, the planner hashed the whole table for a 10,000-row chunk whenever its statistics were
  // stale (during a load), and on PGlite spilled the chunk's rows to disk (EXPLAIN: ~0.8 s against
  // ~0.55 s of a 10,000-row update's history).
  const join =
    kind === 'write'
      ? `LEFT JOIN LATERAL (SELECT * FROM ${ident(type.table)} o
                             WHERE ${oldRowIf === undefined ? '' : `${oldRowIf} AND `}o.partition_id = w.partition_id AND o.id = w.id LIMIT 1) o ON true`
      : '';
  // A row this statement wrote after waiting for a concurrent writer is newer than the snapshot its
  // old values come from (one version past it, or version 0 when new): else the statement fails as a
  // serialization failure and runs again (migration 064), rather than record a stale history.
  const fresh =
    kind === 'write' && type.fields.some((f) => f.column === 'version')
      ? `(CASE WHEN (o.id IS NULL AND w.version > 0) OR o.version < w.version - 1 THEN rc_stale_snapshot(w.id) ELSE true END)`
      : 'true';
  const actor = actorValues(principal, params);
  const typeCode = `${params.add(type.historyCode ?? type.code)}::text`;
  const version = kind === 'delete' ? 'w.version + 1' : 'w.version';
  return `${listCte}${ident(name)} AS (
    INSERT INTO record_history (partition_id, type_code, record_id, business_key, action, changed_fields,
                                changes, record_version, user_group_view_details, field_list,
                                ${ACTOR_COLUMNS.join(', ')})
    SELECT c.partition_id, ${typeCode}, c.id, c.business_key, c.action, c.fields, c.changes, c.version, c.grp,
           ${fieldList}, ${actor.join(', ')}
      FROM (SELECT w.partition_id, w.id, ${keyExpr} AS business_key, ${action} AS action,
                   ${changed} AS fields, ${changes} AS changes, ${version} AS version, ${group} AS grp,
                   ${fresh} AS fresh
              FROM ${ident(written)} w ${join}${kind === 'write' ? ' OFFSET 0' : ''}) c
     WHERE c.fresh AND (c.fields <> '{}' OR c.action <> 'UPDATE'))`;
}

/**
 * The columns of the type's table that `historyCte` reads of the written rows for kind 'add' with
 * `setFields`: a writer that selects its new rows back for their history needs no others.
 */
export function addedColumnsRead(type: TypeDef): string[] {
  const columns = ['partition_id', 'id', 'version'];
  for (const k of type.historyKey ?? type.businessKey)
    columns.push(type.fields.find((f) => f.name === k)!.column);
  if (type.userGroups) columns.push('user_group_view_details');
  else if (type.scopedBy) columns.push(type.scopedBy.column);
  return [...new Set(columns)];
}

/**
 * One data-modifying statement (INSERT/UPDATE/DELETE on the type's table aliased `t`, without
 * RETURNING) with its history; answers `SELECT <select> FROM w` where `w` holds the written rows
 * (the table's columns, plus `extraReturning` expressions of the statement's own FROM items).
 * `ordinal`, an expression of the statement's FROM items (a position in the request): the history
 * rows (and so their ids) follow it, as one by one, whatever order the plan wrote the rows in.
 */
export function withHistory(
  stmt: string,
  source: HistorySource,
  select: string,
  extraReturning?: string,
  ordinal?: string,
): string {
  const extra = [extraReturning, ordinal === undefined ? undefined : `${ordinal} AS "__ordinal"`];
  const returning = ['RETURNING t.*', ...extra.filter((e) => e !== undefined)].join(', ');
  if (ordinal === undefined)
    return `WITH w AS (${stmt} ${returning}), ${historyCte('h', 'w', source)} SELECT ${select} FROM w`;
  // `w` is read twice, so kept (materialized) in that order: the history's INSERT reads it so.
  return `WITH written AS (${stmt} ${returning}), w AS (SELECT * FROM written ORDER BY "__ordinal"),
    ${historyCte('h', 'w', source)} SELECT ${select} FROM w`;
}

/** One history row whose diff the caller computed (writers without a registered type's table). */
export interface HistoryEntry {
  readonly typeCode: string;
  readonly recordId: number;
  readonly businessKey?: string | null;
  readonly action: HistoryAction;
  /** Only the changed fields; never secrets (record that a password changed, not the hash). */
  readonly changes: Readonly<Record<string, { readonly old: unknown; readonly new: unknown }>>;
  readonly version?: number | null;
  readonly userGroupViewDetails?: string | null;
}

/** The stored form of an entry's changes (see historyCte). */
function storedChanges(e: HistoryEntry): { old?: Record<string, unknown>; new?: Record<string, unknown> } {
  const pick = (side: 'old' | 'new') =>
    Object.fromEntries(Object.entries(e.changes).map(([k, v]) => [k, v[side] ?? null]));
  if (e.action === 'ADD') return { new: pick('new') };
  if (e.action === 'DELETE') return { old: pick('old') };
  return { old: pick('old'), new: pick('new') };
}

/** The API form of stored changes: {field: {old, new}} for every changed field. */
export function presentChanges(
  fields: readonly string[],
  stored: { old?: Record<string, unknown>; new?: Record<string, unknown> } | null,
): Record<string, { old: unknown; new: unknown }> {
  const out: Record<string, { old: unknown; new: unknown }> = {};
  for (const f of fields) out[f] = { old: stored?.old?.[f] ?? null, new: stored?.new?.[f] ?? null };
  return out;
}

/** Inserts the entries (one statement) for `principal`'s partition, actor and current origin. */
export async function recordHistory(
  q: Queryable,
  principal: Principal,
  entries: readonly HistoryEntry[],
): Promise<void> {
  if (entries.length === 0 || !enabled) return;
  const params = new Params();
  const partition = params.add(principal.partitionId);
  const rows = params.add(
    JSON.stringify(
      entries.map((e) => ({
        type_code: e.typeCode,
        record_id: e.recordId,
        business_key: e.businessKey ?? null,
        action: e.action,
        changed_fields: Object.keys(e.changes).sort(),
        changes: storedChanges(e),
        record_version: e.version ?? null,
        user_group_view_details: e.userGroupViewDetails ?? null,
      })),
    ),
  );
  const actor = actorValues(principal, params);
  await q.query(
    `INSERT INTO record_history (partition_id, type_code, record_id, business_key, action, changed_fields,
                                 changes, record_version, user_group_view_details, ${ACTOR_COLUMNS.join(', ')})
     SELECT ${partition}::bigint, r.type_code, r.record_id, r.business_key, r.action, r.changed_fields,
            r.changes, r.record_version, r.user_group_view_details, ${actor.join(', ')}
       FROM jsonb_to_recordset(${rows}::jsonb) AS r(type_code text, record_id bigint, business_key text,
            action text, changed_fields text[], changes jsonb, record_version int, user_group_view_details text)`,
    params.values,
  );
}

/**
 * The view group (`userGroupViewDetails`) a history row about row `alias` of `type` takes: the row's
 * own, or for a row scoped by the record it describes (`scopedBy`) that record's, so it is seen in
 * history as that record is; NULL for a type without user groups.
 */
function viewGroupSql(type: TypeDef, alias: string): string {
  const by = type.scopedBy;
  if (type.userGroups) return qualified(alias, 'user_group_view_details');
  if (!by) return 'NULL';
  return `(SELECT p.user_group_view_details FROM ${ident(by.table)} p
           WHERE p.partition_id = ${qualified(alias, 'partition_id')}
             AND ${qualified('p', by.parentColumn)} = ${qualified(alias, by.column)})`;
}

/**
 * The view group (`userGroupViewDetails`) history rows about record `id` of `type` take from it
 * now, for writers of rows that describe the record without being it (its attachments, a product's
 * image): viewGroupSql of the stored record (null when it is not stored). So `/history.fetch` hides
 * them from whoever may not see the record, as it hides the record's own.
 */
export async function recordViewGroup(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  id: number,
): Promise<string | null> {
  if (!type.userGroups && !type.scopedBy) return null;
  const r = await q.query<{ g: string | null }>(
    `SELECT ${viewGroupSql(type, 't')} AS g FROM ${ident(type.table)} t WHERE t.partition_id = $1 AND t.id = $2`,
    [principal.partitionId, id],
  );
  return r.rows[0]?.g ?? null;
}
