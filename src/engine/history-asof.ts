// `/fetch/{TC}/{id}?asOf=<date-time>`: a record rebuilt as it stood from its record history, answered
// when the caller could see it then.

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { Params, ident } from '../db/sql.ts';
import { AppError, notFound, validationError } from '../http/errors.ts';
import { requireAccess } from './access-check.ts';
import { loadTypeContext, metaNameIsId, metaNameText, rowScope, selectList, toRecord } from './context.ts';
import { presentChanges } from './history.ts';
import { currentRecord, historyCodesOf, pathRecordId } from './history-read.ts';
import { isLookupValueCode } from './registry-dcr.ts';
import { changedFieldsSql } from './registry-history.ts';
import { findType } from './registry.ts';
import type { TypeDef } from './types.ts';
import { coerceValue } from './values.ts';

type Row = Record<string, unknown>;

interface Entry {
  action: 'ADD' | 'UPDATE' | 'DELETE' | 'RESTORE';
  fields: string[];
  changes: { old?: Record<string, unknown>; new?: Record<string, unknown> };
  version: number | null;
  user: number | null;
  at: string;
  later: boolean;
}

/**
 * `/fetch/{TC}/{id}?asOf=<date-time>`: the record as it stood at `asOf`. Starting from the stored
 * row (or, for a hard-deleted record, nothing), every change after `asOf` is undone newest first:
 * an UPDATE or RESTORE gives back the old values, a DELETE the last values, an ADD means the record
 * did not exist yet. Not found when the record did not exist (or was deleted) at that moment. A type
 * that keeps no history (`noHistory`: jobs, imports, ...) is a -4 on `asOf`: answered as it is now,
 * the record would pass for the one of that moment.
 */
export async function fetchOneAsOf(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  idText: string,
  asOfText: string,
): Promise<Row> {
  requireAccess(principal, type.access.fetch);
  if (type.noHistory !== undefined) throw validationError('asOf', type.noHistory);
  const id = await pathRecordId(q, principal, type, idText);
  const asOf = coerceValue('datetime', asOfText);
  if (typeof asOf !== 'string')
    throw validationError('asOf', `${JSON.stringify(asOfText)} is not an ISO 8601 date-time`);
  // Hidden from the caller now or not, the record is rebuilt: what decides is whether they may see
  // it as it stood (below) — a record hidden since was answered as never there.
  const { row: current } = await currentRecord(q, principal, type, id);
  // Every change of the record is undone, whoever may read its history rows (each keeps the view
  // group of its time): skipping the ones hidden from the caller rebuilt a record that never was.
  // Whether the caller may see the record as it stood is asked of that state, below.
  const params = new Params();
  const entries = await q.query<Entry>(
    `SELECT h.action, ${changedFieldsSql('h')} AS fields, h.changes, h.record_version AS version, h.actor_user_id AS "user",
            h.changed_at AS at, h.changed_at > ${params.add(asOf)}::timestamptz AS later
       FROM record_history h
      WHERE h.partition_id = ${params.add(principal.partitionId)}
        AND h.type_code = ANY(${params.add(historyCodesOf(type))}::text[]) AND h.record_id = ${params.add(id)}
      ORDER BY h.id DESC`,
    params.values,
  );
  const column = new Map(type.fields.map((f) => [f.name, f.column]));
  let state: Row | undefined = current;
  let exists = current !== undefined && (type.deleteMode !== 'soft' || current.deleted_at === null);
  let last: Entry | undefined;
  for (const e of entries.rows) {
    if (!e.later) {
      last = e;
      break;
    }
    if (e.action === 'ADD') {
      exists = false;
      continue;
    }
    state ??= { partition_id: principal.partitionId, id };
    for (const [name, change] of Object.entries(presentChanges(e.fields, e.changes))) {
      const col = column.get(name);
      if (col !== undefined) state[col] = change.old;
    }
    if (e.action === 'DELETE') exists = true;
    if (e.action === 'RESTORE') exists = false;
  }
  if (!exists || state === undefined) throw notFound(`${type.label} ${idText} at ${asOf}`, 'id');
  if (last === undefined && new Date(String(state.created_at)) > new Date(asOf)) {
    throw notFound(`${type.label} ${idText} at ${asOf}`, 'id');
  }
  const added = entries.rows.at(-1);
  if (current === undefined && added?.action === 'ADD') {
    // A hard-deleted record: its creation is its ADD entry.
    state.created_at = added.at;
    state.created_by = added.user;
  }
  // Nothing changed the record since the moment, and its last write is no later: it is the record as
  // stored (a write that changed no value, and so left no history, still counts its version).
  const asStored =
    current !== undefined &&
    entries.rows[0] === last &&
    new Date(String(current.last_update_at)) <= new Date(asOf);
  if (last !== undefined && !asStored) {
    state.version = last.version;
    state.last_update_at = last.at;
    state.last_update_by = last.user;
  }
  if (type.deleteMode === 'soft') state.deleted_at = null;
  // The state is keyed by column: the meta name is the column of `name` (or of `metaNameField`).
  const nameColumn = type.fields.find((f) => f.name === (type.metaNameField ?? 'name'))?.column;
  const stored = type.metaPerName && nameColumn !== undefined ? state[nameColumn] : undefined;
  const name = metaNameText(stored, metaNameIsId(type));
  const tc = await loadTypeContext(q, principal, type, name);
  // Seen by the caller as it stood (its view group then, as the type's rules say): else not found.
  // The record a row describes (a product of its PX row) is asked as it stood then, below, not as it
  // is now: shown since or hidden since, its group of that moment decides.
  const scoped = await loadTypeContext(q, principal, {
    ...type,
    ...(isLookupValueCode(type.code) ? { fixed: undefined } : {}),
    ...(type.scopedBy?.parentCode !== undefined ? { scopedBy: undefined } : {}),
  });
  const p = new Params();
  const record = p.add(JSON.stringify(state));
  const r = await q.query<Row>(
    `SELECT ${selectList(tc, undefined, 'r')} FROM jsonb_populate_record(NULL::${ident(type.table)}, ${record}::jsonb) r
      WHERE ${rowScope(scoped, principal, p, 'r')}`,
    p.values,
  );
  if (!r.rows[0] || (await parentHiddenThen(q, principal, type, state, asOf)))
    throw notFound(`${type.label} ${idText} at ${asOf}`, 'id');
  return toRecord(tc, r.rows[0]);
}

/**
 * Whether the record a row describes (a product of its `PX`, `PDESC`, `PR` rows: `scopedBy` with a
 * `parentCode`) was hidden from the caller at `asOf` by its view group of that moment — whether it
 * is stored now, changed since or deleted since. A parent not stored then (a row may come before its
 * product) hides nothing.
 */
async function parentHiddenThen(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  state: Row,
  asOf: string,
): Promise<boolean> {
  const by = type.scopedBy;
  if (principal.admin || by?.parentCode === undefined) return false;
  const key = state[by.column];
  if (key === null || key === undefined) return false;
  const parentType = findType(by.parentCode)!;
  // The records of that key: the stored one, and any deleted since (found by their history's business
  // key, as /fetch/{TC}/{key} finds a deleted record), one of which may be the one of that moment.
  const parents = await q.query<{ id: string | number }>(
    `SELECT id FROM ${ident(by.table)} WHERE partition_id = $1 AND ${ident(by.parentColumn)} = $2
     UNION
     SELECT record_id FROM record_history
      WHERE partition_id = $1 AND type_code = ANY($3::text[]) AND business_key = $2::text`,
    [principal.partitionId, key, parentType.historyKey === undefined ? historyCodesOf(parentType) : []],
  );
  // Its state then as an administrator reads it; its view group then decides for the caller.
  const reader: Principal = { ...principal, admin: true };
  for (const { id } of parents.rows) {
    let then: Row;
    try {
      then = await fetchOneAsOf(q, reader, parentType, String(id), asOf);
    } catch (e) {
      if (e instanceof AppError && e.code === 'NOT_FOUND') continue;
      throw e;
    }
    const group = then.userGroupViewDetails;
    if (typeof group === 'string' && group !== '' && !principal.groups.includes(group)) return true;
  }
  return false;
}
