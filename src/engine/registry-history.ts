// The record-history type (RH, table `record_history`, migration 013): one row per changed record
// per write (src/engine/history.ts writes them). Read-only and served only by the history
// operations (`/fetch/{TC}/{id}/history`, `/history.fetch`, src/modules/history/), which add the
// type scope; the declaration gives them the engine's filter, sort and paging over these fields.
// `userGroups`: a row carries the record's view group at the time of the change, so record-level
// visibility applies to history rows through the engine's row scope.

import { AUTHENTICATED } from '../access/catalogue.ts';
import { ident, qualified } from '../db/sql.ts';
import type { Principal } from '../access/access.ts';
import type { FieldDef, FieldType, TypeDef } from './types.ts';

/**
 * A history row's changed fields (text[]) over its alias: `changed_fields`, or for a bulk-added
 * record the list it points to (migration 042: the names are stored once per list, not per row).
 */
export function changedFieldsSql(alias: string): string {
  return `CASE WHEN ${qualified(alias, 'field_list')} IS NULL THEN ${qualified(alias, 'changed_fields')}
     ELSE (SELECT l.fields FROM record_history_field_lists l WHERE l.id = ${qualified(alias, 'field_list')}) END`;
}

/** The types whose records belong to users (`ownedRows`: notifications, workflows, delegations). */
let ownedTypes: readonly TypeDef[] = [];

/** Set by the registry once every type is known (registry.ts imports this module). */
export function setHistoryOwnedTypes(types: readonly TypeDef[]): void {
  ownedTypes = types.filter((t) => t.ownedRows !== undefined && t.code !== 'RH');
}

/**
 * The history rows of a record that belongs to users, and those of its attachments (`ATT`, business
 * key the owner's typedId), are seen only by whom the record's type shows it to (its `ownedRows`,
 * admins included): an auditor reading history across types learns nothing of another user's
 * notification or of a workflow he takes no part in. A record no longer stored shows to nobody.
 */
function historyOwnedRows(
  principal: Principal,
  add: (value: unknown) => string,
  alias: string,
): string | undefined {
  const h = (c: string) => qualified(alias, c);
  const hidden: string[] = [];
  for (const t of ownedTypes) {
    const o = `${alias}_o`;
    const visible = t.ownedRows!(principal, add, o);
    if (visible === undefined) continue;
    const owner = (id: string) =>
      `EXISTS (SELECT 1 FROM ${ident(t.table)} ${ident(o)} WHERE ${qualified(o, 'partition_id')} = ${h('partition_id')}
         AND ${qualified(o, 'id')} = ${id} AND ${visible})`;
    const code = add(t.code);
    hidden.push(`(${h('type_code')} = ${code} AND NOT ${owner(h('record_id'))})`);
    hidden.push(`(${h('type_code')} = 'ATT' AND ${h('business_key')} LIKE '%.' || ${code}::text
      AND NOT ${owner(`(CASE WHEN split_part(${h('business_key')}, '.', 1) ~ '^[0-9]{1,15}$'
                             THEN split_part(${h('business_key')}, '.', 1)::bigint END)`)})`);
  }
  return hidden.length === 0 ? undefined : `NOT (${hidden.join(' OR ')})`;
}

const field = (name: string, column: string, type: FieldType = 'string'): FieldDef => ({
  name,
  column,
  type,
  system: true,
});

export const HISTORY_TYPE: TypeDef = {
  code: 'RH',
  label: 'Record history entry',
  table: 'record_history',
  fields: [
    field('id', 'id', 'integer'),
    field('typeCode', 'type_code'),
    field('recordId', 'record_id', 'integer'),
    field('businessKey', 'business_key'),
    field('action', 'action'),
    { ...field('field', 'changed_fields'), elements: true, readSql: changedFieldsSql },
    field('changes', 'changes', 'json'),
    field('version', 'record_version', 'integer'),
    field('userId', 'actor_user_id', 'integer'),
    field('user', 'actor_login'),
    field('tokenId', 'actor_token_id', 'integer'),
    field('externalSystem', 'actor_external_system'),
    field('requestId', 'request_id'),
    field('operation', 'operation'),
    field('jobId', 'job_id', 'integer'),
    field('changedAt', 'changed_at', 'datetime'),
    field('userGroupViewDetails', 'user_group_view_details'),
  ],
  businessKey: [],
  uniqueColumns: [],
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  userGroups: true,
  ownedRows: historyOwnedRows,
  // Served only by the history operations, which check the record's type (or HISTORY_FETCH).
  access: { fetch: AUTHENTICATED, write: 'PARTITION_ADMIN' },
  managerOnly: '/fetch/{TC}/{id}/history or /history.fetch',
  noAttachments: true,
};
