// The condition-record types (migration 014, src/modules/conditionrecords/): sets (`CRCS`), their
// items — `CRCI` (every item, addressed by typedId) and `CRCI1`..`CRCI12` (items of sets with that
// key size, scoped by the `fixed` column `key_size_ref`, business key set + keys + validFrom) — and
// the read-only history `CRCIH`. Items take their user groups from their set (copied by a trigger),
// so the engine's user-group scope on the item's own columns is the set's.

import { inUserGroup, type Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { AppError, notFound, validationError, type FieldErrors } from '../http/errors.ts';
import { SYSTEM, attributes, defaulted, key, text } from './registry-fields.ts';
import { parseId } from './record-id.ts';
import { coerceValue } from './values.ts';
import type { FieldDef, TypeDef } from './types.ts';

export const MAX_KEY_SIZE = 12;
/** Keys are short codes (customer, product group, ...); the issue's limit. */
export const KEY_MAX_LENGTH = 63;
export const ITEM_TABLE = 'condition_records';
export const HISTORY_TABLE = 'condition_records_history';
/** The validTo of an open-ended item (the column's default, migration 037). */
export const OPEN_END = '9999-12-31';

const MANAGER_UPDATE = '/conditionrecordset.update/{id}';

function setRules(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const n = data.keySize;
  if (n === undefined || n === null) return undefined;
  const k = Number(n);
  if (Number.isInteger(k) && k >= 1 && k <= MAX_KEY_SIZE) return undefined;
  return { keySize: { errorMessage: `must be an integer from 1 to ${MAX_KEY_SIZE}` } };
}

export const SET_TYPE: TypeDef = {
  code: 'CRCS',
  label: 'Condition record set',
  table: 'condition_record_sets',
  updatedBy: MANAGER_UPDATE,
  fields: [
    key('uniqueName', 'unique_name'),
    text('label', 'label'),
    // Fixed at creation: items are keyed by it (a key, so updates never change it).
    { name: 'keySize', column: 'key_size', type: 'integer', required: true, key: true },
    // Fixed at creation too (look-ups are read by it): a key, so an update may repeat it, never change it.
    defaulted({ name: 'wildcardKeys', column: 'wildcard_keys', type: 'boolean', key: true }),
    text('userGroupEdit', 'user_group_edit'),
    text('userGroupViewDetails', 'user_group_view_details'),
    ...SYSTEM,
  ],
  businessKey: ['uniqueName'],
  uniqueColumns: ['unique_name'],
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  updateNeedsVersion: true,
  userGroups: true,
  access: { fetch: 'CONDITIONRECORD_FETCH', write: 'CONDITIONRECORD_EDIT' },
  validate: setRules,
  deletesMeta: 'CRCIAM',
};

/** Ordered validity, when both ends are in the record (updates may carry one end only). */
function itemRules(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const from = dateOf(data.validFrom);
  const to = dateOf(data.validTo);
  if (from === undefined || to === undefined || to >= from) return undefined;
  return { validTo: { errorMessage: `must not be before validFrom (${from})` } };
}

/** `YYYY-MM-DD` of a date or a date-time at midnight, as the engine's date parser accepts. */
export function dateOf(v: unknown): string | undefined {
  const day = coerceValue('date', v);
  return typeof day === 'string' ? day : undefined;
}

const keyFields = (n: number, required: boolean): FieldDef[] =>
  Array.from({ length: n }, (_, i) => ({
    ...text(`key${i + 1}`, `key${i + 1}`, { maxLength: KEY_MAX_LENGTH }),
    key: true,
    // A key past the set's size is empty: given as '', it is stored as NULL like one left out (the
    // key signature, the overlap check and look-ups tell '' and NULL apart).
    blankIsNull: true,
    ...(required ? { required: true } : {}),
  }));

const systemText = (name: string, column: string): FieldDef => ({ ...text(name, column), system: true });

function itemFields(keys: readonly FieldDef[]): FieldDef[] {
  return [
    {
      name: 'conditionRecordSetId',
      column: 'condition_record_set_id',
      type: 'integer',
      required: true,
      key: true,
    },
    ...keys,
    { name: 'validFrom', column: 'valid_from', type: 'date', required: true, key: true },
    // May be left out or null: an item without one is open-ended (valid to 9999-12-31, the column's
    // default), as in /loaddata/CRCP.
    {
      name: 'validTo',
      column: 'valid_to',
      type: 'date',
      required: true,
      defaultOnAdd: true,
      nullAs: OPEN_END,
    },
    { name: 'conditionValue', column: 'condition_value', type: 'decimal' },
    text('unitOfMeasure', 'unit_of_measure', { maxLength: 255 }),
    text('currency', 'currency', { maxLength: 255 }),
    { name: 'priceUnit', column: 'price_unit', type: 'decimal' },
    { name: 'integrationStatus', column: 'integration_status', type: 'integer', int32: true },
    ...attributes(),
    // Copied from the set by the database; shown, never written through an item.
    systemText('userGroupEdit', 'user_group_edit'),
    systemText('userGroupViewDetails', 'user_group_view_details'),
    { name: 'createdByObj', column: 'created_by', type: 'integer', system: true },
    ...SYSTEM,
  ];
}

interface SetRow {
  key_size: number;
  user_group_edit: string | null;
  user_group_view_details: string | null;
}

/**
 * Before an item is added or upserted: its set exists and is visible, the principal may edit it
 * (the set's `userGroupEdit`), and the item has exactly the set's keys (`keySize`).
 */
function itemGuard(sized: number | undefined) {
  return async function checkItemSet(
    q: Queryable,
    principal: Principal,
    data: Readonly<Record<string, unknown>>,
  ): Promise<void> {
    const id = Number(data.conditionRecordSetId);
    // Ids are below 2^53 (the engine takes integers up to 2^63, which name no set).
    if (!Number.isSafeInteger(id))
      throw validationError(
        'conditionRecordSetId',
        `there is no condition record set ${String(data.conditionRecordSetId)}`,
      );
    const r = await q.query<SetRow>(
      `SELECT key_size, user_group_edit, user_group_view_details FROM condition_record_sets
        WHERE partition_id = $1 AND id = $2`,
      [principal.partitionId, id],
    );
    const set = r.rows[0];
    if (!set || !inUserGroup(principal, set.user_group_view_details)) {
      throw notFound(`Condition record set ${id}`, 'conditionRecordSetId');
    }
    if (!inUserGroup(principal, set.user_group_edit)) {
      throw new AppError('FORBIDDEN', `Not allowed to change the items of condition record set ${id}`);
    }
    if (sized !== undefined && set.key_size !== sized) {
      throw validationError(
        'conditionRecordSetId',
        `set ${id} has ${set.key_size} keys: its items are CRCI${set.key_size}, not CRCI${sized}`,
      );
    }
    for (let k = 1; k <= MAX_KEY_SIZE; k++) {
      const v = data[`key${k}`];
      const given = v !== undefined && v !== null && v !== '';
      if (k <= set.key_size && !given)
        throw validationError(`key${k}`, `is required (the set has ${set.key_size} keys)`);
      if (k > set.key_size && given)
        throw validationError(`key${k}`, `must be empty (the set has ${set.key_size} keys)`);
    }
  };
}

/**
 * An add whose set, keys and validFrom are an item's already: that item is in the way, as for any
 * other overlap (the database's message, migration 038: a -4 on validFrom naming it).
 */
async function sameStart(
  q: Queryable,
  principal: Principal,
  data: Readonly<Record<string, unknown>>,
): Promise<AppError | undefined> {
  const from = dateOf(data.validFrom);
  if (from === undefined) return undefined;
  const keys = Array.from({ length: MAX_KEY_SIZE }, (_, i) => {
    const v = data[`key${i + 1}`];
    return typeof v === 'string' && v !== '' ? v : null;
  });
  const r = await q.query<{ id: number | string; valid_from: string; valid_to: string }>(
    `SELECT id, valid_from::text, valid_to::text FROM condition_records
      WHERE partition_id = $1 AND condition_record_set_id = $2 AND valid_from = $3::date
        AND key_sig = rc_condition_key_sig(${keys.map((_, i) => `$${i + 4}::text`).join(', ')})`,
    [principal.partitionId, Number(data.conditionRecordSetId), from, ...keys],
  );
  const clash = r.rows[0];
  if (clash === undefined) return undefined;
  const to = dateOf(data.validTo) ?? '9999-12-31';
  return validationError(
    'validFrom',
    `The validity ${from}..${to} overlaps item ${clash.id}.CRCI (valid ${clash.valid_from}..${clash.valid_to}) with the same keys`,
  );
}

function itemType(
  code: string,
  label: string,
  keys: readonly FieldDef[],
  businessKey: string[],
  sized?: number,
): TypeDef {
  return {
    code,
    label,
    table: ITEM_TABLE,
    fields: itemFields(keys),
    businessKey,
    uniqueColumns: ['condition_record_set_id', 'key_sig', 'valid_from'],
    attributeMeta: 'CRCIAM',
    metaOwner: 'CRCI',
    // Attribute meta per set (CRCIAM rows name their set; migration 037).
    metaPerName: true,
    metaNameField: 'conditionRecordSetId',
    deleteMode: 'hard',
    massEditable: true,
    // Bulk loads of items are `/loaddata/CRCP`, `/loaddata/CRCI`, `/loaddata/CRCIn`: routes of
    // their own (src/modules/conditionrecords/splice.ts), not the generic loader.
    bulkLoadable: false,
    loadedBy: `/loaddata/${code}`,
    userGroups: true,
    access: { fetch: 'CONDITIONRECORD_FETCH', write: 'CONDITIONRECORD_EDIT' },
    validate: itemRules,
    beforeInsert: itemGuard(sized),
    duplicateError: sameStart,
  };
}

/**
 * Items of a CRCI write that name neither id nor typedId are addressed by their business key (set,
 * keys, validFrom): that of the sized type of their set's key size, which then writes the batch (its
 * elements with a typedId too: CRCIn takes `<id>.CRCI`). One key size a batch; the set is checked
 * (visible, editable) by the sized type's own guard. The elements go without the keys past that
 * size, which as CRCI they may name empty (`""` or null: a record as `/fetch/CRCI` answers it).
 */
async function keyedItemType(
  q: Queryable,
  principal: Principal,
  items: readonly Readonly<Record<string, unknown>>[],
): Promise<{ type: TypeDef; items: Record<string, unknown>[] } | undefined> {
  const byKey = items.filter((d) => d.id === undefined && d.typedId === undefined);
  if (byKey.length === 0) return undefined;
  const ids = byKey.map((d) => Number(d.conditionRecordSetId));
  const unknown = byKey.find((_, i) => !Number.isSafeInteger(ids[i]));
  if (unknown !== undefined) {
    const given = unknown.conditionRecordSetId;
    throw validationError(
      'conditionRecordSetId',
      given === undefined || given === null
        ? 'is required to address an item by its keys (or give typedId)'
        : `there is no condition record set ${JSON.stringify(given)}`,
    );
  }
  const r = await q.query<{ id: string; key_size: number }>(
    'SELECT id, key_size FROM condition_record_sets WHERE partition_id = $1 AND id = ANY($2::bigint[])',
    [principal.partitionId, [...new Set(ids)]],
  );
  const sizes = new Set(r.rows.map((x) => x.key_size));
  const missing = ids.find((id) => !r.rows.some((x) => Number(x.id) === id));
  if (missing !== undefined) throw notFound(`Condition record set ${missing}`, 'conditionRecordSetId');
  const oneSize =
    'items addressed by their keys in one batch name sets of one key size (or write each size with CRCI<n>)';
  if (sizes.size > 1) throw validationError('conditionRecordSetId', oneSize);
  const n = [...sizes][0]!;
  const field = (i: number, name: string) => (items.length > 1 ? `${i}.${name}` : name);
  await refuseOtherSizes(q, principal, items, n, (i) => validationError(field(i, 'typedId'), oneSize));
  return {
    type: sizedItemType(n),
    items: items.map((d, i) => {
      const out = { ...d };
      for (let k = n + 1; k <= MAX_KEY_SIZE; k++) {
        const v = out[`key${k}`];
        if (v === null || v === '') delete out[`key${k}`];
        else if (v !== undefined)
          throw validationError(field(i, `key${k}`), `must be empty (the sets of this batch have ${n} keys)`);
      }
      return out;
    }),
  };
}

/**
 * Elements of a keyed batch that name an item by typedId or id: one of a set of another key size
 * (that the caller sees) is the batch's error, not a "not found" of CRCI<n>.
 */
async function refuseOtherSizes(
  q: Queryable,
  principal: Principal,
  items: readonly Readonly<Record<string, unknown>>[],
  n: number,
  refusal: (element: number) => AppError,
): Promise<void> {
  // Read as the engine reads them (a malformed one is its -4, named by the element, later).
  const named = items.flatMap((d, i) => {
    const given = d.typedId ?? d.id;
    if (given === undefined || given === null) return [];
    try {
      return [{ i, id: parseId(ITEM_TYPE, given, 'typedId') }];
    } catch {
      return [];
    }
  });
  if (named.length === 0) return;
  const r = await q.query<{ id: string; key_size_ref: string; user_group_view_details: string | null }>(
    `SELECT id, key_size_ref, user_group_view_details FROM condition_records
      WHERE partition_id = $1 AND id = ANY($2::bigint[])`,
    [principal.partitionId, named.map((x) => x.id)],
  );
  for (const row of r.rows) {
    if (Number(row.key_size_ref) === n || !inUserGroup(principal, row.user_group_view_details)) continue;
    throw refusal(named.find((x) => x.id === Number(row.id))!.i);
  }
}

/** `CRCI`: items of every set; new ones need their set's keys, existing ones are addressed by typedId or by their keys. */
export const ITEM_TYPE: TypeDef = {
  ...itemType('CRCI', 'Condition record item', keyFields(MAX_KEY_SIZE, false), ['id']),
  keyedType: keyedItemType,
  typedIdAliases: Array.from({ length: MAX_KEY_SIZE }, (_, i) => `CRCI${i + 1}`),
  // Its history rows name the item as its sized code's do: set|key1..keyN|validFrom.
  historyKey: ['conditionRecordSetId', ...keyFields(MAX_KEY_SIZE, false).map((k) => k.name), 'validFrom'],
};

const SIZED_TYPES: readonly TypeDef[] = Array.from({ length: MAX_KEY_SIZE }, (_, i) => {
  const n = i + 1;
  const keys = keyFields(n, true);
  return {
    ...itemType(
      `CRCI${n}`,
      `Condition record item (${n} keys)`,
      keys,
      ['conditionRecordSetId', ...keys.map((k) => k.name), 'validFrom'],
      n,
    ),
    fixed: { column: 'key_size_ref', value: String(n) },
    absentWhenEmpty: Array.from({ length: MAX_KEY_SIZE - n }, (_, k) => `key${n + k + 1}`),
    // The same items as CRCI: one record history per item, whichever code writes it.
    historyCode: 'CRCI',
    typedIdAliases: ['CRCI'],
  };
});

/** The item type of a set's key size. */
export function sizedItemType(keySize: number): TypeDef {
  return SIZED_TYPES[keySize - 1]!;
}

const historyField = (f: FieldDef): FieldDef => ({ ...f, system: true, required: false });

export const HISTORY_TYPE: TypeDef = {
  code: 'CRCIH',
  label: 'Condition record item history',
  table: HISTORY_TABLE,
  fields: (
    [
      { name: 'itemId', column: 'item_id', type: 'integer', system: true },
      ...itemFields(keyFields(MAX_KEY_SIZE, false)).map(historyField),
      { name: 'reason', column: 'reason', type: 'string', system: true },
      { name: 'supersededAt', column: 'superseded_at', type: 'datetime', system: true },
      { name: 'supersededBy', column: 'superseded_by', type: 'integer', system: true },
    ] as FieldDef[]
  ).filter((f, i, all) => all.findIndex((g) => g.name === f.name) === i),
  businessKey: ['id'],
  uniqueColumns: [],
  attributeMeta: 'CRCIAM',
  metaOwner: 'CRCI',
  metaPerName: true,
  metaNameField: 'conditionRecordSetId',
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  // A row keeps its item's groups as they were when it was written; what decides who reads it is
  // the set's userGroupViewDetails as it is now (the copy only for a row whose set is gone).
  userGroups: true,
  scopedBy: {
    table: 'condition_record_sets',
    column: 'condition_record_set_id',
    parentColumn: 'id',
    currentGroups: true,
  },
  // Written only by the database (deleted and superseded items), and never deleted through the API
  // (writtenBy; the database refuses deletes too, migration 045).
  access: { fetch: 'CONDITIONRECORD_FETCH', write: 'PARTITION_ADMIN' },
  writtenBy: { message: 'CRCIH is written by the server (history of CRCI)' },
};

/**
 * `CRCIAM` from the generic attribute-meta type: one meta per set (migration 037). Its rows name
 * their set (`conditionRecordSetId`, part of the business key with `fieldName`); the database keeps
 * the set id in the meta's `name` too, which is how the engine finds a set's meta (`metaNameField`).
 */
export function perSetItemMeta(meta: TypeDef): TypeDef {
  return {
    ...meta,
    fields: [
      {
        name: 'conditionRecordSetId',
        column: 'condition_record_set_id',
        type: 'integer',
        required: true,
        key: true,
      },
      ...meta.fields,
    ],
    businessKey: ['conditionRecordSetId', ...meta.businessKey],
    access: { ...meta.access, fetch: 'CONDITIONRECORD_FETCH' },
    // A set's meta is seen (and changed) by those who see (and may change) the set.
    scopedBy: { table: 'condition_record_sets', column: 'condition_record_set_id', parentColumn: 'id' },
    beforeInsert: metaSetGuard,
  };
}

/** A CRCIAM row names a set the principal can see. */
async function metaSetGuard(q: Queryable, principal: Principal, data: Readonly<Record<string, unknown>>) {
  const id = Number(data.conditionRecordSetId);
  // Ids are below 2^53 (the engine takes integers up to 2^63, which name no set).
  if (!Number.isSafeInteger(id))
    throw validationError(
      'conditionRecordSetId',
      `there is no condition record set ${String(data.conditionRecordSetId)}`,
    );
  const r = await q.query<{ view: string | null }>(
    `SELECT user_group_view_details AS view FROM condition_record_sets WHERE partition_id = $1 AND id = $2`,
    [principal.partitionId, id],
  );
  if (r.rows.length === 0 || !inUserGroup(principal, r.rows[0]!.view)) {
    throw notFound(`Condition record set ${id}`, 'conditionRecordSetId');
  }
}

export const CONDITION_RECORD_TYPES: readonly TypeDef[] = [SET_TYPE, ITEM_TYPE, ...SIZED_TYPES, HISTORY_TYPE];

export { MANAGER_UPDATE };
