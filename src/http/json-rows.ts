// Large `/loaddata` bodies: the rows (`data.data`) parsed piece by piece as the load reads them, so
// PostgreSQL takes the first rows' COPY while the server still has later rows as text. One
// `JSON.parse` of a 10,000-row body took ~100 ms of a ~540 ms call before anything was written; the
// check and the COPY encoding already ran beside the COPY (src/engine/loaddata/check.ts).
// Everything but the rows (the envelope) is parsed at once; a scan of the text finds each row's span
// first, and a piece that then fails to parse is the same `Malformed JSON body` error (a fault of the
// envelope itself, such as an unknown header field, may now be answered first).

import { PIECE_ROWS } from '../engine/loaddata/merge-sql.ts';
import { AppError } from './errors.ts';
import { exactNumbers, mayHoldInexactNumbers } from './json-numbers.ts';

const [TAB, LF, CR, SPACE] = [9, 10, 13, 32];
const [QUOTE, COMMA, COLON, BACKSLASH] = [34, 44, 58, 92];
const [OPEN_ARRAY, CLOSE_ARRAY, OPEN_OBJECT, CLOSE_OBJECT] = [91, 93, 123, 125];

/**
 * Text the lazy path leaves to the full parser (secure-json-parse), which refuses prototype keys:
 * `__proto__` or `constructor` anywhere, or a `\u` escape of a code between 0x50 and 0x7F (which
 * could spell either). Rare in data, and those bodies then parse as before.
 */
const SUSPECT = /__proto__|constructor|\\u00[5-7]/;

function isSpace(c: number): boolean {
  return c === SPACE || c === LF || c === CR || c === TAB;
}

function skipSpace(s: string, i: number): number {
  while (i < s.length && isSpace(s.charCodeAt(i))) i++;
  return i;
}

/** The index after the closing quote of the string that opens at `i`, or -1. */
function stringEnd(s: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = s.indexOf('"', from);
    if (q < 0) return -1;
    let b = q - 1;
    while (b > i && s.charCodeAt(b) === BACKSLASH) b--;
    if ((q - 1 - b) % 2 === 0) return q + 1; // an even run of backslashes: the quote is not escaped
    from = q + 1;
  }
}

/**
 * The index after the value that starts at `i`, or -1. Containers are matched by depth only and
 * literals are not read: what this lets through, `JSON.parse` of the envelope or of the rows'
 * pieces refuses (a valid text is always split exactly where a full parse would split it).
 */
function valueEnd(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c === QUOTE) return stringEnd(s, i);
  if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
    let depth = 0;
    for (let j = i; j < s.length; j++) {
      const d = s.charCodeAt(j);
      if (d === QUOTE) {
        j = stringEnd(s, j) - 1;
        if (j < 0) return -1;
      } else if (d === OPEN_ARRAY || d === OPEN_OBJECT) depth++;
      else if ((d === CLOSE_ARRAY || d === CLOSE_OBJECT) && --depth === 0) return j + 1;
    }
    return -1;
  }
  let j = i;
  for (; j < s.length; j++) {
    const d = s.charCodeAt(j);
    if (d === COMMA || d === CLOSE_ARRAY || d === CLOSE_OBJECT || isSpace(d)) break;
  }
  return j > i ? j : -1;
}

/**
 * The object that opens at `i`, member by member: `visit(key, valueStart)` answers the index after
 * the value (or -1). Answers the index after the object, or -1. A key holding a backslash is -1:
 * an escaped `data` would be a member this scan cannot tell from the others.
 */
function objectEnd(s: string, i: number, visit: (key: string, at: number) => number): number {
  i = skipSpace(s, i + 1);
  if (s.charCodeAt(i) === CLOSE_OBJECT) return i + 1;
  for (;;) {
    if (s.charCodeAt(i) !== QUOTE) return -1;
    const keyEnd = stringEnd(s, i);
    if (keyEnd < 0) return -1;
    const key = s.slice(i + 1, keyEnd - 1);
    if (key.includes('\\')) return -1;
    i = skipSpace(s, keyEnd);
    if (s.charCodeAt(i) !== COLON) return -1;
    const end = visit(key, skipSpace(s, i + 1));
    if (end < 0) return -1;
    i = skipSpace(s, end);
    if (s.charCodeAt(i) === CLOSE_OBJECT) return i + 1;
    if (s.charCodeAt(i) !== COMMA) return -1;
    i = skipSpace(s, i + 1);
  }
}

/** Where a body's rows are: the array's span and each row's. */
interface Spans {
  readonly arrayStart: number;
  readonly arrayEnd: number;
  readonly starts: number[];
  readonly ends: number[];
}

/** The rows array `data.data` of a body `{..., "data": {..., "data": [...]}}`, or undefined. */
function rowSpans(s: string): Spans | undefined {
  let spans: Spans | undefined;
  const rowsAt = (at: number): number => {
    if (s.charCodeAt(at) !== OPEN_ARRAY) return valueEnd(s, at);
    const [starts, ends] = [[] as number[], [] as number[]];
    let i = skipSpace(s, at + 1);
    if (s.charCodeAt(i) !== CLOSE_ARRAY) {
      for (;;) {
        const end = valueEnd(s, i);
        if (end < 0) return -1;
        starts.push(i);
        ends.push(end);
        i = skipSpace(s, end);
        if (s.charCodeAt(i) === CLOSE_ARRAY) break;
        if (s.charCodeAt(i) !== COMMA) return -1;
        i = skipSpace(s, i + 1);
      }
    }
    spans = { arrayStart: at, arrayEnd: i + 1, starts, ends };
    return i + 1;
  };
  // A repeated `data` key is -1 at either level: JSON.parse keeps the last, so do not guess.
  const inner = (key: string, at: number): number => {
    if (key !== 'data') return valueEnd(s, at);
    return spans !== undefined ? -1 : rowsAt(at);
  };
  const start = skipSpace(s, 0);
  if (s.charCodeAt(start) !== OPEN_OBJECT) return undefined;
  let outer = 0;
  const end = objectEnd(s, start, (key, at) => {
    if (key !== 'data') return valueEnd(s, at);
    if (outer++ > 0 || s.charCodeAt(at) !== OPEN_OBJECT) return -1;
    return objectEnd(s, at, inner);
  });
  if (end < 0 || skipSpace(s, end) !== s.length) return undefined;
  return spans;
}

function malformed(): AppError {
  return new AppError('VALIDATION', 'Malformed JSON body', { field: 'body' });
}

/**
 * The rows as an array whose elements are parsed when first read, a piece at a time: as many rows
 * as the loader's COPY pieces take (PIECE_ROWS). A Proxy over the array they are parsed into:
 * `Array.isArray`, `length`, indexing, iteration and `slice` work as on the parsed array. Reading a row of a piece that is not JSON throws the
 * malformed-body error.
 */
function lazyArray(text: string, starts: readonly number[], ends: readonly number[]): unknown[] {
  const n = starts.length;
  const rows = new Array<unknown>(n);
  const parsed = new Uint8Array(Math.ceil(n / PIECE_ROWS));
  const ensure = (i: number) => {
    const p = Math.floor(i / PIECE_ROWS);
    if (parsed[p] === 1) return;
    const [a, b] = [p * PIECE_ROWS, Math.min(n, (p + 1) * PIECE_ROWS)];
    let values: unknown;
    try {
      const piece = `[${text.slice(starts[a], ends[b - 1])}]`;
      values = JSON.parse(piece, mayHoldInexactNumbers(piece) ? exactNumbers : undefined);
    } catch {
      throw malformed();
    }
    // A valid text splits exactly; a count that differs means the scan met invalid JSON.
    if (!Array.isArray(values) || values.length !== b - a) throw malformed();
    for (let k = 0; k < values.length; k++) rows[a + k] = values[k];
    parsed[p] = 1;
  };
  const indexOf = (prop: string | symbol): number => {
    if (typeof prop !== 'string') return -1;
    const i = Number(prop);
    return Number.isInteger(i) && i >= 0 && i < n && String(i) === prop ? i : -1;
  };
  return new Proxy(rows, {
    get(target, prop, receiver) {
      const i = indexOf(prop);
      if (i >= 0) ensure(i);
      return Reflect.get(target, prop, receiver) as unknown;
    },
    has(target, prop) {
      return indexOf(prop) >= 0 || Reflect.has(target, prop);
    },
    getOwnPropertyDescriptor(target, prop) {
      const i = indexOf(prop);
      if (i >= 0) ensure(i);
      return Reflect.getOwnPropertyDescriptor(target, prop);
    },
    ownKeys(target) {
      for (let p = 0; p < parsed.length; p++) ensure(p * PIECE_ROWS);
      return Reflect.ownKeys(target);
    },
  });
}

/**
 * A body to parse with its rows left lazy: the envelope's text (the rows array as `[]`, for the full
 * parser) and the rows; undefined when the text is not of that shape or is suspect (the full parser
 * then takes it, and answers its errors as before).
 */
export function splitLoadBody(text: string): { envelope: string; rows: unknown[] } | undefined {
  if (SUSPECT.test(text)) return undefined;
  const spans = rowSpans(text);
  if (spans === undefined) return undefined;
  return {
    envelope: `${text.slice(0, spans.arrayStart)}[]${text.slice(spans.arrayEnd)}`,
    rows: lazyArray(text, spans.starts, spans.ends),
  };
}
