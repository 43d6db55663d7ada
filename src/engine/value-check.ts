// Value checks of writes: every value against its field (type, length, allowed values, required),
// custom attributes typed by the partition's attribute meta; all errors of a record in one -4.

import { AppError, MAX_FIELD_ERRORS, validationError, type FieldErrors } from '../http/errors.ts';
import type { TypeContext } from './context.ts';
import type { FieldDef, TypeDef } from './registry.ts';
import { show } from './criteria/parse.ts';
import { canonicalDecimal, coerceValue, notOfType, unstorableIn, unstorableText } from './values.ts';

type Obj = Record<string, unknown>;

/** Validated column values of a write; all errors of the record are collected into one -4. */
export function prepareValues(
  tc: TypeContext,
  data: Obj,
  mode: 'add' | 'update',
  movable: readonly string[] = [],
): Map<FieldDef, unknown> {
  // All errors of the record, up to the most an answer names (the others counted).
  const errors: FieldErrors = {};
  let named = 0;
  let left = 0;
  const fail = (name: string, errorMessage: string): void => {
    if (name in errors) errors[name] = { errorMessage };
    else if (named === MAX_FIELD_ERRORS) left++;
    else {
      errors[name] = { errorMessage };
      named++;
    }
  };
  const out = new Map<FieldDef, unknown>();
  for (const [name, raw] of Object.entries(data)) {
    if (name === 'typedId') continue;
    let f = tc.fields.get(name);
    if (f?.aliasOf !== undefined) {
      // Written as the field it names, which wins when the write names it too.
      if (f.aliasOf in data) {
        const err = raw === null ? undefined : checkValue(f, raw);
        if (typeof err === 'string') fail(name, err);
        continue;
      }
      f = tc.fields.get(f.aliasOf)!;
    }
    if (!f) {
      // A field of the type's family it lacks, given empty (a key past a condition record item's
      // key size): no value, as the family's other types store it.
      if ((raw === null || raw === '') && tc.type.absentWhenEmpty?.includes(name)) continue;
      fail(name, 'unknown field');
      continue;
    }
    // Fields the server keeps (id, version, audit fields) are not written, but one of the wrong
    // type is no echo of a fetched record: a -4 as for any field.
    if (f.system) {
      const err = raw === null ? undefined : checkValue(f, raw);
      if (typeof err === 'string') fail(name, err);
      continue;
    }
    // Keys address the record; they are not changed, unless the type lets this update move them.
    if (f.key && mode === 'update' && !movable.includes(name)) continue;
    const err = checkValue(f, raw);
    if (typeof err === 'string') fail(name, err);
    else out.set(f, err.value);
  }
  if (mode === 'add') {
    for (const f of tc.fields.values()) {
      const absent = out.get(f) === undefined && !(f.name in data);
      if (
        f.required &&
        !(f.defaultOnAdd && absent) &&
        (out.get(f) === undefined || out.get(f) === null) &&
        !errors[f.name]
      ) {
        fail(f.name, 'is required');
      }
    }
  }
  const problem = tc.type.validate?.(data);
  for (const [name, e] of Object.entries(problem ?? {})) fail(name, e.errorMessage);
  const first = Object.entries(errors)[0];
  if (first) {
    const more = left === 0 ? '' : ` (and ${left} more errors left out)`;
    throw new AppError('VALIDATION', `${first[0]}: ${first[1].errorMessage}${more}`, { errors });
  }
  return out;
}

/**
 * A record that leaves out a required field (one without a default on add): an upsert of it can only
 * update an existing record, whose stored value stands.
 */
export function lacksRequired(tc: TypeContext, data: Obj): boolean {
  for (const f of tc.fields.values()) {
    if (f.required && !f.system && !f.defaultOnAdd && data[f.name] === undefined) return true;
  }
  return false;
}

/**
 * A record that leaves out a field the database fills on insert (`defaultOnAdd`, e.g. the open
 * `validTo` of a condition record item): an upsert of an existing record keeps the stored value, so
 * it is read first — an INSERT ... ON CONFLICT would have the database's checks judge the default.
 */
export function leavesDefaulted(tc: TypeContext, data: Obj): boolean {
  for (const f of tc.fields.values()) {
    if (f.defaultOnAdd && !f.system && data[f.name] === undefined) return true;
  }
  return false;
}

/**
 * Most bytes of a text value in a field with search indexes (btree entries of the value, and of its
 * lower case, hold at most 2,704 bytes with the partition id and the entry's header).
 */
export const INDEXED_TEXT_BYTES = 2_600;

function indexedTextTooLarge(v: string, withLowerCase: boolean): string | undefined {
  const bytes = Buffer.byteLength(v, 'utf8');
  if (!withLowerCase) {
    return bytes > INDEXED_TEXT_BYTES
      ? `is too large for its index: at most ${INDEXED_TEXT_BYTES} bytes of UTF-8 (this text has ${bytes})`
      : undefined;
  }
  const lower = Buffer.byteLength(v.toLowerCase(), 'utf8');
  return bytes + lower > INDEXED_TEXT_BYTES
    ? `is too large for its index: at most ${INDEXED_TEXT_BYTES} bytes of UTF-8 for the text and its ` +
        `lower case together (this text has ${bytes} + ${lower})`
    : undefined;
}

/** A value in its stored form, or the reason it is refused. */
export function checkValue(f: FieldDef, raw: unknown): { value: unknown } | string {
  if (raw === null || raw === undefined || (raw === '' && (f.type !== 'string' || f.blankIsNull === true))) {
    if (f.nullAs !== undefined) return { value: f.nullAs };
    return f.required ? 'is required' : { value: null };
  }
  if (f.type === 'json') {
    const bad = unstorableIn(raw);
    return bad === undefined
      ? { value: JSON.stringify(raw) }
      : `${bad.path === '' ? '' : `${bad.path}: `}${bad.problem}`;
  }
  const v = coerceValue(f.type, raw);
  if (v === undefined) return notOfType(f.type, raw, show(raw));
  // A business key of blanks only names nothing a user could tell apart from the empty key.
  if (f.required && typeof v === 'string' && (v === '' || (f.key && v.trim() === ''))) return 'is required';
  if (typeof v === 'string' && f.maxLength !== undefined && longerThan(v, f.maxLength)) {
    return `is longer than ${f.maxLength} characters`;
  }
  // A btree entry holds ~2,700 bytes: text of a field with search indexes must fit one (with its
  // lower case, where the prefix index covers the column: migration 052).
  if (typeof v === 'string' && (f.searchIndexed || f.indexEntryBound) && v.length > INDEXED_TEXT_BYTES / 8) {
    const tooLarge = indexedTextTooLarge(v, f.prefixCovers === true);
    if (tooLarge !== undefined) return tooLarge;
  }
  if (f.int32 && (typeof v !== 'number' || v < -0x80000000 || v > 0x7fffffff)) {
    return `must be an integer from ${-0x80000000} to ${0x7fffffff}`;
  }
  if (f.oneOf && !f.oneOf.includes(String(v))) return `must be one of ${f.oneOf.join(', ')}`;
  // A decimal business key (the name of a SIMPLE_REAL_KEY table) in one form: `2.50`, `2.500` and
  // `2.5` name one key, as integer and date keys are one form each — the unique key is on the text.
  if (f.key && f.type === 'decimal' && typeof v === 'string') return { value: canonicalDecimal(v) };
  return { value: f.custom ? String(v) : v };
}

/** A key field's value as text, to compare a given value with the stored one. */
const keyText = (v: unknown): string =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean'
    ? String(v)
    : v === null || v === undefined
      ? ''
      : JSON.stringify(v);

/**
 * An update of `old` (by typedId or business key) may repeat its key fields (business key, fields
 * fixed at creation) but not change them: a changed one is a -4 naming it, never silently dropped.
 */
export function refuseKeyChanges(
  tc: TypeContext,
  data: Obj,
  old: Obj,
  movable: readonly string[] = [],
): void {
  for (const [name, raw] of Object.entries(data)) {
    const f = tc.fields.get(name);
    if (f === undefined || !f.key || f.system || raw === undefined || movable.includes(name)) continue;
    const checked = checkValue(f, raw);
    const value = typeof checked === 'string' ? raw : checked.value;
    const text = (v: unknown) => (f.caseless ? keyText(v).toLowerCase() : keyText(v));
    if (text(value) !== text(old[name])) {
      // (Fields fixed at creation beside the key, as a condition record set's keySize, say so; an
      // item's set, keys and validFrom are its key as a user names it, its historyKey.)
      throw validationError(
        name,
        tc.type.businessKey.includes(name) || tc.type.historyKey?.includes(name) === true
          ? 'is part of the business key and cannot be changed'
          : 'is fixed when the record is created and cannot be changed',
      );
    }
  }
}

/**
 * A delete names its record by `typedId` (or `id`): key fields given beside it must be that record's,
 * else a -4 naming the field — a delete never picks one of two records the request names.
 */
export function refuseOtherKey(tc: TypeContext, data: Obj, old: Obj): void {
  try {
    refuseKeyChanges(tc, data, old);
  } catch (e) {
    if (!(e instanceof AppError) || e.errors === undefined) throw e;
    const [field] = Object.keys(e.errors);
    throw validationError(field!, `names another record than ${String(old.typedId)}`);
  }
}

/**
 * A text field of a module's own request (a label, a note), not a record field: null when left out,
 * else text a column takes of at most `maxLength` characters, or a -4 naming `field` in the words of
 * checkValue.
 */
export function optionalText(raw: unknown, field: string, maxLength: number): string | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'string') throw validationError(field, 'must be text');
  if (longerThan(raw, maxLength)) throw validationError(field, `is longer than ${maxLength} characters`);
  const unstorable = unstorableText(raw);
  if (unstorable !== undefined) throw validationError(field, unstorable);
  return raw;
}

/**
 * Whether `v` has more than `max` characters as the database counts them (code points: a character
 * outside the Basic Multilingual Plane is two UTF-16 units in JavaScript, one character there).
 */
function longerThan(v: string, max: number): boolean {
  if (v.length <= max) return false;
  if (v.length > 2 * max) return true;
  let n = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    // A high surrogate followed by a low one: one character.
    if (c >= 0xd800 && c <= 0xdbff && (v.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
    if (++n > max) return true;
  }
  return false;
}

export function editableField(tc: TypeContext, name: string, param: string): FieldDef {
  const f = tc.fields.get(name);
  if (!f) throw validationError(param, `unknown field ${JSON.stringify(name)}`);
  if (f.system || f.key) throw validationError(param, `${name} cannot be changed`);
  return f;
}

/**
 * Refuses a field that `type`'s records do not have in the entries of an operation that names
 * records (as fetched, or by their typedId), naming it (`1.foo` in a batch): nothing a client sends
 * is dropped unseen.
 */
export function refuseUnknownFields(type: TypeDef, list: readonly Obj[]): void {
  const known = new Set(['typedId', 'id', ...type.fields.map((f) => f.name)]);
  list.forEach((d, i) => {
    const unknown = Object.keys(d).find((k) => !known.has(k));
    if (unknown !== undefined)
      throw validationError(`${list.length > 1 ? `${i}.` : ''}${unknown}`, 'unknown field');
  });
}

/**
 * A given `oldValues.version` must be a version a record can have, a whole number from 0 up: another
 * value (-1, 1.5, "1", 1e20) is a -4 naming `field`, not a conflict telling the client to reload.
 */
export function checkVersionValue(v: unknown, field: string): asserts v is number | null | undefined {
  if (v === undefined || v === null) return;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw validationError(field, 'must be a whole number from 0 up');
}

/**
 * A write's `oldValues.version` against the stored record's (`current`: its typedId and version):
 * a stale one is a 409; left out, a -4 when `needed` (types whose changes must name the version).
 */
export function checkVersion(oldValues: Obj | null | undefined, current: Obj, needed: boolean): void {
  const v = oldValues?.version;
  if (v === undefined || v === null) {
    if (needed) throw validationError('oldValues.version', 'is required for this type');
    return;
  }
  checkVersionValue(v, 'oldValues.version');
  if (v !== current.version) {
    throw new AppError(
      'VERSION_CONFLICT',
      `${current.typedId as string} is at version ${current.version as number}, not ${v}: reload it and retry`,
      { field: 'oldValues.version' },
    );
  }
}
