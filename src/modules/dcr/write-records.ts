// The writes of an approved DCR on condition record items (CRCI, CRCI1..CRCI12), record by record
// through the engine's single-record writes — the same `deleteRecords`, `updateRecords` and
// `addRecords` as `/delete|update|add/CRCI<n>`: the set's edit group (the item guard), the
// database's no-overlap check (its trigger, under the set's and the key tuple's advisory locks, in
// the caller's READ COMMITTED transaction), CRCIH for deleted items and record history for every
// change. Deletes first, then updates, then adds (a DCR that shortens or removes an item to make
// room for a new one applies), then the mass changes. The first refused item fails the whole apply
// with the item named (`<n>.DCRI`, `<n>.DCRI.<field>`); the caller rolls everything back.

import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { massEdit, type MassEditBody } from '../../engine/crud.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { addRecords, updateRecords } from '../../engine/write.ts';
import { deleteRecords } from '../../engine/write-delete.ts';
import { toAppError } from '../../http/envelope.ts';
import { AppError, type FieldErrors } from '../../http/errors.ts';
import type { MassOpRow } from './store.ts';
import { keyData } from './target.ts';
import type { StagedRecord, Written } from './staged.ts';

/** The engine's refusal of one item, naming the item: nothing of the DCR is written. */
function refusedItem(ref: string, err: unknown): AppError {
  const e = toAppError(err);
  const errors: FieldErrors = {};
  for (const [field, r] of Object.entries(e.errors ?? {})) errors[`${ref}.${field}`] = r;
  if (Object.keys(errors).length === 0) errors[ref] = { errorMessage: e.message };
  return new AppError(e.code, `${ref} refused when applied: ${e.message}: nothing applied`, { errors });
}

async function each(
  items: readonly StagedRecord[],
  write: (item: StagedRecord) => Promise<unknown>,
): Promise<void> {
  for (const item of items) {
    try {
      await write(item);
    } catch (err) {
      throw refusedItem(item.ref, err);
    }
  }
}

export async function writeRecordByRecord(
  within: Db,
  writer: Principal,
  type: TypeDef,
  items: readonly StagedRecord[],
  massOps: readonly MassOpRow[],
): Promise<Written> {
  const deletes = items.filter((i) => i.change_type === 'DELETE');
  const updates = items.filter((i) => i.change_type === 'UPDATE' && Object.keys(i.proposed).length > 0);
  const adds = items.filter((i) => i.change_type === 'ADD');
  await each(deletes, (i) => deleteRecords(within, writer, type, [{ id: i.target_id }]));
  // Version-checked again by the engine (the apply has locked and compared every target before).
  await each(updates, (i) =>
    updateRecords(
      within,
      writer,
      type,
      [
        {
          data: { ...i.proposed, id: i.target_id },
          oldValues:
            i.target_version === undefined || i.target_version === null
              ? null
              : { version: i.target_version },
        },
      ],
      false,
    ),
  );
  await each(adds, (i) =>
    addRecords(within, writer, type, [{ ...i.proposed, ...keyData(type, i.target_key) }]),
  );
  const massEdited = await applyMassOps(within, writer, type, massOps);
  return { added: adds.length, updated: updates.length, deleted: deletes.length, massEdited };
}

/** A DCR's mass operations, in order, through the engine's massedit: answers the records changed. */
export async function applyMassOps(
  within: Db,
  writer: Principal,
  type: TypeDef,
  massOps: readonly MassOpRow[],
): Promise<number> {
  let massEdited = 0;
  for (const m of massOps) {
    massEdited += await massEdit(within, writer, type, {
      filterCriteria: m.filter,
      massEditRecords: m.operations as MassEditBody['massEditRecords'],
    });
  }
  return massEdited;
}
