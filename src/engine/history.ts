// Record history (issue 12): every change of every record, who made it, through which call or job.
// One table, `record_history` (migration 013): a row per changed record per write, with only the
// fields that changed ({"field": {"old": v, "new": v}}, API names, values as to_jsonb of the
// column), their names again in `changed_fields` (text[], for filtering), the action, the record's
// new version (a hard delete: the last one + 1), the actor and the origin. History is written in the same transaction — in the same
// statement where possible — as the change, so a failed or rolled-back write leaves none.
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

/** The fields whose changes are recorded: everything but the server-maintained ones. */
export function trackedFields(type: TypeDef): FieldDef[] {
  return type.fields.filter((f) => !f.system);
}

const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
/** jsonb_build_object takes at most 100 arguments: 40 pairs per call, joined with ||. */
const PAIRS_PER_CALL = 40;

/** `jsonb_build_object('name', alias.column, ...)` over the fields, API names as keys. */
export function recordJsonSql(fields: readonly FieldDef[], alias: string): string {
  const parts: string[] = [];
  for (let i = 0; i < fields.length; i += PAIRS_PER_CALL) {
    const pairs = fields.slice(i, i + PAIRS_PER_CALL).map((f) => {
      if (!FIELD_NAME.test(f.name)) throw new Error(`bad field name ${f.name}`);
      return `'${f.name}', ${qualified(alias, f.column)}`;
    });
    parts.push(`jsonb_build_object(${pairs.join(', ')})`);
  }
  return parts.length === 0 ? `'{}'::jsonb` : parts.join(' || ');
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
   * 'delete': a hard DELETE; 'add': rows known to be new, already in the table (after a COPY).
   */
  readonly kind: 'write' | 'delete' | 'add';
}

const NULL_JSON = `'null'::jsonb`;

/** Changed field names and {old, new} per changed field, from the row's jsonb `j.nj` / `j.oj`. */
function diffSql(kind: HistorySource['kind'], isDelete: string): string {
  const agg = (oldV: string, newV: string) => `coalesce(array_agg(n.key ORDER BY n.key), '{}') AS fields,
        coalesce(jsonb_object_agg(n.key, jsonb_build_object('old', ${oldV}, 'new', ${newV})), '{}') AS changes`;
  if (kind === 'add') {
    return `SELECT ${agg(NULL_JSON, 'n.value')} FROM jsonb_each(j.nj) n WHERE n.value <> ${NULL_JSON}`;
  }
  if (kind === 'delete') {
    return `SELECT ${agg('n.value', NULL_JSON)} FROM jsonb_each(j.oj) n WHERE n.value <> ${NULL_JSON}`;
  }
  // A soft delete keeps the values: like a hard delete, it lists the last values as {old, new: null}.
  return `SELECT ${agg(
    `CASE WHEN ${isDelete} THEN n.value ELSE coalesce(ov.value, ${NULL_JSON}) END`,
    `CASE WHEN ${isDelete} THEN ${NULL_JSON} ELSE n.value END`,
  )}
      FROM jsonb_each(CASE WHEN ${isDelete} THEN j.oj ELSE j.nj END) n
      LEFT JOIN jsonb_each(CASE WHEN ${isDelete} THEN NULL ELSE j.oj END) ov ON ov.key = n.key
     WHERE CASE WHEN ${isDelete} THEN n.value <> ${NULL_JSON}
                ELSE n.value IS DISTINCT FROM coalesce(ov.value, ${NULL_JSON}) END`;
}

/**
 * The CTE `name AS (INSERT INTO record_history ...)` recording the rows of CTE `written` (which
 * returns `t.*` of the type's table), old values from the statement's snapshot of the table.
 */
export function historyCte(name: string, written: string, source: HistorySource): string {
  const { tc, principal, params, kind } = source;
  const { type } = tc;
  const fields = trackedFields(type);
  const soft = type.deleteMode === 'soft';
  const isDelete =
    kind === 'write' && soft
      ? '(o.deleted_at IS NULL AND w.deleted_at IS NOT NULL)'
      : String(kind === 'delete');
  const action =
    kind === 'delete'
      ? `'DELETE'`
      : kind === 'add'
        ? `'ADD'`
        : soft
          ? `CASE WHEN o.id IS NULL THEN 'ADD' WHEN o.deleted_at IS NOT NULL AND w.deleted_at IS NULL THEN 'RESTORE'
                  WHEN ${isDelete} THEN 'DELETE' ELSE 'UPDATE' END`
          : `CASE WHEN o.id IS NULL THEN 'ADD' ELSE 'UPDATE' END`;
  const json = [
    kind === 'delete' ? 'NULL' : recordJsonSql(fields, 'w'),
    kind === 'add' ? 'NULL' : recordJsonSql(fields, kind === 'delete' ? 'w' : 'o'),
  ];
  const keyExpr =
    type.businessKey.length === 0
      ? 'NULL'
      : type.businessKey
          .map((k) => `${qualified('w', type.fields.find((f) => f.name === k)!.column)}::text`)
          .join(` || '|' || `);
  const group = type.userGroups ? 'w.user_group_view_details' : 'NULL';
  const join =
    kind === 'write'
      ? `LEFT JOIN ${ident(type.table)} o ON o.partition_id = w.partition_id AND o.id = w.id`
      : '';
  const actor = actorValues(principal, params);
  const typeCode = `${params.add(type.code)}::text`;
  return `${ident(name)} AS (
    INSERT INTO record_history (partition_id, type_code, record_id, business_key, action, changed_fields,
                                changes, record_version, user_group_view_details, ${ACTOR_COLUMNS.join(', ')})
    SELECT w.partition_id, ${typeCode}, w.id, ${keyExpr}, j.action, d.fields, d.changes, ${kind === 'delete' ? 'w.version + 1' : 'w.version'}, ${group},
           ${actor.join(', ')}
      FROM ${ident(written)} w ${join}
      CROSS JOIN LATERAL (SELECT ${action} AS action, ${json[0]}::jsonb AS nj, ${json[1]}::jsonb AS oj) j
      CROSS JOIN LATERAL (${diffSql(kind, isDelete)}) d
     WHERE d.fields <> '{}' OR j.action <> 'UPDATE')`;
}

/**
 * One data-modifying statement (INSERT/UPDATE/DELETE on the type's table aliased `t`, without
 * RETURNING) with its history; answers `SELECT <select> FROM w` where `w` holds the written rows
 * (the table's columns, plus `extraReturning` expressions of the statement's own FROM items).
 */
export function withHistory(
  stmt: string,
  source: HistorySource,
  select: string,
  extraReturning?: string,
): string {
  const returning = `RETURNING t.*${extraReturning === undefined ? '' : `, ${extraReturning}`}`;
  return `WITH w AS (${stmt} ${returning}), ${historyCte('h', 'w', source)} SELECT ${select} FROM w`;
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

/** Inserts the entries (one statement) for `principal`'s partition, actor and current origin. */
export async function recordHistory(
  q: Queryable,
  principal: Principal,
  entries: readonly HistoryEntry[],
): Promise<void> {
  if (entries.length === 0) return;
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
        changes: e.changes,
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
