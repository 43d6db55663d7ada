// Deletes of records by address (one, or a batch as one transaction): each record's edit rights,
// version and state rules (beforeChange) checked, soft or hard as the type says, with its record
// history in the same statement. The helpers shared with the other writes are write.ts's.

import type { Principal } from '../access/access.ts';
import type { Db } from '../db/db.ts';
import { Params, ident } from '../db/sql.ts';
import { AppError, prefixed, validationError } from '../http/errors.ts';
import { requireWrite } from './access-check.ts';
import { addressField, recordNotFound, requireAddress, selectOne } from './addressing.ts';
import { loadTypeContext, toRecord, typedPerRow } from './context.ts';
import type { TypeDef } from './registry.ts';
import { checkVersion, refuseOtherKey } from './value-check.ts';
import { deleteAtOnce } from './write-batch.ts';
import { written } from './write-rows.ts';
import { atOnce, contextCache, inBatch, requireEditable, setDeleteActor, writer } from './write.ts';

type Obj = Record<string, unknown>;
type Row = Record<string, unknown>;

export async function deleteRecords(
  db: Db,
  principal: Principal,
  pathType: TypeDef,
  given: readonly Obj[],
  oldValues: readonly (Obj | null)[] = [],
): Promise<Row[]> {
  requireWrite(principal, pathType, 'delete');
  const { type, items } = await writer(db, principal, pathType, given);
  const versions = new Map(items.map((data, i) => [data, oldValues[i] ?? null]));
  return inBatch(db, principal, type, items, async (tx) => {
    const tc = await loadTypeContext(tx, principal, type);
    // The answer types an extension row by its own table's meta.
    const typed = contextCache(tx, principal, type);
    await setDeleteActor(tx, principal);
    if (items.length > 1 && atOnce(type)) {
      const rows = await deleteAtOnce(tx, tc, principal, items, oldValues);
      if (rows) return rows;
    }
    // Addresses of the records this batch has deleted: named again, they are repeated, not missing.
    const gone = new Set<string>();
    const one = async (data: Obj): Promise<Row> => {
      const unknown = Object.keys(data).find((k) => k !== 'typedId' && !tc.fields.has(k));
      if (unknown !== undefined) throw validationError(unknown, 'unknown field');
      const address = requireAddress(type, data);
      const old = await selectOne(tx, tc, principal, address, true);
      if (!old && gone.has(JSON.stringify(address))) {
        throw validationError(
          addressField(type, address, data),
          'names a record an earlier element of the batch deletes',
        );
      }
      if (!old) throw recordNotFound(type, address, data);
      await requireEditable(tx, principal, tc, old, 'delete', addressField(type, address, data));
      refuseOtherKey(tc, data, old);
      checkVersion(versions.get(data), old, false);
      try {
        await type.beforeChange?.(tx, principal, old, undefined);
      } catch (e) {
        // A refusal of the record as a whole (its state: locked, in a workflow) names its address as
        // the request gave it, as the edit-group refusal above does.
        const field = addressField(type, address, data);
        throw e instanceof AppError && e.errors === undefined
          ? new AppError(e.code, e.message, { field, details: e.details })
          : e;
      }
      const params = new Params();
      const match = `t.partition_id = ${params.add(principal.partitionId)} AND t.id = ${params.add(old.id)}`;
      const stmt =
        type.deleteMode === 'soft'
          ? `UPDATE ${ident(type.table)} t SET deleted_at = now(), version = t.version + 1, last_update_at = now(),
                    last_update_by = ${params.add(principal.userId)} WHERE ${match}`
          : `DELETE FROM ${ident(type.table)} t WHERE ${match}`;
      try {
        await tx.query(written(stmt, tc, principal, params, 'count'), params.values);
      } catch (err) {
        // A state rule of the database about this record (RC409, e.g. a grid item waiting in a
        // workflow, migration 051): named by the field that addressed it (`1.typedId` in a batch).
        if ((err as { code?: unknown } | null)?.code === 'RC409')
          throw new AppError('CONFLICT', (err as Error).message, {
            field: addressField(type, address, data),
          });
        throw err;
      }
      gone.add(JSON.stringify({ id: Number(old.id) }));
      gone.add(JSON.stringify({ key: type.businessKey.map((k) => old[k]) }));
      return toRecord(typedPerRow(type) ? await typed(old) : tc, old);
    };
    // Errors of a batch's element name it (`1.typedId`); a database rule's field (`force` of a
    // set that holds items) is the request's, not the element's.
    const out: Row[] = [];
    for (const [i, data] of items.entries())
      out.push(await prefixed(items.length > 1 ? `${i}.` : '', () => one(data)));
    return out;
  });
}
