// `queryArrays` (src/db/types.ts): rows as arrays of the texts the database sent, NULL as null, on
// the database and inside a transaction, prepared or not, on both adapters.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { preparedShape } from '../../src/db/prepared.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const SQL = `SELECT $1::text AS a, NULL::text AS b, (1 + $2::int)::text AS c, 'é "x"'::text AS d
               FROM generate_series(1, 3) g ORDER BY g /* query-arrays.test */`;

test('rows as arrays of texts, in order; NULL as null', async () => {
  const want = Array.from({ length: 3 }, () => ['x', null, '3', 'é "x"']);
  assert.deepEqual(await h.db.queryArrays(SQL, ['x', 2]), want);
  assert.deepEqual(await h.db.queryArrays(preparedShape(SQL), ['x', 2]), want);
  const inTx = await h.db.transaction((tx) => tx.queryArrays(SQL, ['x', 2]));
  assert.deepEqual(inTx, want);
  assert.deepEqual(await h.db.queryArrays(`${SQL} LIMIT 0`, ['x', 2]), []);
});

test('a failing statement rejects with the database error', async () => {
  await assert.rejects(h.db.queryArrays('SELECT 1/0 AS n'), /division by zero/);
});
