// The values a logic computes with. Every number is a decimal (decimal.js, 34 significant digits,
// the precision of IEEE decimal128) — never a binary float, so `0.1 + 0.2 == 0.3` holds and cents add
// up. Dates are calendar days (`LogicDate`), records are read-only wrappers whose fields are reached
// only through `Object.hasOwn`, so no expression can walk onto a prototype.

import { Decimal } from 'decimal.js';

/**
 * The decimal constructor of the logic engine (division keeps 34 significant digits). Exponents
 * stay within ±1,000, as the engine's decimals do (values.ts of the engine): past them a value is
 * Infinity (or 0), never a number whose text has a billion digits (`9e999999999` in an input).
 */
export const D = Decimal.clone({
  precision: 34,
  rounding: Decimal.ROUND_HALF_UP,
  toExpNeg: -40,
  toExpPos: 40,
  maxE: 1000,
  minE: -1000,
});
export type Dec = InstanceType<typeof D>;

/** A calendar day, `YYYY-MM-DD`. */
export class LogicDate {
  readonly iso: string;
  constructor(iso: string) {
    this.iso = iso;
  }
}

/** Where a record came from, for explanations. */
export interface RecordRef {
  readonly source: string;
  readonly typedId?: string;
  readonly version?: number;
}

/** A record (product, customer, extension or lookup row, condition record): fields by own name only. */
export class RecordValue {
  readonly fields: Readonly<Record<string, unknown>>;
  readonly ref: RecordRef | undefined;
  constructor(fields: Readonly<Record<string, unknown>>, ref?: RecordRef) {
    this.fields = fields;
    this.ref = ref;
  }
  get(name: string): Value {
    return Object.hasOwn(this.fields, name) ? toValue(this.fields[name]) : null;
  }
  /** toJson of this record: kept (frozen) from its second conversion on, for a record many items share. */
  private json: unknown = undefined;
  private converted = false;
  toJson(): unknown {
    if (this.json !== undefined) return this.json;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(this.fields)) out[k] = jsonOfField(this.fields[k]);
    if (this.converted) this.json = deepFreeze(out);
    this.converted = true;
    return out;
  }
}

/**
 * toJson(toValue(v)) for a stored field, without making the logic value of the common kinds: text,
 * booleans, integers of up to 15 digits (a decimal of them is the same number) and driver dates
 * (the day in UTC, as a LogicDate of them shows).
 */
function jsonOfField(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 1e15) return v === 0 ? 0 : v;
  if (v instanceof Date) return utcDay(v) ?? null;
  return toJson(toValue(v));
}

/** Freezes a JSON value (objects and arrays, all the way down). */
function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

/** An AdvancedCriteria built by a FILTER logic (`filter(...)`, `and(...)`, `or(...)`). */
export class CriteriaValue {
  readonly criteria: Readonly<Record<string, unknown>>;
  constructor(criteria: Readonly<Record<string, unknown>>) {
    this.criteria = criteria;
  }
}

export type Value =
  Dec | string | boolean | null | LogicDate | RecordValue | CriteriaValue | readonly Value[];

/** The static (compile-time) types; `any` when only the run can tell. */
export type StaticType =
  'number' | 'text' | 'boolean' | 'date' | 'list' | 'record' | 'criteria' | 'null' | 'any';

export const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A valid calendar day in ISO form, or undefined. */
export function parseIsoDate(text: string): LogicDate | undefined {
  // Years 1..9999, as the database's dates (there is no year 0).
  if (!ISO_DATE.test(text) || text.startsWith('0000')) return undefined;
  const d = new Date(`${text}T00:00:00Z`);
  if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== text) return undefined;
  return new LogicDate(text);
}

/** Converts data read from the database or a request into a logic value. */
export function toValue(v: unknown): Value {
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? new D(v) : null;
    case 'bigint':
      return new D(v.toString());
    case 'object':
      if (v instanceof D || v instanceof LogicDate || v instanceof RecordValue || v instanceof CriteriaValue)
        return v;
      if (v instanceof Decimal) return new D(v.toString());
      if (v instanceof Date) {
        const day = utcDay(v);
        return day === undefined ? null : new LogicDate(day);
      }
      if (Array.isArray(v)) return v.map(toValue);
      return new RecordValue(v as Record<string, unknown>);
    case 'undefined':
    case 'function':
    case 'symbol':
      return null;
  }
  return null;
}

const DAY_MS = 86_400_000;
let lastDay = Number.NaN;
let lastDayText = '';

/**
 * The UTC day of a date as `YYYY-MM-DD` (as `toISOString()` writes it), or undefined for an invalid
 * date. The last day is remembered: rows written together share their time stamps' day.
 */
export function utcDay(d: Date): string | undefined {
  const t = d.getTime();
  if (Number.isNaN(t)) return undefined;
  const day = Math.floor(t / DAY_MS);
  if (day !== lastDay) {
    lastDayText = new Date(day * DAY_MS).toISOString().slice(0, 10);
    lastDay = day;
  }
  return lastDayText;
}

export function isDec(v: Value): v is Dec {
  return v instanceof D;
}

const NUMERIC_TEXT = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;

/**
 * Numeric texts parsed lately (short ones only), so the same text read by every item of a bulk run
 * (an untyped attribute, an input) is parsed once: decimals are immutable, one instance serves all.
 */
const PARSED = new Map<string, Dec>();
const PARSED_MAX = 10_000;

/** Decimals of texts made lately by decOfText (short texts only). */
const DECS = new Map<string, Dec>();
const DECS_MAX = 10_000;

/**
 * `new D(text)`, one instance for the same short text (decimals are immutable): the rows a bulk run
 * loads repeat their values (a price, a rate), and operators and results that see the same instance
 * again skip their work. Throws as the constructor does (a failure is not kept).
 */
export function decOfText(text: string): Dec {
  let d = DECS.get(text);
  if (d === undefined) {
    d = new D(text);
    if (text.length <= 40) {
      if (DECS.size >= DECS_MAX) DECS.clear();
      DECS.set(text, d);
    }
  }
  return d;
}

/** A number from a value: decimals as they are, numeric text (untyped attributes) parsed; else undefined. */
export function asDec(v: Value): Dec | undefined {
  if (v instanceof D) return v;
  if (typeof v !== 'string') return undefined;
  let d = PARSED.get(v);
  if (d !== undefined) return d;
  if (!NUMERIC_TEXT.test(v)) return undefined;
  d = new D(v.trim());
  // Past the exponents a decimal takes (Infinity), or below them where a non-zero text reads as 0,
  // or with more than 34 significant digits (the constructor keeps them all, arithmetic rounds them
  // away: `x + 0 == x` would be false): not a number the engine can hold, as a literal is refused.
  if (!d.isFinite() || (d.isZero() && /[1-9]/.test(v.replace(/[eE].*$/, ''))) || d.sd() > 34)
    return undefined;
  if (v.length <= 40) {
    if (PARSED.size >= PARSED_MAX) PARSED.clear();
    PARSED.set(v, d);
  }
  return d;
}

export function staticTypeOf(v: Value): StaticType {
  if (v === null) return 'null';
  if (v instanceof D) return 'number';
  if (typeof v === 'string') return 'text';
  if (typeof v === 'boolean') return 'boolean';
  if (v instanceof LogicDate) return 'date';
  if (v instanceof RecordValue) return 'record';
  if (v instanceof CriteriaValue) return 'criteria';
  return 'list';
}

/** A value as JSON for result objects: decimals as numbers when exact in a double, else as text. */
export function toJson(v: Value): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (v instanceof D) {
    // A number when a double holds it exactly as decimal digits (up to 15 significant digits and
    // a moderate exponent: every price), else the exact text.
    const n = Math.abs(v.e) < 15 ? smallDecToNumber(v) : undefined;
    if (n !== undefined) return n;
    if (v.sd() <= 15 && Math.abs(v.e) < 15) return v.toNumber();
    return v.toFixed();
  }
  if (v instanceof LogicDate) return v.iso;
  if (v instanceof RecordValue) return v.toJson();
  if (v instanceof CriteriaValue) return v.criteria;
  if (Array.isArray(v)) return (v as readonly Value[]).map(toJson);
  return null;
}

const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i); // exact doubles up to 1e22

/**
 * n × 10^-scale as a decimal, for n a positive safe integer: the limbs decimal.js would make of the
 * text `${n}e-${scale}`, computed from the integer without building or parsing that text.
 */
export function decOfScaled(n: number, scale: number): Dec {
  if (!(n > 0 && Number.isSafeInteger(n))) return new D(`${n}e${-scale}`);
  let m = n;
  let s = scale;
  while (m % 10 === 0) {
    m /= 10;
    s--;
  }
  let k = 1; // digits of m
  while (k < 16 && m >= POW10[k]!) k++;
  const e = k - 1 - s; // exponent of the leading digit
  const first = (((e % 7) + 7) % 7) + 1; // digits of the first limb (decimal.js aligns limbs on e)
  let d: number[];
  if (k <= first) d = [m * POW10[first - k]!];
  else {
    // Limbs from the left, 7 digits each after the first; the last one padded with zeros.
    let rest = k - first;
    let unit = POW10[rest]!;
    let r = m % unit;
    d = [(m - r) / unit];
    m = r;
    while (rest > 7) {
      rest -= 7;
      unit = POW10[rest]!;
      r = m % unit;
      d.push((m - r) / unit);
      m = r;
    }
    d.push(m * POW10[7 - rest]!);
  }
  // A fresh instance (the constructor's fast path for 0) given the value's fields: the same fields, in
  // the same order, as the constructor sets, so the instance is like every other one.
  const x = new D(0);
  const fields = x as { e: number; d: number[] };
  fields.e = e;
  fields.d = d;
  return x;
}

/**
 * x × y. Two decimals of up to 15 significant digits whose digit product is a safe integer (prices,
 * rates, quantities) multiply as integers: the exact product, which decimal.js's is too at 34
 * digits, made from the integer by decOfScaled (the same value, so the same instance fields).
 * Anything else (more digits, a zero, a product past 2^53, a far exponent) by decimal.js.
 */
export function timesDec(x: Dec, y: Dec): Dec {
  if (!splitDec(x)) return x.times(y);
  const mx = SPLIT.digits;
  const px = SPLIT.power;
  if (mx === 0 || !splitDec(y)) return x.times(y);
  const n = mx * SPLIT.digits;
  const p = px + SPLIT.power;
  if (n === 0 || !Number.isSafeInteger(n) || p < -300 || p > 300) return x.times(y);
  const out = decOfScaled(n, -p);
  return x.s === y.s ? out : out.neg();
}

/** Digits of a limb (an integer from 1 to 9,999,999), without making its text. */
function digitCount(n: number): number {
  return n < 1e3 ? (n < 10 ? 1 : n < 100 ? 2 : 3) : n < 1e5 ? (n < 1e4 ? 4 : 5) : n < 1e6 ? 6 : 7;
}

/** The last decimal split by splitDec: |value| = digits × 10^power (shared state, so no allocation). */
export const SPLIT = { digits: 0, power: 0 };

/**
 * Splits a decimal of at most 15 significant digits into SPLIT.digits (an integer below 2^53, no
 * trailing zeros) and SPLIT.power, from decimal.js's base-1e7 limbs without building its text; false
 * when it has more digits or is not finite (zero: digits 0, power 0, true). Read SPLIT at once.
 */
export function splitDec(v: Dec): boolean {
  const d = v.d as number[] | undefined;
  if (!d || d.length === 0 || d.length > 3) return false;
  if (d.length === 1 && d[0] === 0) {
    SPLIT.digits = 0;
    SPLIT.power = 0;
    return true;
  }
  // M = the limbs' digits with the last limb's trailing zeros dropped; digits = its length.
  let last = d[d.length - 1]!;
  let lastDigits = 7;
  while (last % 10 === 0) {
    last /= 10;
    lastDigits--;
  }
  const firstDigits = digitCount(d[0]!);
  let m = d[0]!;
  let digits = firstDigits;
  if (d.length > 1) {
    for (let i = 1; i < d.length - 1; i++) {
      m = m * 1e7 + d[i]!;
      digits += 7;
    }
    m = m * POW10[lastDigits]! + last;
    digits += lastDigits;
  } else {
    m = last;
    digits = firstDigits - (7 - lastDigits);
  }
  if (digits > 15) return false;
  SPLIT.digits = m;
  SPLIT.power = v.e - digits + 1; // value = M × 10^p
  return true;
}

/**
 * The double nearest to a decimal of at most 15 significant digits (the same double as
 * `toNumber()`: the digits form an integer M below 2^53 and M / 10^k or M × 10^k with both exact is
 * correctly rounded by IEEE arithmetic). Undefined when the decimal has more digits or needs a power
 * of ten past 1e22.
 */
export function smallDecToNumber(v: Dec): number | undefined {
  if (!splitDec(v)) return undefined;
  if (SPLIT.digits === 0) return 0;
  const p = SPLIT.power;
  const m = SPLIT.digits;
  const n = p >= 0 ? (p > 22 ? undefined : m * POW10[p]!) : -p > 22 ? undefined : m / POW10[-p]!;
  return n === undefined ? undefined : v.s < 0 ? -n : n;
}

/**
 * |v| × 10^scale as an exact integer when that is a safe integer (|v| has at most `scale` decimal
 * places and 15 significant digits); else undefined. For exact integer arithmetic on prices.
 */
export function scaledInteger(v: Dec, scale: number): number | undefined {
  if (!splitDec(v)) return undefined;
  if (SPLIT.digits === 0) return 0;
  const shift = SPLIT.power + scale;
  if (shift < 0 || shift > 15) return undefined;
  const n = SPLIT.digits * POW10[shift]!;
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Decimal places of v when it has at most 15 significant digits (0 for integers), else undefined. */
export function placesOfDec(v: Dec): number | undefined {
  if (!splitDec(v)) return undefined;
  return SPLIT.power < 0 ? -SPLIT.power : 0;
}

/**
 * The most values a list may hold, and the most characters of text in them, the lists in it counted
 * too, each as often as it appears — what answering it writes, and what `==`, `in` or `text` walk. A
 * list may name another list many times at no cost to build (`[A, A, A]`), so without this a few
 * short elements describe a list of 10^9 values (or of a long text 10^5 times) that no answer holds.
 */
export const MAX_LIST_VALUES = 100_000;
/** The longest text an expression may build. */
export const MAX_TEXT = 100_000;
export const MAX_LIST_CHARACTERS = 10_000_000;
/**
 * What all element results of one evaluation may hold together (texts, and lists counted as
 * listSize counts them): each element is bounded above, but seventy elements naming one list of
 * 8.7 million characters made an answer no string holds (a 500 after seconds of the event loop).
 */
export const MAX_RESULT_CHARACTERS = 50_000_000;
export const MAX_RESULT_VALUES = 1_000_000;
/** Lists in lists: as deep as one expression may nest them (elements naming lists nest them further). */
export const MAX_LIST_DEPTH = 64;

interface ListSize {
  values: number;
  characters: number;
  /** 1 for a list of no lists. */
  depth: number;
  /** A text in it holds an unpaired UTF-16 surrogate (half of a character). */
  illFormed: boolean;
}
const listSizes = new WeakMap<readonly Value[], ListSize>();

/** What `list` holds, nested lists included (past a maximum: some number above it). */
export function listSize(list: readonly Value[]): ListSize {
  const known = listSizes.get(list);
  if (known !== undefined) return known;
  const size = { values: list.length, characters: 0, depth: 1, illFormed: false };
  for (const v of list) {
    if (size.values > MAX_LIST_VALUES || size.characters > MAX_LIST_CHARACTERS) break;
    if (typeof v === 'string') {
      size.characters += v.length;
      if (!size.illFormed && !v.isWellFormed()) size.illFormed = true;
    } else if (Array.isArray(v)) {
      const inner = listSize(v as readonly Value[]);
      size.values += inner.values;
      size.characters += inner.characters;
      size.illFormed ||= inner.illFormed;
      size.depth = Math.max(size.depth, inner.depth + 1);
    }
  }
  listSizes.set(list, size);
  return size;
}

/** Value equality as `==` sees it: decimals numerically, dates by day, numeric text against numbers. */
export function valuesEqual(a: Value, b: Value): boolean {
  if (a === null || b === null) return a === b;
  if (a instanceof D || b instanceof D) {
    const x = asDec(a);
    const y = asDec(b);
    return x !== undefined && y !== undefined && x.eq(y);
  }
  if (a instanceof LogicDate || b instanceof LogicDate) return dateText(a) === dateText(b);
  if (Array.isArray(a) && Array.isArray(b)) {
    const la = a as readonly Value[];
    const lb = b as readonly Value[];
    return la.length === lb.length && la.every((x, i) => valuesEqual(x, lb[i] ?? null));
  }
  return a === b;
}

function dateText(v: Value): string | undefined {
  if (v instanceof LogicDate) return v.iso;
  return typeof v === 'string' ? v.slice(0, 10) : undefined;
}

/** Ordering for `< <= > >=`, min and max: -1, 0, 1, or undefined when the two cannot be compared. */
export function compareValues(a: Value, b: Value): number | undefined {
  if (a === null || b === null) return undefined;
  if (a instanceof D || b instanceof D) {
    const x = asDec(a);
    const y = asDec(b);
    return x !== undefined && y !== undefined ? x.cmp(y) : undefined;
  }
  if (a instanceof LogicDate || b instanceof LogicDate) {
    const x = dateText(a);
    const y = dateText(b);
    return x !== undefined && y !== undefined ? (x < y ? -1 : x > y ? 1 : 0) : undefined;
  }
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return undefined;
}

/** Text of a value for concatenation and messages. */
export function textOf(v: Value): string {
  if (v === null) return '';
  if (typeof v === 'string') return v;
  if (v instanceof D) return v.toFixed();
  if (typeof v === 'boolean') return String(v);
  if (v instanceof LogicDate) return v.iso;
  return JSON.stringify(toJson(v));
}
