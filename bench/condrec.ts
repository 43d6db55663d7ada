// Condition records: `node bench/condrec.ts` (BENCH_CRC_EXISTING, BENCH_CRC_LOAD, BENCH_PG_URL).
// On each database (embedded PGlite in a temporary directory, then a fresh PostgreSQL database),
// with the server (src/main.ts) as a child process:
// 1. a set of key size 2 seeded with BENCH_CRC_EXISTING items (default 1,000,000) by /loaddata/CRCP;
// 2. a spliced /loaddata/CRCP of BENCH_CRC_LOAD items (default 100,000) in 10,000-row calls, half of
//    them overlapping existing items (a quarter split, a quarter cut), half with new keys — against
//    the peer: COPY of the same rows, in the same chunks, into a table with a primary key and a btree
//    on (set, keys, validFrom), holding the existing rows too (what a DBA would give it);
// 3. /conditionrecordset.lookup of 10,000 key tuples (half of them found) at a date, once untimed and
//    5 times timed; the peer's look-up is the same tuples in one SQL statement on its table (no HTTP,
//    no JSON), also once untimed first.
// Prints a markdown table: rows/s of both loads and their ratio (goal ≥ 0.3), look-up ms (goal ≤ 100
// on PostgreSQL). Numbers depend on what else runs on the machine; compare ratios.

import { openTarget, type DbKind } from './lib/databases.ts';
import { post, startServer, login, expectOk } from './lib/server.ts';

const EXISTING = Number(process.env.BENCH_CRC_EXISTING ?? 1_000_000);
const LOAD = Number(process.env.BENCH_CRC_LOAD ?? 100_000);
const CHUNK = 10_000;
const SEED_CHUNK = 50_000;
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const HEADER = [
  'conditionRecordSetId',
  'key1',
  'key2',
  'validFrom',
  'validTo',
  'conditionValue',
  'attribute1',
];
const SET = 'BENCH';

type Row = [string, string, string, string, string, string, string];

const existingRow = (i: number): Row => [
  SET,
  `C${i % 1000}`,
  `P${Math.floor(i / 1000)}`,
  '2026-01-01',
  '2026-12-31',
  String(i % 97),
  `a${i % 13}`,
];

/** Half overlap existing items (inside one → split; from its middle on → cut), half are new keys. */
function loadRow(j: number): Row {
  if (j % 2 === 1) return [SET, `N${j}`, 'X', '2026-01-01', '2026-12-31', '1.5', 'new'];
  const i = Math.floor((j / 2) * (EXISTING / (LOAD / 2))) % EXISTING;
  const [, k1, k2] = existingRow(i);
  return j % 4 === 0
    ? [SET, k1, k2, '2026-05-01', '2026-05-31', '2.5', 'new']
    : [SET, k1, k2, '2026-07-01', '2027-06-30', '3.5', 'new'];
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
    if (typeof target === 'string') return `| ${kind} | skipped: ${target} | | | | | | |`;
    const server = await startServer(target.serverEnv, false);
    cleanups.unshift(() => server.stop());
    const h = { 'x-ratecard-jwt': await login(server) };
    const call = async (path: string, body: unknown) =>
      expectOk(path, await post(`${server.base}${path}`, JSON.stringify(body), h)).body.response!
        .data as any[];

    await call('/add/CRCS', { data: { uniqueName: SET, label: SET, keySize: 2 } });
    const [, seedSeconds] = await timed(async () => {
      for (let i = 0; i < EXISTING; i += SEED_CHUNK) {
        const rows = Array.from({ length: Math.min(SEED_CHUNK, EXISTING - i) }, (_, k) => existingRow(i + k));
        const [r] = await call('/loaddata/CRCP', { data: { header: HEADER, data: rows } });
        if (r.invalid > 0) throw new Error(`seed: ${JSON.stringify(r.errors.slice(0, 3))}`);
      }
    });

    const loadRows = Array.from({ length: LOAD }, (_, j) => loadRow(j));
    const totals = { inserted: 0, cut: 0, split: 0, superseded: 0, invalid: 0 };
    const [, apiSeconds] = await timed(async () => {
      for (let j = 0; j < LOAD; j += CHUNK) {
        const [r] = await call('/loaddata/CRCP', {
          data: {
            header: HEADER,
            data: loadRows.slice(j, j + CHUNK),
            options: { conditionRecords: { splicing: { setFields: { attribute1: 'cut' } } } },
          },
        });
        for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r[k] as number;
      }
    });
    if (totals.invalid > 0) throw new Error(`load: ${totals.invalid} invalid rows`);

    // The peer: COPY of the same rows (set id, keys, validity, value, attribute) into a table with
    // what a DBA would give it for look-ups by key and date — a primary key and a btree on (set,
    // keys, validFrom) — holding the same existing rows (copied untimed first).
    const peer = await target.openPeer();
    cleanups.unshift(() => peer.close());
    await peer.query('DROP TABLE IF EXISTS bench_peer_crc');
    await peer.query(`CREATE TABLE bench_peer_crc (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      partition_id bigint, condition_record_set_id bigint, key1 text, key2 text, valid_from date,
      valid_to date, condition_value numeric, attribute1 text)`);
    await peer.query(`CREATE INDEX bench_peer_crc_key ON bench_peer_crc
      (partition_id, condition_record_set_id, key1, key2, valid_from)`);
    const peerColumns = [
      'partition_id',
      'condition_record_set_id',
      'key1',
      'key2',
      'valid_from',
      'valid_to',
      'condition_value',
      'attribute1',
    ];
    const copyRows = (rows: readonly Row[]) =>
      peer.transaction((tx) =>
        tx.copyFrom(
          'bench_peer_crc',
          peerColumns,
          `${rows.map((r) => `1,1,"${r[1]}","${r[2]}",${r[3]},${r[4]},${r[5]},"${r[6]}"`).join('\n')}\n`,
        ),
      );
    for (let i = 0; i < EXISTING; i += SEED_CHUNK) {
      await copyRows(
        Array.from({ length: Math.min(SEED_CHUNK, EXISTING - i) }, (_, k) => existingRow(i + k)),
      );
    }
    await peer.query('ANALYZE bench_peer_crc');
    const [, copySeconds] = await timed(async () => {
      for (let j = 0; j < LOAD; j += CHUNK) await copyRows(loadRows.slice(j, j + CHUNK));
    });

    const tuples = Array.from({ length: 10_000 }, (_, t) => {
      if (t % 2 === 1) return ['none', `x${t}`];
      const [, k1, k2] = existingRow((t * 37) % EXISTING);
      return [k1, k2];
    });
    const ms: number[] = [];
    let found = 0;
    // Both sides once untimed first: a backend's first probes fault in the shared buffers' pages
    // and read the catalogs (~50 ms more for 2,500 probes), paid by the server's pooled
    // connections that the load left idle and by the peer's connection alike.
    await call(`/conditionrecordset.lookup/${SET}`, { data: { keys: tuples, date: '2026-03-15' } });
    for (let n = 0; n < 5; n++) {
      const [items, s] = await timed(() =>
        call(`/conditionrecordset.lookup/${SET}`, { data: { keys: tuples, date: '2026-03-15' } }),
      );
      ms.push(s * 1000);
      found = items.filter((x) => x !== null).length;
    }
    ms.sort((a, b) => a - b);
    // The peer's look-up: the same tuples, one probe of its key index each, in the same driver.
    const peerMs: number[] = [];
    for (let n = -1; n < 5; n++) {
      const [, s] = await timed(() =>
        peer.query(
          `SELECT q.n, c.* FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(k1, k2, n)
             LEFT JOIN LATERAL (SELECT id, valid_from, valid_to, condition_value, attribute1 FROM bench_peer_crc c
                 WHERE c.partition_id = 1 AND c.condition_record_set_id = 1 AND c.key1 = q.k1 AND c.key2 = q.k2
                   AND c.valid_from <= $3::date AND c.valid_to >= $3::date
                 ORDER BY c.valid_from DESC LIMIT 1) c ON true`,
          [tuples.map((t) => t[0]), tuples.map((t) => t[1]), '2026-03-15'],
        ),
      );
      if (n >= 0) peerMs.push(s * 1000);
    }
    peerMs.sort((a, b) => a - b);
    const apiRate = LOAD / apiSeconds;
    const copyRate = LOAD / copySeconds;
    return (
      `| ${kind} | ${EXISTING} in ${seedSeconds.toFixed(1)} s | ${LOAD} (${totals.inserted} ins, ${totals.split} split, ` +
      `${totals.cut} cut, ${totals.superseded} removed) | ${apiRate.toFixed(0)} | ${copyRate.toFixed(0)} | ` +
      `${(apiRate / copyRate).toFixed(2)} | ${ms[2]!.toFixed(0)} (min ${ms[0]!.toFixed(0)}), ${found} found | ` +
      `${peerMs[2]!.toFixed(0)} (min ${peerMs[0]!.toFixed(0)}) |`
    );
  } finally {
    for (const c of cleanups) await c().catch(() => {});
  }
}

const kinds = (process.env.BENCH_CRC_DBS ?? 'embedded,postgres').split(',') as DbKind[];
const lines = [
  '| database | existing items (seed time) | spliced load | API rows/s | peer COPY rows/s | ratio (goal ≥ 0.3) | look-up of 10,000 tuples, median ms | peer look-up (SQL only), median ms |',
  '| --- | --- | --- | ---: | ---: | ---: | --- | --- |',
];
for (const kind of kinds) lines.push(await run(kind));
console.log(lines.join('\n'));
