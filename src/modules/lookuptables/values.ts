// The values of one lookup table (LTV, MLTV, MLTV2..MLTV6, JLTV, JLTV2). Every operation is the
// generic engine on a per-table TypeDef (`valueTypeOf`): the engine scopes each read and write to
// the table through the type's `fixed` column and checks the operation's permission, so paging,
// filters, validation and version checks are the engine's. Ranges never overlap (guaranteed by the
// trigger of migration 008, answered as a catalogue error); resetcolumn is for matrix tables only.

import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { validationError } from '../../http/errors.ts';
import {
  addRecords,
  deleteByFilter,
  deleteRecords,
  fetchRecords,
  integrateRecords,
  massEdit,
  resetColumn,
  updateRecords,
  type FetchBody,
  type FetchResult,
  type MassEditBody,
  type UpdateItem,
} from '../../engine/crud.ts';
import { isMatrix } from '../../engine/registry-lookup.ts';
import { guarded, valuesOf, type Obj } from './tables.ts';

export async function fetchValues(
  db: Db,
  principal: Principal,
  tableId: number,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  const { type } = await valuesOf(db, principal, tableId);
  return fetchRecords(db, principal, type, body, maxPageSize);
}

export async function addValues(db: Db, principal: Principal, tableId: number, items: readonly Obj[]) {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_ADD');
  return guarded(addRecords(db, principal, type, items));
}

export async function updateValues(
  db: Db,
  principal: Principal,
  tableId: number,
  items: readonly UpdateItem[],
) {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_UPDATE');
  return guarded(updateRecords(db, principal, type, items, false));
}

/** Upsert by name (or key1..keyN); unspecified fields keep their values. */
export async function integrateValues(db: Db, principal: Principal, tableId: number, items: readonly Obj[]) {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLEVALUES_INTEGRATE');
  return guarded(integrateRecords(db, principal, type, items, false));
}

export async function deleteValues(db: Db, principal: Principal, tableId: number, items: readonly Obj[]) {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_REMOVE');
  return deleteRecords(db, principal, type, items);
}

/** Deletes the values matching the filter; an invalid clause is a -4 (never a wider delete). */
export async function deleteValuesByFilter(
  db: Db,
  principal: Principal,
  tableId: number,
  body: FetchBody,
): Promise<number> {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_REMOVE');
  return (await deleteByFilter(db, principal, type, body, false)).count;
}

/** Sets (=, null) or computes (+ - * /) value columns of the matching values of an LTV or MLTV table. */
export async function massEditValues(
  db: Db,
  principal: Principal,
  tableId: number,
  body: MassEditBody,
): Promise<number> {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_UPDATE');
  return guarded(massEdit(db, principal, type, body));
}

export async function resetValueColumn(
  db: Db,
  principal: Principal,
  tableId: number,
  column: string,
): Promise<number> {
  const { table, type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_REMOVE');
  if (!isMatrix(table.type)) {
    throw validationError(
      'tableId',
      `resetcolumn applies to matrix tables only; ${table.uniqueName} is ${table.type}`,
    );
  }
  return resetColumn(db, principal, type, column);
}
