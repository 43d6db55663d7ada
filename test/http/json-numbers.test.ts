// Unit tests of src/http/json-numbers.ts: which texts take the exact parse, and what it answers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mayHoldInexactNumbers, parseJsonExact } from '../../src/http/json-numbers.ts';

void test('the scan flags 16-digit runs and three-digit exponents, nothing a double holds exactly', () => {
  for (const text of [
    '[1234567890123456]',
    '[1.234567890123456]',
    '[123456789012345.6]',
    '[1e-400]',
    '[2E+308]',
  ])
    assert.equal(mayHoldInexactNumbers(text), true, text);
  for (const text of [
    '[123456789012345]',
    '[1.23456789012345]',
    '[1e99]',
    '["e123"]',
    '{"a":1,"b":-0.5}',
    '',
  ])
    assert.equal(mayHoldInexactNumbers(text), false, text);
});

void test('numbers a double cannot hold become their text; the others stay numbers', () => {
  assert.deepEqual(
    parseJsonExact(
      '{"a":12345678901234567891,"b":0.30000000000000004,"c":1e-400,"d":9007199254740993,"e":[1e400,-0,1.5]}',
    ),
    {
      a: '12345678901234567891',
      b: 0.30000000000000004,
      c: '1e-400',
      d: '9007199254740993',
      e: [Infinity, -0, 1.5],
    },
  );
  assert.throws(() => parseJsonExact('{"__proto__":{"x":12345678901234567891}}'));
  assert.throws(() => parseJsonExact('{"a":12345678901234567891'));
});
