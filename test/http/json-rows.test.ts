// The lazy rows of a load body (src/http/json-rows.ts), as pure functions: for every text, the
// envelope and the rows read one by one say what one JSON.parse of the whole text says, or refuse
// it (as undefined, an envelope that does not parse, or the malformed-body error on reading a row),
// and a text that JSON.parse refuses is never accepted.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { splitLoadBody } from '../../src/http/json-rows.ts';
import { AppError } from '../../src/http/errors.ts';

/** What the lazy path answers for a text: the body, 'refused', or 'full' (left to the full parser). */
function lazyParse(text: string): unknown {
  const split = splitLoadBody(text);
  if (split === undefined) return 'full';
  let body: { data: { data: unknown[] } };
  try {
    body = JSON.parse(split.envelope) as typeof body;
  } catch {
    return 'refused';
  }
  try {
    const rows = split.rows.slice();
    body.data.data = rows;
  } catch (e) {
    assert.ok(e instanceof AppError && e.message === 'Malformed JSON body', String(e));
    return 'refused';
  }
  return body;
}

function fullParse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return 'refused';
  }
}

/** A deterministic generator (a test that fails says its seed). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

const PIECES = ['a', '"', '\\', '[', ']', '{', '}', ',', ':', ' ', '\n', 'é', '😀', '\\"', '\\\\', 'x y'];

function value(rnd: () => number, depth: number): unknown {
  const k = Math.floor(rnd() * (depth > 2 ? 5 : 7));
  if (k === 0) return null;
  if (k === 1) return Math.round(rnd() * 1e6) / 100;
  if (k === 2) return rnd() < 0.5;
  if (k <= 4) {
    let s = '';
    for (let i = Math.floor(rnd() * 6); i > 0; i--) s += PIECES[Math.floor(rnd() * PIECES.length)];
    return s;
  }
  if (k === 5) return Array.from({ length: Math.floor(rnd() * 4) }, () => value(rnd, depth + 1));
  return Object.fromEntries(
    Array.from({ length: Math.floor(rnd() * 3) }, (_, i) => [`k${i}]"`, value(rnd, depth + 1)]),
  );
}

/** JSON of `v` with random spacing between its tokens. */
function spaced(rnd: () => number, v: unknown): string {
  const sp = () => [' ', '', '\n', '\t ', ''][Math.floor(rnd() * 5)]!;
  if (Array.isArray(v)) return `[${sp()}${v.map((x) => spaced(rnd, x)).join(`${sp()},${sp()}`)}${sp()}]`;
  if (typeof v === 'object' && v !== null) {
    const members = Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}${sp()}:${sp()}${spaced(rnd, x)}`);
    return `{${sp()}${members.join(`${sp()},${sp()}`)}${sp()}}`;
  }
  return JSON.stringify(v);
}

/** A load body of `n` rows, written with random spacing between its tokens. */
function bodyText(rnd: () => number, n: number): string {
  const rows = Array.from({ length: n }, () => Array.from({ length: 3 }, () => value(rnd, 0)));
  const body = {
    operationType: 'x',
    data: { header: ['sku', 'label', 'attribute1'], data: rows, options: { joinFields: ['sku'] } },
    after: [1, { data: [2] }],
  };
  return ` ${spaced(rnd, body)}\n`;
}

describe('lazy load rows (json-rows)', () => {
  test('a body says what JSON.parse says, row by row, across pieces', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const rnd = random(seed);
      const text = bodyText(rnd, 1_234);
      const lazy = lazyParse(text);
      assert.notEqual(lazy, 'full', `seed ${seed}`);
      assert.deepEqual(lazy, JSON.parse(text), `seed ${seed}`);
    }
  });

  test('rows are parsed only as they are read', () => {
    const rows = Array.from({ length: 2_000 }, (_, i) => [`s${i}`, i]);
    const text = JSON.stringify({ data: { header: ['sku', 'label'], data: rows } });
    // A malformed last row: reading the first rows works; reading the last throws.
    const bad = `${text.slice(0, text.lastIndexOf('["s1999"'))}["s1999",1999,]]}}`;
    const split = splitLoadBody(bad)!;
    assert.equal(split.rows.length, 2_000);
    assert.ok(Array.isArray(split.rows));
    assert.deepEqual(split.rows[0], ['s0', 0]);
    assert.deepEqual(split.rows.slice(10, 12), [
      ['s10', 10],
      ['s11', 11],
    ]);
    assert.throws(() => split.rows[1_999], /Malformed JSON body/);
    assert.equal(JSON.parse(split.envelope).data.data.length, 0);
  });

  test('what the full parser must see is left to it', () => {
    const rows = '[["a","b"]]';
    for (const text of [
      `{"data":{"header":["sku"],"data":${rows},"__proto__":{"x":1}}}`,
      `{"data":{"header":["sku"],"data":${rows},"c\\u006fnstructor":{}}}`,
      `{"data":{"header":["constructor"],"data":${rows}}}`,
      `{"data":{"header":["sku"],"data":${rows},"data":[]}}`,
      `{"data":{"header":["sku"],"d\\"ata":${rows}}}`,
      `{"data":{"header":["sku"],"data":${rows}},"data":{}}`,
      `{"data":{"header":["sku"],"data":{}}}`,
      `{"data":[]}`,
      `[1]`,
      `{"data":{"header":["sku"],"data":${rows}}} x`,
    ]) {
      assert.equal(splitLoadBody(text), undefined, text);
    }
  });

  test('a text JSON.parse refuses is never accepted, one that it takes reads the same (mutations)', () => {
    const rnd = random(42);
    const base = bodyText(rnd, 40);
    const alphabet = ['"', '\\', '[', ']', '{', '}', ',', ':', ' ', '1', 'n', 'u', 'e'];
    let refused = 0;
    for (let i = 0; i < 3_000; i++) {
      const at = Math.floor(rnd() * base.length);
      const kind = Math.floor(rnd() * 3);
      const ch = alphabet[Math.floor(rnd() * alphabet.length)]!;
      const text =
        kind === 0
          ? base.slice(0, at) + base.slice(at + 1)
          : kind === 1
            ? base.slice(0, at) + ch + base.slice(at)
            : base.slice(0, at) + ch + base.slice(at + 1);
      const lazy = lazyParse(text);
      if (lazy === 'full') continue;
      const full = fullParse(text);
      if (full === 'refused') {
        assert.equal(lazy, 'refused', `mutation ${i} at ${at}: ${text.slice(Math.max(0, at - 20), at + 20)}`);
        refused++;
      } else if (lazy !== 'refused') {
        assert.deepEqual(lazy, full, `mutation ${i}`);
      } else {
        assert.fail(`mutation ${i}: valid JSON refused: ${text.slice(Math.max(0, at - 20), at + 20)}`);
      }
    }
    assert.ok(refused > 500, `only ${refused} malformed mutations were met`);
  });
});
