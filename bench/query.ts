// The query API against hand-written SQL: `node bench/query.ts` (BENCH_QUERY_ROWS, default 100,000;
// BENCH_QUERY_RUNS, default 5; BENCH_PG_URL as in bench/run.ts). On each database (embedded PGlite
// in a temporary directory, then a fresh PostgreSQL database): the server (src/main.ts) as a child
// process; BENCH_QUERY_ROWS products (attribute1 = one of 50 categories, TEXT) and as many rows of
// the product extension table Costs (attribute1 NUMERIC) by /loaddata; then one /queryapi.execute
// pipeline — products joined to Costs by sku, grouped by the category, count and sum of the cost —
// timed over HTTP (median of the runs after one warm-up). The server is then stopped and the same
// answer is computed by hand-written SQL on the same database through the project's driver (same
// timing), and the two answers are compared. Ratio = SQL time / API time (goal ≥ 0.5).

import { createDb } from '../src/db/db.ts';
import { openTarget, type DbKind } from './lib/databases.ts';
import { PARTITION, post, startServer, type Reply } from './lib/server.ts';

const ROWS = Number(process.env.BENCH_QUERY_ROWS ?? 100_000);
const RUNS = Number(process.env.BENCH_QUERY_RUNS ?? 5);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const BASIC = `Basic ${Buffer.from(`${PARTITION}/admin:bench-password-1`).toString('base64')}`;
const CHUNK = 10_000;

const PIPELINE = {
  source: 'P',
  join: [{ source: 'PX:Costs', as: 'px', on: { sku: 'sku' } }],
  groupBy: ['attribute1'],
  aggregates: [
    { fn: 'count', as: 'n' },
    { fn: 'sum', field: 'px.attribute1', as: 'cost' },
  ],
  sortBy: 'attribute1',
  endRow: 1000,
};

// What a developer would write by hand for the same answer (the partition's id as $1).
const HAND_WRITTEN = `
  SELECT p.attribute1 AS category, count(*)::int AS n, sum(x.attribute1::numeric) AS cost
    FROM products p
    JOIN product_extensions x
      ON x.partition_id = p.partition_id AND x.sku = p.sku AND x.name = 'Costs' AND x.deleted_at IS NULL
   WHERE p.partition_id = $1
   GROUP BY p.attribute1
   ORDER BY p.attribute1`;

function data(r: Reply, what: string): any[] {
  if (r.status !== 200 || r.body.response?.status !== 0) throw new Error(`${what}: ${r.text.slice(0, 500)}`);
  return r.body.response.data as any[];
}

async function median(fn: () => Promise<unknown>): Promise<number> {
  await fn(); // warm-up: caches, plans
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await fn();
    times.push((performance.now() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

async function run(kind: DbKind): Promise<string> {
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const target = await openTarget(kind, PG_URL, (c) => cleanups.push(c));
    if (typeof target === 'string') return `| ${kind} | skipped: ${target} | | | | |`;
    const server = await startServer(target.serverEnv, false);
    cleanups.unshift(() => server.stop());
    const login = await post(`${server.base}/login/extended`, undefined, { authorization: BASIC });
    const token = login.headers.get('x-ratecard-jwt');
    if (!token) throw new Error(`login: ${login.text}`);
    const h = { 'x-ratecard-jwt': token };
    const call = (path: string, body: unknown) => post(`${server.base}${path}`, JSON.stringify(body), h);

    data(await call('/add/PAM', { data: { fieldName: 'attribute1', fieldType: 'TEXT' } }), 'PAM');
    data(
      await call('/add/PXAM', { data: { name: 'Costs', fieldName: 'attribute1', fieldType: 'NUMERIC' } }),
      'PXAM',
    );
    const sku = (i: number) => `Q${String(i).padStart(7, '0')}`;
    for (let i = 0; i < ROWS; i += CHUNK) {
      const n = Math.min(CHUNK, ROWS - i);
      const products = Array.from({ length: n }, (_, k) => [
        sku(i + k),
        `Product ${i + k}`,
        `cat${(i + k) % 50}`,
      ]);
      data(
        await call('/loaddata/P', { data: { header: ['sku', 'label', 'attribute1'], data: products } }),
        'P',
      );
      const costs = Array.from({ length: n }, (_, k) => ['Costs', sku(i + k), String(((i + k) % 997) / 10)]);
      data(
        await call('/loaddata/PX', { data: { header: ['name', 'sku', 'attribute1'], data: costs } }),
        'PX',
      );
    }
    let api: any[] = [];
    const apiSeconds = await median(async () => {
      const r = await call('/queryapi.execute', { data: PIPELINE });
      if (r.status !== 200)
        throw new Error(`query: ${r.text.slice(0, 300)}\n${server.output().slice(-3000)}`);
      api = data(r, 'query');
    });
    await server.stop();

    const db = await createDb({
      databaseUrl: target.serverEnv.DATABASE_URL,
      dataDir: target.serverEnv.DATA_DIR ?? '',
      dbPoolSize: 1,
    });
    cleanups.unshift(() => db.close());
    const pid = (await db.query<{ id: number }>('SELECT id FROM partitions WHERE name = $1', [PARTITION]))
      .rows[0]!.id;
    await db.query('ANALYZE products');
    await db.query('ANALYZE product_extensions');
    let sql: Record<string, unknown>[] = [];
    const sqlSeconds = await median(async () => {
      sql = (await db.query(HAND_WRITTEN, [pid])).rows;
    });
    const same =
      api.length === sql.length &&
      api.every(
        (a, i) =>
          a.attribute1 === sql[i]!.category &&
          a.n === sql[i]!.n &&
          // A number where a double holds the sum exactly, else the sum's exact text.
          (typeof a.cost === 'number' ? a.cost === Number(sql[i]!.cost) : a.cost === sql[i]!.cost),
      );
    if (!same)
      throw new Error(
        `answers differ: ${JSON.stringify(api.slice(0, 3))} vs ${JSON.stringify(sql.slice(0, 3))}`,
      );
    const ratio = sqlSeconds / apiSeconds;
    return `| ${kind} | ${ROWS} | ${api.length} | ${apiSeconds.toFixed(3)} | ${sqlSeconds.toFixed(3)} | ${ratio.toFixed(2)} |`;
  } finally {
    for (const c of cleanups) await c().catch(() => {});
  }
}

const lines = [
  '| database | rows (P and PX) | groups | API (s, median) | hand-written SQL (s, median) | ratio |',
  '| --- | ---: | ---: | ---: | ---: | ---: |',
];
for (const kind of ['embedded', 'postgres'] as const) lines.push(await run(kind));
console.log(lines.join('\n'));
