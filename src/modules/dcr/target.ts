// The records a staged change (a DCR item, an import change) is about: the target type as the
// engine declares it (lookup values: the values of one table), finding targets by typedId or
// business key in one statement, and checking proposed values field by field with the engine's own
// `checkValue`. Shared by src/modules/dcr and src/modules/imports; writes stay with the engine.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { Params, ident, qualified } from '../../db/sql.ts';
import {
  loadTypeContext,
  outputValue,
  rowScope,
  selectList,
  type TypeContext,
} from '../../engine/context.ts';
import { checkValue } from '../../engine/crud.ts';
import { findType, type FieldDef, type TypeDef } from '../../engine/registry.ts';
import { ITEM_TYPE, MAX_KEY_SIZE, sizedItemType } from '../../engine/registry-condrec.ts';
import { isLookupValueCode } from '../../engine/registry-dcr.ts';
import { valueCodeOf, valueTypeOf } from '../../engine/registry-lookup.ts';
import { AppError, validationError } from '../../http/errors.ts';
import { sameTypedValue } from '../../engine/values.ts';
import { tableByName } from '../lookuptables/store.ts';

type Row = Record<string, unknown>;

/** The engine's declaration of `code` (for lookup values: of the named table's values). */
export async function resolveTargetType(
  q: Queryable,
  principal: Principal,
  code: string,
  lookupTable: string | null,
): Promise<TypeDef> {
  if (isLookupValueCode(code)) {
    if (lookupTable === null || lookupTable === '')
      throw validationError('lookupTable', `is required: the lookup table whose ${code} values change`);
    // Held for the caller's transaction (an apply): a change of the table's valueType waits for it,
    // as for the lookup-table manager's own writes of values.
    const table = await tableByName(q, principal, lookupTable, 'FOR KEY SHARE');
    if (!table) throw validationError('lookupTable', `unknown lookup table ${JSON.stringify(lookupTable)}`);
    if (valueCodeOf(table.type) !== code) {
      throw validationError(
        'lookupTable',
        `${table.uniqueName} holds ${valueCodeOf(table.type)} values, not ${code}`,
      );
    }
    return valueTypeOf(table);
  }
  const type = findType(code);
  if (!type) throw validationError('targetType', `unknown type code ${code}`);
  return type;
}

/** The principal an approved change is written with: the submitter, allowed to write `type`. */
export function writerFor(owner: Principal, type: TypeDef, metaVersion: number | undefined): Principal {
  const write = type.access.write;
  return {
    ...owner,
    ...(metaVersion === undefined ? {} : { metaVersion }),
    permissions: new Set([...owner.permissions, write]),
    restriction: owner.restriction === null ? null : new Set([...owner.restriction, write]),
  };
}

export async function metaVersionOf(q: Queryable, partitionId: number): Promise<number | undefined> {
  const r = await q.query<{ v: string | number }>('SELECT meta_version AS v FROM partitions WHERE id = $1', [
    partitionId,
  ]);
  return r.rows[0] === undefined ? undefined : Number(r.rows[0].v);
}

/** A key value in the text form the store compares (dates as YYYY-MM-DD, numbers as written). */
/** A value as text: scalars as written, anything else as JSON. */
function scalarText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return JSON.stringify(v);
}

export function keyText(f: FieldDef, raw: unknown, field: string): string {
  const v = checkValue(f, raw);
  if (typeof v === 'string') throw validationError(field, v);
  if (v.value === null || v.value === '')
    throw validationError(field, 'is required (part of the business key)');
  return scalarText(v.value);
}

export interface Lookup {
  /** By id (typedId given). */
  readonly ids: readonly number[];
  /** By business key texts, in the type's key order. */
  readonly keys: readonly (readonly string[])[];
}

/**
 * The visible, live target rows named by id or by business key: one statement. Rows come back with
 * every field (`selectList`), keyed by id and by the JSON text of their key.
 */
export async function findTargets(
  q: Queryable,
  principal: Principal,
  tc: TypeContext,
  look: Lookup,
  lock = false,
  everyGroup = false,
): Promise<{ byId: Map<number, Row>; byKey: Map<string, Row> }> {
  const byId = new Map<number, Row>();
  const byKey = new Map<string, Row>();
  if (look.ids.length === 0 && look.keys.length === 0) return { byId, byKey };
  if (tc.type.code === ITEM_TYPE.code && look.keys.length > 0)
    return findItems(q, principal, tc, look, lock, everyGroup);
  const params = new Params();
  const scope = rowScope(tc, principal, params, 't', { everyGroup });
  const keyCols = tc.type.businessKey.map((k) => tc.fields.get(k)!.column);
  const ids = params.add(look.ids);
  const keys = params.add(JSON.stringify(look.keys));
  // `(cols) IN (SELECT ...)` rather than a correlated EXISTS: PostgreSQL hashes the keys once (a
  // hashed SubPlan), so 10,000 keys cost one pass over the rows, not rows × keys comparisons.
  const cols = keyCols.map((c) => `${qualified('t', c)}::text`).join(', ');
  const parts = keyCols.map((_, i) => `k.v->>${i}`).join(', ');
  const r = await q.query<Row>(
    `SELECT ${selectList(tc)} FROM ${ident(tc.type.table)} t
      WHERE ${scope} AND (t.id = ANY(${ids}::bigint[])
         OR (${cols}) IN (SELECT ${parts} FROM jsonb_array_elements(${keys}::jsonb) k(v)))
      ${lock ? 'ORDER BY t.id FOR UPDATE' : ''}`,
    params.values,
  );
  for (const row of r.rows) {
    byId.set(Number(row.id), row);
    byKey.set(keyOfRow(tc.type, row), row);
  }
  return { byId, byKey };
}

/**
 * The targets of a DCR's items that the principal does not see (a record hidden by its user group, or
 * by its parent's): to him their items do not exist, as the records do not (fetch, changesOnly, update,
 * delete). A soft-deleted target is not hidden: the apply reports it.
 */
export async function hiddenTargetIds(
  q: Queryable,
  principal: Principal,
  tc: TypeContext,
  dcrId: number,
  /** Only this item's target. */
  itemId?: number,
): Promise<number[]> {
  const params = new Params();
  const scope = rowScope(tc, principal, params, 't', { includeDeleted: true });
  const one = itemId === undefined ? '' : ` AND i.id = ${params.add(itemId)}`;
  const r = await q.query<{ target_id: string | number }>(
    `SELECT i.target_id FROM dcr_items i
       JOIN ${ident(tc.type.table)} t ON t.partition_id = i.partition_id AND t.id = i.target_id
      WHERE i.partition_id = ${params.add(principal.partitionId)} AND i.dcr_id = ${params.add(dcrId)}${one}
        AND NOT (${scope})`,
    params.values,
  );
  return r.rows.map((x) => Number(x.target_id));
}

/** A target's field value as the target type answers it (a typed custom attribute: by its meta). */
function typedField(tc: TypeContext, name: string, v: unknown): unknown {
  const f = tc.fields.get(name);
  return f?.storedAsText === true && typeof v === 'string' ? outputValue(f.type, v) : v;
}

const typedValues = (tc: TypeContext, o: unknown): unknown =>
  typeof o === 'object' && o !== null && !Array.isArray(o)
    ? Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typedField(tc, k, v)]))
    : o;

/**
 * An item (or `changesOnly` row) as clients read it: its `values`, `originalValues` and `changes`
 * typed as the target's own records are answered (a NUMERIC attribute a number, as /fetch says).
 * `names`: the fields of a `valueFields` row (an array), in order.
 */
export function typedItem(tc: TypeContext, row: unknown, names?: readonly string[]): unknown {
  const typed = (name: string, v: unknown): unknown => {
    if (name === 'values' || name === 'originalValues') return typedValues(tc, v);
    if (name !== 'changes' || typeof v !== 'object' || v === null) return v;
    return Object.fromEntries(
      Object.entries(v as Record<string, { old: unknown; new: unknown }>).map(([k, c]) => [
        k,
        { old: typedField(tc, k, c.old), new: typedField(tc, k, c.new) },
      ]),
    );
  };
  if (Array.isArray(row)) return names === undefined ? row : row.map((v, i) => typed(names[i]!, v));
  return Object.fromEntries(Object.entries(row as Row).map(([k, v]) => [k, typed(k, v)]));
}

export function keyOfRow(type: TypeDef, row: Row): string {
  return JSON.stringify(targetKeyOf(type, row));
}

const given = (v: unknown): boolean => v !== undefined && v !== null && v !== '';

/**
 * The fields a staged change names its target by: the type's business key. `CRCI` items (whose
 * general business key is their id) are named as their sized type `CRCI<n>` names them: set, the
 * keys given (`key1`..`key<n>`, at least `key1`) and `validFrom` (`rec`: the proposal or the row).
 */
export function keyFieldsOf(type: TypeDef, rec: Readonly<Row>): readonly string[] {
  if (type.code !== ITEM_TYPE.code) return type.businessKey;
  let n = 0;
  while (n < MAX_KEY_SIZE && given(rec[`key${n + 1}`])) n++;
  return [
    'conditionRecordSetId',
    ...Array.from({ length: Math.max(n, 1) }, (_, i) => `key${i + 1}`),
    'validFrom',
  ];
}

/** The item's key as fields: `target_key` in the order `keyFieldsOf` gives (CRCI: by its length). */
export function keyData(type: TypeDef, key: readonly string[]): Row {
  const probe: Row = {};
  // A CRCI key is [set, key1..key<n>, validFrom]: name n keys so keyFieldsOf counts them.
  for (let k = 1; k <= key.length - 2; k++) probe[`key${k}`] = key[k];
  const fields = keyFieldsOf(type, probe);
  return Object.fromEntries(fields.map((f, i) => [f, key[i]]));
}

/** A stored row's key texts, in the order of `keyFieldsOf`. */
export function targetKeyOf(type: TypeDef, row: Readonly<Row>): string[] {
  return keyFieldsOf(type, row).map((k) => keyTextOfStored(row[k]));
}

/**
 * `CRCI` targets by key: the keys name a set with as many keys as the tuple has between set and
 * `validFrom`, so each length is looked up as that sized type (`CRCI<n>`); the rows found are then
 * read as `CRCI` by id, with the ids asked for.
 */
async function findItems(
  q: Queryable,
  principal: Principal,
  tc: TypeContext,
  look: Lookup,
  lock: boolean,
  everyGroup: boolean,
): Promise<{ byId: Map<number, Row>; byKey: Map<string, Row> }> {
  const bySize = new Map<number, (readonly string[])[]>();
  for (const k of look.keys) {
    const n = k.length - 2;
    if (n >= 1 && n <= MAX_KEY_SIZE) bySize.set(n, [...(bySize.get(n) ?? []), k]);
  }
  const ids = [...look.ids];
  for (const [n, keys] of bySize) {
    const sized = await loadTypeContext(q, principal, sizedItemType(n));
    const found = await findTargets(q, principal, sized, { ids: [], keys }, false, everyGroup);
    for (const id of found.byId.keys()) ids.push(id);
  }
  return findTargets(q, principal, tc, { ids, keys: [] }, lock, everyGroup);
}

export function keyTextOfStored(v: unknown): string {
  if (v instanceof Date) return v.toISOString().slice(0, 10);
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The fields a DCR type lets change (all writable, non-key fields when the list is empty). */
export function allowedFields(tc: TypeContext, list: string | null): Set<string> {
  const writable = [...tc.fields.values()].filter((f) => !f.system && !f.key).map((f) => f.name);
  const named = (list ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (named.length === 0) return new Set(writable);
  for (const n of named) {
    if (!writable.includes(n)) {
      throw validationError(
        'dcrType',
        `the DCR type names ${JSON.stringify(n)}, which is not a writable field of ${tc.type.code}`,
      );
    }
  }
  return new Set(named);
}

/** Proposed values in stored form (json fields: the JSON value); a -4 naming the first refused field (prefixed for batches). */
export function checkProposal(
  tc: TypeContext,
  allowed: ReadonlySet<string>,
  values: Readonly<Record<string, unknown>>,
  prefix: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(values)) {
    const f = tc.fields.get(name);
    if (!f) throw validationError(prefix + name, 'unknown field');
    if (f.system || f.key) continue;
    if (!allowed.has(name)) throw validationError(prefix + name, 'may not be changed by this DCR type');
    const v = checkValue(f, raw);
    if (typeof v === 'string') throw validationError(prefix + name, v);
    // A json field's stored form is its JSON text; the item keeps the value itself (its `proposed`
    // is jsonb), so the apply's write turns it into that text once, not a string of the text.
    out[name] = f.type === 'json' && v.value !== null ? raw : v.value;
  }
  return out;
}

/**
 * The target type's rules across fields (`TypeDef.validate`, e.g. a product reference that names
 * its own sku) over the record as the item would leave it: a -4 naming the fields with the batch
 * prefix, when proposed rather than only when applied.
 */
export function checkRecordRules(
  type: TypeDef,
  record: Readonly<Record<string, unknown>>,
  prefix: string,
): void {
  const problem = type.validate?.(record);
  const first = problem && Object.entries(problem)[0];
  if (!first) return;
  const errors = Object.fromEntries(Object.entries(problem).map(([f, e]) => [prefix + f, e]));
  throw new AppError('VALIDATION', `${prefix + first[0]}: ${first[1].errorMessage}`, { errors });
}

/** Two stored values are the same, by what they mean in the field's type (`sameTypedValue`). */
export function sameValue(f: FieldDef | undefined, a: unknown, b: unknown): boolean {
  return sameTypedValue(f?.type ?? 'string', a, b);
}

export function conflict(message: string, errors: Record<string, { errorMessage: string }>): AppError {
  return new AppError('VERSION_CONFLICT', message, { errors });
}

export { loadTypeContext };
