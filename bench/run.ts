// `npm run bench`: the API's workloads beside their physical limits, on the embedded database and on
// PostgreSQL, in one run. Settings: BENCH_ROWS (100000), BENCH_SECONDS (10), BENCH_PG_URL
// (postgres://postgres@127.0.0.1:5432/postgres). Results: bench/results/<date>-<db>.md and stdout.

import { execFileSync } from 'node:child_process';
import { cpus, platform } from 'node:os';
import { generateRows, type Row } from './lib/data.ts';
import { openTarget, type DbKind, type Defer } from './lib/databases.ts';
import { fileLoad } from './lib/fileload.ts';
import { renderReport, writeReport } from './lib/report.ts';
import { login, startServer } from './lib/server.ts';
import { logicBench } from './logic.ts';
import { createPeerTables } from './lib/peers.ts';
import {
  declareIndexedMeta,
  ensureLoaded,
  fetchById,
  fetchPages,
  fillReadPeer,
  foundation,
  integrate,
  integrateBatch,
  updateBatch,
  load,
  type Bench,
  type Line,
} from './lib/workloads.ts';

const CONNECTIONS = 32;
const TIME_LIMIT_MINUTES = 25;

function envInt(name: string, def: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive whole number`);
  return n;
}

const ROWS = envInt('BENCH_ROWS', 100_000);
const SECONDS = envInt('BENCH_SECONDS', 10);
const FILE_MB = envInt('BENCH_FILE_MB', 256);
const PG_URL = process.env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
// The fetch lines: BENCH_FETCH_ONLY (comma-separated parts of their names; all by default), each
// BENCH_FETCH_REPEAT times in turn (1), for samples of their tails.
const FETCH_ONLY = (process.env.BENCH_FETCH_ONLY ?? '').split(',').filter((s) => s !== '');
const FETCH_REPEAT = envInt('BENCH_FETCH_REPEAT', 1);

// Cleanups run in reverse order when their scope ends, on SIGINT/SIGTERM, or at the time limit; one
// unwinding at a time, so an abort during a scope's cleanup waits for it instead of racing it.
const cleanups: (() => Promise<void>)[] = [];
let unwinding = Promise.resolve();
function unwind(to: number): Promise<void> {
  unwinding = unwinding.then(async () => {
    while (cleanups.length > to) {
      const fn = cleanups.pop()!;
      await fn().catch((e: unknown) => console.error(`cleanup failed: ${String(e)}`));
    }
  });
  return unwinding;
}
async function scope<T>(fn: (defer: Defer) => Promise<T>): Promise<T> {
  const mark = cleanups.length;
  try {
    return await fn((c) => cleanups.push(c));
  } finally {
    await unwind(mark);
  }
}
async function abort(why: string, code: number): Promise<never> {
  console.error(`\nbench: ${why}; cleaning up`);
  await unwind(0);
  process.exit(code);
}
process.on('SIGINT', () => void abort('interrupted', 130));
process.on('SIGTERM', () => void abort('terminated', 143));
setTimeout(() => void abort(`over ${TIME_LIMIT_MINUTES} minutes`, 1), TIME_LIMIT_MINUTES * 60_000).unref();

/** Load generator (this process, all its threads) on core 1; the server goes to core 0. */
function pinSelf(): boolean {
  if (platform() !== 'linux' || cpus().length < 2) return false;
  try {
    execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function benchOn(
  kind: DbKind,
  rows: readonly Row[],
  pinned: boolean,
  machine: readonly string[],
): Promise<void> {
  await scope(async (defer) => {
    const target = await openTarget(kind, PG_URL, defer);
    if (typeof target === 'string') {
      console.log(`\n## ${kind}: not run — ${target}\n`);
      return;
    }
    const server = await startServer(target.serverEnv, pinned);
    defer(async () => {
      lastServerOutput = server.output();
      await server.stop();
    });
    const peer = await target.openPeer();
    defer(() => peer.close());
    const version = (await peer.query<{ v: string }>('SELECT version() AS v')).rows[0]!.v;
    const token = await login(server);
    const b: Bench = {
      server,
      token,
      peer,
      rows,
      connections: CONNECTIONS,
      seconds: SECONDS,
      notes: [target.peerNote],
    };
    // The indexed attribute meta first (its indexes exist during the load, as they would), then the
    // peers' tables, the write peer copying the project's indexes.
    await declareIndexedMeta(b);
    const copied = await createPeerTables(peer);
    b.notes.push(`The write peer (COPY, upserts) has the project's ${copied} indexes on products.`);

    console.log(`\n[${kind}] load ...`);
    const lines: Line[] = [await load(b)];
    await ensureLoaded(b);
    await fillReadPeer(b);
    // The server analyzes products itself after the load (in the background, once the load settles);
    // analyzing here too makes sure both sides plan with statistics before the measurements.
    await peer.query(kind === 'postgres' ? 'ANALYZE products' : 'SELECT 1');
    console.log(`[${kind}] fetch ...`);
    const fetchOptions = { only: FETCH_ONLY, repeat: FETCH_REPEAT };
    lines.push(...(await fetchPages(b, (name) => console.log(`[${kind}]   ${name}`), fetchOptions)));
    console.log(`[${kind}] fetch by id ...`);
    lines.push(await fetchById(b));
    console.log(`[${kind}] integrate ...`);
    lines.push(await integrate(b));
    console.log(`[${kind}] integrate in batches ...`);
    lines.push(await integrateBatch(b));
    console.log(`[${kind}] update in batches ...`);
    lines.push(await updateBatch(b));
    console.log(`[${kind}] foundation ...`);
    lines.push(...(await foundation(b)));
    // Last: it adds its own rows (other skus), which the measurements above must not see.
    console.log(`[${kind}] file load (${FILE_MB} MB) ...`);
    lines.push(await fileLoad(b, FILE_MB));

    const text = renderReport(
      {
        title: `Ratecard bench: ${kind === 'embedded' ? 'embedded PGlite' : 'PostgreSQL'} (${new Date().toISOString().slice(0, 10)})`,
        facts: [...machine, `database: ${version.split(',')[0]}`],
      },
      lines,
      b.notes,
    );
    console.log(`\n${text}`);
    console.log(`written to ${writeReport(kind, text)}`);
  });
}

let lastServerOutput = '';
const machineCores = cpus().length;
const pinned = pinSelf();
const machine = [
  `machine: ${machineCores} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), ${platform()}, node ${process.version}`,
  pinned
    ? 'pinning: server on core 0 (`taskset -c 0`), bench process (autocannon and peers) on core 1'
    : 'pinning: none (needs Linux, 2+ cores and taskset): absolute numbers mix server and load generator',
  `settings: ${ROWS.toLocaleString('en-US')} rows, ${CONNECTIONS} concurrent clients, ${SECONDS} s per measurement (after 1 s warm-up), file load ${FILE_MB} MB`,
  'ratio: load = COPY time / API time; fetch and integrate = API req/s / peer queries/s. Compare ratios, not absolutes.',
];
console.log(machine.join('\n'));
const rows = generateRows(ROWS);

let failed = false;
const KINDS = (process.env.BENCH_DBS ?? 'embedded,postgres').split(',') as DbKind[];
for (const kind of KINDS) {
  try {
    await benchOn(kind, rows, pinned, machine);
  } catch (e) {
    failed = true;
    console.error(`\n[${kind}] bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    if (lastServerOutput !== '')
      console.error(`server output (last part):\n${lastServerOutput.slice(-4000)}`);
  }
}
// The logic engine (bench/logic.ts, also `npm run bench:logic` alone) on PostgreSQL, last: its own
// fresh database, BENCH_LOGIC_ITEMS products (default BENCH_ROWS). BENCH_LOGIC=0 leaves it out.
if (KINDS.includes('postgres') && process.env.BENCH_LOGIC !== '0') {
  try {
    console.log('\n[postgres] logic engine ...');
    const table = await scope((defer) =>
      logicBench(
        { pgUrl: PG_URL, items: envInt('BENCH_LOGIC_ITEMS', ROWS), seconds: SECONDS, pin: pinned },
        defer,
      ),
    );
    const text = [
      `## Ratecard bench: logic engine on PostgreSQL (${new Date().toISOString().slice(0, 10)})`,
      '',
      ...machine.map((f) => `- ${f}`),
      '',
      table,
      '',
    ].join('\n');
    console.log(`\n${text}`);
    console.log(`written to ${writeReport('logic', text)}`);
  } catch (e) {
    failed = true;
    console.error(`\n[logic] bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  }
}
process.exit(failed ? 1 : 0);
