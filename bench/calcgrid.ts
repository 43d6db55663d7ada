// Calculation grids: `node bench/calcgrid.ts` (BENCH_GRID_PRODUCTS 100000, BENCH_GRID_CUSTOMERS 10,
// BENCH_GRID_RATE_PRODUCTS 10000, BENCH_GRID_SKIP_FULL, BENCH_GRID_BATCH, BENCH_GRID_INDEXED, BENCH_PG_URL). On a fresh
// PostgreSQL database, with the server (src/main.ts, which runs the job runner) as a child process:
// BENCH_GRID_PRODUCTS products (seeded by SQL), BENCH_GRID_CUSTOMERS customers, a 10-element logic of
// nature CALCULATIONGRID with 2 lookups (SIMPLE, RANGE) and 1 condition-record look-up; then
//   1. a 2-key grid (products × customers) of BENCH_GRID_RATE_PRODUCTS × customers items: items/s
//      from /calculationgridmanager.calculate to the job's FINISHED (goal ≥ 20,000 items/s);
//   2. the peer: one INSERT ... SELECT computing the same ten values in SQL for the same tuples into a
//      plain table with a primary key on (key1, key2) (jsonb of the values; no result objects, no job);
//   3. the full grid (all products × customers; 1,000,000 items by default) to completion: wall time,
//      items/s, the server's peak RSS (VmHWM) after the small and after the full grid (constant
//      memory: the second should not grow with the item count), RSS sampled at every poll (100 ms);
//   4. a page of the full grid filtered and sorted by a result (`result.Price`);
//   5. (after 1) the same grid recalculated right after its products' labels changed: items/s, against
//      the peer's same INSERT ... SELECT as an upsert (ON CONFLICT (key1, key2) DO UPDATE) over its rows.
// The machine has 2 cores shared with other work: figures are noisy.

import { readFileSync } from 'node:fs';
import { createDb } from '../src/db/db.ts';
import { openTarget } from './lib/databases.ts';
import { PARTITION, expectOk, login, post, startServer } from './lib/server.ts';

const PRODUCTS = Number(process.env.BENCH_GRID_PRODUCTS ?? 100_000);
const CUSTOMERS = Number(process.env.BENCH_GRID_CUSTOMERS ?? 10);
const RATE_PRODUCTS = Math.min(PRODUCTS, Number(process.env.BENCH_GRID_RATE_PRODUCTS ?? 10_000));
const BATCH = process.env.BENCH_GRID_BATCH ? Number(process.env.BENCH_GRID_BATCH) : undefined;
const INDEXED = Boolean(process.env.BENCH_GRID_INDEXED);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const sku = (i: number) => `L${String(i).padStart(7, '0')}`;

const ELEMENTS = [
  { elementName: 'Cost', expression: 'product.attribute1', formatType: 'MONEY' },
  { elementName: 'Margin', expression: 'lookup("Margins", customer.attribute1)', formatType: 'PERCENT' },
  { elementName: 'Disc', expression: 'lookup("QtyDiscount", input.Qty)', formatType: 'PERCENT' },
  {
    elementName: 'Cond',
    expression: 'conditionRecord("SalesDiscount", customer.customerId)',
    displayOptions: 0,
  },
  { elementName: 'CondDisc', expression: 'coalesce(Cond.conditionValue, 0)', formatType: 'PERCENT' },
  { elementName: 'Base', expression: 'Cost * (1 + Margin)', formatType: 'MONEY' },
  { elementName: 'Net', expression: 'Base * (1 - Disc) * (1 - CondDisc)', formatType: 'MONEY' },
  { elementName: 'Price', expression: 'round(Net, 2)', formatType: 'MONEY', overridable: true },
  { elementName: 'MarginAbs', expression: 'Price - Cost', formatType: 'MONEY' },
  { elementName: 'MarginPct', expression: 'round(MarginAbs / Price, 4)', formatType: 'PERCENT' },
];

function memOf(pid: number): { rss: number; hwm: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(s)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}
const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MB`;

async function main(): Promise<void> {
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const target = await openTarget('postgres', PG_URL, (c) => cleanups.push(c));
    if (typeof target === 'string') {
      console.log(`PostgreSQL not available: ${target}`);
      return;
    }
    const server = await startServer({ ...target.serverEnv, LOGIC_MAX_MS: '5000' }, false);
    cleanups.unshift(() => server.stop());
    const token = await login(server);
    const h = { 'x-ratecard-jwt': token };
    const call = async (path: string, body: unknown) =>
      expectOk(path, await post(`${server.base}${path}`, JSON.stringify(body), h)).body.response!
        .data as any[];
    const db = await createDb({ databaseUrl: target.serverEnv.DATABASE_URL!, dataDir: '', dbPoolSize: 2 });
    cleanups.unshift(() => db.close());
    const pid = Number(
      (await db.query<{ id: number }>('SELECT id FROM partitions WHERE name = $1', [PARTITION])).rows[0]!.id,
    );

    console.log(`seeding ${PRODUCTS} products, ${CUSTOMERS} customers ...`);
    await call('/add/PAM', { data: { fieldName: 'attribute1', label: 'Cost', fieldType: 'MONEY' } });
    await db.query(
      `INSERT INTO products (partition_id, sku, label, attribute1)
       SELECT $1, 'L' || lpad(i::text, 7, '0'), 'product ' || i, (10 + i % 90 + 0.25)::text
         FROM generate_series(0, $2 - 1) i`,
      [pid, PRODUCTS],
    );
    await db.query('ANALYZE products');
    const [set] = await call('/add/CRCS', { data: { uniqueName: 'SalesDiscount', keySize: 1 } });
    for (let c = 0; c < CUSTOMERS; c++) {
      const customerId = `C-${String(c).padStart(3, '0')}`;
      await call('/add/C', { data: { customerId, attribute1: c % 2 === 0 ? 'EU' : 'US' } });
      if (c % 3 !== 2)
        await call('/add/CRCI1', {
          data: {
            conditionRecordSetId: set.id,
            key1: customerId,
            validFrom: '2026-01-01',
            validTo: '2026-12-31',
            conditionValue: String(0.01 * (c % 5)),
          },
        });
    }
    const [margins] = await call('/lookuptablemanager.add', {
      data: { uniqueName: 'Margins', type: 'SIMPLE', valueType: 'REAL' },
    });
    await call(`/lookuptablemanager.add/${margins.id}`, [
      { data: { name: 'EU', value: 0.25 } },
      { data: { name: 'US', value: 0.3 } },
    ]);
    const [qty] = await call('/lookuptablemanager.add', {
      data: { uniqueName: 'QtyDiscount', type: 'RANGE', valueType: 'REAL' },
    });
    await call(`/lookuptablemanager.add/${qty.id}`, [
      { data: { name: 'small', upperBound: 10, value: 0 } },
      { data: { name: 'large', lowerBound: 10, value: 0.05 } },
    ]);
    await call('/add/F', {
      data: {
        uniqueName: 'BenchGrid',
        validAfter: '2026-01-01',
        nature: 'CALCULATIONGRID',
        inputs: [{ name: 'Qty', type: 'NUMBER', default: 20 }],
        elements: ELEMENTS,
      },
    });

    /** Adds and calculates a grid; answers its figures. */
    const runGrid = async (label: string, products: number) => {
      const filter = { fieldName: 'sku', operator: 'lessThan', value: sku(products) };
      const [grid] = await call('/calculationgridmanager.addgrid', {
        data: {
          label,
          formulaName: 'BenchGrid',
          targetDate: '2026-06-01',
          keySources: [{ type: 'products', filter }, { type: 'customers' }],
          ...(INDEXED ? { indexedResults: ['Price'] } : {}),
        },
      });
      return { grid, ...(await calculate(label, grid.id)) };
    };

    /** Calculates a grid to completion; answers its figures. */
    const calculate = async (label: string, gridId: number) => {
      const t0 = performance.now();
      const [jst] = await call(`/calculationgridmanager.calculate/${gridId}`, {
        data: BATCH === undefined ? {} : { batchSize: BATCH },
      });
      let rssMax = 0;
      let last = '';
      for (;;) {
        // Every 100 ms: a 1 s poll added up to a second to a grid of a few seconds.
        await new Promise((r) => setTimeout(r, 100));
        rssMax = Math.max(rssMax, memOf(server.pid).rss);
        const [job] = await call(`/admin.fetchjst/${jst.jstId}`, {});
        const line = `  ${label}: ${job.status} ${job.progress}%`;
        if (line !== last) console.log(line);
        last = line;
        if (['FINISHED', 'FAILED', 'CANCELLED'].includes(job.status)) {
          if (job.status !== 'FINISHED')
            throw new Error(`grid job ${job.status}: ${JSON.stringify(job.messages)}`);
          break;
        }
      }
      const s = (performance.now() - t0) / 1000;
      const [g] = await call(`/fetch/CG/${gridId}`, {});
      return {
        items: Number(g.itemCount),
        errors: Number(g.errorCount),
        s,
        rssMax,
        hwm: memOf(server.pid).hwm,
      };
    };

    const lines = ['| workload | result | goal |', '| --- | --- | --- |'];
    const rate = await runGrid('rate', RATE_PRODUCTS);
    lines.push(
      `| grid of ${rate.items.toLocaleString('en')} items (${RATE_PRODUCTS} products × ${CUSTOMERS} customers), calculate → FINISHED | ${(rate.items / rate.s).toFixed(0)} items/s (${rate.s.toFixed(1)} s, ${rate.errors} item errors; server RSS max ${mb(rate.rssMax)}, peak ${mb(rate.hwm)}) | ≥ 20,000 items/s |`,
    );
    console.log(lines[lines.length - 1]);

    // The same grid again right after its products' labels changed (a new run: every item is
    // computed again and upserted), before the items' statistics caught up with the first run.
    const relabelled = Array.from({ length: RATE_PRODUCTS }, (_, i) => [sku(i), `product ${i} (new)`]);
    await call('/loaddata/P', {
      data: { header: ['sku', 'label'], data: relabelled, options: { detectJoinFields: true } },
    });
    const again = await calculate('recalculation', rate.grid.id);

    // The peers: the same ten values for the same tuples, in SQL, into a plain table with the key a
    // DBA would give it (key1, key2): inserted (the first calculation), then upserted over those rows
    // (the recalculation).
    await db.query(
      `CREATE TABLE bench_peer_grid (key1 text, key2 text, results jsonb, PRIMARY KEY (key1, key2))`,
    );
    const computed = `SELECT p.sku, c.customer_id,
              jsonb_build_object('Cost', v.cost, 'Margin', v.margin, 'Disc', v.disc, 'CondDisc', v.cond,
                'Base', v.base, 'Net', v.net, 'Price', round(v.net, 2), 'MarginAbs', round(v.net, 2) - v.cost,
                'MarginPct', round((round(v.net, 2) - v.cost) / nullif(round(v.net, 2), 0), 4))
         FROM products p CROSS JOIN customers c
         JOIN lookup_values m ON m.partition_id = c.partition_id AND m.table_ref = $2 AND m.name = c.attribute1
         LEFT JOIN condition_records cr ON cr.partition_id = c.partition_id AND cr.condition_record_set_id = $3
              AND cr.key1 = c.customer_id AND DATE '2026-06-01' BETWEEN cr.valid_from AND cr.valid_to
         CROSS JOIN (SELECT value::numeric AS disc FROM lookup_values
                      WHERE partition_id = $1 AND table_ref = $4 AND coalesce(lower_bound, '-infinity') <= 20
                        AND 20 < coalesce(upper_bound, 'infinity')) d
         CROSS JOIN LATERAL (
           SELECT p.attribute1::numeric AS cost, m.value::numeric AS margin, d.disc,
                  coalesce(cr.condition_value, 0) AS cond,
                  p.attribute1::numeric * (1 + m.value::numeric) AS base,
                  p.attribute1::numeric * (1 + m.value::numeric) * (1 - d.disc) * (1 - coalesce(cr.condition_value, 0)) AS net
         ) v
        WHERE p.partition_id = $1 AND c.partition_id = $1 AND p.sku < $5`;
    const peerParams = [pid, String(margins.id), set.id, String(qty.id), sku(RATE_PRODUCTS)];
    const timedPeer = async (sql: string) => {
      const t0 = performance.now();
      await db.query(sql, peerParams);
      return (performance.now() - t0) / 1000;
    };
    const ps = await timedPeer(`INSERT INTO bench_peer_grid ${computed}`);
    const peerRows = Number(
      (await db.query<{ n: number }>('SELECT count(*) AS n FROM bench_peer_grid')).rows[0]!.n,
    );
    const pus = await timedPeer(
      `INSERT INTO bench_peer_grid ${computed} ON CONFLICT (key1, key2) DO UPDATE SET results = EXCLUDED.results`,
    );
    await db.query('DROP TABLE bench_peer_grid');
    lines.push(
      `| peer: INSERT ... SELECT of the same values (jsonb) for the same ${peerRows.toLocaleString('en')} tuples into a plain table | ${(peerRows / ps).toFixed(0)} rows/s (${ps.toFixed(1)} s); grid / peer = ${(ps / rate.s).toFixed(2)} | |`,
    );
    console.log(lines[lines.length - 1]);
    lines.push(
      `| the same grid recalculated right after its ${RATE_PRODUCTS} products' labels changed, calculate → FINISHED | ${(again.items / again.s).toFixed(0)} items/s (${again.s.toFixed(1)} s), ${again.errors} item errors | |`,
      `| peer: the same INSERT ... SELECT as an upsert (ON CONFLICT (key1, key2) DO UPDATE) over the peer's rows | ${(peerRows / pus).toFixed(0)} rows/s (${pus.toFixed(1)} s); recalculation / peer = ${(pus / again.s).toFixed(2)} | |`,
    );
    console.log(lines.slice(-2).join('\n'));

    if (!process.env.BENCH_GRID_SKIP_FULL) {
      const full = await runGrid('full', PRODUCTS);
      lines.push(
        `| full grid of ${full.items.toLocaleString('en')} items (${PRODUCTS} products × ${CUSTOMERS} customers) to completion | ${full.s.toFixed(0)} s wall, ${(full.items / full.s).toFixed(0)} items/s, ${full.errors} item errors; server RSS max ${mb(full.rssMax)}, peak ${mb(full.hwm)} (after the small grid: ${mb(rate.hwm)}) | completes in constant memory |`,
      );
      console.log(lines[lines.length - 1]);
      const q0 = performance.now();
      const page = await call('/fetch/CGI2', {
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [
            { fieldName: 'calculationGridId', operator: 'equals', value: full.grid.id },
            { fieldName: 'result.Price', operator: 'greaterThan', value: 100 },
          ],
        },
        sortBy: '-result.Price',
        endRow: 100,
        resultFields: ['key1', 'key2', 'result.Price'],
      });
      lines.push(
        `| a page of 100 of the full grid, result.Price > 100, sorted by -result.Price (with totalRows) | ${(performance.now() - q0).toFixed(0)} ms, ${page.length} rows | |`,
      );
      console.log(lines[lines.length - 1]);
    }
    console.log(`\n${lines.join('\n')}`);
  } finally {
    for (const c of cleanups) await c().catch(() => {});
  }
}

await main();
