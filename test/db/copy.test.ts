// COPY through the adapters (src/db/pg.ts, pglite.ts): CSV and COPY's text format, whole or in
// pieces, with the values that need escaping in each (`copyTextField` for text; quoting in the
// loaders' csvLine). What goes in comes back unchanged, NULL stays NULL.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { copyTextField } from '../../src/db/sql.ts';
import { csvLine } from '../../src/engine/loaddata.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const VALUES: (string | null)[] = [
  'plain',
  '',
  null,
  'tab\there',
  'new\nline and\r\ncrlf',
  'back\\slash \\N \\t',
  '\\.',
  '\\N',
  '"quoted", with, commas',
  ' padded ',
  'ünïcødé ✓ 😀',
];
/** A JSON value with escapes: quotes, a backslash and a newline inside its strings. */
const JSON_TEXT = JSON.stringify({ a: 'say "hi"', b: 'C:\\dir', c: 'two\nlines', d: [1.5, null] });

async function roundTrip(load: (table: string) => Promise<number>): Promise<void> {
  const table = uniqueName('copy');
  await h.db.query(`CREATE TABLE ${table} (n int, v text, j jsonb)`);
  try {
    assert.equal(await load(table), VALUES.length);
    const r = await h.db.query<{ n: number; v: string | null; j: unknown }>(
      `SELECT n, v, j FROM ${table} ORDER BY n`,
    );
    assert.deepEqual(
      r.rows.map((x) => x.v),
      VALUES,
    );
    for (const x of r.rows) assert.deepEqual(x.j, JSON.parse(JSON_TEXT));
  } finally {
    await h.db.query(`DROP TABLE ${table}`);
  }
}

test('text format: escaped fields come back as they were, in one text or in pieces', async () => {
  const lines = VALUES.map((v, i) => `${i}\t${copyTextField(v)}\t${copyTextField(JSON_TEXT)}\n`);
  await roundTrip((table) =>
    h.db.transaction((tx) => tx.copyFrom(table, ['n', 'v', 'j'], lines.join(''), 'text')),
  );
  await roundTrip((table) => h.db.transaction((tx) => tx.copyFrom(table, ['n', 'v', 'j'], lines, 'text')));
});

test('CSV: quoted where needed, NULL unquoted and empty, in one text or in pieces', async () => {
  const lines = VALUES.map((v, i) => `${csvLine(i, [v, JSON_TEXT])}\n`);
  await roundTrip((table) => h.db.transaction((tx) => tx.copyFrom(table, ['n', 'v', 'j'], lines.join(''))));
  await roundTrip((table) => h.db.transaction((tx) => tx.copyFrom(table, ['n', 'v', 'j'], lines)));
});
