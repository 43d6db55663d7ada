// The settings every pooled PostgreSQL connection of the server starts with (src/db/pg.ts): no
// parallel plans and no JIT compilation, on every connection of the pool, not only the first.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

test('pooled connections run without parallel workers and without JIT (PostgreSQL)', async (t) => {
  if (h.db.kind !== 'postgres') return t.skip('PostgreSQL only (the embedded database has neither)');
  // Concurrent transactions hold distinct connections of the pool.
  const seen = await Promise.all(
    [1, 2, 3].map(() =>
      h.db.transaction(async (tx) => {
        const r = await tx.query<{ jit: string; workers: string; pid: number }>(
          `SELECT current_setting('jit') AS jit, current_setting('max_parallel_workers_per_gather') AS workers,
                  pg_backend_pid() AS pid, pg_sleep(0.05)::text`,
        );
        return r.rows[0]!;
      }),
    ),
  );
  assert.equal(new Set(seen.map((s) => s.pid)).size, 3);
  for (const s of seen) assert.deepEqual([s.jit, s.workers], ['off', '0']);
});
