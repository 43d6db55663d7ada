// The lookup table manager (company parameters): its tables (LT) here, their values (LTV, MLTV,
// MLTV2..MLTV6, JLTV, JLTV2) in values.ts, export.ts and load.ts; logics read tables through their
// own set-based data port (src/modules/formulas/data.ts). A table's kind never changes, nor its value
// type while it holds values. Shared with the value files, which this one never imports: `valuesOf`
// (a table's values as a type, after the operation's permission), `writingValues` (a write of them
// under the table's row lock) and `guarded` (database guards).

import type { Principal } from '../../access/access.ts';
import type { Permission } from '../../access/catalogue.ts';
import { batchTransaction, type Db, type Queryable } from '../../db/db.ts';
import { inTransaction } from '../../db/views.ts';
import { AppError, namedElement, notFound, validationError } from '../../http/errors.ts';
import { addressOf, selectOne } from '../../engine/addressing.ts';
import { loadTypeContext } from '../../engine/context.ts';
import {
  addRecords,
  checkValue,
  deleteByFilter,
  deleteRecords,
  fetchOne,
  fetchRecords,
  requireAccess,
  updateRecords,
  type FetchBody,
  type FetchResult,
  type UpdateItem,
} from '../../engine/crud.ts';
import type { FieldDef, TypeDef } from '../../engine/registry.ts';
import { tableTypeFor, valueTypeOf, type LookupTable } from '../../engine/registry-lookup.ts';
import * as store from './store.ts';
import { logicsReferencingTable } from '../formulas/service.ts';

export type Obj = Record<string, unknown>;
export type Row = Record<string, unknown>;

/** The table of reads: `LT` as declared (any user may read company parameters). */
const TABLES = tableTypeFor('LOOKUPTABLE_UPDATE');

// ---------------------------------------------------------------------------------------------
// Tables and their values as types

const TABLE_ID = /^\d{1,15}$/;

export function parseTableId(text: string): number {
  if (!TABLE_ID.test(text)) throw validationError('tableId', `${JSON.stringify(text)} is not a table id`);
  return Number(text);
}

export async function findTableOrFail(q: Queryable, principal: Principal, id: number): Promise<LookupTable> {
  const table = await store.tableById(q, principal, id);
  if (!table) throw notFound(`Lookup table ${id}`, 'tableId');
  return table;
}

/**
 * The values of table `id` as a type, after the permission of the operation (so a caller without it
 * learns nothing, not even whether the table exists). Reads pass no permission: the type's own
 * fetch access applies.
 */
export async function valuesOf(
  q: Queryable,
  principal: Principal,
  id: number,
  write?: Permission,
): Promise<{ table: LookupTable; type: TypeDef }> {
  if (write !== undefined) requireAccess(principal, write);
  const table = await findTableOrFail(q, principal, id);
  return { table, type: valueTypeOf(table, write) };
}

/**
 * Runs `fn`, a write of the values of table `id` (add, update, integrate, massedit), in one
 * transaction that first locks the table's row FOR KEY SHARE and reads it under the lock: `type`
 * checks the values by the valueType that holds until the write commits. A change of the valueType
 * locks the row FOR UPDATE before it looks for values (updateTables), so the two are serialised: a
 * write committed first is seen there (the change refused), a later one waits and is checked by the
 * new type. (With the table read before the write's own transaction, an add of "abc" and a change to
 * INT could both answer 200, leaving "abc" in an INT table.) KEY SHARE: writes of values wait
 * neither for each other nor for changes of the table's other fields. The engine's own transaction
 * is this one (inTransaction); a deadlock runs the whole write again (batchTransaction).
 */
export async function writingValues<T>(
  db: Db,
  principal: Principal,
  id: number,
  write: Permission,
  fn: (within: Db, type: TypeDef) => Promise<T>,
): Promise<T> {
  requireAccess(principal, write);
  return batchTransaction(db, async (tx) => {
    const table = await store.tableById(tx, principal, id, 'FOR KEY SHARE');
    if (!table) throw notFound(`Lookup table ${id}`, 'tableId');
    return fn(inTransaction(db, tx), valueTypeOf(table, write));
  });
}

/** The database's own guards of lookup values, as catalogue errors naming the field at fault. */
function translate(err: unknown): unknown {
  const e = err as { code?: unknown; constraint?: unknown; detail?: unknown; message?: unknown };
  if (e.code === '23P01' && e.constraint === 'lookup_values_ranges') {
    // The trigger's message names both ranges (no SQL), and its DETAIL the bound at fault.
    const field = e.detail === 'upperBound' ? 'upperBound' : 'lowerBound';
    return new AppError('CONFLICT', String(e.message), { field });
  }
  if (e.code === '23514' && e.constraint === 'lookup_values_bounds') {
    return validationError('upperBound', 'must be greater than lowerBound');
  }
  // A value written while its table was being deleted.
  if (e.code === '23503') return notFound('Lookup table', 'tableId');
  // A table added or copied under a name another transaction took after this one looked.
  if (e.code === '23505' && e.constraint === 'lookup_tables_partition_id_unique_name_key') {
    return new AppError('DUPLICATE_KEY', 'A lookup table with this uniqueName already exists', {
      field: 'uniqueName',
    });
  }
  return err;
}

export async function guarded<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    const e = translate(err);
    // The element of a batch the database refused, named as the engine names it (`1.lowerBound`).
    throw e instanceof AppError && e !== err ? namedElement(err, e) : e;
  }
}

// ---------------------------------------------------------------------------------------------
// Tables

export function fetchTables(
  db: Db,
  principal: Principal,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  return fetchRecords(db, principal, TABLES, body, maxPageSize);
}

/** Creates tables; `valueType` defaults to STRING and `status` to ACTIVE. */
export function addTables(db: Db, principal: Principal, items: readonly Obj[]): Promise<Row[]> {
  requireAccess(principal, 'LOOKUPTABLE_ADD');
  const withDefaults = items.map((d) => ({
    ...d,
    valueType: d.valueType ?? 'STRING',
    status: d.status ?? 'ACTIVE',
  }));
  return addRecords(db, principal, tableTypeFor('LOOKUPTABLE_ADD'), withDefaults);
}

/** The table an update names (typedId, id or uniqueName), if it names one that exists. */
async function addressedTable(
  q: Queryable,
  principal: Principal,
  data: Obj,
  lock?: store.TableLock,
): Promise<LookupTable | undefined> {
  const ref = data.typedId ?? data.id;
  if (ref !== undefined && ref !== null) {
    const m =
      typeof ref === 'string' || typeof ref === 'number' ? /^(\d{1,15})(?:\.LT)?$/.exec(String(ref)) : null;
    return m ? store.tableById(q, principal, Number(m[1]), lock) : undefined;
  }
  return typeof data.uniqueName === 'string'
    ? store.tableByName(q, principal, data.uniqueName, lock)
    : undefined;
}

/**
 * Updates tables (version-checked); the kind never changes, the value type only while empty. In one
 * transaction: a change of the value type locks the table FOR UPDATE before it looks for values, so
 * it waits for the writes of values under way (writingValues) and sees what they wrote.
 */
export async function updateTables(
  db: Db,
  principal: Principal,
  items: readonly UpdateItem[],
): Promise<Row[]> {
  requireAccess(principal, 'LOOKUPTABLE_UPDATE');
  const type = tableTypeFor('LOOKUPTABLE_UPDATE');
  // A kind or value type that is none (`int`, not INT) is the engine's "must be one of", whatever
  // the table holds: no change is looked at then, the engine refuses the update as it checks it.
  const invalid = items.some(({ data }) =>
    (['type', 'valueType'] as const).some((name) => {
      const field = type.fields.find((f) => f.name === name)!;
      return data[name] !== undefined && typeof checkValue(field, data[name]) === 'string';
    }),
  );
  return batchTransaction(db, async (tx) => {
    for (const { data } of invalid ? [] : items) {
      const retyped = data.valueType !== undefined;
      const table = await addressedTable(tx, principal, data, retyped ? 'FOR UPDATE' : undefined);
      if (!table) continue; // the engine answers the 404 or the -4 of a bad address
      if (data.type !== undefined && data.type !== table.type) {
        throw validationError('type', `${table.type} cannot be changed: copy the values into a new table`);
      }
      if (
        retyped &&
        data.valueType !== table.valueType &&
        (await store.hasValues(tx, principal, valueTypeOf(table)))
      ) {
        throw validationError('valueType', 'cannot be changed while the table holds values');
      }
    }
    // The engine's own transaction is this one: the lock holds until the change commits.
    return updateRecords(inTransaction(db, tx), principal, type, items, false);
  });
}

/**
 * Deletes tables named by typedId (or uniqueName) with their values, in one transaction: the values
 * first, by the engine's delete by filter, so each leaves its DELETE history row (the foreign key's
 * ON DELETE CASCADE would leave none), then the tables. `oldValues[i]` (routes: `deleteOldValuesOf`)
 * holds the version of `items[i]` when given: a stale one is a 409 and deletes nothing, as for the
 * general /delete.
 */
export function deleteTables(
  db: Db,
  principal: Principal,
  items: readonly Obj[],
  oldValues: readonly (Obj | null)[],
): Promise<Row[]> {
  requireAccess(principal, 'LOOKUPTABLE_REMOVE');
  const type = tableTypeFor('LOOKUPTABLE_REMOVE');
  return batchTransaction(db, async (tx) => {
    const within = inTransaction(db, tx);
    const tc = await loadTypeContext(tx, principal, type);
    for (const item of items) {
      const address = addressOf(type, item);
      // A table not named or not found deletes no value: the delete below refuses it, rolling back.
      const table = address && (await selectOne(tx, tc, principal, address, true));
      if (!table) continue;
      const { type: values } = await valuesOf(tx, principal, Number(table.id), 'LOOKUPTABLE_REMOVE');
      await deleteByFilter(within, principal, values, { data: {} }, false);
    }
    return deleteRecords(within, principal, type, items, oldValues);
  });
}

function fieldOf(type: TypeDef, name: string): FieldDef {
  return type.fields.find((f) => f.name === name)!;
}

/** Copies a table and its values as `uniqueName` (and `label`, else the original's), in one transaction. */
export async function copyTable(db: Db, principal: Principal, tableId: number, data: Obj): Promise<Row> {
  requireAccess(principal, 'LOOKUPTABLE_COPY');
  const from = await findTableOrFail(db, principal, tableId);
  const type = tableTypeFor('LOOKUPTABLE_COPY');
  const name = checkValue(fieldOf(type, 'uniqueName'), data.uniqueName);
  if (typeof name === 'string') throw validationError('uniqueName', name);
  const label = 'label' in data ? checkValue(fieldOf(type, 'label'), data.label) : undefined;
  if (typeof label === 'string') throw validationError('label', label);
  const uniqueName = name.value as string;
  return guarded(
    db.transaction(async (tx) => {
      // The original's valueType holds until the copy (which takes it along) commits: writingValues.
      const source = await store.tableById(tx, principal, from.id, 'FOR KEY SHARE');
      if (!source) throw notFound(`Lookup table ${tableId}`, 'tableId');
      if (await store.tableByName(tx, principal, uniqueName)) {
        throw new AppError(
          'DUPLICATE_KEY',
          `Lookup table uniqueName=${JSON.stringify(uniqueName)} already exists`,
          {
            field: 'uniqueName',
          },
        );
      }
      const copy = await store.copyTable(
        tx,
        principal,
        source,
        type,
        valueTypeOf(source),
        uniqueName,
        label === undefined ? undefined : (label.value as string | null),
      );
      return { ...(await fetchOne(tx, principal, TABLES, String(copy.id))), copiedValues: copy.copiedValues };
    }),
  );
}

/**
 * The logics (and their elements) that reference the table: every `lookup`/`lookupRow` call naming
 * it, read from the compiled logic (table names are literals there), never by text search.
 */
export async function findReferences(db: Db, principal: Principal, tableId: number): Promise<Row[]> {
  requireAccess(principal, 'LOOKUPTABLE_UPDATE');
  const table = await findTableOrFail(db, principal, tableId);
  return logicsReferencingTable(db, principal.partitionId, table.uniqueName);
}
