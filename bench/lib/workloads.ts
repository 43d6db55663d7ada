// The workloads, each the API beside its "physical limit" peer: the cheapest SQL that answers the
// same question, on a plain table of the same shape with the indexes a DBA would add for it
// (bench/lib/peers.ts), through the same driver, at the same concurrency. One function per workload,
// the same for both databases.

import type { Db } from '../../src/db/db.ts';
import { findType } from '../../src/engine/registry.ts';
import {
  CHUNK_ROWS,
  HEADER,
  INDEXED_META,
  PAGE_ROWS,
  chunks,
  csv,
  filters,
  loaddataBody,
  upserts,
  type Filter,
  type Row,
} from './data.ts';
import { PEER_LOAD_TABLE, PEER_TABLE } from './databases.ts';
import { driverThroughput, httpThroughput, type Throughput } from './measure.ts';
import { expectOk, post, type Server } from './server.ts';

export interface Line {
  readonly workload: string;
  readonly api: string;
  readonly peer: string;
  /** Peer cost / API cost: 1 means the API adds nothing. */
  readonly ratio?: number;
  readonly goal?: number;
}

export interface Bench {
  readonly server: Server;
  readonly token: string;
  readonly peer: Db;
  readonly rows: readonly Row[];
  readonly connections: number;
  readonly seconds: number;
  /** Things the reader of the report should know (fallbacks, mismatches). */
  readonly notes: string[];
}

/** The peer's rows all belong to one partition, as the server's do. */
const PEER_PARTITION = 1;
const PEER_USER = 1;

/** The columns `/fetch/P` selects: typedId and every field of the type, under their API names. */
const P = findType('P')!;
const SELECT = [
  `(t.id::text || '.P') AS "typedId"`,
  ...P.fields.map((f) => `t.${f.column} AS "${f.name}"`),
].join(', ');

const auth = (b: Bench) => ({ 'x-ratecard-jwt': b.token });
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const rate = (t: Throughput, unit: string) =>
  `${int(t.perSecond)} ${unit}/s (p50 ${t.p50Ms.toFixed(1)} ms, p99 ${t.p99Ms.toFixed(1)} ms)` +
  (t.failures > 0 ? `, ${int(t.failures)} FAILED` : '');

async function totalRows(b: Bench): Promise<number> {
  const body = JSON.stringify({ startRow: 0, endRow: 1 });
  const r = expectOk('count products', await post(`${b.server.base}/fetch/P`, body, auth(b)));
  return r.body.response?.totalRows ?? -1;
}

/** `/loaddata/P` in 10,000-row calls vs. COPY of the same values into the write peer (same chunks, same indexes). */
export async function load(b: Bench): Promise<Line> {
  const workload = `load ${int(b.rows.length)} rows × ${HEADER.length - 2} attributes`;
  const parts = chunks(b.rows, CHUNK_ROWS);
  const bodies = parts.map(loaddataBody);
  const csvs = parts.map((p) => csv(p, String(PEER_PARTITION)));

  let api: number | string;
  const t0 = performance.now();
  try {
    for (const body of bodies) {
      const r = await post(`${b.server.base}/loaddata/P`, body, auth(b));
      if (r.status === 404) throw new Error('not available (404)');
      expectOk('/loaddata/P', r);
    }
    api = (performance.now() - t0) / 1000;
  } catch (e) {
    api = (e as Error).message;
  }

  const t1 = performance.now();
  for (const text of csvs) {
    await b.peer.transaction((tx) => tx.copyFrom(PEER_LOAD_TABLE, ['partition_id', ...HEADER], text));
  }
  const copy = (performance.now() - t1) / 1000;
  const peer = `COPY ${copy.toFixed(2)} s`;

  const loaded = await totalRows(b);
  if (typeof api === 'number' && loaded !== b.rows.length) {
    api = `loaded ${int(loaded)} of ${int(b.rows.length)} rows`;
  }
  if (typeof api === 'string') return { workload, api, peer };
  return {
    workload,
    api: `${api.toFixed(2)} s (${int(b.rows.length / api)} rows/s)`,
    peer,
    ratio: copy / api,
    goal: 0.5,
  };
}

/** Without a working `/loaddata/P`, the rows go in through `/integrate/P` (upsert: partial loads are fine). */
export async function ensureLoaded(b: Bench): Promise<void> {
  if ((await totalRows(b)) === b.rows.length) return;
  const t = performance.now();
  for (const part of chunks(b.rows, 1000)) {
    const body = JSON.stringify(
      part.map((r) => ({ data: Object.fromEntries(HEADER.map((h, i) => [h, r[i]])) })),
    );
    expectOk('seed through /integrate/P', await post(`${b.server.base}/integrate/P`, body, auth(b)));
  }
  const n = await totalRows(b);
  if (n !== b.rows.length) throw new Error(`seeding left ${n} of ${b.rows.length} products`);
  b.notes.push(
    `The rows for fetch and integrate were loaded through \`/integrate/P\` in 1,000-row calls ` +
      `(${((performance.now() - t) / 1000).toFixed(1)} s), since \`/loaddata/P\` did not load them.`,
  );
}

/**
 * Declares attribute1 (TEXT) and attribute2 (NUMERIC) as indexed and waits until the INDEX_SYNC job
 * has built their indexes: the load and the fetches then run with them, as an installation would.
 */
export async function declareIndexedMeta(b: Bench): Promise<void> {
  const body = JSON.stringify(INDEXED_META.map((data) => ({ data })));
  expectOk('/integrate/PAM', await post(`${b.server.base}/integrate/PAM`, body, auth(b)));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const r = expectOk(
      '/admin.indexes/P',
      await post(`${b.server.base}/admin.indexes/P`, undefined, auth(b)),
    );
    const names = (r.body.response?.data as { name: string; valid: boolean }[]).filter((i) => i.valid);
    const built = names.filter((i) => i.name.startsWith('rcx_products_')).length;
    if (built >= 4) return;
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new Error('the attribute indexes were not built within 2 minutes');
}

/** The read peer gets the same rows (not timed); both sides' tables are analyzed. */
export async function fillReadPeer(b: Bench): Promise<void> {
  for (const part of chunks(b.rows, CHUNK_ROWS)) {
    const text = csv(part, String(PEER_PARTITION));
    await b.peer.transaction((tx) => tx.copyFrom(PEER_TABLE, ['partition_id', ...HEADER], text));
  }
  await b.peer.query(`ANALYZE ${PEER_TABLE}`);
  await b.peer.query(`ANALYZE ${PEER_LOAD_TABLE}`);
}

/** One filter as a 100-row page with totalRows: `/fetch/P` vs. the cheapest SQL for page and count. */
async function fetchFilter(b: Bench, f: Filter): Promise<Line> {
  const expected = b.rows.filter(f.matches).length;
  const body = JSON.stringify({ data: f.criteria, startRow: 0, endRow: PAGE_ROWS });
  const url = `${b.server.base}/fetch/P`;
  const headers = { 'content-type': 'application/json', ...auth(b) };
  const got = expectOk('/fetch/P', await post(url, body, auth(b))).body.response?.totalRows;

  // Page and exact count in one statement (the count an uncorrelated subquery, evaluated once).
  const where = `t.partition_id = $1 AND ${f.peerWhere}`;
  const sql = `SELECT ${SELECT}, (SELECT count(*) FROM ${PEER_TABLE} t WHERE ${where}) AS "__total"
    FROM ${PEER_TABLE} t WHERE ${where} ORDER BY t.id LIMIT ${PAGE_ROWS}`;
  const params = [PEER_PARTITION, ...f.peerParams];
  const peerTotal = Number((await b.peer.query<{ __total: unknown }>(sql, params)).rows[0]?.__total ?? 0);
  if (got !== expected || peerTotal !== expected) {
    b.notes.push(
      `fetch ${f.name}: ${expected} rows should match; the API found ${got}, the peer ${peerTotal}.`,
    );
  }

  const api = await httpThroughput({ url, method: 'POST', headers, body }, b.connections, b.seconds);
  const peer = await driverThroughput(() => b.peer.query(sql, params), b.connections, b.seconds);
  return {
    workload: `fetch ${f.name}: 100-row page of ${int(expected)} + totalRows, ${b.connections} clients`,
    api: rate(api, 'req'),
    peer: rate(peer, 'q'),
    ratio: api.perSecond / peer.perSecond,
    goal: f.indexed ? 0.35 : 0.5,
  };
}

/**
 * The fetch lines: every filter, or those whose name holds one of `only`; each `repeat` times in turn
 * (a repetition's line says which one it is).
 */
export async function fetchPages(
  b: Bench,
  onEach: (name: string) => void = () => {},
  { only = [], repeat = 1 }: { only?: readonly string[]; repeat?: number } = {},
): Promise<Line[]> {
  const lines: Line[] = [];
  const all = filters(b.rows);
  const chosen = all.filter((f) => only.length === 0 || only.some((o) => f.name.includes(o)));
  if (chosen.length === 0) {
    throw new Error(`no fetch line's name holds ${only.join(' or ')}: ${all.map((f) => f.name).join('; ')}`);
  }
  for (let k = 1; k <= repeat; k++) {
    for (const f of chosen) {
      const name = repeat > 1 ? `${f.name} (${k} of ${repeat})` : f.name;
      onEach(name);
      lines.push(await fetchFilter(b, { ...f, name }));
    }
  }
  return lines;
}

/** `/fetch/P/{id}` over 1,000 ids vs. the primary-key select of the same columns. */
export async function fetchById(b: Bench): Promise<Line> {
  const first = expectOk(
    'first id',
    await post(`${b.server.base}/fetch/P`, JSON.stringify({ startRow: 0, endRow: 1 }), auth(b)),
  );
  const firstId = Number((first.body.response?.data as { id: number }[])[0]!.id);
  const peerFirst = Number(
    (await b.peer.query<{ id: unknown }>(`SELECT min(id) AS id FROM ${PEER_TABLE}`)).rows[0]!.id,
  );
  const span = Math.min(1000, b.rows.length);
  let k = 0;
  const api = await httpThroughput(
    {
      url: `${b.server.base}/fetch/P/${firstId}`,
      method: 'POST',
      headers: auth(b),
      path: () => `${new URL(b.server.base).pathname}/fetch/P/${firstId + (k++ % span)}`,
    },
    b.connections,
    b.seconds,
  );
  const sql = `SELECT ${SELECT} FROM ${PEER_TABLE} t WHERE t.partition_id = $1 AND t.id = $2`;
  let j = 0;
  const peer = await driverThroughput(
    () => b.peer.query(sql, [PEER_PARTITION, peerFirst + (j++ % span)]),
    b.connections,
    b.seconds,
  );
  return {
    workload: `fetch one product by id, ${b.connections} clients`,
    api: rate(api, 'req'),
    peer: rate(peer, 'q'),
    ratio: api.perSecond / peer.perSecond,
  };
}

/** `/integrate/P` single-record upserts (half existing skus, half new) vs. the upsert SQL on the write peer. */
export async function integrate(b: Bench): Promise<Line> {
  const url = `${b.server.base}/integrate/P`;
  const headers = { 'content-type': 'application/json', ...auth(b) };
  const sanity = JSON.stringify([{ data: { sku: 'SANITY', label: 'sanity', attribute1: 'x' } }]);
  expectOk('/integrate/P', await post(url, sanity, auth(b)));
  const nextApi = upserts(b.rows.length);
  const api = await httpThroughput(
    { url, method: 'POST', headers, body: () => JSON.stringify([{ data: nextApi() }]) },
    b.connections,
    b.seconds,
  );

  const sql = `INSERT INTO ${PEER_LOAD_TABLE} AS t (partition_id, created_by, last_update_by, sku, label, attribute1)
    VALUES ($1, $2, $2, $3, $4, $5)
    ON CONFLICT (partition_id, sku) DO UPDATE SET label = EXCLUDED.label, attribute1 = EXCLUDED.attribute1,
      version = t.version + 1, last_update_at = now(), last_update_by = EXCLUDED.last_update_by
    WHERE t.partition_id = $1
    RETURNING ${SELECT}`;
  const nextPeer = upserts(b.rows.length);
  const peer = await driverThroughput(
    () => {
      const u = nextPeer();
      return b.peer.query(sql, [PEER_PARTITION, PEER_USER, u.sku, u.label, u.attribute1]);
    },
    b.connections,
    b.seconds,
  );
  return {
    workload: `integrate 1 record (existing/new sku), ${b.connections} clients`,
    api: rate(api, 'req'),
    peer: rate(peer, 'q'),
    ratio: api.perSecond / peer.perSecond,
    goal: 0.3,
  };
}

/** Records per `/integrate/P` call of the batch line, and calls. */
const BATCH = 1_000;
const BATCH_CALLS = 20;

/**
 * `/integrate/P` of 1,000 records a call (half update existing skus, half insert new ones), one call
 * after another as a script integrating in bulk would, vs. the cheapest SQL for the same: one
 * `INSERT … SELECT FROM unnest(…) ON CONFLICT DO UPDATE … RETURNING` per call on the write peer.
 */
export async function integrateBatch(b: Bench): Promise<Line> {
  const url = `${b.server.base}/integrate/P`;
  const calls = (next: () => { sku: string; label: string; attribute1: string }) =>
    Array.from({ length: BATCH_CALLS }, () => Array.from({ length: BATCH }, next));
  const apiCalls = calls(upserts(b.rows.length, 'BAT'));
  const t0 = performance.now();
  for (const records of apiCalls) {
    const body = JSON.stringify(records.map((data) => ({ data })));
    const r = expectOk('/integrate/P batch', await post(url, body, auth(b)));
    const answered = (r.body.response?.data as unknown[] | undefined)?.length;
    if (answered !== BATCH) throw new Error(`/integrate/P answered ${answered} of ${BATCH} records`);
  }
  const api = (performance.now() - t0) / 1000;

  const sql = `INSERT INTO ${PEER_LOAD_TABLE} AS t (partition_id, created_by, last_update_by, sku, label, attribute1)
    SELECT $1, $2, $2, u.sku, u.label, u.a1 FROM unnest($3::text[], $4::text[], $5::text[]) AS u(sku, label, a1)
    ON CONFLICT (partition_id, sku) DO UPDATE SET label = EXCLUDED.label, attribute1 = EXCLUDED.attribute1,
      version = t.version + 1, last_update_at = now(), last_update_by = EXCLUDED.last_update_by
    WHERE t.partition_id = $1
    RETURNING ${SELECT}`;
  const peerCalls = calls(upserts(b.rows.length, 'BAT'));
  const t1 = performance.now();
  for (const records of peerCalls) {
    const column = (k: 'sku' | 'label' | 'attribute1') => records.map((r) => r[k]);
    await b.peer.query(sql, [
      PEER_PARTITION,
      PEER_USER,
      column('sku'),
      column('label'),
      column('attribute1'),
    ]);
  }
  const peer = (performance.now() - t1) / 1000;
  const records = BATCH * BATCH_CALLS;
  return {
    workload: `integrate ${int(BATCH)} records a call (existing/new sku), ${BATCH_CALLS} calls one after another`,
    api: `${api.toFixed(2)} s (${int(records / api)} records/s)`,
    peer: `${peer.toFixed(2)} s (${int(records / peer)} records/s)`,
    ratio: peer / api,
  };
}

/**
 * `/update/P` of 1,000 records a call named by typedId (each sets label and attribute1), one call
 * after another as a script correcting records it fetched would, vs. the cheapest SQL for the same:
 * one `UPDATE … FROM unnest(…) … RETURNING` a call on the write peer, by the peer's ids.
 */
export async function updateBatch(b: Bench): Promise<Line> {
  const records = BATCH * BATCH_CALLS;
  // The typedIds of the first records (untimed), as the script holds them from an earlier fetch.
  const typedIds: string[] = [];
  while (typedIds.length < records) {
    const body = JSON.stringify({
      startRow: typedIds.length,
      endRow: Math.min(records, typedIds.length + 10_000),
      sortBy: 'id',
      valueFields: ['typedId'],
    });
    const r = expectOk('/fetch/P typedIds', await post(`${b.server.base}/fetch/P`, body, auth(b)));
    const page = (r.body.response?.data ?? []) as string[][];
    if (page.length === 0) throw new Error(`/fetch/P answered ${typedIds.length} of ${records} typedIds`);
    typedIds.push(...page.map((v) => v[0]!));
  }
  const url = `${b.server.base}/update/P`;
  const t0 = performance.now();
  for (let i = 0; i < records; i += BATCH) {
    const body = JSON.stringify(
      typedIds
        .slice(i, i + BATCH)
        .map((typedId, j) => ({ data: { typedId, label: `upd ${i + j}`, attribute1: 'u' } })),
    );
    const r = expectOk('/update/P batch', await post(url, body, auth(b)));
    const answered = (r.body.response?.data as unknown[] | undefined)?.length;
    if (answered !== BATCH) throw new Error(`/update/P answered ${answered} of ${BATCH} records`);
  }
  const api = (performance.now() - t0) / 1000;

  const ids = (
    await b.peer.query<{ id: string }>(`SELECT id FROM ${PEER_LOAD_TABLE} ORDER BY id LIMIT ${records}`)
  ).rows.map((r) => r.id);
  const sql = `UPDATE ${PEER_LOAD_TABLE} AS t SET label = u.label, attribute1 = u.a1, version = t.version + 1,
      last_update_at = now(), last_update_by = $2
    FROM unnest($3::bigint[], $4::text[], $5::text[]) AS u(id, label, a1)
    WHERE t.partition_id = $1 AND t.id = u.id
    RETURNING ${SELECT}`;
  const t1 = performance.now();
  for (let i = 0; i < records; i += BATCH) {
    const part = ids.slice(i, i + BATCH);
    const r = await b.peer.query(sql, [
      PEER_PARTITION,
      PEER_USER,
      part,
      part.map((_, j) => `upd ${i + j}`),
      part.map(() => 'u'),
    ]);
    if (r.rows.length !== part.length) throw new Error(`peer updated ${r.rows.length} of ${part.length}`);
  }
  const peer = (performance.now() - t1) / 1000;
  return {
    workload: `update ${int(BATCH)} records a call by typedId, ${BATCH_CALLS} calls one after another`,
    api: `${api.toFixed(2)} s (${int(records / api)} records/s)`,
    peer: `${peer.toFixed(2)} s (${int(records / peer)} records/s)`,
    ratio: peer / api,
  };
}

/** `GET /health` and a session-token `POST /login/extended`: the cost of the HTTP and auth layers. */
export async function foundation(b: Bench): Promise<Line[]> {
  const health = await httpThroughput(
    { url: `${b.server.url}/health`, method: 'GET', headers: {} },
    b.connections,
    b.seconds,
  );
  const login = await httpThroughput(
    { url: `${b.server.base}/login/extended`, method: 'POST', headers: auth(b) },
    b.connections,
    b.seconds,
  );
  return [
    { workload: `GET /health, ${b.connections} clients`, api: rate(health, 'req'), peer: '—' },
    {
      workload: `POST /login/extended (session JWT), ${b.connections} clients`,
      api: rate(login, 'req'),
      peer: '—',
    },
  ];
}
