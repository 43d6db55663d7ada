// The record writer of src/engine/record-json.ts over records the database itself wrote with
// `ROW(...)::text`: every field becomes the JSON the JavaScript path writes for its text alone (NULL as
// null), byte for byte as JSON.stringify escapes it, whatever it holds (quotes, backslashes, commas,
// parentheses, spaces, control characters, non-ASCII, empty text, json, numbers), on both databases.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import {
  JsonBytes,
  recordWriter,
  writeArray,
  type FieldWrite,
  type RecordWriter,
} from '../../src/engine/record-json.ts';
import { parseInt8 } from '../../src/db/parse.ts';

/** The JSON array of `rows` written by `write`, as text. */
function jsonArray(rows: readonly string[], write: RecordWriter): string {
  const out = new JsonBytes(16);
  writeArray(out, rows, write);
  return out.bytes().toString('utf8');
}

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
  'new\nline\ttab \u0001 \u001f é 𝄞 ☃ \u007f \u2028',
  'unquoted\u0001control\u0008é𝄞',
  'NULL',
];

/** The JSON the JavaScript path writes for a field's text (null: NULL) written as `w`. */
function expected(w: FieldWrite, text: string | null): string {
  if (text === null) return 'null';
  if (w === 'string') return JSON.stringify(text);
  if (w === 'raw') return text;
  if (w === 'boolean') return JSON.stringify(text === 't');
  if (w === 'int8') return JSON.stringify(parseInt8(text));
  return w(text);
}

test('each field is written as the JSON of its text', async () => {
  // The same values as a record and, one by one, as texts (the driver reads a text[] into strings).
  // Both an empty and a non-empty text make the boolean, so it is true in some rows, false in others.
  const fields: [string, FieldWrite][] = [
    ['t', 'string'],
    ['NULL::text', 'string'],
    ['12', 'raw'],
    ['-3.5::numeric', 'string'],
    ["(t <> '')", 'boolean'],
    ['NULL::int', 'raw'],
    ['9007199254740993::bigint', 'int8'],
    ['42::bigint', 'int8'],
    [`'{"k": "v, )", "n": [1, {"x": "(é"}]}'::jsonb`, 'raw'],
    [`' [1,2 , "a\\"b"] '::json`, 'raw'],
    [`''::text`, 'string'],
    ['t', (v) => JSON.stringify(`<${v}>`)],
    ['t', 'string'],
  ];
  const r = await h.db.query<{ rec: string; parts: (string | null)[]; b: boolean }>(
    `SELECT ROW(${fields.map(([sql]) => sql).join(', ')})::text AS rec,
            ARRAY[${fields.map(([sql]) => `(${sql})::text`).join(', ')}] AS parts, (t <> '') AS b
       FROM unnest($1::text[]) t`,
    [TRICKY],
  );
  assert.equal(r.rows.length, TRICKY.length);
  const writes = fields.map(([, w]) => w);
  const names = fields.map((_, i) => `f${i}`);
  const object = recordWriter(
    names.map((n, i) => `${i === 0 ? '{' : ','}"${n}":`),
    writes,
    '}',
  );
  const array = recordWriter(
    names.map((_, i) => (i === 0 ? '[' : ',')),
    writes,
    ']',
  );
  for (const row of r.rows) {
    // A boolean's text in a record is its output, t or f (its cast to text says true or false).
    row.parts[4] = row.b ? 't' : 'f';
    const values = row.parts.map((p, i) => expected(writes[i]!, p));
    const wantObject = `{${values.map((v, i) => `"${names[i]}":${v}`).join(',')}}`;
    assert.equal(jsonArray([row.rec], object), `[${wantObject}]`, row.rec);
    assert.equal(jsonArray([row.rec], array), `[[${values.join(',')}]]`, row.rec);
  }
  // All rows in one array, as a page: the buffer holds them all, in order.
  const page = jsonArray(
    r.rows.map((x) => x.rec),
    array,
  );
  assert.deepEqual(
    JSON.parse(page),
    r.rows.map((x) => JSON.parse(jsonArray([x.rec], array))[0]),
  );
});

test('a single field, NULL or not', () => {
  const one = (rec: string, w: FieldWrite = 'string') => jsonArray([rec], recordWriter(['['], [w], ']'));
  assert.equal(one('()'), '[[null]]');
  assert.equal(one('("")'), '[[""]]');
  assert.equal(one('("a""b\\\\c")'), '[["a\\"b\\\\c"]]');
  assert.equal(one('("a""b\\\\c")', 'raw'), '[[a"b\\c]]');
  assert.equal(one('(9007199254740993)', 'int8'), '[["9007199254740993"]]');
  assert.equal(one('(-900719925474099)', 'int8'), '[[-900719925474099]]');
});

test('a lone surrogate is escaped as JSON.stringify escapes it', () => {
  // Not from the database (its texts are valid UTF-8), but a function's JSON may hold one.
  const lone = `a\ud800b\udc00c`;
  const out = jsonArray(['(x)'], recordWriter(['['], [() => JSON.stringify(lone)], ']'));
  assert.equal(out, `[[${JSON.stringify(lone)}]]`);
  const rec = `("${lone}")`;
  assert.equal(jsonArray([rec], recordWriter(['['], ['string'], ']')), `[[${JSON.stringify(lone)}]]`);
});

test('texts far longer than the first guess grow the buffer', () => {
  const long = `${'é'.repeat(5000)}${'\u0001'.repeat(5000)}"${'x'.repeat(5000)}`;
  const rec = `("${long.replace(/"/g, '""')}",${'y'.repeat(20000)})`;
  const out = new JsonBytes(16);
  const write = recordWriter(['[', ','], ['string', 'string'], ']');
  write(rec, out);
  assert.equal(out.bytes().toString('utf8'), JSON.stringify([long, 'y'.repeat(20000)]));
});

test('long texts copied in as they are, after short pieces: the bytes are their UTF-8, read back whole', () => {
  const long = `[${JSON.stringify('é€😀'.repeat(3000))},{"k":"ü"}]`;
  const out = new JsonBytes(16);
  out.json('{"a":');
  out.utf8(long);
  out.json(',"b":"ß"}');
  const want = `{"a":${long},"b":"ß"}`;
  assert.deepEqual(out.bytes(), Buffer.from(want, 'utf8'));
  assert.equal(out.bytes().toString('utf8'), want);
  out.clear();
  out.utf8('x');
  assert.equal(out.bytes().toString('utf8'), 'x');
});

test('a row that does not hold the fields asked for is an error, never an endless scan', () => {
  const w = (n: number) =>
    recordWriter(
      Array.from({ length: n }, () => ','),
      Array(n).fill('string'),
      '',
    );
  const rawW = (n: number) =>
    recordWriter(
      Array.from({ length: n }, () => ','),
      Array(n).fill('raw'),
      '',
    );
  for (const write of [w, rawW]) {
    assert.throws(() => jsonArray(['(a)'], write(2)), /as many fields/);
    assert.throws(() => jsonArray(['(a,b)'], write(1)), /as many fields/);
    assert.throws(() => jsonArray(['(a,b,c)'], write(2)), /as many fields/);
    assert.throws(() => jsonArray(['("a",b,"c")'], write(2)), /as many fields/);
    assert.throws(() => jsonArray(['(a'], write(1)), /as many fields/);
    assert.throws(() => jsonArray(['("a'], write(1)), /unterminated/);
    assert.throws(() => jsonArray(['("a\\'], write(1)), /unterminated/);
  }
});
