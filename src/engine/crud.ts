// The generic operations on any registered type, in one place for the modules that call them. Each
// lives in the file of its responsibility: fetch.ts (fetch, plan → compile → run), write.ts (add,
// update, integrate, delete), bulk-edit.ts (delete by filter, massedit, resetcolumn), with the access
// checks in access-check.ts, value checks in value-check.ts and record addressing in addressing.ts.
// Each operation starts with the type's permission, validates every value against the registry
// (custom attributes against the partition's attribute meta), and runs as one transaction.

export { canEdit, requireAccess } from './access-check.ts';
export { parseId } from './addressing.ts';
export { checkValue } from './value-check.ts';
export { fetchOne, fetchRecords, type FetchBody, type FetchResult } from './fetch.ts';
export { addRecords, integrateRecords, setDeleteActor, updateRecords, type UpdateItem } from './write.ts';
export { deleteRecords } from './write-delete.ts';
export {
  deleteByFilter,
  massEdit,
  planEdits,
  resetColumn,
  type BatchResult,
  type MassEditBody,
} from './bulk-edit.ts';
