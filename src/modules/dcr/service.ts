// Data change requests before submit: create a DCR from a DCR type, propose items (ADD, UPDATE,
// DELETE of one target record each, checked when proposed: fields of the type and of the DCR type,
// values, keys, the user's edit groups) and mass changes (a filter plus mass-edit operations). An
// UPDATE or DELETE item keeps the target's values and version as proposed; ./apply.ts writes them.

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import {
  canEdit,
  fetchOne,
  fetchRecords,
  requireAccess,
  type FetchBody,
  type FetchResult,
} from '../../engine/crud.ts';
import { findType, type TypeDef } from '../../engine/registry.ts';
import { optionalText } from '../../engine/value-check.ts';
import { isConditionRecordItemCode } from '../../engine/registry-dcr.ts';
import { AppError, prefixed, validationError } from '../../http/errors.ts';
import * as store from './store.ts';
import { addressField, parseProposal, refuseEmptyUpdate, refuseOtherRecord } from './proposal.ts';
import {
  allowedFields,
  checkProposal,
  checkRecordRules,
  findTargets,
  hiddenTargetIds,
  keyFieldsOf,
  loadTypeContext,
  resolveTargetType,
  targetKeyOf,
} from './target.ts';
import { metaNameOf, type TypeContext } from '../../engine/context.ts';
import { typedItems, withTargetKey } from './item-typing.ts';
import { keyText } from '../../engine/addressing.ts';

type Obj = Record<string, unknown>;

const DCR = findType('DCR')!;

/** A DCR's or a mass change's label (at `field`): null, or storable text of at most 1,000 characters. */
export function checkLabel(label: unknown, field: string): string | null {
  return optionalText(label, field, 1000);
}
export const DCRI = findType('DCRI')!;

/** States in which items and mass changes may still change (a failed DCR can be fixed and resubmitted). */
const EDITABLE = ['DRAFT', 'FAILED', 'DENIED'];

export interface DcrScope {
  readonly dcr: store.DcrRow;
  readonly type: TypeDef;
  readonly tc: TypeContext;
  readonly allowed: ReadonlySet<string>;
}

/** The DCR, its target type as this partition sees it and the fields its DCR type lets change. */
export async function scopeOf(q: Queryable, principal: Principal, dcr: store.DcrRow): Promise<DcrScope> {
  const t = await store.dcrTypeByName(q, principal.partitionId, dcr.dcr_type);
  const type = await resolveTargetType(q, principal, dcr.target_type, dcr.lookup_table);
  const tc = await loadTypeContext(q, principal, type);
  return { dcr, type, tc, allowed: allowedFields(tc, t?.fields ?? null) };
}

/** A DCR the caller may work with (DCR_EDIT), by its id or typedId (404 when there is none). */
export async function readableDcr(
  q: Queryable,
  principal: Principal,
  idText: string,
  forUpdate = false,
): Promise<store.DcrRow> {
  requireAccess(principal, 'DCR_EDIT');
  return store.findDcrOrFail(q, principal.partitionId, store.parseDcrId(idText), forUpdate);
}

/**
 * A DCR whose items and mass changes may change, locked for the caller's transaction: changes of one
 * DCR (and its submit, which locks it too) run one after another, so a version check cannot pass
 * twice and nothing is added to a DCR being applied.
 */
export async function editableDcr(q: Queryable, principal: Principal, idText: string): Promise<DcrScope> {
  const dcr = await readableDcr(q, principal, idText, true);
  if (!EDITABLE.includes(dcr.status)) {
    throw new AppError(
      'CONFLICT',
      `${dcr.unique_name} is ${dcr.status}: only DRAFT, FAILED or DENIED DCRs can change`,
    );
  }
  return scopeOf(q, principal, dcr);
}

export async function dcrRecord(db: Queryable, principal: Principal, id: number): Promise<Obj> {
  return fetchOne(db, principal, DCR, String(id));
}

// ---------------------------------------------------------------------------------------------
// DCRs

export async function addDcr(db: Db, principal: Principal, data: Obj): Promise<Obj> {
  requireAccess(principal, 'DCR_EDIT');
  // The fields a DCR is created with; the rest of a DCR (status, dates, ...) is the server's.
  const unknown = Object.keys(data).find((k) => k !== 'dcrType' && k !== 'label');
  if (unknown !== undefined) {
    throw validationError(unknown, 'unknown field: a DCR is created with dcrType and label');
  }
  if (data.dcrType === undefined || data.dcrType === null || data.dcrType === '')
    throw validationError('dcrType', 'is required');
  if (typeof data.dcrType !== 'string')
    throw validationError('dcrType', 'must be the uniqueName of a DCR type (text)');
  const label = checkLabel(data.label, 'label');
  const id = await db.transaction(async (tx) => {
    const t = await store.dcrTypeByName(tx, principal.partitionId, data.dcrType as string);
    if (!t) throw validationError('dcrType', `unknown DCR type ${JSON.stringify(data.dcrType)}`);
    // The DCR type must still describe a writable target (a table may have been removed since).
    const type = await resolveTargetType(tx, principal, t.target_type, t.lookup_table);
    allowedFields(await loadTypeContext(tx, principal, type), t.fields);
    return store.insertDcr(tx, principal.partitionId, principal.userId, t, label);
  });
  return dcrRecord(db, principal, id);
}

// ---------------------------------------------------------------------------------------------
// Items

/**
 * A proposal's values checked against the target's fields. Types with attribute meta per table
 * (`metaPerName`): as the table the record names types its attributes — an extension row (PX, CX,
 * SX) by its `name`'s meta, a condition record item by its set's CRCIAM meta — as the engine will
 * when it writes them (its `contextCache`), not only when the DCR is applied.
 */
export async function proposalContext(
  q: Queryable,
  principal: Principal,
  s: DcrScope,
  record: Readonly<Obj>,
  cache: Map<string, Promise<TypeContext>>,
): Promise<TypeContext> {
  const name = metaNameOf(s.type, record);
  if (name === undefined) return s.tc;
  let tc = cache.get(name);
  if (!tc) {
    tc = loadTypeContext(q, principal, s.type, name);
    cache.set(name, tc);
  }
  return tc;
}

/** Proposes items (one object or an array): checked against the current data, stored in one statement. */
export async function addItems(
  db: Db,
  principal: Principal,
  idText: string,
  list: readonly Obj[],
): Promise<Obj[]> {
  const { s, ids } = await db.transaction(async (tx) => {
    const s = await editableDcr(tx, principal, idText);
    const batch = list.length > 1;
    const proposals = list.map((d, i) => parseProposal(s.type, s.tc, d, batch ? `${i}.` : ''));
    const found = await findTargets(tx, principal, s.tc, {
      ids: proposals.flatMap((p) => (p.changeType !== 'ADD' && p.id !== undefined ? [p.id] : [])),
      keys: proposals.flatMap((p) => (p.changeType !== 'ADD' && p.key !== undefined ? [p.key] : [])),
    });
    // A key is taken whatever groups hide its record: an ADD of it is a 409, as /add answers it
    // (a hidden record's key was taken as new and refused only when the DCR was applied).
    const taken = await findTargets(
      tx,
      principal,
      s.tc,
      {
        ids: [],
        keys: proposals.flatMap((p) => (p.changeType === 'ADD' && p.key !== undefined ? [p.key] : [])),
      },
      false,
      true,
    );
    const contexts = new Map<string, Promise<TypeContext>>();
    const items: store.NewItem[] = [];
    const seen = new Set<string>();
    for (const [i, p] of proposals.entries()) {
      const prefix = batch ? `${i}.` : '';
      const keyJson = p.key === undefined ? undefined : JSON.stringify(p.key);
      if (p.changeType === 'ADD') {
        const last = keyFieldsOf(s.type, p.values).at(-1)!;
        // A duplicate business key is a conflict (409/-1, naming the field), as /add answers it.
        if (taken.byKey.has(keyJson!)) {
          throw new AppError('CONFLICT', `${s.type.label} ${keyText(p.key!)} already exists`, {
            field: prefix + last,
          });
        }
        if (seen.has(keyJson!))
          throw new AppError('CONFLICT', `${s.type.label} ${keyText(p.key!)} is proposed twice`, {
            field: prefix + last,
          });
        seen.add(keyJson!);
        // Condition record items: their set exists, is visible and editable for the user (its
        // userGroupEdit), and the item has the set's number of keys — the engine's own check.
        const guard = isConditionRecordItemCode(s.type.code) ? s.type.beforeInsert : undefined;
        if (guard) await prefixed(prefix, () => guard(tx, principal, p.values));
        const tc = await proposalContext(tx, principal, s, p.values, contexts);
        const proposed = checkProposal(tc, s.allowed, p.values, prefix);
        checkRecordRules(s.type, p.values, prefix);
        for (const f of tc.fields.values()) {
          if (
            f.required &&
            !f.key &&
            !f.defaultOnAdd &&
            (proposed[f.name] === undefined || proposed[f.name] === null)
          ) {
            throw validationError(prefix + f.name, 'is required');
          }
        }
        items.push({
          changeType: 'ADD',
          targetId: null,
          targetVersion: null,
          targetKey: p.key!,
          proposed,
          original: null,
        });
        continue;
      }
      const row = p.id !== undefined ? found.byId.get(p.id) : found.byKey.get(keyJson!);
      if (!row) {
        throw new AppError(
          'NOT_FOUND',
          `${s.type.label} ${p.id !== undefined ? `${p.id}.${s.type.code}` : keyJson} not found`,
          { field: prefix + addressField(s.type, p) },
        );
      }
      if (!canEdit(s.type, principal, row)) {
        throw new AppError(
          'FORBIDDEN',
          `Not allowed to change ${row.typedId as string} (user group ${String(row.userGroupEdit)})`,
        );
      }
      const tc = await proposalContext(tx, principal, s, row, contexts);
      if (p.id !== undefined) refuseOtherRecord(tc, p.values, row, prefix);
      const rowKey = targetKeyOf(s.type, row);
      const k = JSON.stringify(rowKey);
      const addressedBy = addressField(s.type, p);
      if (seen.has(k))
        throw validationError(prefix + addressedBy, `${row.typedId as string} is proposed twice`);
      seen.add(k);
      const proposed = p.changeType === 'UPDATE' ? checkProposal(tc, s.allowed, p.values, prefix) : {};
      refuseEmptyUpdate(p, proposed, prefix + addressedBy);
      const original = originalOf(row);
      if (p.changeType === 'UPDATE') checkRecordRules(s.type, { ...original, ...proposed }, prefix);
      items.push({
        changeType: p.changeType,
        targetId: Number(row.id),
        targetVersion: Number(row.version),
        targetKey: rowKey,
        proposed,
        original,
      });
    }
    const inserted = await store.insertItems(tx, principal.partitionId, s.dcr.id, principal.userId, items);
    if (inserted.length < items.length) {
      // Name the first proposal whose record already has an item, and that item.
      const taken = new Set(inserted.map((x) => JSON.stringify(JSON.parse(x.key))));
      const at = items.findIndex((it) => !taken.has(JSON.stringify(it.targetKey)));
      const existing = await store.itemIdByKey(tx, principal.partitionId, s.dcr.id, items[at]!.targetKey);
      const what = `${s.type.label} ${JSON.stringify(items[at]!.targetKey)}`;
      // (Items follow the proposals one for one: the field the proposal named its record with.)
      const field = addressField(s.type, proposals[at]!);
      throw new AppError(
        'CONFLICT',
        `The DCR already has an item for ${what}${existing === undefined ? '' : ` (${existing}.DCRI)`}: update that item instead`,
        { field: `${batch ? `${at}.` : ''}${field}` },
      );
    }
    return { s, ids: inserted.map((x) => x.id) };
  });
  return itemViews(db, principal, s, ids);
}

export async function itemViews(
  db: Queryable,
  principal: Principal,
  s: DcrScope,
  ids: readonly number[],
): Promise<Obj[]> {
  if (ids.length === 0) return [];
  const dcrId = s.dcr.id;
  const out: Obj[] = [];
  const page = 10_000;
  for (let start = 0; start < ids.length; start += page) {
    const r = await fetchRecords(db, principal, DCRI, { startRow: 0, endRow: page }, page, {
      _constructor: 'AdvancedCriteria',
      operator: 'and',
      criteria: [
        { fieldName: 'dcrId', operator: 'equals', value: dcrId },
        { fieldName: 'id', operator: 'inSet', value: ids.slice(start, start + page) },
      ],
    });
    out.push(...((await typedItems(db, principal, s.tc, r.rows)) as Obj[]));
  }
  return out;
}

export const restrictTo = (dcrId: number): Obj => ({ fieldName: 'dcrId', operator: 'equals', value: dcrId });

/** The items of a DCR the principal may see: those of targets hidden from him are left out. */
export async function visibleItems(q: Queryable, principal: Principal, s: DcrScope): Promise<Obj> {
  const own = restrictTo(s.dcr.id);
  const hidden = await hiddenTargetIds(q, principal, s.tc, s.dcr.id);
  return hidden.length === 0
    ? own
    : {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [own, { fieldName: 'targetId', operator: 'notInSet', value: hidden }],
      };
}

/**
 * Whether an item of a DCR is hidden from the principal (its target record is): then its attachments
 * do not exist for him either, as the item does not.
 */
export async function itemHidden(q: Queryable, principal: Principal, itemId: number): Promise<boolean> {
  const r = await q.query<{ dcr_id: string | number }>(
    'SELECT dcr_id FROM dcr_items WHERE partition_id = $1 AND id = $2 AND target_id IS NOT NULL',
    [principal.partitionId, itemId],
  );
  if (r.rows[0] === undefined) return false;
  const dcr = await store.findDcrOrFail(q, principal.partitionId, Number(r.rows[0].dcr_id));
  const s = await scopeOf(q, principal, dcr);
  return (await hiddenTargetIds(q, principal, s.tc, dcr.id, itemId)).length > 0;
}

export async function fetchItems(
  db: Db,
  principal: Principal,
  idText: string,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  const s = await scopeOf(db, principal, await readableDcr(db, principal, idText));
  // Items of an extension table are typed by their table, named by their targetKey: read it too.
  const read = withTargetKey(s.type, body);
  const r = await fetchRecords(
    db,
    principal,
    DCRI,
    read.body,
    maxPageSize,
    await visibleItems(db, principal, s),
  );
  const rows = await typedItems(db, principal, s.tc, r.rows, read.body.valueFields, read.added);
  return { ...r, rows };
}

/** A target record as an item keeps it (`originalValues`): dates as ISO text. */
export function originalOf(row: Obj): Obj {
  const original: Obj = {};
  for (const [name, v] of Object.entries(row)) original[name] = v instanceof Date ? v.toISOString() : v;
  return original;
}
