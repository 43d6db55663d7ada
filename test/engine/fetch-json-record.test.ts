// The record scanner of src/engine/fetch-json.ts over records the database itself wrote with
// `ROW(...)::text`: every field is the text the database writes for it alone (NULL as null), whatever
// it holds (quotes, backslashes, commas, parentheses, spaces, empty text, json, arrays, numbers), on
// both databases.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { recordFields } from '../../src/engine/fetch-json.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const TRICKY = [
  'plain',
  '',
  ' ',
  'a "quoted" word',
  '"',
  '""',
  'ends with a backslash \\',
  'backslash then quote \\"',
  'two backslashes \\\\',
  '(parens, and a comma)',
  ')',
  '[not, an] {array: 1}, "x"',
  'new\nline\ttab \u0001 é 𝄞',
  'NULL',
];

test('each field is the text of its value', async () => {
  // The same values as a record and, one by one, as texts (the driver reads a text[] into strings).
  // Both an empty and a non-empty text make the boolean, so it is true in some rows, false in others.
  const values = [
    't',
    'NULL::text',
    '12',
    '-3.5::numeric',
    "(t <> '')",
    'NULL::int',
    '9007199254740993::bigint',
    `'{"k": "v, )", "n": [1, {"x": "("}]}'::jsonb`,
    `' [1,2 , "a\\"b"] '::json`,
    `ARRAY[t, NULL, ')']::text[]`,
    `''::text`,
    't',
  ];
  const r = await h.db.query<{ rec: string; parts: (string | null)[]; b: boolean }>(
    `SELECT ROW(${values.join(', ')})::text AS rec,
            ARRAY[${values.map((v) => `(${v})::text`).join(', ')}] AS parts, (t <> '') AS b
       FROM unnest($1::text[]) t`,
    [TRICKY],
  );
  assert.equal(r.rows.length, TRICKY.length);
  for (const row of r.rows) {
    assert.equal(row.parts.length, 12);
    const out = new Array<string | null>(row.parts.length).fill('unset');
    recordFields(row.rec, out);
    // A boolean's text in a record is its output, t or f (its cast to text says true or false).
    row.parts[4] = row.b ? 't' : 'f';
    assert.deepEqual(out, row.parts, row.rec);
  }
});

test('a single field, NULL or not', () => {
  const one: (string | null)[] = ['unset'];
  recordFields('()', one);
  assert.deepEqual(one, [null]);
  recordFields('("")', one);
  assert.deepEqual(one, ['']);
  recordFields('("a""b\\\\c")', one);
  assert.deepEqual(one, ['a"b\\c']);
});

test('a row that does not hold the fields asked for is an error, never an endless scan', () => {
  assert.throws(() => recordFields('(a)', ['', '']), /as many fields/);
  assert.throws(() => recordFields('(a,b)', ['']), /as many fields/);
  assert.throws(() => recordFields('(a,b,c)', ['', '']), /as many fields/);
  assert.throws(() => recordFields('("a",b,"c")', ['', '']), /as many fields/);
  assert.throws(() => recordFields('("a', ['']), /unterminated/);
  assert.throws(() => recordFields('("a\\', ['']), /unterminated/);
});
