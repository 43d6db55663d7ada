// Prepared statements (src/db/prepared.ts): on PostgreSQL a marked text is kept prepared by each
// connection that runs it (parsed once, planned generically once that is as cheap); the answers are
// the same as unprepared ones, and the embedded database runs marked texts like any other.
// `preparedShape` (single-record writes, texts per request shape) marks a bounded number of texts.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { prepared, preparedName, preparedShape } from '../../src/db/prepared.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const SQL = prepared('SELECT $1::int + 1 AS n /* prepared.test */');

test('a prepared statement answers like an unprepared one, every time', async () => {
  const plain = 'SELECT $1::int + 1 AS n /* prepared.test, plain */';
  for (let i = 0; i < 8; i++) {
    const a = await h.db.query<{ n: number }>(SQL, [i]);
    assert.deepEqual(a.rows, [{ n: i + 1 }]);
    assert.deepEqual((await h.db.query<{ n: number }>(plain, [i])).rows, a.rows);
  }
});

test('PostgreSQL keeps it prepared on the connection, under one name for one text', async (t) => {
  if (h.db.kind !== 'postgres') return t.skip('PostgreSQL only (the embedded database runs it unnamed)');
  const names = await h.db.transaction(async (tx) => {
    await tx.query(SQL, [1]);
    await tx.query(SQL, [2]);
    await tx.query('SELECT 1 AS one /* prepared.test, not prepared */');
    const r = await tx.query<{ name: string; statement: string }>(
      `SELECT name, statement FROM pg_prepared_statements WHERE statement LIKE '%prepared.test%'`,
    );
    return r.rows;
  });
  assert.deepEqual(names, [{ name: preparedName(SQL), statement: SQL }]);
});

test('a failing prepared statement fails like an unprepared one and leaves the pool usable', async () => {
  const bad = preparedShape('SELECT 1 / $1::int AS n /* prepared.test division */');
  await assert.rejects(h.db.query(bad, [0]), /division by zero/);
  assert.deepEqual((await h.db.query(bad, [1])).rows, [{ n: 1 }]);
});

test('preparedShape marks a bounded number of texts; the rest run unprepared', () => {
  let marked = 0;
  for (let i = 0; i < 1000; i++) {
    const sql = preparedShape(`SELECT ${i} AS shape /* prepared.test */`);
    if (preparedName(sql) !== undefined) marked++;
  }
  assert.ok(marked > 0 && marked <= 256, `${marked} texts marked`);
  assert.equal(preparedName('SELECT 999 AS shape /* prepared.test */'), undefined);
  // Fixed texts are always marked.
  assert.notEqual(preparedName(prepared('SELECT 2 AS fixed /* prepared.test */')), undefined);
});
