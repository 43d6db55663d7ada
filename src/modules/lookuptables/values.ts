// The values of one lookup table (LTV, MLTV, MLTV2..MLTV6, JLTV, JLTV2). Every operation is the
// generic engine on a per-table TypeDef (`valueTypeOf`): the engine scopes each read and write to
// the table through the type's `fixed` column and checks the operation's permission, so paging,
// filters, validation and version checks are the engine's. Ranges never overlap (guaranteed by the
// trigger of migration 008, answered as a catalogue error); resetcolumn is for matrix tables only.
// Writes that check values by the table's valueType run under its row lock (`writingValues`).

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
import { sameTypedValue } from '../../engine/values.ts';
import { guarded, valuesOf, writingValues, type Obj } from './tables.ts';

/** The fields a value names its table by (conventions.md: "`lookupTableId`/`tableId`"). */
const TABLE_FIELDS = ['lookupTableId', 'tableId'] as const;

/**
 * A value's table is the path's: a `lookupTableId` or `tableId` in its data (an echo of a fetched
 * value carries both) naming another table is a -4 naming the field, never a write into the path's
 * table the client did not mean. The path's own id (as a number or text) is fine.
 */
function refuseOtherTable(tableId: number, records: readonly Obj[]): void {
  records.forEach((data, i) => {
    for (const field of TABLE_FIELDS) {
      const v = data[field];
      if (v === undefined || v === null || sameTypedValue('integer', tableId, v)) continue;
      throw validationError(
        `${records.length > 1 ? `${i}.` : ''}${field}`,
        `names table ${JSON.stringify(v)}, not ${tableId} of the path`,
      );
    }
  });
}

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
  return writingValues(db, principal, tableId, 'LOOKUPTABLE_ADD', (within, type) => {
    refuseOtherTable(tableId, items);
    return guarded(addRecords(within, principal, type, items));
  });
}

export async function updateValues(
  db: Db,
  principal: Principal,
  tableId: number,
  items: readonly UpdateItem[],
) {
  return writingValues(db, principal, tableId, 'LOOKUPTABLE_UPDATE', (within, type) => {
    refuseOtherTable(
      tableId,
      items.map((i) => i.data),
    );
    return guarded(updateRecords(within, principal, type, items, false));
  });
}

/** Upsert by name (or key1..keyN); unspecified fields keep their values. */
export async function integrateValues(db: Db, principal: Principal, tableId: number, items: readonly Obj[]) {
  return writingValues(db, principal, tableId, 'LOOKUPTABLEVALUES_INTEGRATE', (within, type) => {
    refuseOtherTable(tableId, items);
    return guarded(integrateRecords(within, principal, type, items, false));
  });
}

/**
 * Deletes values named by typedId (or key); `oldValues[i]` (routes: `deleteOldValuesOf`) holds the
 * version of `items[i]` when given: a stale one is a 409 and the batch deletes nothing.
 */
export async function deleteValues(
  db: Db,
  principal: Principal,
  tableId: number,
  items: readonly Obj[],
  oldValues: readonly (Obj | null)[],
) {
  const { type } = await valuesOf(db, principal, tableId, 'LOOKUPTABLE_REMOVE');
  refuseOtherTable(tableId, items);
  return deleteRecords(db, principal, type, items, oldValues);
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
  return writingValues(db, principal, tableId, 'LOOKUPTABLE_UPDATE', (within, type) =>
    guarded(massEdit(within, principal, type, body)),
  );
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
