// Values of each field type: parsing and normalising what clients send, for filters and for writes
// alike. Each parser answers `undefined` for "not a value of that type", and the caller names the
// field in its -4. Integers beyond 2^53 stay exact as decimal strings.

import { Decimal } from 'decimal.js';
import type { FieldType } from './types.ts';

export type Value = string | number | boolean;

/** A JSON object (what a request names by `{...}`): not null, not an array. */
export function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const EXPECTED: Record<FieldType, string> = {
  string: 'text',
  integer: 'an integer',
  decimal: 'a number',
  boolean: 'true or false',
  date: 'a date (YYYY-MM-DD)',
  datetime: 'an ISO 8601 date-time',
  json: 'comparable (json fields only support isNull and notNull)',
};

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;
const SAFE_MIN = BigInt(Number.MIN_SAFE_INTEGER);
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);
const INTEGER_RE = /^[-+]?\d+$/;
/** Most characters of a decimal's text (what a write takes, and a massedit may produce). */
export const MAX_DECIMAL_TEXT = 10_000;
const DECIMAL_RE = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE]([-+]?\d+))?$/;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME_RE =
  /^(\d{4}-\d{2}-\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,6})?)?)?\s*(?:([Zz])|([-+])(\d{2})(?::?(\d{2}))?)?$/;

/**
 * Why PostgreSQL text (and jsonb) cannot take `s`, or undefined: NUL, which it cannot hold, or an
 * unpaired surrogate (JSON allows "\ud800"), which has no UTF-8 form (the driver would store U+FFFD).
 */
export function unstorableText(s: string): string | undefined {
  if (s.includes('\u0000')) return 'must not contain NUL characters';
  return s.isWellFormed() ? undefined : 'must not contain unpaired surrogates';
}

/**
 * Why `raw` is not a value of `type` (coerceValue answered undefined), as every refusal of a write
 * or a filter words it: text no column takes says why (unstorableText); `shown` is the value quoted.
 */
export function notOfType(type: FieldType, raw: unknown, shown: string): string {
  // A number that overflowed when the JSON was parsed (1e400) is Infinity, which the client never sent.
  if (typeof raw === 'number' && !Number.isFinite(raw)) return 'is a number beyond the range of a double';
  const text = type === 'string' && typeof raw === 'string' ? unstorableText(raw) : undefined;
  return text ?? `${shown} is not ${EXPECTED[type]}`;
}

/** A decimal's text in one form: plain notation, no trailing zeros, no sign on zero (`2.50` → `2.5`). */
export function canonicalDecimal(text: string): string {
  return new Decimal(text).toFixed();
}

/**
 * Where and why a value parsed from a request cannot be stored as given, or undefined: text or a
 * member name that is `unstorableText`, and (`numbers`) a number the parse made Infinity (1e400;
 * JSON.stringify would write null). The path is relative to the value (`a.0`; '' for the value
 * itself). Walked without recursion: a request may nest deeply.
 */
export function unstorableIn(raw: unknown, numbers = true): { path: string; problem: string } | undefined {
  const at = (path: string, k: string) => (path === '' ? k : `${path}.${k}`);
  const pending: [unknown, string][] = [[raw, '']];
  while (pending.length > 0) {
    const [v, path] = pending.pop()!;
    if (numbers && typeof v === 'number' && !Number.isFinite(v))
      return { path, problem: 'is a number beyond the range of a double' };
    const text = typeof v === 'string' ? unstorableText(v) : undefined;
    if (text !== undefined) return { path, problem: text };
    if (Array.isArray(v)) v.forEach((x: unknown, i) => pending.push([x, at(path, String(i))]));
    else if (typeof v === 'object' && v !== null)
      for (const [k, x] of Object.entries(v)) {
        const name = unstorableText(k);
        if (name !== undefined) return { path: at(path, k.replaceAll('\u0000', '\\u0000')), problem: name };
        pending.push([x, at(path, k)]);
      }
  }
  return undefined;
}

function toText(v: unknown): Value | undefined {
  // A number that overflowed when the JSON was parsed (1e999) is Infinity: no text of the client's.
  const s =
    typeof v === 'string'
      ? v
      : (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean'
        ? String(v)
        : undefined;
  // Refused here rather than failing in the driver (or stored changed).
  return s === undefined || unstorableText(s) !== undefined ? undefined : s;
}

function toInteger(v: unknown): Value | undefined {
  let n: bigint;
  if (typeof v === 'number' && Number.isInteger(v)) n = BigInt(v);
  else if (typeof v === 'string' && INTEGER_RE.test(v.trim())) n = BigInt(v.trim());
  else return undefined;
  if (n < I64_MIN || n > I64_MAX) return undefined;
  // A decimal string keeps integers beyond 2^53 exact; the drivers send both as text anyway.
  return n >= SAFE_MIN && n <= SAFE_MAX ? Number(n) : n.toString();
}

function toDecimal(v: unknown): Value | undefined {
  const s =
    typeof v === 'number' ? (Number.isFinite(v) ? String(v) : '') : typeof v === 'string' ? v.trim() : '';
  // numeric holds at most 131,072 digits before the point and 16,383 after: sane bounds on the
  // length and the exponent keep values (and a massedit's products of two) within them, a -4 else.
  if (s.length > MAX_DECIMAL_TEXT) return undefined;
  const m = DECIMAL_RE.exec(s);
  if (!m || (m[1] !== undefined && Math.abs(Number(m[1])) > 1000)) return undefined;
  return s;
}

export function isCalendarDate(ymd: string): boolean {
  const m = DATE_RE.exec(ymd);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d); // not Date.UTC, which reads years below 100 as 19xx
  return y >= 1 && date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

/**
 * A date-time at midnight names a day as well (clients that only have date-times send those): the
 * day written, in whatever offset it is written (`2026-03-01T00:00:00+02:00` is 1 March where it was
 * written, as a client in that zone means it). Another time of day is not a date, even one that is
 * midnight in UTC.
 */
const MIDNIGHT_RE =
  /^(\d{4}-\d{2}-\d{2})[Tt ]00:00(?::00(?:\.0{1,6})?)?(?:[Zz]|[-+](?:0\d|1[0-5]):?[0-5]\d)?$/;

function toDate(v: unknown): Value | undefined {
  if (typeof v !== 'string') return undefined;
  const s = v.trim();
  const day = MIDNIGHT_RE.exec(s)?.[1] ?? s;
  return isCalendarDate(day) ? day : undefined;
}

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z in milliseconds since 1970. */
const MIN_MS = -62_135_596_800_000;
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** An ISO 8601 date-time, normalised; without an offset it is UTC, so the server's time zone never
 * changes what a filter means (rc_try_timestamptz reads stored text the same way). */
function toDatetime(v: unknown): Value | undefined {
  // Milliseconds since 1970, within the years 1..9999 that the text form (and the database) takes.
  if (typeof v === 'number') return v >= MIN_MS && v <= MAX_MS ? new Date(v).toISOString() : undefined;
  if (typeof v !== 'string') return undefined;
  const m = DATETIME_RE.exec(v.trim());
  if (!m) return undefined;
  const [, date = '', hh = '00', mi = '00', ss = '00', frac = '', zulu, sign, oh, om = '00'] = m;
  if (!isCalendarDate(date) || Number(hh) > 23 || Number(mi) > 59 || Number(ss) > 59) return undefined;
  if (oh !== undefined && (Number(oh) > 15 || Number(om) > 59)) return undefined;
  const offset = zulu !== undefined || sign === undefined ? 'Z' : `${sign}${oh}:${om}`;
  return `${date}T${hh}:${mi}:${ss}${frac}${offset}`;
}

function toBoolean(v: unknown): Value | undefined {
  if (typeof v === 'boolean') return v;
  const s = typeof v === 'string' ? v.trim().toLowerCase() : '';
  return s === 'true' ? true : s === 'false' ? false : undefined;
}

const COERCE: Record<FieldType, (v: unknown) => Value | undefined> = {
  string: toText,
  integer: toInteger,
  decimal: toDecimal,
  boolean: toBoolean,
  date: toDate,
  datetime: toDatetime,
  json: () => undefined,
};

/** The value in the field type's normal form, or undefined when `v` is not of that type. */
export function coerceValue(type: FieldType, v: unknown): Value | undefined {
  return COERCE[type](v);
}

/** JSON with object keys sorted: jsonb keeps keys in its own order, not the client's. */
function canonical(v: unknown): string {
  const sorted = (x: unknown): unknown =>
    Array.isArray(x)
      ? x.map(sorted)
      : typeof x === 'object' && x !== null && !(x instanceof Date)
        ? Object.fromEntries(
            Object.keys(x)
              .sort()
              .map((k) => [k, sorted((x as Record<string, unknown>)[k])]),
          )
        : x;
  return JSON.stringify(sorted(v)) ?? '';
}

/**
 * A value sent equals the stored one by what it means in the field's type (a locked rebate group
 * sent back as read, a DCR item's unchanged fields): a NUMERIC attribute
 * stored as "1.50" is 1.5 and "1.500" too, a date "2026-01-01" is its midnight date-time, a boolean
 * "true" is true, a list or object is the same whatever its key order. Values not of the type
 * (refused by the write anyway) compare as text.
 */
export function sameTypedValue(type: FieldType, stored: unknown, sent: unknown): boolean {
  if (stored === undefined || stored === null || sent === undefined || sent === null)
    return (stored ?? null) === (sent ?? null);
  if (type === 'json') return canonical(stored) === canonical(sent);
  const a = coerceValue(type, stored instanceof Date ? stored.toISOString() : stored);
  const b = coerceValue(type, sent);
  if (a === undefined || b === undefined) return canonical(stored) === canonical(sent);
  if (type === 'decimal') return new Decimal(a as string).eq(b as string);
  if (type === 'datetime') return Date.parse(String(a)) === Date.parse(String(b));
  return a === b;
}

/** Whether a decimal's text (`12`, `1.0`, `1e30`, `120e-1`) is a whole number. */
export function isWholeNumber(text: string): boolean {
  const m = /^[-+]?(\d*)(?:\.(\d*))?(?:e([-+]?\d+))?$/i.exec(text.trim());
  const digits = m === null ? '' : m[1]! + (m[2] ?? '');
  if (m === null || digits === '') return false;
  // The digits with the point moved by the exponent: whole when only zeros lie behind it.
  const point = m[1]!.length + Number(m[3] ?? 0);
  return /^0*$/.test(digits.slice(Math.max(point, 0)));
}
