// The record-history type (RH, table `record_history`, migration 013): one row per changed record
// per write (src/engine/history.ts writes them). Read-only and served only by the history
// operations (`/fetch/{TC}/{id}/history`, `/history.fetch`, src/modules/history/), which add the
// type scope; the declaration gives them the engine's filter, sort and paging over these fields.
// `userGroups`: a row carries the record's view group at the time of the change, so record-level
// visibility applies to history rows through the engine's row scope.

import { AUTHENTICATED } from '../access/catalogue.ts';
import { qualified } from '../db/sql.ts';
import type { FieldDef, FieldType, TypeDef } from './types.ts';

/**
 * A history row's changed fields (text[]) over its alias: `changed_fields`, or for a bulk-added
 * record the list it points to (migration 042: the names are stored once per list, not per row).
 */
export function changedFieldsSql(alias: string): string {
  return `CASE WHEN ${qualified(alias, 'field_list')} IS NULL THEN ${qualified(alias, 'changed_fields')}
     ELSE (SELECT l.fields FROM record_history_field_lists l WHERE l.id = ${qualified(alias, 'field_list')}) END`;
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
  // Served only by the history operations, which check the record's type (or HISTORY_FETCH).
  access: { fetch: AUTHENTICATED, write: 'PARTITION_ADMIN' },
  managerOnly: '/fetch/{TC}/{id}/history or /history.fetch',
};
