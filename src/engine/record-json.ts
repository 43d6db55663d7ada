// The API's JSON of a row written straight from the database's text of a record (`ROW(...)::text`,
// record_out) into bytes: one pass over the record's characters, no string per field, no string per
// row, no string concatenation. src/engine/fetch-json.ts makes a writer per select list; a page's rows
// are written with it into the answer's own buffer (src/http/answer-bytes.ts: pooled, sent as it is).
//
// record_out writes `(a,"b c",,"")`: an empty field is NULL; a field that is empty text or holds a
// space, comma, parenthesis, quote or backslash is quoted, its quotes and backslashes doubled (a
// backslash also escapes the next character, as record_in reads it). A field's text becomes the
// API's value as its `FieldWrite` says; a JSON string is escaped exactly as JSON.stringify escapes
// it, so the bytes are those of the JavaScript path's answer.

import { parseInt8 } from '../db/parse.ts';

/**
 * How a field's text (never NULL here) is written: as a JSON string; as it is (JSON text already: an
 * integer, json); `t`/`f` as true/false; a bigint as a number while exact in JavaScript, else as a
 * string (the driver's `parseInt8`); or as the JSON text a function makes of it.
 */
export type FieldWrite = 'string' | 'raw' | 'boolean' | 'int8' | ((text: string) => string);

const COMMA = 44;
const CLOSE = 41; // )
const QUOTE = 34;
const BACKSLASH = 92;
const HEX = '0123456789abcdef';
/** JSON.stringify's short escapes of control characters (\b \t \n \f \r), by character code. */
const SHORT: Readonly<Record<number, number>> = { 8: 98, 9: 116, 10: 110, 12: 102, 13: 114 };

/** A growing byte buffer of JSON; `bytes()` answers what was written. */
export class JsonBytes {
  private buf: Buffer;
  private pos = 0;

  constructor(size = 4096) {
    this.buf = Buffer.allocUnsafe(Math.max(64, size));
  }

  /** Empty again (the buffer kept, for the next writing). */
  clear(): void {
    this.pos = 0;
  }

  /** Bytes the buffer holds, written or not. */
  get capacity(): number {
    return this.buf.length;
  }

  /** Room for `n` more bytes, made now (a writer that knows its size grows the buffer once). */
  reserve(n: number): void {
    this.room(n);
  }

  /** Room for `n` more bytes (the buffer may be replaced: read `buf` again after). */
  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Bytes as they are (a field's prefix). */
  raw(bytes: Uint8Array): void {
    this.room(bytes.length);
    const b = this.buf;
    let p = this.pos;
    for (let i = 0; i < bytes.length; i++) b[p++] = bytes[i]!;
    this.pos = p;
  }

  /**
   * Characters of `s` (from `from` to before `to`) in UTF-8, as they are (JSON text: needs no
   * escaping): a loop for the short pieces of a row (`null`, a number, a separator), where a native
   * copy per call costs more.
   */
  json(s: string, from = 0, to = s.length): void {
    this.room(3 * (to - from));
    for (let j = from; j < to; j++) {
      const c = s.charCodeAt(j);
      if (c < 0x80) this.buf[this.pos++] = c;
      else j = this.wide(s, j, c);
    }
  }

  /** Text `s` in UTF-8, as it is, in one native copy: a long JSON text (a database's, an envelope's). */
  utf8(s: string): void {
    this.room(Buffer.byteLength(s));
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /**
   * The field of record text `s` at `i` as a JSON string; answers the index after it. Quoted, it ends
   * at its closing quote (a doubled quote or a backslash gives the next character as it is);
   * unquoted, at the next comma or closing parenthesis (it holds no quote or backslash then).
   */
  stringField(s: string, i: number): number {
    const quoted = s.charCodeAt(i) === QUOTE;
    this.room(3 * (s.length - i) + 2);
    let b = this.buf;
    let p = this.pos;
    b[p++] = QUOTE;
    let j = quoted ? i + 1 : i;
    for (; j < s.length; j++) {
      let c = s.charCodeAt(j);
      if (!quoted) {
        if (c === COMMA || c === CLOSE) break;
      } else if (c === QUOTE) {
        if (s.charCodeAt(j + 1) !== QUOTE) break;
        j++; // a doubled quote: one of them
      } else if (c === BACKSLASH) {
        if (++j >= s.length) break;
        c = s.charCodeAt(j);
      }
      if (c >= 0x20 && c < 0x80 && c !== QUOTE && c !== BACKSLASH) {
        b[p++] = c;
        continue;
      }
      this.pos = p;
      j = this.escapedChar(s, j, c);
      b = this.buf;
      p = this.pos;
    }
    if (quoted && j >= s.length) throw new Error('record-json: unterminated field in a row');
    b[p++] = QUOTE;
    this.pos = p;
    return quoted ? j + 1 : j;
  }

  /**
   * Character `c` at `j` of `s`, not plain ASCII, as inside a JSON string (JSON.stringify's escapes;
   * from U+0080 in UTF-8); answers the index of its last unit.
   */
  private escapedChar(s: string, j: number, c: number): number {
    if (c >= 0x80) return this.wide(s, j, c);
    this.room(6 + 3 * (s.length - j)); // its escape, and the room its caller made for the rest
    const b = this.buf;
    b[this.pos++] = BACKSLASH;
    const short = c === QUOTE || c === BACKSLASH ? c : SHORT[c];
    if (short !== undefined) b[this.pos++] = short;
    else this.unicodeEscape(c);
    return j;
  }

  /** `u` and four hex digits (after a backslash). */
  private unicodeEscape(c: number): void {
    const b = this.buf;
    b[this.pos++] = 117; // u
    for (let shift = 12; shift >= 0; shift -= 4) b[this.pos++] = HEX.charCodeAt((c >> shift) & 15);
  }

  /**
   * A character from U+0080 in UTF-8 (a surrogate pair as its code point; a lone surrogate as
   * JSON.stringify writes it, `\udxxx`), in the room of 3 bytes per unit its caller made (a lone surrogate makes its own); answers
   * the index of the character's last unit.
   */
  private wide(s: string, j: number, c: number): number {
    if (c >= 0xd800 && c < 0xe000) {
      const d = s.charCodeAt(j + 1);
      if (c < 0xdc00 && d >= 0xdc00 && d < 0xe000) {
        const cp = ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
        const b = this.buf;
        b[this.pos++] = 0xf0 | (cp >> 18);
        b[this.pos++] = 0x80 | ((cp >> 12) & 63);
        b[this.pos++] = 0x80 | ((cp >> 6) & 63);
        b[this.pos++] = 0x80 | (cp & 63);
        return j + 1;
      }
      this.room(6 + 3 * (s.length - j)); // as in escapedChar
      this.buf[this.pos++] = BACKSLASH;
      this.unicodeEscape(c);
      return j;
    }
    const b = this.buf;
    if (c < 0x800) {
      b[this.pos++] = 0xc0 | (c >> 6);
    } else {
      b[this.pos++] = 0xe0 | (c >> 12);
      b[this.pos++] = 0x80 | ((c >> 6) & 63);
    }
    b[this.pos++] = 0x80 | (c & 63);
    return j;
  }

  /** What was written, as bytes: a view of the buffer, valid until the next write or `clear`. */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

/** Writes a JSON text (an answer's `data` array) into `out`. */
export type JsonWrite = (out: JsonBytes) => void;

/** A quoted field's text (quotes and backslashes undone) and the index after it. */
function quotedText(s: string, i: number): [string, number] {
  let v = '';
  let from = i + 1;
  for (let j = from; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c === BACKSLASH) {
      v += s.slice(from, j);
      from = ++j; // the next character as it is
    } else if (c === QUOTE) {
      if (s.charCodeAt(j + 1) !== QUOTE) return [v + s.slice(from, j), j + 1];
      v += s.slice(from, ++j); // a doubled quote: one of them
      from = j + 1;
    }
  }
  throw new Error('record-json: unterminated field in a row');
}

/** An unquoted field's end: the next comma or closing parenthesis. */
function unquotedEnd(s: string, i: number): number {
  let j = i;
  while (j < s.length) {
    const c = s.charCodeAt(j);
    if (c === COMMA || c === CLOSE) break;
    j++;
  }
  return j;
}

/** A bigint's text as the driver answers it (`parseInt8`): a number while exact, else a string. */
const int8Json = (v: string): string => (typeof parseInt8(v) === 'number' ? v : JSON.stringify(v));

const utf8Bytes = (s: string): Uint8Array => Buffer.from(s, 'utf8');

/** Writes one row's record text as JSON into `out`. */
export interface RecordWriter {
  (row: string, out: JsonBytes): void;
  /** Bytes a row takes besides its fields' texts: prefixes, quotes, the close. */
  readonly fixedBytes: number;
}

/**
 * A writer of rows of `writes.length` fields: each field after its prefix (`{"name":` or `,`…), then
 * `close`. A row with more or fewer fields, or a quote with no end, is an error.
 */
export function recordWriter(
  prefixes: readonly string[],
  writes: readonly FieldWrite[],
  close: string,
): RecordWriter {
  const before = prefixes.map(utf8Bytes);
  const after = utf8Bytes(close);
  const last = writes.length - 1;
  const fixedBytes = before.reduce((n, b) => n + b.length + 2, after.length);
  const write = (s: string, out: JsonBytes): void => {
    let i = 1;
    for (let k = 0; k <= last; k++) {
      out.raw(before[k]!);
      const w = writes[k]!;
      const quoted = s.charCodeAt(i) === QUOTE;
      if (w === 'string') {
        const c = s.charCodeAt(i);
        if (!quoted && (c === COMMA || c === CLOSE)) out.json('null');
        else i = out.stringField(s, i);
      } else {
        let v: string | null;
        if (quoted) [v, i] = quotedText(s, i);
        else {
          const j = unquotedEnd(s, i);
          v = j === i ? null : s.slice(i, j);
          i = j;
        }
        if (v === null) out.json('null');
        else if (w === 'raw') out.json(v);
        else if (w === 'boolean') out.json(v === 't' ? 'true' : 'false');
        else if (w === 'int8') out.json(int8Json(v));
        else out.json(w(v));
      }
      if (s.charCodeAt(i) !== (k < last ? COMMA : CLOSE) || (k === last && i !== s.length - 1)) {
        throw new Error('record-json: a row does not hold as many fields as outputs');
      }
      i++;
    }
    out.raw(after);
  };
  return Object.assign(write, { fixedBytes });
}

/** The JSON array of `rows` (record texts) written by `write` into `out`, room made for it at once. */
export function writeArray(out: JsonBytes, rows: readonly string[], write: RecordWriter): void {
  // Room for all of it unless texts need escapes, and for the room a row's last field asks for.
  let size = 64;
  let longest = 0;
  for (const row of rows) {
    size += row.length + write.fixedBytes + 1;
    if (row.length > longest) longest = row.length;
  }
  out.reserve(size + 3 * longest);
  out.json('[');
  for (const [i, row] of rows.entries()) {
    if (i > 0) out.json(',');
    write(row, out);
  }
  out.json(']');
}
