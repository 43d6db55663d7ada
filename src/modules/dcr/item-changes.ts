// Changes to the items of a DCR before submit: their proposed values (`/dcrmanager.update`, on a
// FAILED DCR proposed again on the record as it stands) and their removal (`/dcrmanager.delete`).
// The items are checked as when proposed (./service.ts).

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { canEdit } from '../../engine/crud.ts';
import { checkVersionValue, refuseUnknownFields } from '../../engine/value-check.ts';
import type { TypeContext } from '../../engine/context.ts';
import { AppError, validationError } from '../../http/errors.ts';
import * as store from './store.ts';
import { DCRI, editableDcr, itemViews, originalOf, proposalContext, type DcrScope } from './service.ts';
import { keyText as shownKey } from '../../engine/addressing.ts';
import {
  checkProposal,
  checkRecordRules,
  findTargets,
  hiddenTargetIds,
  keyData,
  keyFieldsOf,
  keyText,
} from './target.ts';

type Obj = Record<string, unknown>;

function itemIdOf(data: Obj, prefix: string): number {
  const ref = data.typedId ?? data.id;
  if (ref === undefined || ref === null)
    throw validationError(prefix + 'typedId', 'names the item (id or typedId …DCRI)');
  return store.parseDcrId(ref, 'DCRI', prefix + 'typedId');
}

/** Changes the proposed values of items: `{data: {typedId: '<n>.DCRI', <field>: value}, oldValues: {version}}`. */
export async function updateItems(
  db: Db,
  principal: Principal,
  idText: string,
  list: readonly { data: Obj; oldValues?: Obj | null }[],
): Promise<Obj[]> {
  const { s, ids } = await db.transaction(async (tx) => {
    const s = await editableDcr(tx, principal, idText);
    const batch = list.length > 1;
    const wanted = list.map((e, i) => itemIdOf(e.data, batch ? `${i}.` : ''));
    const rows = new Map(
      (await store.itemsOf(tx, principal.partitionId, s.dcr.id, wanted)).map((r) => [r.id, r]),
    );
    const hidden = new Set(await hiddenTargetIds(tx, principal, s.tc, s.dcr.id));
    const targets = (
      await findTargets(tx, principal, s.tc, {
        ids: [...rows.values()].flatMap((r) => (r.target_id === null ? [] : [Number(r.target_id)])),
        keys: [],
      })
    ).byId;
    const contexts = new Map<string, Promise<TypeContext>>();
    for (const [i, e] of list.entries()) {
      const prefix = batch ? `${i}.` : '';
      const item = rows.get(wanted[i]!);
      if (!item || (item.target_id !== null && hidden.has(Number(item.target_id))))
        throw new AppError('NOT_FOUND', `Item ${wanted[i]}.DCRI of ${s.dcr.unique_name} not found`, {
          field: prefix + 'typedId',
        });
      const target = item.target_id === null ? undefined : targets.get(Number(item.target_id));
      if (target !== undefined && !canEdit(s.type, principal, target)) {
        throw new AppError(
          'FORBIDDEN',
          `Not allowed to change ${target.typedId as string} (user group ${String(target.userGroupEdit)})`,
        );
      }
      const v = e.oldValues?.version;
      checkVersionValue(v, `${prefix}oldValues.version`);
      if (v !== undefined && v !== null && v !== item.version) {
        throw new AppError(
          'VERSION_CONFLICT',
          `Item ${item.id}.DCRI is at version ${item.version}, not ${JSON.stringify(v)}`,
          { field: `${prefix}oldValues.version` },
        );
      }
      const isDelete = item.change_type === 'DELETE';
      const key = keyData(s.type, item.target_key);
      const values: Obj = {};
      for (const [k, val] of Object.entries(e.data)) {
        if (k === 'typedId' || k === 'id') continue;
        // What the item changes, and which record, are fixed when it is added: repeating them is
        // fine, another value is refused (never silently dropped).
        if (k === 'changeType') {
          if (val !== item.change_type)
            throw validationError(prefix + k, `cannot be changed (the item is an ${item.change_type})`);
          continue;
        }
        if (s.type.businessKey.includes(k)) {
          const f = s.type.fields.find((x) => x.name === k)!;
          if (keyText(f, val, prefix + k) !== key[k])
            throw validationError(prefix + k, 'is part of the business key and cannot be changed');
          continue;
        }
        values[k] = val;
      }
      // A DELETE item proposes no values: one named is refused, naming it (as when proposed).
      const extra = isDelete ? Object.keys(values)[0] : undefined;
      if (extra !== undefined) throw validationError(prefix + extra, 'a DELETE item proposes no values');
      // Nothing to change is no update (it bumped the version alone) — except on a FAILED DCR, where
      // it proposes the item again on its record as it stands (below), a DELETE item too.
      if (Object.keys(values).length === 0 && s.dcr.status !== 'FAILED') {
        throw validationError(
          `${prefix}data`,
          isDelete
            ? 'names no field to change (a DELETE item proposes no values)'
            : 'names no field to change',
        );
      }
      // The record's table is in its key (an extension row's `name`, a condition record item's set):
      // its attribute meta types the values.
      const tc = isDelete ? undefined : await proposalContext(tx, principal, s, key, contexts);
      const proposed =
        tc === undefined
          ? item.proposed
          : { ...item.proposed, ...checkProposal(tc, s.allowed, values, prefix) };
      // Fixing a FAILED DCR ("fix the items and submit again"): the item is now proposed on the
      // record as it stands, so the conflict that failed it is resolved by this update.
      const rebased = s.dcr.status === 'FAILED' ? await currentTarget(tx, principal, s, item) : undefined;
      // Its record gone, the item cannot be proposed on it as it stands (it would only fail again).
      if (rebased === null) {
        throw new AppError(
          'NOT_FOUND',
          `${s.type.label} ${item.target_id}.${s.type.code} of item ${item.id}.DCRI was deleted since it was proposed: delete the item`,
          { field: prefix + 'typedId' },
        );
      }
      // An ADD whose key was taken since (what failed the DCR) cannot be proposed again: the 409 a
      // new ADD of it gets, naming the key field.
      if (s.dcr.status === 'FAILED' && item.change_type === 'ADD') {
        const keyJson = JSON.stringify(item.target_key);
        const taken = await findTargets(
          tx,
          principal,
          s.tc,
          { ids: [], keys: [item.target_key] },
          false,
          true,
        );
        if (taken.byKey.has(keyJson)) {
          throw new AppError(
            'CONFLICT',
            `${s.type.label} ${shownKey(item.target_key)} already exists: delete the item`,
            {
              field: prefix + keyFieldsOf(s.type, key).at(-1)!,
            },
          );
        }
      }
      const original = rebased?.original ?? item.original;
      if (!isDelete) checkRecordRules(s.type, { ...original, ...key, ...proposed }, prefix);
      await store.updateItem(tx, principal.partitionId, item.id, principal.userId, proposed, rebased);
    }
    return { s, ids: wanted };
  });
  return itemViews(db, principal, s, ids);
}

/**
 * The record an UPDATE or DELETE item targets, as it stands: its version and values (dates as ISO
 * text); null when it is gone, undefined for an ADD item.
 */
async function currentTarget(
  q: Queryable,
  principal: Principal,
  s: DcrScope,
  item: store.ItemRow,
): Promise<{ version: number; original: Obj } | null | undefined> {
  if (item.change_type === 'ADD' || item.target_id === null) return undefined;
  const found = await findTargets(q, principal, s.tc, { ids: [Number(item.target_id)], keys: [] });
  const row = found.byId.get(Number(item.target_id));
  if (row === undefined) return null;
  return { version: Number(row.version), original: originalOf(row) };
}

export async function deleteItems(
  db: Db,
  principal: Principal,
  idText: string,
  list: readonly Obj[],
): Promise<Obj[]> {
  refuseUnknownFields(DCRI, list);
  return db.transaction(async (tx) => {
    const s = await editableDcr(tx, principal, idText);
    const wanted = list.map((d, i) => itemIdOf(d, list.length > 1 ? `${i}.` : ''));
    const views = await itemViews(tx, principal, s, wanted);
    const hidden = new Set(await hiddenTargetIds(tx, principal, s.tc, s.dcr.id));
    const unseen = views.find((v) => typeof v.targetId === 'number' && hidden.has(v.targetId));
    // The element that named it: `typedId`, or `<i>.typedId` in a batch.
    const named = (id: number) => ({
      field: `${list.length > 1 ? `${wanted.indexOf(id)}.` : ''}typedId`,
    });
    if (unseen !== undefined) {
      const id = Number(unseen.id);
      throw new AppError('NOT_FOUND', `Item ${id}.DCRI of ${s.dcr.unique_name} not found`, named(id));
    }
    const gone = await store.deleteRows(tx, 'dcr_items', principal.partitionId, s.dcr.id, wanted);
    const missing = wanted.find((w) => !gone.includes(w));
    if (missing !== undefined)
      throw new AppError(
        'NOT_FOUND',
        `Item ${missing}.DCRI of ${s.dcr.unique_name} not found`,
        named(missing),
      );
    return views;
  });
}
