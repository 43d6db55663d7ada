// Reading record history (written by ./history.ts): the history of one record, history across
// types, and one record as it stood at a past moment, rebuilt from its history. The history rows
// are the registered type RH (./registry-history.ts), so filters, sorting and paging are the
// engine's own (`fetchRecords` with a server-side restriction), and record-level user groups apply
// to them through the row scope (each row keeps the record's view group at the time).

import { can, type Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { Params, ident } from '../db/sql.ts';
import { notFound } from '../http/errors.ts';
import { loadTypeContext, rowScope } from './context.ts';
import { hasAccess, requireAccess } from './access-check.ts';
import { pathAddress, selectOne } from './addressing.ts';
import { fetchRecords, type FetchBody, type FetchResult } from './fetch.ts';
import { presentChanges, rowJsonSql } from './history.ts';
import { isLookupValueCode } from './registry-dcr.ts';
import { HISTORY_TYPE, changedFieldsSql } from './registry-history.ts';
import { allTypes, findType } from './registry.ts';
import type { TypeDef } from './types.ts';

type Row = Record<string, unknown>;

const equals = (fieldName: string, value: unknown) => ({ fieldName, operator: 'equals', value });

/**
 * The type codes a record of `type` has history rows under: the code history keeps it under
 * (`historyCode`, else its own) and the codes of the types sharing it, which wrote it under their
 * own before (`CRCI`: also `CRCI1`..`CRCI12`).
 */
export function historyCodesOf(type: TypeDef): string[] {
  const code = type.historyCode ?? type.code;
  return [
    code,
    ...allTypes()
      .filter((t) => t.historyCode === code && t.code !== code)
      .map((t) => t.code),
  ];
}

/**
 * Record `id` of `type` as it is now, and whether the principal may see it: a record that exists
 * (soft-deleted included) must be in the principal's row scope; a record that no longer exists
 * (hard-deleted) is judged by its history rows, which carry its view group. A record the principal
 * may not see is answered as one that does not exist (not a different error: that would tell a
 * user-group-hidden record from a missing one).
 */
export async function currentRecord(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  id: number,
): Promise<{ readonly hidden: boolean; readonly row: Row | undefined }> {
  // Types sharing a table tell their rows apart by its fixed column (attribute meta per owner, grid
  // items per key count, condition record items per key size): a row of another type is no record of
  // this one (404), whatever that type lets the principal see. The lookup-value declarations name no
  // table yet (a placeholder): their values are told apart by the history rows' type code instead.
  const tc = await loadTypeContext(
    q,
    principal,
    isLookupValueCode(type.code) ? { ...type, fixed: undefined } : type,
  );
  const params = new Params();
  const scope = rowScope(tc, principal, params, 't', { includeDeleted: true });
  const idParam = params.add(id);
  const r = await q.query<{ visible: boolean; row: Row }>(
    `SELECT ${scope} AS visible, ${rowJsonSql(type, 't')} AS row FROM ${ident(type.table)} t
      WHERE t.partition_id = ${params.add(principal.partitionId)} AND t.id = ${idParam}`,
    params.values,
  );
  const found = r.rows[0];
  // The row even when hidden: `?asOf` rebuilds from it, and asks visibility of the rebuilt state.
  return { hidden: found !== undefined && !found.visible, row: found?.row };
}

/**
 * History rows the principal may not read, as criteria that leave them out (none: all readable):
 * - those of types whose records they may not fetch (`/history.fetch` needs HISTORY_FETCH besides,
 *   never instead: an auditor without SELLER_FETCH reads no seller's values through history);
 * - those of role assignments (`roles` of a user or a business role, whose rows hold nothing else),
 *   for principals without ROLE_FETCH, as `accountmanager.fetchroles` and the audit reports are:
 *   USER_FETCH or HISTORY_FETCH alone (ADMIN_WO_USER_MGMT, a restricted token) do not read them;
 *   likewise group assignments (`groups`) without USER_FETCH (ASSIGNMENT_FIELDS).
 * - those of types that keep no history (`noHistory`: jobs, imports, ...), which earlier versions
 *   wrote on some paths (an import change's massedit): rows of a few writes, whose new values were
 *   rebuilt from a state that unrecorded writes changed since, are answered by none.
 * Rows of codes outside the registry (`ATT`, `PIMG`) follow their owner's view group only.
 */
function hiddenHistory(principal: Principal): Record<string, unknown>[] {
  const codes = (fetchable: boolean) =>
    new Set(
      allTypes()
        .filter((t) => hasAccess(principal, t.access.fetch) === fetchable)
        .flatMap(historyCodesOf),
    );
  const readable = codes(true);
  const unrecorded = allTypes()
    .filter((t) => t.noHistory !== undefined)
    .map((t) => t.code);
  const unreadable = [
    ...new Set([...[...codes(false)].filter((c) => !readable.has(c)), ...unrecorded]),
  ].sort();
  const hidden: Record<string, unknown>[] =
    unreadable.length === 0 ? [] : [{ fieldName: 'typeCode', operator: 'notInSet', value: unreadable }];
  for (const [permission, field] of ASSIGNMENT_FIELDS) {
    if (can(principal, permission)) continue;
    hidden.push({
      _constructor: 'AdvancedCriteria',
      operator: 'not',
      criteria: [
        {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [
            { fieldName: 'typeCode', operator: 'inSet', value: ['U', 'BR'] },
            equals('field', field),
          ],
        },
      ],
    });
  }
  return hidden;
}

/**
 * Assignments of users and business roles that their history rows hold alone, and the permission
 * that reads them otherwise: roles (`accountmanager.fetchroles`), and user groups
 * (`accountmanager.fetchgroups`, USER_FETCH — business roles are fetched by every user, their
 * groups are not).
 */
const ASSIGNMENT_FIELDS: readonly (readonly ['ROLE_FETCH' | 'USER_FETCH', string])[] = [
  ['ROLE_FETCH', 'roles'],
  ['USER_FETCH', 'groups'],
];

/** Whether history rows of record `id` of `type` are visible to the principal (its partition's). */
async function hasVisibleHistory(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  id: number,
): Promise<boolean> {
  const params = new Params();
  const visible = rowScope(await loadTypeContext(q, principal, HISTORY_TYPE), principal, params, 'h');
  const r = await q.query(
    `SELECT 1 FROM record_history h
      WHERE ${visible} AND h.type_code = ANY(${params.add(historyCodesOf(type))}::text[]) AND h.record_id = ${params.add(id)}
      LIMIT 1`,
    params.values,
  );
  return r.rows.length > 0;
}

/**
 * The record a path names, as `/fetch/{TC}/{id}` reads it (pathAddress: an id or typedId, or the
 * business key of a type keyed by one text field): by key, the stored record (soft-deleted too), else
 * the record its history last names by that key (a hard-deleted one). An unknown key is a 404.
 */
export async function pathRecordId(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  idText: string,
): Promise<number> {
  const address = pathAddress(type, idText, 'id');
  if ('id' in address) return address.id;
  const row = await selectOne(q, await loadTypeContext(q, principal, type), principal, address, false, true);
  if (row !== undefined) return Number(row.id);
  const r =
    type.historyKey === undefined
      ? await q.query<{ id: string }>(
          `SELECT record_id AS id FROM record_history
            WHERE partition_id = $1 AND type_code = ANY($2::text[]) AND business_key = $3 ORDER BY id DESC LIMIT 1`,
          [principal.partitionId, historyCodesOf(type), idText],
        )
      : { rows: [] };
  const found = r.rows[0];
  if (found === undefined) throw notFound(`${type.label} ${idText}`, 'id');
  return Number(found.id);
}

/** `/fetch/{TC}/{id}/history`: the record's history rows, oldest first unless sorted otherwise. */
export async function fetchRecordHistory(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  idText: string,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  requireAccess(principal, type.access.fetch);
  const id = await pathRecordId(q, principal, type, idText);
  const { hidden, row } = await currentRecord(q, principal, type, id);
  // An unknown id is a 404; so is a hidden record (the same answer: a different one would tell it
  // exists), and another partition's. A hard-deleted record has history when its rows are visible
  // (never of a type that keeps none: rows earlier versions wrote of it are answered by no read).
  const gone = row === undefined;
  if (
    hidden ||
    (gone && (type.noHistory !== undefined || !(await hasVisibleHistory(q, principal, type, id))))
  )
    throw notFound(`${type.label} ${idText}`, 'id');
  const restrict = {
    _constructor: 'AdvancedCriteria',
    operator: 'and',
    criteria: [
      { fieldName: 'typeCode', operator: 'inSet', value: historyCodesOf(type) },
      equals('recordId', id),
      ...hiddenHistory(principal),
    ],
  };
  return presentedFetch(q, principal, body, (b) =>
    fetchRecords(q, principal, HISTORY_TYPE, b, maxPageSize, restrict),
  );
}

type StoredChanges = { old?: Record<string, unknown>; new?: Record<string, unknown> } | null;

const storedOf = (v: unknown): StoredChanges => (typeof v === 'object' && v !== null ? v : null);

/** The fields presentation reads from every history row; added to the request when left out. */
const NEEDED = ['id', 'typeCode', 'recordId', 'action', 'field', 'changes'];

/**
 * Fetches history rows and presents them: `changes` as {field: {old, new}}. New values that are not
 * stored (an UPDATE/RESTORE keeps the old ones, a bulk ADD the names) are rebuilt (`valuesAfter`).
 * When the client names its fields, the ones presentation needs are fetched too and dropped after.
 */
async function presentedFetch(
  q: Queryable,
  principal: Principal,
  body: FetchBody,
  fetch: (body: FetchBody) => Promise<FetchResult>,
): Promise<FetchResult> {
  const asked = body.valueFields ?? body.resultFields;
  if (asked === undefined) {
    const r = await fetch(body);
    await present(q, principal, r.rows as Row[]);
    return r;
  }
  if (!asked.includes('changes')) return fetch(body);
  const names = [...asked, ...NEEDED.filter((n) => !asked.includes(n))];
  const arrays = body.valueFields !== undefined;
  const r = await fetch({ ...body, [arrays ? 'valueFields' : 'resultFields']: names });
  const rows = r.rows.map((row) =>
    Array.isArray(row) ? Object.fromEntries(names.map((n, i) => [n, (row as unknown[])[i]])) : (row as Row),
  );
  await present(q, principal, rows);
  const out = rows.map((rec) =>
    arrays ? asked.map((n) => rec[n]) : Object.fromEntries(asked.map((n) => [n, rec[n]])),
  );
  return { ...r, rows: out };
}

/** Rewrites each row's stored `changes` into {field: {old, new}}. */
async function present(q: Queryable, principal: Principal, rows: Row[]): Promise<void> {
  const rebuild = rows.filter((rec) => {
    const stored = storedOf(rec.changes);
    return (
      rec.action !== 'DELETE' && stored?.new === undefined && Array.isArray(rec.field) && rec.field.length > 0
    );
  });
  const after = await valuesAfter(q, principal, rebuild);
  const hiddenBefore = principal.admin ? new Set<Row>() : await hiddenBeforeOf(q, principal, rows);
  for (const rec of rows) {
    if (rec.changes === undefined) continue;
    const stored = storedOf(rec.changes);
    const fields = Array.isArray(rec.field)
      ? rec.field.map(String)
      : [...new Set([...Object.keys(stored?.old ?? {}), ...Object.keys(stored?.new ?? {})])].sort();
    const values = after.get(rec);
    const changes = presentChanges(fields, values === undefined ? stored : { ...stored, new: values });
    // The change that brought the record into the caller's sight: what it held before, while hidden
    // from them, is not told (its own rows are hidden, and so is that state as of then).
    // So is one whose record's previous history row is hidden from them: a row moved away from a
    // hidden product or seller (its previous row carries that parent's view group).
    const group = changes.userGroupViewDetails?.old;
    const ownGroupHid =
      !principal.admin && typeof group === 'string' && group !== '' && !principal.groups.includes(group);
    if (ownGroupHid || hiddenBefore.has(rec)) for (const change of Object.values(changes)) change.old = null;
    rec.changes = changes;
  }
}

/**
 * The rows whose record's previous history row carries a view group the caller is not in: the state
 * each of them changed was hidden from the caller. One query for the page.
 */
async function hiddenBeforeOf(q: Queryable, principal: Principal, rows: readonly Row[]): Promise<Set<Row>> {
  const listed = rows.filter(
    (r) => typeof r.id === 'number' && typeof r.recordId === 'number' && typeof r.typeCode === 'string',
  );
  if (listed.length === 0) return new Set();
  const r = await q.query<{ id: string | number }>(
    `SELECT x.id FROM unnest($2::bigint[], $3::text[], $4::bigint[]) AS x(id, code, record_id)
       CROSS JOIN LATERAL (
         SELECT nullif(h.user_group_view_details, '') AS g FROM record_history h
          WHERE h.partition_id = $1 AND h.type_code = x.code AND h.record_id = x.record_id AND h.id < x.id
          ORDER BY h.id DESC LIMIT 1) p
      WHERE p.g IS NOT NULL AND NOT (p.g = ANY($5::text[]))`,
    [
      principal.partitionId,
      listed.map((x) => x.id),
      listed.map((x) => x.typeCode),
      listed.map((x) => x.recordId),
      principal.groups,
    ],
  );
  const hidden = new Set(r.rows.map((x) => Number(x.id)));
  return new Set(listed.filter((x) => hidden.has(x.id as number)));
}

/**
 * The values of each entry's record right after that entry: the stored row (or nothing, when
 * hard-deleted) with every later change undone, newest first (each change's "old" values are what
 * they were before it). One query per type for the records and their later history.
 */
async function valuesAfter(
  q: Queryable,
  principal: Principal,
  entries: readonly Row[],
): Promise<Map<Row, Record<string, unknown>>> {
  const out = new Map<Row, Record<string, unknown>>();
  const byType = new Map<string, Row[]>();
  for (const e of entries) {
    if (typeof e.recordId !== 'number' || typeof e.id !== 'number') continue;
    // Grouped by the code history keeps the record under (rows of CRCI2 are CRCI items).
    const code = String(e.typeCode);
    const key = findType(code)?.historyCode ?? code;
    const list = byType.get(key) ?? [];
    list.push(e);
    byType.set(key, list);
  }
  for (const [code, list] of byType) {
    const type = findType(code);
    if (!type) continue;
    const ids = [...new Set(list.map((e) => e.recordId as number))];
    const from = Math.min(...list.map((e) => e.id as number));
    const r = await q.query<{
      id: number;
      row: Row | null;
      later: { id: number; f: string[]; c: StoredChanges }[];
    }>(
      `SELECT r.id, (SELECT ${rowJsonSql(type, 't')} FROM ${ident(type.table)} t WHERE t.partition_id = $1 AND t.id = r.id) AS row,
              coalesce((SELECT jsonb_agg(jsonb_build_object('id', h.id, 'f', ${changedFieldsSql('h')}, 'c', h.changes) ORDER BY h.id DESC)
                          FROM record_history h
                         WHERE h.partition_id = $1 AND h.type_code = ANY($3::text[]) AND h.record_id = r.id AND h.id > $4), '[]') AS later
         FROM unnest($2::bigint[]) AS r(id)`,
      [principal.partitionId, ids, historyCodesOf(type), from],
    );
    const column = new Map(type.fields.map((f) => [f.name, f.column]));
    for (const rec of r.rows) {
      // The record's entries of this page, newest first, each read off the state once every later
      // change is undone.
      const wanted = list
        .filter((e) => e.recordId === Number(rec.id))
        .sort((a, b) => (b.id as number) - (a.id as number));
      const state: Row = { ...(rec.row ?? {}) };
      let next = 0;
      const snapshot = (upTo: number) => {
        for (; next < wanted.length && (wanted[next]!.id as number) >= upTo; next++) {
          out.set(
            wanted[next]!,
            Object.fromEntries([...column].map(([name, col]) => [name, state[col] ?? null])),
          );
        }
      };
      for (const later of rec.later) {
        snapshot(later.id);
        for (const [name, change] of Object.entries(presentChanges(later.f, later.c))) {
          const col = column.get(name);
          if (col !== undefined) state[col] = change.old;
        }
      }
      snapshot(-Infinity);
    }
  }
  return out;
}

/** `/history.fetch`: history rows across types (the route requires HISTORY_FETCH; hiddenHistory). */
export async function fetchHistory(
  q: Queryable,
  principal: Principal,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  const hide = hiddenHistory(principal);
  const restrict =
    hide.length === 0 ? undefined : { _constructor: 'AdvancedCriteria', operator: 'and', criteria: hide };
  return presentedFetch(q, principal, body, (b) =>
    fetchRecords(q, principal, HISTORY_TYPE, b, maxPageSize, restrict),
  );
}
