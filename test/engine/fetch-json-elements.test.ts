// The element scanner of src/engine/fetch-json.ts over arrays the database itself wrote with
// json_build_array: every slice is the JSON of its element, whatever the element holds (quotes,
// backslashes before quotes, brackets and commas inside strings, nested json and jsonb, arrays,
// nulls, numbers), on both databases.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { elements } from '../../src/engine/fetch-json.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const TRICKY = [
  'plain',
  '',
  'a "quoted" word',
  'ends with a backslash \\',
  'backslash then quote \\"',
  'two backslashes \\\\',
  '[not, an] {array: 1}, "x"',
  'new\nline\ttab \u0001 é 𝄞',
];

test('each slice is the JSON of its element', async () => {
  const r = await h.db.query<{ a: string }>(
    `SELECT json_build_array(
              t, NULL::text, 12, -3.5::numeric, true, NULL::int, 9007199254740993::bigint,
              '{"k": "v, ]", "n": [1, {"x": "}"}]}'::jsonb, ' [1,2 , "a\\"b"] '::json,
              ARRAY[t, NULL, ']']::text[], ''::text)::text AS a
       FROM unnest($1::text[]) t`,
    [TRICKY],
  );
  assert.equal(r.rows.length, TRICKY.length);
  for (const row of r.rows) {
    const parsed = JSON.parse(row.a) as unknown[];
    const out = new Array<string>(parsed.length).fill('');
    elements(row.a, out);
    assert.deepEqual(
      out.map((s) => JSON.parse(s) as unknown),
      parsed,
      row.a,
    );
    // The bigint's digits are kept as the database wrote them (JSON.parse would round them).
    assert.equal(out[6], '9007199254740993');
  }
});

test('a row that does not hold the elements asked for is an error, never an endless scan', () => {
  assert.throws(() => elements('["a"]', ['', '']), /fewer elements/);
  assert.throws(() => elements('["a', ['']), /unterminated string/);
  const one = [''];
  elements('[{"a": [1, "]"]}]', one);
  assert.deepEqual(one, ['{"a": [1, "]"]}']);
});
