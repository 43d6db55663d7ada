// listIndexes (src/engine/indexes.ts) when an index is dropped while it reads: PostgreSQL's
// pg_get_indexdef can fail with "cache lookup failed" (XX000) for an index a concurrent sync just
// dropped; the listing is read again instead of answering a 500. Other errors are not retried.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Queryable } from '../../src/db/db.ts';
import { listIndexes } from '../../src/engine/indexes.ts';

const ROW = {
  name: 'products_pkey',
  definition: 'CREATE UNIQUE INDEX …',
  valid: true,
  size: '8192',
  scans: '3',
};

/** A database whose first `failures` listings fail with `error`. */
function failing(failures: number, error: Error & { code?: string }) {
  let calls = 0;
  const q = {
    query() {
      calls++;
      if (calls <= failures) return Promise.reject(error);
      return Promise.resolve({ rows: [ROW, { ...ROW, name: 'dropped', definition: null }], rowCount: 2 });
    },
  } as unknown as Queryable;
  return { q, calls: () => calls };
}

const lookupFailed = () =>
  Object.assign(new Error('cache lookup failed for attribute 2 of relation 29084'), { code: 'XX000' });

test('a listing that met an index being dropped is read again', async () => {
  const db = failing(2, lookupFailed());
  const list = await listIndexes(db.q, 'products');
  assert.equal(db.calls(), 3);
  assert.deepEqual(
    list.map((i) => [i.name, i.sizeBytes, i.scans]),
    [['products_pkey', 8192, 3]],
  );
});

test('it gives up after five attempts, and never retries another error', async () => {
  const always = failing(100, lookupFailed());
  await assert.rejects(listIndexes(always.q, 'products'), /cache lookup failed/);
  assert.equal(always.calls(), 5);
  const other = failing(1, Object.assign(new Error('relation "nope" does not exist'), { code: '42P01' }));
  await assert.rejects(listIndexes(other.q, 'nope'), /does not exist/);
  assert.equal(other.calls(), 1);
});
