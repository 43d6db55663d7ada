// Db.parallelReads (src/db/pg.ts): read-only transactions on separate connections that share one
// snapshot, for statements that run at once (a client's large condition-record look-up).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

test('parallel readers share one snapshot, are read-only and give their connections back', async () => {
  // The embedded database has one connection and no parallel readers: look-ups run as one
  // statement there (test/modules/conditionrecords.test.ts checks their answers on both databases).
  if (h.db.kind !== 'postgres') return assert.equal(h.db.parallelReads, undefined);
  const parallelReads = h.db.parallelReads!;
  const table = `parallel_reads_${process.pid}`;
  await h.db.query(`CREATE TABLE ${table} (n int)`);
  try {
    await h.db.query(`INSERT INTO ${table} VALUES (1)`);
    const seen = await parallelReads(3, async (readers) => {
      assert.equal(readers.length, 3);
      // Committed after the first reader exported its snapshot and before any reader read: no
      // reader sees it (each would, on a snapshot of its own taken at its first SELECT).
      await h.db.query(`INSERT INTO ${table} VALUES (2)`);
      return Promise.all(
        readers.map(async (r) => {
          const x = await r.query<{ n: number; pid: number }>(
            `SELECT count(*)::int AS n, pg_backend_pid() AS pid FROM ${table}`,
          );
          return x.rows[0]!;
        }),
      );
    });
    assert.deepEqual(
      seen.map((s) => s.n),
      [1, 1, 1],
    );
    assert.equal(new Set(seen.map((s) => s.pid)).size, 3, 'three connections');
    const now = await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
    assert.equal(now.rows[0]!.n, 2);

    // Read-only; a failing reader rolls every transaction back and the connections return to the pool.
    await assert.rejects(
      parallelReads(2, (readers) => readers[1]!.query(`INSERT INTO ${table} VALUES (3)`)),
      /read-only transaction/,
    );
    const stats = h.db.poolStats();
    assert.equal(stats.idle, stats.total);
    assert.equal(stats.waiting, 0);
    const after = await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
    assert.equal(after.rows[0]!.n, 2);
  } finally {
    await h.db.query(`DROP TABLE ${table}`);
  }
});
