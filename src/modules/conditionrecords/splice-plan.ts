// The `/loaddata/CRCP` (and CRCI) load before any write, without the database: the header and
// options of the call → a plan (`planCrcp`, with its splicing options: fields a cut sets or resets,
// superseding), every row checked in JS (values through the engine's checkValue, the set's keys and
// groups, validity) and rows of the load that overlap each other dropped as errors.

import { inUserGroup, type Principal } from '../../access/access.ts';
import { validationError } from '../../http/errors.ts';
import type { TypeContext } from '../../engine/context.ts';
import { checkValue } from '../../engine/crud.ts';
import { widthError, type LoadBody, type RowError, type Stored } from '../../engine/loaddata.ts';
import { ITEM_TYPE, MAX_KEY_SIZE } from '../../engine/registry-condrec.ts';
import type { FieldDef } from '../../engine/types.ts';
import { isObj } from '../../engine/values.ts';

export interface Splicing {
  readonly set: ReadonlyMap<FieldDef, unknown>;
  readonly reset: readonly FieldDef[];
  readonly supersede: boolean;
}

export interface Plan {
  readonly header: readonly FieldDef[];
  readonly setAt: number;
  readonly splicing: Splicing | undefined;
}

export const KEYS = Array.from({ length: MAX_KEY_SIZE }, (_, i) => `key${i + 1}`);
/** Fields a splice never sets or resets: what identifies an item and its validity. */
const FIXED = new Set(['conditionRecordSetId', ...KEYS, 'validFrom', 'validTo']);
/** Every writable item field, in stage column order after rownum, set, key size. */
export const DATA_FIELDS = ITEM_TYPE.fields.filter((f) => !f.system && f.name !== 'conditionRecordSetId');
const slot = (name: string) => DATA_FIELDS.findIndex((f) => f.name === name);
const FROM_SLOT = slot('validFrom');
const TO_SLOT = slot('validTo');
const KEY_SLOTS = KEYS.map(slot);

export type Obj = Record<string, unknown>;

export function planCrcp(tc: TypeContext, body: LoadBody, maxBatchRows: number, via: string): Plan {
  if (body.data.length > maxBatchRows) {
    throw validationError('data', `at most ${maxBatchRows} rows per call (got ${body.data.length})`);
  }
  const opts = body.options ?? {};
  // An empty list of join fields names none (what a client sending every option of the interface's
  // load body says when it has no join fields).
  const joinFields =
    Array.isArray(opts.joinFields) && opts.joinFields.length === 0 ? undefined : opts.joinFields;
  // `detectJoinFields` asks for the server's join fields: for items the set, keys and validity, what
  // these loads match by anyway. Other join fields are refused.
  if (joinFields !== undefined) {
    throw validationError(
      'options.joinFields',
      `${via} loads match items by set, keys and validity, not join fields: a row that overlaps ` +
        `existing items is an error, or with ${via === 'CRCP' ? '' : '/loaddata/CRCP and '}` +
        'options.conditionRecords.splicing cuts them to fit',
    );
  }
  if (via !== 'CRCP' && opts.conditionRecords !== undefined) {
    throw validationError(
      'options.conditionRecords',
      `applies only to CRCP loads: send the same header and rows to /loaddata/CRCP to splice (${via} ` +
        'loads report rows that overlap existing items as errors)',
    );
  }
  const seen = new Set<string>();
  const header = body.header.map((name, i) => {
    const f = tc.fields.get(name);
    if (name === 'typedId' || f?.system)
      throw validationError(`header.${i}`, `${name} is set by the server, not loaded`);
    if (!f)
      throw validationError(`header.${i}`, `unknown field ${JSON.stringify(name)} of condition record items`);
    if (seen.has(name)) throw validationError(`header.${i}`, `${name} appears twice`);
    seen.add(name);
    return f;
  });
  for (const need of ['conditionRecordSetId', 'validFrom', 'key1']) {
    if (!seen.has(need)) throw validationError('header', `must contain ${need}`);
  }
  return {
    header,
    setAt: body.header.indexOf('conditionRecordSetId'),
    splicing: splicingOf(tc, opts.conditionRecords),
  };
}

function splicingOf(tc: TypeContext, raw: unknown): Splicing | undefined {
  if (raw === undefined) return undefined;
  if (!isObj(raw)) throw validationError('options.conditionRecords', 'must be an object');
  const s = raw.splicing;
  if (s === undefined) return undefined;
  if (!isObj(s)) throw validationError('options.conditionRecords.splicing', 'must be an object');
  const at = 'options.conditionRecords.splicing';
  const field = (name: string, where: string): FieldDef => {
    const f = tc.fields.get(name);
    if (!f || f.system || FIXED.has(name))
      throw validationError(where, `${JSON.stringify(name)} is not a field a splice can change`);
    return f;
  };
  const set = new Map<FieldDef, unknown>();
  if (s.setFields !== undefined) {
    if (!isObj(s.setFields)) throw validationError(`${at}.setFields`, 'must be an object');
    for (const [name, v] of Object.entries(s.setFields)) {
      const f = field(name, `${at}.setFields.${name}`);
      const checked = checkValue(f, v);
      if (typeof checked === 'string') throw validationError(`${at}.setFields.${name}`, checked);
      set.set(f, checked.value);
    }
  }
  const reset: FieldDef[] = [];
  if (s.resetFields !== undefined) {
    if (!Array.isArray(s.resetFields))
      throw validationError(`${at}.resetFields`, 'must be an array of field names');
    s.resetFields.forEach((name: unknown, i) => {
      if (typeof name !== 'string') throw validationError(`${at}.resetFields.${i}`, 'must be a field name');
      const f = field(name, `${at}.resetFields.${i}`);
      if (set.has(f)) throw validationError(`${at}.resetFields.${i}`, `${name} is in setFields too`);
      reset.push(f);
    });
  }
  return { set, reset, supersede: s.supersedeRecords === true };
}

export interface SetInfo {
  readonly id: number;
  readonly name: string;
  readonly keySize: number;
  readonly edit: string | null;
  readonly view: string | null;
}

export interface Checked {
  readonly row: number;
  readonly set: SetInfo;
  readonly keys: readonly string[];
  readonly from: string;
  readonly to: string;
  /** Stage values in DATA_FIELDS order. */
  readonly values: readonly Stored[];
}

/** An item without validTo is open-ended (the column's default, migration 037). */
export const OPEN_END = '9999-12-31';

export function checkRows(
  principal: Principal,
  plan: Plan,
  setOf: (v: unknown) => SetInfo | 'ambiguous' | undefined,
  fieldsOf: (set: SetInfo) => ReadonlyMap<string, FieldDef>,
  rows: readonly unknown[],
  errors: RowError[],
  sized: number | undefined,
): Checked[] {
  // Per load, not per row: each header column's place among DATA_FIELDS, each set's typed fields
  // of the header, and for date columns the answers already given (a load repeats a few dates).
  const width = plan.header.length;
  const slotOf = plan.header.map((f) => DATA_FIELDS.findIndex((d) => d.name === f.name));
  const typedOf = new Map<number, FieldDef[]>();
  const headerFields = (set: SetInfo): FieldDef[] => {
    let typed = typedOf.get(set.id);
    if (typed === undefined) {
      const fields = fieldsOf(set);
      typed = plan.header.map((f) => fields.get(f.name)!);
      typedOf.set(set.id, typed);
    }
    return typed;
  };
  const known = new Map<FieldDef, Map<string, ReturnType<typeof checkValue>>>();
  const check = (f: FieldDef, v: unknown): ReturnType<typeof checkValue> => {
    if (f.type !== 'date' || typeof v !== 'string') return checkValue(f, v);
    let seen = known.get(f);
    if (seen === undefined) known.set(f, (seen = new Map<string, ReturnType<typeof checkValue>>()));
    let checked = seen.get(v);
    if (checked === undefined) {
      checked = checkValue(f, v);
      if (seen.size < 10_000) seen.set(v, checked);
    }
    return checked;
  };
  const out: Checked[] = [];
  rows.forEach((raw, row) => {
    if (!Array.isArray(raw)) return void errors.push({ row, message: `must be an array of ${width} values` });
    if (raw.length !== width) return void errors.push(widthError(row, raw.length, plan.header));
    const set = setOf(raw[plan.setAt]);
    if (set === 'ambiguous') {
      return void errors.push({
        row,
        field: 'conditionRecordSetId',
        message: `${JSON.stringify(raw[plan.setAt])} is one set's uniqueName and another set's id: give the id as a JSON number`,
      });
    }
    if (!set || !inUserGroup(principal, set.view)) {
      return void errors.push({
        row,
        field: 'conditionRecordSetId',
        message: `no condition record set ${JSON.stringify(raw[plan.setAt])}`,
      });
    }
    if (!inUserGroup(principal, set.edit)) {
      return void errors.push({
        row,
        field: 'conditionRecordSetId',
        message: `not allowed to change the items of set ${set.name}`,
      });
    }
    if (sized !== undefined && set.keySize !== sized) {
      return void errors.push({
        row,
        field: 'conditionRecordSetId',
        message: `set ${set.name} has ${set.keySize} keys: its items are CRCI${set.keySize}, not CRCI${sized}`,
      });
    }
    // Custom attributes typed by the set's own attribute meta (CRCIAM rows of the set).
    const fields = headerFields(set);
    const values: Stored[] = new Array<Stored>(DATA_FIELDS.length).fill(null);
    for (let i = 0; i < width; i++) {
      if (i === plan.setAt) continue;
      const f = fields[i]!;
      // An empty validTo is an open-ended item, as is a load without the column.
      const given: unknown = raw[i];
      const v = slotOf[i] === TO_SLOT && (given === null || given === '') ? OPEN_END : given;
      const checked = check(f, v);
      if (typeof checked === 'string') return void errors.push({ row, field: f.name, message: checked });
      if (slotOf[i]! >= 0) values[slotOf[i]!] = (checked.value as Stored) ?? null;
    }
    for (let k = 0; k < MAX_KEY_SIZE; k++) {
      const v = values[KEY_SLOTS[k]!];
      const given = v !== undefined && v !== null && v !== '';
      if (k < set.keySize && !given)
        return void errors.push({
          row,
          field: KEYS[k]!,
          message: `is required (set ${set.name} has ${set.keySize} keys)`,
        });
      if (k >= set.keySize && given)
        return void errors.push({
          row,
          field: KEYS[k]!,
          message: `must be empty (set ${set.name} has ${set.keySize} keys)`,
        });
    }
    const from = values[FROM_SLOT];
    if (typeof from !== 'string')
      return void errors.push({ row, field: 'validFrom', message: 'is required' });
    const given = values[TO_SLOT];
    const to = typeof given === 'string' ? given : OPEN_END;
    values[TO_SLOT] = to;
    if (to < from)
      return void errors.push({ row, field: 'validTo', message: `must not be before validFrom (${from})` });
    out.push({
      row,
      set,
      keys: KEY_SLOTS.slice(0, set.keySize).map((at) => values[at] as string),
      from,
      to,
      values,
    });
  });
  return out;
}

/**
 * Rows of the load that overlap each other (same set and keys): in row order, a row overlapping one
 * kept before it is an error (the later one), and is not kept.
 */
export function dropOverlapsWithinLoad(rows: readonly Checked[], errors: RowError[]): Checked[] {
  /** Per set and keys, the rows kept so far, sorted by validity (they do not overlap each other). */
  const kept = new Map<string, Checked[]>();
  const bad = new Set<number>();
  for (const r of [...rows].sort((a, b) => a.row - b.row)) {
    // checkValue refuses NUL in text: joined with it, set and keys name one group each.
    const k = `${r.set.id}\u0000${r.keys.join('\u0000')}`;
    const g = kept.get(k);
    if (g === undefined) {
      kept.set(k, [r]);
      continue;
    }
    // The first kept row ending on or after r starts: the only one that can overlap r.
    let lo = 0;
    let hi = g.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (g[mid]!.to < r.from) lo = mid + 1;
      else hi = mid;
    }
    const next = g[lo];
    if (next !== undefined && next.from <= r.to) {
      bad.add(r.row);
      errors.push({
        row: r.row,
        field: 'validFrom',
        message: `overlaps row ${next.row} of this load (same set and keys)`,
      });
    } else g.splice(lo, 0, r);
  }
  return rows.filter((r) => !bad.has(r.row));
}

/**
 * `setFields` values checked with the attribute meta of every set the load writes (a value must suit
 * each); sets that would store it differently (typed apart) need loads of their own.
 */
export function typedSplicing(
  plan: Plan,
  sets: readonly SetInfo[],
  fieldsOf: (set: SetInfo) => ReadonlyMap<string, FieldDef>,
): Plan {
  const s = plan.splicing;
  if (s === undefined || s.set.size === 0 || sets.length === 0) return plan;
  const at = 'options.conditionRecords.splicing.setFields';
  const set = new Map<FieldDef, unknown>();
  for (const [f, raw] of s.set) {
    let value: unknown;
    sets.forEach((info, i) => {
      const checked = checkValue(fieldsOf(info).get(f.name)!, raw);
      if (typeof checked === 'string')
        throw validationError(`${at}.${f.name}`, `${checked} (set ${info.name})`);
      if (i > 0 && checked.value !== value) {
        throw validationError(
          `${at}.${f.name}`,
          'the sets of this load type it differently: load them apart',
        );
      }
      value = checked.value;
    });
    set.set(f, value);
  }
  return { ...plan, splicing: { ...s, set } };
}
