// The logic engine: `node bench/logic.ts` (BENCH_LOGIC_ITEMS 100000, BENCH_SECONDS 10, BENCH_PG_URL as
// in bench/run.ts). On a fresh PostgreSQL database, with the server (src/main.ts) as a child process:
// a 10-element logic with 2 lookups, 1 condition-record look-up, 1 extension-table read and a
// rounding policy; then
//   1. /formulamanager.execute over HTTP, 32 clients (target ≥ 1,000/s, p99 ≤ 50 ms);
//   2. the same with explain: true (target: at most 2× the cost);
//   3. the bulk evaluator (evaluateBulk, in this process, on its own pool) over all products
//      (target ≥ 50,000 items/s including prefetch).
// The machine has 2 cores shared with other work: figures are noisy; compare with the targets.

import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { permissionsOfRoles, type Principal } from '../src/access/access.ts';
import { createDb } from '../src/db/db.ts';
import { LogicDate } from '../src/logic/values.ts';
import { bulkLogic, evaluateBulk, type BulkItem } from '../src/modules/formulas/bulk.ts';
import { openTarget, type Defer } from './lib/databases.ts';
import { httpThroughput } from './lib/measure.ts';
import { PARTITION, expectOk, login, post, startServer } from './lib/server.ts';

const CONNECTIONS = 32;
const sku = (i: number) => `L${String(i).padStart(7, '0')}`;

const ELEMENTS = [
  { elementName: 'Cost', expression: 'product.attribute1' },
  { elementName: 'Ext', expression: 'productExtension("Costs")', displayOptions: 0 },
  { elementName: 'ExtCost', expression: 'coalesce(Ext.attribute1, Cost)' },
  { elementName: 'Margin', expression: 'lookup("Margins", customer.attribute1)' },
  { elementName: 'Disc', expression: 'lookup("QtyDiscount", input.Qty)' },
  {
    elementName: 'Cond',
    expression: 'conditionRecord("SalesDiscount", customer.customerId)',
    displayOptions: 0,
  },
  { elementName: 'CondDisc', expression: 'coalesce(Cond.conditionValue, 0)' },
  { elementName: 'Base', expression: 'max(Cost, ExtCost) * (1 + Margin)' },
  { elementName: 'Net', expression: 'Base * (1 - Disc) * (1 - CondDisc)' },
  { elementName: 'Price', expression: 'Net', rounding: 'EUR99', formatType: 'MONEY' },
];

export interface LogicBenchOptions {
  readonly pgUrl: string;
  /** Products (and bulk items). */
  readonly items: number;
  /** Length of each HTTP measurement. */
  readonly seconds: number;
  /** Server on core 0 (the caller pinned itself to core 1). */
  readonly pin: boolean;
}

/** The logic workloads on a fresh PostgreSQL database: a markdown table (or why it did not run). */
export async function logicBench(opts: LogicBenchOptions, defer?: Defer): Promise<string> {
  const { items: ITEMS, seconds: SECONDS } = opts;
  // Cleanups run last-registered first: the caller's (bench/run.ts: also on SIGINT and its time
  // limit), or this function's own when it runs alone.
  const cleanups: (() => Promise<void>)[] = [];
  const later = (c: () => Promise<void>) => (defer ? defer(c) : void cleanups.unshift(c));
  try {
    const target = await openTarget('postgres', opts.pgUrl, later);
    if (typeof target === 'string') return `PostgreSQL not available: ${target}`;
    const server = await startServer({ ...target.serverEnv, LOGIC_MAX_MS: '5000' }, opts.pin);
    later(() => server.stop());
    const token = await login(server);
    const h = { 'x-ratecard-jwt': token };
    const call = async (path: string, body: unknown) =>
      expectOk(path, await post(`${server.base}${path}`, JSON.stringify(body), h)).body.response!
        .data as any[];

    console.log(`seeding ${ITEMS} products with extension rows ...`);
    await call('/add/PAM', { data: { fieldName: 'attribute1', label: 'Cost', fieldType: 'MONEY' } });
    for (let i = 0; i < ITEMS; i += 10_000) {
      const n = Math.min(10_000, ITEMS - i);
      const ids = Array.from({ length: n }, (_, k) => i + k);
      await call('/loaddata/P', {
        data: { header: ['sku', 'attribute1'], data: ids.map((k) => [sku(k), String(10 + (k % 90) + 0.25)]) },
      });
      await call('/loaddata/PX', {
        data: {
          header: ['name', 'sku', 'attribute1'],
          data: ids.map((k) => ['Costs', sku(k), String(11 + (k % 80))]),
        },
      });
    }
    await call('/add/C', { data: { customerId: 'C-1', attribute1: 'EU' } });
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
    const [set] = await call('/add/CRCS', { data: { uniqueName: 'SalesDiscount', keySize: 1 } });
    await call('/add/CRCI1', {
      data: {
        conditionRecordSetId: set.id,
        key1: 'C-1',
        validFrom: '2026-01-01',
        validTo: '2026-12-31',
        conditionValue: '0.02',
      },
    });
    await call('/add/RP', { data: { uniqueName: 'EUR99', currency: 'EUR', step: 0.01, priceEnding: '.99' } });
    await call('/add/F', {
      data: {
        uniqueName: 'BenchPrice',
        validAfter: '2026-01-01',
        inputs: [{ name: 'Qty', type: 'NUMBER' }],
        elements: ELEMENTS,
      },
    });

    // CPU seconds of the server process and of its PostgreSQL backends (Linux /proc): the cost per
    // evaluation, which the other work on a shared machine disturbs far less than the rate.
    const monitor = await createDb({
      databaseUrl: target.serverEnv.DATABASE_URL!,
      dataDir: '',
      dbPoolSize: 1,
    });
    later(() => monitor.close());
    const cpuOf = (pid: number): number => {
      try {
        const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
        return (Number(f[11]) + Number(f[12])) / 100;
      } catch {
        return 0;
      }
    };
    const backends = async () =>
      (
        await monitor.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'ratecard'",
        )
      ).rows.map((r) => Number(r.pid));
    const cpuSnapshot = async () => {
      const m = new Map<number, number>();
      for (const pid of await backends()) m.set(pid, cpuOf(pid));
      return { server: cpuOf(server.pid), pg: m };
    };
    const cpuSince = async (before: Awaited<ReturnType<typeof cpuSnapshot>>) => {
      const after = await cpuSnapshot();
      let pg = 0;
      for (const [pid, t] of after.pg) pg += t - (before.pg.get(pid) ?? 0);
      return { server: after.server - before.server, pg };
    };

    const lines = ['| workload | result | target |', '| --- | --- | --- |'];
    let n = 0;
    // Plain, explained, plain again: the explained run sits between two plain ones (a warmer server
    // and a changing machine load favour neither side), and its cost is compared with their mean.
    const cpuPerCall: Record<string, number[]> = { plain: [], explain: [] };
    for (const explain of process.env.BENCH_LOGIC_SKIP_HTTP ? [] : [false, true, false]) {
      const before = await cpuSnapshot();
      const t = await httpThroughput(
        {
          url: `${server.base}/formulamanager.execute/${sku(0)}/BenchPrice`,
          method: 'POST',
          headers: { ...h, 'content-type': 'application/json' },
          path: () => `/service/${PARTITION}/formulamanager.execute/${sku(n++ % ITEMS)}/BenchPrice`,
          body: JSON.stringify({
            data: { inputs: { Qty: 20 }, customerId: 'C-1', targetDate: '2026-06-01', explain },
          }),
        },
        CONNECTIONS,
        SECONDS,
      );
      const cpu = await cpuSince(before);
      // The warm-up second is part of the CPU time but not of the count: at most 1/(SECONDS+1) high.
      const calls = t.perSecond * (SECONDS + 1);
      const perCall = (sec: number) => ((sec * 1000) / calls).toFixed(2);
      cpuPerCall[explain ? 'explain' : 'plain']!.push(((cpu.server + cpu.pg) * 1000) / calls);
      lines.push(
        `| execute over HTTP, ${CONNECTIONS} clients${explain ? ', explain' : ''} | ${t.perSecond.toFixed(0)}/s, p50 ${t.p50Ms} ms, p99 ${t.p99Ms} ms, ${t.failures} failures; CPU per call: server ${perCall(cpu.server)} ms, PostgreSQL ${perCall(cpu.pg)} ms | ${explain ? '≥ half the plain rate' : '≥ 1,000/s, p99 ≤ 50 ms'} |`,
      );
      console.log(lines[lines.length - 1]);
    }
    if (cpuPerCall.explain!.length > 0) {
      const plain = cpuPerCall.plain!.reduce((a, b) => a + b, 0) / cpuPerCall.plain!.length;
      const explained = cpuPerCall.explain![0]!;
      lines.push(
        `| explain: CPU per call (server + PostgreSQL) against the plain runs' mean | ${explained.toFixed(2)} ms / ${plain.toFixed(2)} ms = ×${(explained / plain).toFixed(2)} | ≤ ×2 |`,
      );
    }

    if (process.env.BENCH_LOGIC_SKIP_BULK) return lines.join('\n');
    const db = await createDb({ databaseUrl: target.serverEnv.DATABASE_URL!, dataDir: '', dbPoolSize: 4 });
    later(() => db.close());
    const pid = (await db.query<{ id: number }>('SELECT id FROM partitions WHERE name = $1', [PARTITION]))
      .rows[0]!.id;
    const principal: Principal = {
      partitionId: Number(pid),
      partition: PARTITION,
      userId: 1,
      loginName: 'admin',
      roles: ['ADMIN'],
      groups: [],
      admin: true,
      permissions: permissionsOfRoles(['ADMIN']),
      via: 'basic',
      restriction: null,
    };
    const targetDate = new LogicDate('2026-06-01');
    const { logic } = await bulkLogic(db, principal, 'BenchPrice', targetDate);
    function* items(): Generator<BulkItem> {
      for (let i = 0; i < ITEMS; i++) yield { sku: sku(i), customerId: 'C-1', inputs: { Qty: i % 20 } };
    }
    // SQL time of the bulk run, measured around every statement of its pool.
    let sqlMs = 0;
    let statements = 0;
    const timedDb = {
      query: async (sql: string, params?: readonly unknown[]) => {
        const s0 = performance.now();
        try {
          return await db.query(sql, params);
        } finally {
          sqlMs += performance.now() - s0;
          statements++;
          if (process.env.BENCH_LOGIC_SQL_LOG)
            console.log(
              `${(performance.now() - s0).toFixed(1)} ms  ${sql.replace(/\s+/g, ' ').slice(0, 90)}`,
            );
        }
      },
    };
    // BENCH_LOGIC_PROFILE=<file>: a CPU profile of the bulk run alone (open it in Chrome DevTools).
    const profile = process.env.BENCH_LOGIC_PROFILE;
    const session = profile ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    const cpu0 = process.cpuUsage();
    const pg0 = await cpuSnapshot();
    const t0 = performance.now();
    let done = 0;
    let failed = 0;
    let rssMax = 0;
    for await (const batch of evaluateBulk(timedDb as typeof db, principal, logic, items(), {
      targetDate,
      limits: { maxSteps: 100_000, maxMs: 5000 },
      batchSize: 5000,
    })) {
      done += batch.length;
      failed += batch.filter((r) => r.error !== null).length;
      rssMax = Math.max(rssMax, process.memoryUsage().rss);
    }
    const s = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const evaluatorCpu = (cpu.user + cpu.system) / 1e6;
    const pgCpu = (await cpuSince(pg0)).pg;
    if (session) {
      const { profile: p } = await session.post('Profiler.stop');
      writeFileSync(profile!, JSON.stringify(p));
      session.disconnect();
    }
    lines.push(
      `| bulk evaluator, ${done} items, batches of 5,000 | ${(done / s).toFixed(0)} items/s (${s.toFixed(2)} s, of which SQL ${(sqlMs / 1000).toFixed(2)} s in ${statements} statements, ${failed} failed, max RSS ${(rssMax / 2 ** 20).toFixed(0)} MB); CPU: evaluator ${evaluatorCpu.toFixed(2)} s, PostgreSQL ${pgCpu.toFixed(2)} s = ${(done / (evaluatorCpu + pgCpu)).toFixed(0)} items per CPU second | ≥ 50,000 items/s |`,
    );
    return lines.join('\n');
  } finally {
    for (const c of cleanups) await c().catch(() => {});
  }
}

// Run alone: `node bench/logic.ts` (`npm run bench:logic`).
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = await logicBench({
    pgUrl: process.env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
    items: Number(process.env.BENCH_LOGIC_ITEMS ?? 100_000),
    seconds: Number(process.env.BENCH_SECONDS ?? 10),
    pin: false,
  });
  console.log(`\n${text}`);
}
