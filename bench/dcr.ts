// The 10,000-item DCR: `node bench/dcr.ts` (BENCH_DCR_ITEMS, BENCH_PG_URL as in bench/run.ts).
// On each database (embedded PGlite in a temporary directory, then a fresh PostgreSQL database):
// the server (src/main.ts) as a child process, BENCH_DCR_ITEMS products by /loaddata/P, a DCR type,
// a DCR, every product proposed as an UPDATE item in one /dcrmanager.add/{id} call, then a
// synchronous /dcrmanager.submit/{id} — which applies all items in one transaction through the
// engine — and a check that every product changed. Prints seconds per step.
// The peer of each step is the cheapest SQL that does the same work on plain tables through the same
// driver (the project's `createDb`), in the same run: proposing = COPY of the 10,000 proposed rows
// (sku and new values, typed columns) into a plain staging table keyed by (DCR, line); applying =
// one `UPDATE … FROM` that staging table into a plain copy of `products` with exactly the project's
// indexes (`LIKE products INCLUDING ALL`, no triggers, no history), in one transaction each.

import type { Db } from '../src/db/db.ts';
import { csv } from './lib/data.ts';
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

const PEER_PRODUCTS = 'bench_peer_dcr_products';
const PEER_ITEMS = 'bench_peer_dcr_items';
const PEER_PARTITION = '1';
const PEER_DCR = '1';

/** The peer's two steps on `rows` (sku, label, attribute1): seconds to stage the proposals, seconds to apply them. */
async function peerSteps(peer: Db, rows: readonly string[][]): Promise<[number, number]> {
  await peer.query(`DROP TABLE IF EXISTS ${PEER_PRODUCTS}, ${PEER_ITEMS}`);
  await peer.query(`CREATE TABLE ${PEER_PRODUCTS} (LIKE products INCLUDING ALL)`);
  await peer.query(
    `CREATE TABLE ${PEER_ITEMS} (dcr_id bigint, line int, sku text NOT NULL, label text, attribute1 text,` +
      ' PRIMARY KEY (dcr_id, line))',
  );
  const cols = ['partition_id', 'sku', 'label', 'attribute1'];
  await peer.transaction((tx) => tx.copyFrom(PEER_PRODUCTS, cols, csv(rows, PEER_PARTITION)));
  await peer.query(`ANALYZE ${PEER_PRODUCTS}`);
  const proposed = rows.map((r, i) => [String(i), r[0]!, `new ${r[0]}`, 'new']);
  const [, stage] = await timed(() =>
    peer.transaction((tx) =>
      tx.copyFrom(PEER_ITEMS, ['dcr_id', 'line', 'sku', 'label', 'attribute1'], csv(proposed, PEER_DCR)),
    ),
  );
  const [changed, apply] = await timed(() =>
    peer.transaction((tx) =>
      tx.query(
        `UPDATE ${PEER_PRODUCTS} p SET label = i.label, attribute1 = i.attribute1, version = p.version + 1
           FROM ${PEER_ITEMS} i WHERE i.dcr_id = $1 AND p.partition_id = $2 AND p.sku = i.sku`,
        [PEER_DCR, PEER_PARTITION],
      ),
    ),
  );
  if (changed.rowCount !== rows.length) throw new Error(`peer changed ${changed.rowCount} of ${rows.length}`);
  await peer.query(`DROP TABLE ${PEER_PRODUCTS}, ${PEER_ITEMS}`);
  return [stage, apply];
}

const ratio = (peer: number, api: number) => (peer / api).toFixed(2);

async function run(kind: DbKind): Promise<string> {
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const target = await openTarget(kind, PG_URL, (c) => cleanups.push(c));
    if (typeof target === 'string') return `| ${kind} | skipped: ${target} | | | | | | |`;
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
    const peer = await target.openPeer();
    cleanups.push(() => peer.close());
    const [stage, apply] = await peerSteps(peer, rows);
    return (
      `| ${kind} | ${ITEMS} | ${addSeconds.toFixed(2)} | ${stage.toFixed(3)} | ${ratio(stage, addSeconds)} ` +
      `| ${submitSeconds.toFixed(2)} | ${apply.toFixed(3)} | ${ratio(apply, submitSeconds)} | ${changed} |`
    );
  } finally {
    for (const c of cleanups) await c().catch(() => {});
  }
}

const lines = [
  '| database | items | propose (s) | peer: COPY (s) | ratio | submit + apply (s) | peer: UPDATE … FROM (s) | ratio | products changed |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
];
for (const kind of ['embedded', 'postgres'] as const) lines.push(await run(kind));
console.log(lines.join('\n'));
