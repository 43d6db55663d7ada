// Planner statistics after bulk writes: once writes to a table settle, a large share of new rows
// gets the table analyzed (reltuples follows), a small one does not.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';
import { loadRunning, wroteRows } from '../../src/engine/statistics.ts';
import { ITEMS_TABLE, keysOf, writeItems } from '../../src/modules/calcgrids/store.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

/** The number `n` of a one-row query. */
async function numberOf(sql: string, params: readonly unknown[] = []): Promise<number> {
  const r = await h.db.query<{ n: number }>(sql, params);
  return r.rows[0]!.n;
}

const reltuples = (table: string) =>
  numberOf('SELECT reltuples::float8 AS n FROM pg_class WHERE oid = $1::regclass', [table]);

async function tableWith(rows: number): Promise<string> {
  const table = uniqueName('stats');
  await h.db.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text)`);
  await h.db.query(`INSERT INTO ${table} SELECT g, 'v' || g FROM generate_series(1, ${rows}) g`);
  return table;
}

/** Waits (up to 10 s) for a background ANALYZE to show; the assertion after it says what failed. */
async function until(done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

test('a bulk write of many rows gets the table analyzed once writes settle', async () => {
  const table = await tableWith(5000);
  try {
    assert.ok((await reltuples(table)) <= 0);
    wroteRows(h.db, table, 3000, { quietMs: 20 });
    wroteRows(h.db, table, 2000, { quietMs: 20 }); // the same load's next call: one ANALYZE after both
    await until(async () => (await reltuples(table)) === 5000);
    assert.equal(await reltuples(table), 5000);
  } finally {
    await h.db.query(`DROP TABLE ${table}`);
  }
});

test('a few rows leave the statistics alone', async () => {
  const table = await tableWith(500);
  try {
    wroteRows(h.db, table, 500, { quietMs: 10 });
    await new Promise((r) => setTimeout(r, 300));
    assert.ok((await reltuples(table)) <= 0);
  } finally {
    await h.db.query(`DROP TABLE ${table}`);
  }
});

test('a table is not analyzed while a load runs on it; the end of the load analyzes it once', async () => {
  const table = await tableWith(5000);
  try {
    const ended = loadRunning(h.db, table);
    wroteRows(h.db, table, 5000, { quietMs: 20 }); // one call of a load of several, the next already running
    await new Promise((r) => setTimeout(r, 300));
    assert.ok((await reltuples(table)) <= 0, 'not analyzed while the load runs');
    ended();
    await until(async () => (await reltuples(table)) === 5000);
    assert.equal(await reltuples(table), 5000);
  } finally {
    await h.db.query(`DROP TABLE ${table}`);
  }
});

test('while a load runs, the key columns are analyzed as its rows double; the other columns wait', async () => {
  const table = uniqueName('stats');
  await h.db.query(`CREATE TABLE ${table} (partition_id int, k text, other text)`);
  await h.db.query(`INSERT INTO ${table} SELECT 1, 'k' || g, 'o' || g FROM generate_series(1, 4000) g`);
  const analyzed = async () =>
    (
      await h.db.query<{ attname: string }>(
        'SELECT attname FROM pg_stats WHERE tablename = $1 ORDER BY attname',
        [table],
      )
    ).rows.map((r) => r.attname);
  const histogramOfK = async () =>
    (
      await h.db.query<{ n: number }>(
        `SELECT array_length(histogram_bounds::text::text[], 1) AS n
           FROM pg_stats WHERE tablename = $1 AND attname = 'k'`,
        [table],
      )
    ).rows[0]?.n;
  try {
    const ended = loadRunning(h.db, table);
    wroteRows(h.db, table, 4000, { quietMs: 20, keyColumns: ['k'] });
    await until(async () => (await analyzed()).length > 0);
    assert.deepEqual(await analyzed(), ['k', 'partition_id']);
    assert.equal(await reltuples(table), 4000);
    assert.equal(await histogramOfK(), 11, 'the key columns from a small sample (statistics target 10)');
    ended();
    await until(async () => (await analyzed()).length === 3);
    assert.deepEqual(await analyzed(), ['k', 'other', 'partition_id'], 'all columns once the load ended');
    assert.equal(await histogramOfK(), 101, 'the full analysis: the default target (100)');
  } finally {
    await h.db.query(`DROP TABLE ${table}`);
  }
});

test('the settled table is vacuumed too: its pages are marked all-visible (index-only scans)', async () => {
  const table = await tableWith(5000);
  const allVisible = () =>
    numberOf('SELECT relallvisible AS n FROM pg_class WHERE oid = $1::regclass', [table]);
  try {
    assert.equal(await allVisible(), 0);
    wroteRows(h.db, table, 5000, { quietMs: 20 });
    await until(async () => (await allVisible()) > 0);
    assert.ok((await allVisible()) > 0, 'VACUUM marked the pages all-visible');
    assert.equal(await reltuples(table), 5000);
  } finally {
    await h.db.query(`DROP TABLE ${table}`);
  }
});

/** VACUUMs and ANALYZEs of `table` so far (both count: the upkeep is `VACUUM (ANALYZE)`). */
const upkeepOf = (table: string) =>
  numberOf('SELECT (vacuum_count + analyze_count)::int AS n FROM pg_stat_user_tables WHERE relname = $1', [
    table,
  ]);

/**
 * Rows enough for the upkeep: at least a tenth of `table`, which other suites share — of its rows,
 * and of the count its statistics still hold (the server's rule reads them), which stays that of a
 * suite's large load after the suite deleted its partition, until the table is analyzed again.
 */
async function enoughRowsFor(table: string): Promise<number> {
  const rows = await numberOf(
    `SELECT greatest((SELECT count(*) FROM ${table}), (SELECT reltuples FROM pg_class WHERE oid = $1::regclass))::int AS n`,
    [table],
  );
  return Math.max(1000, Math.ceil(rows / 5));
}

test('a condition record load gets condition_records vacuumed and analyzed once it settles', async () => {
  const admin = { basic: { user: ADMIN, password: ADMIN_PASSWORD } };
  const rows = await enoughRowsFor('condition_records');
  const name = uniqueName('stats');
  okData(
    await h.call('/add/CRCS', { ...admin, body: { data: { uniqueName: name, label: name, keySize: 1 } } }),
  );
  const before = await upkeepOf('condition_records');
  const [r] = okData(
    await h.call('/loaddata/CRCP', {
      ...admin,
      body: {
        data: {
          header: ['conditionRecordSetId', 'key1', 'validFrom', 'validTo'],
          data: Array.from({ length: rows }, (_, i) => [name, `K${i}`, '2026-01-01', '2026-12-31']),
        },
      },
    }),
  );
  assert.equal(r.inserted, rows);
  await until(async () => (await upkeepOf('condition_records')) >= before + 2);
  assert.ok((await upkeepOf('condition_records')) >= before + 2, 'VACUUM (ANALYZE) after the load');
});

test("a calculation grid's written items get calc_grid_items vacuumed and analyzed once it settles", async () => {
  const grid = await h.db.query<{ id: number }>(
    `INSERT INTO calc_grids (partition_id, formula_name, key_number, key_sources)
     VALUES ($1, 'none', 1, '[]') RETURNING id`,
    [h.partitionId],
  );
  const rows = await enoughRowsFor(ITEMS_TABLE);
  const before = await upkeepOf(ITEMS_TABLE);
  await writeItems(
    h.db,
    { partitionId: h.partitionId, id: grid.rows[0]!.id, keyNumber: 1, runId: 1, userId: 1 },
    Array.from({ length: rows }, (_, i) => ({
      keys: keysOf([`K${i}`]),
      calculationResults: null,
      results: '{}',
      warnings: null,
      alerts: null,
      error: null,
      inputHash: 'h',
      overrides: '{}',
    })),
    'insert',
  );
  await until(async () => (await upkeepOf(ITEMS_TABLE)) >= before + 2);
  assert.ok((await upkeepOf(ITEMS_TABLE)) >= before + 2, 'VACUUM (ANALYZE) after the writes');
});
