// The clients' look-up answer (findConditionRecordsJson, lookup.ts) written into the response's bytes
// from what the database sends: for each found item one line of tab-separated JSON texts (itemLine:
// the tuple's number, id, validFrom, validTo, conditionValue, unitOfMeasure, currency, priceUnit, the
// members of `attributes`, version). The members' names, the typedId, the set and the keys (the
// tuple's, as it matched them) are written here, so the item reads as JSON.stringify writes a
// ConditionRecordItem. The lines are read where they lie in the database's text, never split into
// strings: for 5,000 items, building the answer as strings took 10–30 ms of the server's time (GC
// included), against a few for this.

import type { JsonBytes, JsonWrite } from '../../engine/record-json.ts';
import { retypeMarked } from './lookup-attributes.ts';

const TAB = 9;
const bytes = (s: string) => Buffer.from(s, 'utf8');
const ITEM = bytes('{"id":');
const TYPED_ID = bytes(',"typedId":"');
const SET_ID = bytes('.CRCI","conditionRecordSetId":');
const KEYS = bytes(',"keys":');
/** Before each field of a line after the id, in the line's order. */
const MEMBERS = [
  ',"validFrom":',
  ',"validTo":',
  ',"conditionValue":',
  ',"unitOfMeasure":',
  ',"currency":',
  ',"priceUnit":',
  ',"attributes":{',
  '},"version":',
].map(bytes);
const ATTRIBUTES = 6;
const END = bytes('}');
const NULL = bytes('null');

/**
 * The answer to `tuples` from `texts`, the lines (itemLine, joined by newlines; null where none was
 * found) of consecutive parts of `size` tuples each, a line's number counting within its part.
 * `typed`: the set's attribute meta types some attribute (its values may be marked: retypeMarked).
 */
export function lookupAnswer(
  setId: number,
  tuples: readonly (readonly string[])[],
  texts: readonly (string | null)[],
  size: number,
  typed: boolean,
): JsonWrite {
  const starts = lineStarts(texts, size, tuples.length);
  const set = bytes(String(setId));
  return (out) => {
    out.json('[');
    for (let i = 0; i < tuples.length; i++) {
      if (i > 0) out.json(',');
      const start = starts[i]!;
      if (start < 0) out.raw(NULL);
      else writeItem(out, texts[Math.floor(i / size)]!, start, set, tuples[i]!, typed);
    }
    out.json(']');
  };
}

/** For each tuple, where its line's id starts in its part's text; -1 where it has no line. */
function lineStarts(texts: readonly (string | null)[], size: number, count: number): Int32Array {
  const starts = new Int32Array(count).fill(-1);
  texts.forEach((text, part) => {
    if (text === null) return;
    for (let pos = 0; pos < text.length;) {
      let n = 0;
      for (let c = text.charCodeAt(pos++); c !== TAB; c = text.charCodeAt(pos++)) n = n * 10 + c - 48;
      const i = part * size + n - 1;
      if (n < 1 || n > size || i >= count) throw new Error(`look-up: a line for tuple ${n} of ${size}`);
      starts[i] = pos;
      const end = text.indexOf('\n', pos);
      pos = end < 0 ? text.length : end + 1;
    }
  });
  return starts;
}

/** The item of the line at `start` of `text` (its id's first character). */
function writeItem(
  out: JsonBytes,
  text: string,
  start: number,
  set: Buffer,
  keys: readonly string[],
  typed: boolean,
): void {
  const idEnd = text.indexOf('\t', start);
  out.raw(ITEM);
  out.json(text, start, idEnd);
  out.raw(TYPED_ID);
  out.json(text, start, idEnd);
  out.raw(SET_ID);
  out.raw(set);
  out.raw(KEYS);
  out.json(JSON.stringify(keys));
  let from = idEnd + 1;
  for (let m = 0; m < MEMBERS.length; m++) {
    // The last field (version) ends its line.
    let to = text.indexOf(m < MEMBERS.length - 1 ? '\t' : '\n', from);
    if (to < 0) to = text.length;
    out.raw(MEMBERS[m]!);
    if (typed && m === ATTRIBUTES) out.utf8(retypeMarked(text.slice(from, to)));
    else out.json(text, from, to);
    from = to + 1;
  }
  out.raw(END);
}
