// The writes of an approved DCR on condition record items (CRCI, CRCI1..CRCI12), record by record
// through the engine's single-record writes — the same `deleteRecords`, `updateRecords` and
// `addRecords` as `/delete|update|add/CRCI<n>`: the set's edit group (the item guard), the
// database's no-overlap check (its trigger, under the set's and the key tuple's advisory locks, in
// the caller's READ COMMITTED transaction), CRCIH for deleted items and record history for every
// change. Deletes first, then updates, then adds (a DCR that shortens or removes an item to make
// room for a new one applies), then the mass changes. The first refused item fails the whole apply
// with the item named (`<n>.DCRI`, `<n>.DCRI.<field>`); the caller rolls everything back.

import type { Principal } from '../../access/access.ts';
import { isTransientConflict, type Db } from '../../db/db.ts';
import { massEdit, type MassEditBody } from '../../engine/crud.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { addRecords, updateRecords } from '../../engine/write.ts';
import { deleteRecords } from '../../engine/write-delete.ts';
import { toAppError } from '../../http/envelope.ts';
import { AppError, type FieldErrors } from '../../http/errors.ts';
import type { MassOpRow } from './store.ts';
import { keyData } from './target.ts';
import type { StagedRecord, Written } from './staged.ts';

/**
 * The condition record items this apply has written so far, by id: those it added (rolled back
 * with the DCR once it fails, so they never exist) and those it changed (stored, but never with the
 * values it gave them). An error naming one (the database's overlap check: `overlaps item 25.CRCI
 * (valid ...)`) names the DCR item that wrote it instead — `item 3.DCRI`, or `item 7.CRCI as 4.DCRI
 * leaves it` — as a direct batch names its elements (src/engine/write.ts `eachElement`).
 */
class WrittenItems {
  private readonly added = new Map<string, string>();
  private readonly changed = new Map<string, string>();

  note(rows: readonly Record<string, unknown>[], ref: string, added: boolean): void {
    for (const row of rows) (added ? this.added : this.changed).set(String(row.id), ref);
  }

  /** `e` with the items it names renamed (itself when it names none of them). */
  renamed(e: AppError): AppError {
    const message = this.rename(e.message);
    let changed = message !== e.message;
    const errors: FieldErrors = {};
    for (const [field, r] of Object.entries(e.errors ?? {})) {
      const errorMessage = this.rename(r.errorMessage);
      changed ||= errorMessage !== r.errorMessage;
      errors[field] = { ...r, errorMessage };
    }
    if (!changed) return e;
    return new AppError(e.code, message, {
      ...(e.errors === undefined ? {} : { errors }),
      details: e.details,
    });
  }

  private rename(text: string): string {
    return text.replace(/\b(?:item )?(\d+)\.CRCI\d*\b/g, (whole, id: string) => {
      const by = this.added.get(id);
      if (by !== undefined) return `item ${by}`;
      const changedBy = this.changed.get(id);
      return changedBy === undefined ? whole : `${whole} as ${changedBy} leaves it`;
    });
  }
}

/** The engine's refusal of one item, naming the item: nothing of the DCR is written. */
function refusedItem(ref: string, err: unknown, written: WrittenItems): AppError {
  const e = written.renamed(toAppError(err));
  const errors: FieldErrors = {};
  for (const [field, r] of Object.entries(e.errors ?? {})) errors[`${ref}.${field}`] = r;
  if (Object.keys(errors).length === 0) errors[ref] = { errorMessage: e.message };
  return new AppError(e.code, `${ref} refused when applied: ${e.message}: nothing applied`, { errors });
}

async function each(
  items: readonly StagedRecord[],
  written: WrittenItems,
  write: (item: StagedRecord) => Promise<readonly Record<string, unknown>[] | void>,
  added = false,
): Promise<void> {
  for (const item of items) {
    try {
      written.note((await write(item)) ?? [], item.ref, added);
    } catch (err) {
      throw refusedItem(item.ref, err, written);
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
  const written = new WrittenItems();
  await each(deletes, written, async (i) => {
    await deleteRecords(within, writer, type, [{ id: i.target_id }]);
  });
  // Version-checked again by the engine (the apply has locked and compared every target before).
  await each(updates, written, (i) =>
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
  await each(
    adds,
    written,
    (i) => addRecords(within, writer, type, [{ ...i.proposed, ...keyData(type, i.target_key) }]),
    true,
  );
  let massEdited: number;
  try {
    massEdited = await applyMassOps(within, writer, type, massOps);
  } catch (err) {
    // A deadlock is no refusal: the caller's transaction runs again (./applytx.ts applyWithin).
    if (isTransientConflict(err)) throw err;
    const e = toAppError(err);
    const named = written.renamed(e);
    throw named === e ? err : named;
  }
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
