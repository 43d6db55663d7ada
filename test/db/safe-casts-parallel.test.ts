// The safe casts (migration 002) catch failed casts in exception blocks, which no parallel operation
// can run on PostgreSQL before 17. Migration 035 marks them PARALLEL UNSAFE: a query filtering
// through them gets no parallel plan, even where the planner would otherwise use one, and answers
// instead of failing with "cannot start subtransactions during a parallel operation" (the server's
// connections run without parallel plans for throughput; a session that turns them on is safe).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, uniqueName, type Harness } from '../helpers/app.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const CASTS = ['rc_try_numeric', 'rc_try_date', 'rc_try_timestamptz', 'rc_try_boolean'];

test('the safe casts are PARALLEL UNSAFE and keep their answers', async () => {
  const r = await h.db.query<{ proname: string; proparallel: string }>(
    `SELECT proname, proparallel FROM pg_proc WHERE proname = ANY($1::text[]) ORDER BY proname`,
    [CASTS],
  );
  assert.deepEqual(
    r.rows.map((x) => [x.proname, x.proparallel]),
    [...CASTS].sort().map((n) => [n, 'u']),
  );
  const v = await h.db.query<Record<string, unknown>>(
    `SELECT rc_try_numeric('12.5') AS n, rc_try_numeric('1e') AS bad_n, rc_try_date('2024-02-29') AS d,
            rc_try_date('2023-02-29') AS bad_d, rc_try_boolean('yes') AS b, rc_try_boolean('maybe') AS bad_b,
            rc_try_timestamptz('2024-01-02T03:04:05Z') = '2024-01-02T03:04:05Z'::timestamptz AS t,
            rc_try_timestamptz('2024-01-02T25:00') AS bad_t`,
  );
  assert.deepEqual(v.rows[0], {
    n: '12.5',
    bad_n: null,
    d: '2024-02-29',
    bad_d: null,
    b: true,
    bad_b: null,
    t: true,
    bad_t: null,
  });
});

test('a query filtering through a safe cast answers where a parallel plan is cheapest (PostgreSQL)', async (t) => {
  if (h.db.kind !== 'postgres')
    return t.skip('PostgreSQL only (the embedded database has no parallel workers)');
  const table = uniqueName('par');
  await h.db.query(
    `CREATE TABLE ${table} AS SELECT g AS id, (g % 100)::text AS v FROM generate_series(1, 50000) g`,
  );
  try {
    await h.db.query(`ANALYZE ${table}`);
    const answer = await h.db.transaction(async (tx) => {
      // Make every parallel plan look free, so the planner picks one wherever it may.
      await tx.query(`SET LOCAL parallel_setup_cost = 0`);
      await tx.query(`SET LOCAL parallel_tuple_cost = 0`);
      await tx.query(`SET LOCAL min_parallel_table_scan_size = 0`);
      await tx.query(`SET LOCAL max_parallel_workers_per_gather = 2`);
      // Without the fix: a parallel hash join whose leader runs the cast's exception block.
      const sql = `SELECT count(*)::int AS n FROM ${table} b
                     JOIN (SELECT id FROM ${table} WHERE id <= 20000) x USING (id)
                    WHERE rc_try_numeric(b.v) = 5 AND rc_try_date(b.v) IS NULL`;
      const plan = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`);
      const r = await tx.query<{ n: number }>(sql);
      // A query without the casts still gets its parallel plan where the session allows one.
      const other = await tx.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT count(*) FROM ${table} WHERE v = '5'`,
      );
      return {
        n: r.rows[0]!.n,
        plan: plan.rows.map((x) => x['QUERY PLAN']).join('\n'),
        other: other.rows.map((x) => x['QUERY PLAN']).join('\n'),
      };
    });
    assert.equal(answer.n, 200);
    assert.doesNotMatch(answer.plan, /Gather/);
    assert.match(answer.other, /Gather/);
  } finally {
    await h.db.query(`DROP TABLE ${table}`);
  }
});
