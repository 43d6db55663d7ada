// The 10,000-item DCR: `node bench/dcr.ts` (BENCH_DCR_ITEMS, BENCH_PG_URL as in bench/run.ts).
// On each database (embedded PGlite in a temporary directory, then a fresh PostgreSQL database):
// the server (src/main.ts) as a child process, BENCH_DCR_ITEMS products by /loaddata/P, a DCR type,
// a DCR, every product proposed as an UPDATE item in one /dcrmanager.add/{id} call, then a
// synchronous /dcrmanager.submit/{id} — which applies all items in one transaction through the
// engine — and a check that every product changed. Prints seconds per step.

import { openTarget, type DbKind } from './lib/databases.ts';
import { PARTITION, post, startServer, type Reply } from './lib/server.ts';

const ITEMS = Number(process.env.BENCH_DCR_ITEMS ?? 10_000);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const BASIC = `Basic ${Buffer.from(`${PARTITION}/admin:bench-password-1`).toString('base64')}`;

function data(r: Reply, what: string): any[] {
  if (r.status !== 200 || r.body.response?.status !== 0) throw new Error(`${what}: ${r.text.slice(0, 500)}`);
  return r.body.response.data as any[];
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const v = await fn();
  return [v, (performance.now() - t0) / 1000];
}

async function run(kind: DbKind): Promise<string> {
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const target = await openTarget(kind, PG_URL, (c) => cleanups.push(c));
    if (typeof target === 'string') return `| ${kind} | skipped: ${target} | | | |`;
    const server = await startServer(target.serverEnv, false);
    cleanups.unshift(() => server.stop());
    const login = await post(`${server.base}/login/extended`, undefined, { authorization: BASIC });
    const token = login.headers.get('x-ratecard-jwt');
    if (!token) throw new Error(`login: ${login.text}`);
    const h = { 'x-ratecard-jwt': token };
    const call = (path: string, body: unknown) => post(`${server.base}${path}`, JSON.stringify(body), h);

    const rows = Array.from({ length: ITEMS }, (_, i) => [
      `DCR${String(i).padStart(6, '0')}`,
      `label ${i}`,
      'old',
    ]);
    for (let i = 0; i < rows.length; i += 10_000) {
      data(
        await call('/loaddata/P', {
          data: { header: ['sku', 'label', 'attribute1'], data: rows.slice(i, i + 10_000) },
        }),
        'load',
      );
    }
    data(
      await call('/add/DCRT', { data: { uniqueName: 'bench', targetType: 'P', fields: 'label,attribute1' } }),
      'DCRT',
    );
    const [dcr] = data(await call('/dcrmanager.add', { data: { dcrType: 'bench', label: 'bench' } }), 'DCR');
    const items = rows.map((r) => ({ sku: r[0], label: `new ${r[0]}`, attribute1: 'new' }));
    const [, addSeconds] = await timed(async () =>
      data(await call(`/dcrmanager.add/${dcr.id}`, { data: items }), 'items'),
    );
    const [applied, submitSeconds] = await timed(async () =>
      data(await call(`/dcrmanager.submit/${dcr.id}`, {}), 'submit'),
    );
    if (applied[0].status !== 'APPLIED') throw new Error(`not applied: ${JSON.stringify(applied[0])}`);
    const check = await call('/fetch/P', { data: { attribute1: 'new' }, startRow: 0, endRow: 1 });
    const changed = check.body.response?.totalRows;
    if (changed !== ITEMS) throw new Error(`${changed} of ${ITEMS} products changed`);
    return `| ${kind} | ${ITEMS} | ${addSeconds.toFixed(2)} | ${submitSeconds.toFixed(2)} | ${changed} |`;
  } finally {
    for (const c of cleanups) await c().catch(() => {});
  }
}

const lines = [
  '| database | items | propose (s) | submit + apply (s) | products changed |',
  '| --- | ---: | ---: | ---: | ---: |',
];
for (const kind of ['embedded', 'postgres'] as const) lines.push(await run(kind));
console.log(lines.join('\n'));
