// The size rule of text in fields with search indexes (pure): a btree entry holds ~2,700 bytes. A
// field's own prefix index holds its lower case (2,600 bytes at most); where that index also carries
// the column (`prefixCovers`, migration 052), the text and its lower case share one entry.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INDEXED_TEXT_BYTES, checkValue, optionalText } from '../../src/engine/value-check.ts';
import { AppError } from '../../src/http/errors.ts';
import { isWholeNumber } from '../../src/engine/values.ts';
import type { FieldDef } from '../../src/engine/types.ts';

const field = (extra: Partial<FieldDef>): FieldDef => ({
  name: 'label',
  column: 'label',
  type: 'string',
  maxLength: 4000,
  ...extra,
});
const refused = (f: FieldDef, v: string) => typeof checkValue(f, v) === 'string';

test('a search-indexed field takes 2,600 bytes of UTF-8; a covered one, 2,600 for the text and its lower case', () => {
  const plain = field({ searchIndexed: true });
  const covered = field({ searchIndexed: true, prefixCovers: true });
  const cjk = (n: number) => '\u4e00'.repeat(n); // 3 bytes each, no case
  assert.equal(INDEXED_TEXT_BYTES, 2600);
  assert.ok(!refused(plain, cjk(866))); // 2,598
  assert.ok(refused(plain, cjk(867))); // 2,601
  assert.ok(!refused(covered, cjk(433))); // 1,299 twice
  assert.ok(refused(covered, cjk(434))); // 1,302 twice
  assert.match(checkValue(covered, cjk(434)) as string, /this text has 1302 \+ 1302/);
  // The lower case is counted as it is written: U+0130 (2 bytes) lower-cases to "i" and a combining dot (3).
  const dotted = '\u0130'.repeat(600); // 1,200 bytes, lower case 1,800
  assert.ok(!refused(plain, dotted));
  assert.ok(refused(covered, dotted));
  // Fields without search indexes only have their maxLength.
  assert.ok(!refused(field({}), cjk(1000)));
  assert.ok(!refused(covered, 'x'.repeat(1300)));
  assert.ok(refused(covered, 'x'.repeat(1301)));
});

test("a module request's own text (labels, notes): null when left out, refused in the engine's words", () => {
  const refusal = (raw: unknown, max = 3) => {
    try {
      optionalText(raw, 'note', max);
    } catch (e) {
      assert.ok(e instanceof AppError);
      return e.errors?.note?.errorMessage;
    }
    return undefined;
  };
  assert.equal(optionalText(undefined, 'note', 3), null);
  assert.equal(optionalText(null, 'note', 3), null);
  assert.equal(optionalText('', 'note', 3), '');
  // Characters, not UTF-16 units: three emoji are three characters.
  assert.equal(optionalText('\u{1F600}\u{1F600}\u{1F600}', 'note', 3), '\u{1F600}\u{1F600}\u{1F600}');
  assert.equal(refusal('abcd'), 'is longer than 3 characters');
  assert.equal(refusal(12), 'must be text');
  assert.equal(refusal({ a: 1 }), 'must be text');
  assert.equal(refusal('a\u0000'), 'must not contain NUL characters');
  assert.equal(refusal('\ud800'), 'must not contain unpaired surrogates');
});

test('whole numbers by their digits, whatever the notation (massedit + and - on integer fields)', () => {
  const whole = ['12', '-7', '1.0', '5.', '1e30', '2.5e1', '100e-2', '120e-1', '-0.0', '1E+3'];
  const fractional = ['0.4', '-1.5', '.5', '2.55e1', '1e-1', '10e-2', '1.5e-3', '1e-1000', 'x', ''];
  for (const t of whole) assert.equal(isWholeNumber(t), true, t);
  for (const t of fractional) assert.equal(isWholeNumber(t), false, t);
});
