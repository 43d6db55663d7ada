// Whether a CSV file is UTF-8 text, piece by piece: a file in another encoding (Windows-1252 from a
// spreadsheet, UTF-16) would otherwise be decoded with U+FFFD in place of every byte that is not
// UTF-8, and those replacement characters stored as if they were the data. Node's `isUtf8` checks
// each piece up to its last whole character (the rest is carried to the next piece); only a piece
// found at fault is walked byte by byte, to name the line and byte of the first fault.

import { isUtf8 } from 'node:buffer';

const LF = 0x0a;

/** Where the first byte sequence that is not UTF-8 starts in `b` (b.length: none; see the tail). */
function firstFault(b: Uint8Array): number {
  for (let i = 0; i < b.length;) {
    const c = b[i]!;
    const n =
      c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n === 0 || i + n > b.length) return i;
    if (n > 1) {
      // The second byte's range excludes overlong forms, surrogates and code points past U+10FFFF.
      const lo = c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80;
      const hi = c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf;
      const second = b[i + 1]!;
      if (second < lo || second > hi) return i;
      for (let k = 2; k < n; k++) if ((b[i + k]! & 0xc0) !== 0x80) return i;
    }
    i += n;
  }
  return b.length;
}

/** How many bytes at the end of `b` begin a character that the next piece may complete (0..3). */
function openTail(b: Uint8Array): number {
  for (let k = 1; k <= Math.min(3, b.length); k++) {
    const c = b[b.length - k]!;
    if ((c & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return n > k ? k : 0;
  }
  return 0;
}

function countLines(b: Uint8Array, end: number): number {
  let n = 0;
  for (let at = b.indexOf(LF); at >= 0 && at < end; at = b.indexOf(LF, at + 1)) n++;
  return n;
}

/** Where a file stops being UTF-8: the line (from 1) and the byte offset (from 0). */
export interface Utf8Fault {
  readonly line: number;
  readonly offset: number;
}

/** Checks a file fed piece by piece; `feed` and `end` answer the first fault, once found. */
export class Utf8Check {
  private carry: Uint8Array = new Uint8Array(0);
  private offset = 0; // of `carry` in the file
  private lines = 1; // the line `carry` starts on
  private fault: Utf8Fault | undefined;

  feed(piece: Uint8Array): Utf8Fault | undefined {
    if (this.fault !== undefined || piece.length === 0) return this.fault;
    const b = this.carry.length === 0 ? piece : Buffer.concat([this.carry, piece]);
    const whole = b.length - openTail(b);
    const body = b.subarray(0, whole);
    if (!isUtf8(body)) return this.found(body, firstFault(body));
    this.lines += countLines(body, whole);
    this.offset += whole;
    this.carry = Uint8Array.from(b.subarray(whole));
    return undefined;
  }

  /** The end of the file: a character left open is a fault too. */
  end(): Utf8Fault | undefined {
    if (this.fault === undefined && this.carry.length > 0) return this.found(this.carry, 0);
    return this.fault;
  }

  private found(b: Uint8Array, at: number): Utf8Fault {
    this.fault = { line: this.lines + countLines(b, at), offset: this.offset + at };
    return this.fault;
  }
}

/** The message of a file that is not UTF-8 (the field at fault is the file). */
export function utf8FaultMessage(f: Utf8Fault): string {
  return `CSV line ${f.line}: not UTF-8 text (byte ${f.offset}); save the file as UTF-8 (CSV UTF-8) and load it again`;
}
