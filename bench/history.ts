// `node bench/history.ts`: the cost of record history on bulk loads (issue 12: at most 1.3×). The
// same `/loaddata/P` workload runs against a server with record history on (the default) and with
// RECORD_HISTORY=false, each on a fresh database: BENCH_ROWS products (sku, label, attribute1..30)
// in 10,000-row calls as new records (the direct COPY path), then the same rows again with
// `detectJoinFields` and every label changed (the merge/update path). Modes alternate for
// BENCH_HISTORY_ROUNDS rounds (default 2); the best time of each mode is compared. Both databases:
// embedded PGlite and PostgreSQL (BENCH_PG_URL), or one with BENCH_DB=embedded|postgres.

import { cpus, platform } from 'node:os';
import { execFileSync } from 'node:child_process';
import { CHUNK_ROWS, HEADER, chunks, generateRows, type Row } from './lib/data.ts';
import { openTarget, type DbKind } from './lib/databases.ts';
import { expectOk, login, post, startServer } from './lib/server.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_HISTORY_ROUNDS ?? 2);
const PG_URL = process.env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const KINDS: DbKind[] =
  process.env.BENCH_DB === 'embedded' || process.env.BENCH_DB === 'postgres'
    ? [process.env.BENCH_DB]
    : ['embedded', 'postgres'];

function pinSelf(): boolean {
  if (platform() !== 'linux' || cpus().length < 2) return false;
  try {
    execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const body = (rows: readonly Row[], join: boolean) =>
  JSON.stringify({ data: { header: HEADER, data: rows, options: { detectJoinFields: join } } });

interface Times {
  insert: number;
  update: number;
  historyRows: number;
}

async function run(kind: DbKind, history: boolean, rows: readonly Row[], pinned: boolean): Promise<Times> {
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const target = await openTarget(kind, PG_URL, (c) => cleanups.push(c));
    if (typeof target === 'string') throw new Error(target);
    const server = await startServer({ ...target.serverEnv, RECORD_HISTORY: String(history) }, pinned);
    cleanups.push(() => server.stop());
    const headers = { 'x-ratecard-jwt': await login(server) };
    const load = async (parts: readonly (readonly Row[])[], join: boolean): Promise<number> => {
      const bodies = parts.map((p) => body(p, join));
      const t0 = performance.now();
      for (const b of bodies) {
        const r = expectOk('/loaddata/P', await post(`${server.base}/loaddata/P`, b, headers));
        const res = r.body.response?.data as { invalid?: number } | undefined;
        if (res?.invalid) throw new Error(`${res.invalid} rows refused`);
      }
      return (performance.now() - t0) / 1000;
    };
    const insert = await load(chunks(rows, CHUNK_ROWS), false);
    const changed = rows.map((r) => [r[0]!, `${r[1]!} (changed)`, ...r.slice(2)]);
    const update = await load(chunks(changed, CHUNK_ROWS), true);
    const n = await post(`${server.base}/history.fetch`, JSON.stringify({ startRow: 0, endRow: 1 }), headers);
    const historyRows = Number(expectOk('/history.fetch', n).body.response?.totalRows ?? 0);
    return { insert, update, historyRows };
  } finally {
    for (const c of cleanups.reverse()) await c().catch((e: unknown) => console.error(String(e)));
  }
}

const pinned = pinSelf();
const rows = generateRows(ROWS);
console.log(
  `record history bench: ${ROWS} rows × ${HEADER.length} fields, ${ROUNDS} rounds, pinned: ${pinned}`,
);
for (const kind of KINDS) {
  const best = {
    on: { insert: Infinity, update: Infinity, historyRows: 0 },
    off: { insert: Infinity, update: Infinity, historyRows: 0 },
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      let t: Times;
      try {
        t = await run(kind, mode === 'on', rows, pinned);
      } catch (e) {
        console.log(`[${kind}] not run: ${(e as Error).message}`);
        break;
      }
      console.log(
        `[${kind}] history ${mode}: insert ${t.insert.toFixed(2)} s, update ${t.update.toFixed(2)} s, history rows ${t.historyRows}`,
      );
      const b = best[mode];
      b.insert = Math.min(b.insert, t.insert);
      b.update = Math.min(b.update, t.update);
      b.historyRows = t.historyRows;
    }
  }
  const ratio = (a: number, b: number) =>
    Number.isFinite(a) && Number.isFinite(b) ? (a / b).toFixed(2) : 'n/a';
  console.log(
    `[${kind}] best: insert ${best.off.insert.toFixed(2)} s → ${best.on.insert.toFixed(2)} s with history ` +
      `(×${ratio(best.on.insert, best.off.insert)}); update ${best.off.update.toFixed(2)} s → ` +
      `${best.on.update.toFixed(2)} s (×${ratio(best.on.update, best.off.update)}); goal ≤ 1.3`,
  );
}
