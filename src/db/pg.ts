// PostgreSQL adapter: a `pg` pool. COPY goes through pg-copy-streams. Values are parsed exactly as
// the embedded adapter parses them (int8 → number, date → 'YYYY-MM-DD' text, numeric → text).

import pg from 'pg';
import { from as copyFromStream } from 'pg-copy-streams';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { pipeline } from 'node:stream/promises';
import { OID, parseInt8 } from './parse.ts';
import { isTransientConflict, type ChangeFeed, type Db, type QueryResult, type Tx } from './types.ts';
import { copyFormat, ident } from './sql.ts';
import { preparedName } from './prepared.ts';
import { checkDeadline, remainingMs } from './deadline.ts';

const typeParsers: Record<number, (s: string) => unknown> = {
  [OID.INT8]: parseInt8,
  [OID.DATE]: (s) => s,
  [OID.NUMERIC]: (s) => s,
};
const types = {
  getTypeParser: ((oid: number, format?: string): unknown =>
    typeParsers[oid] ??
    (pg.types.getTypeParser(oid, format as 'text') as unknown)) as typeof pg.types.getTypeParser,
};

type Client = pg.PoolClient | pg.Pool;

async function run<R>(c: Client, sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
  const name = preparedName(sql);
  const r = await c.query(
    name === undefined
      ? { text: sql, values: [...params], types }
      : { name, text: sql, values: [...params], types },
  );
  return { rows: r.rows as R[], rowCount: r.rowCount ?? r.rows.length };
}

const READ_ONLY = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';

/**
 * Opens a transaction with `head` (BEGIN …), then `then` if given, in one simple-protocol script:
 * one round trip. Within a request, no statement may run past its synchronous deadline (57014 → 503).
 */
async function begin(client: pg.PoolClient, head: string, then?: string): Promise<unknown> {
  const left = remainingMs();
  if (left !== undefined) checkDeadline();
  const timeout = left === undefined ? [] : [`SET LOCAL statement_timeout = ${Math.max(1, Math.ceil(left))}`];
  return client.query([head, ...(then === undefined ? [] : [then]), ...timeout].join('; '));
}

async function commit(clients: readonly pg.PoolClient[]): Promise<void> {
  checkDeadline();
  await Promise.all(clients.map((c) => c.query('COMMIT')));
  for (const c of clients) c.release();
}

/** Rolls back and releases; a client whose ROLLBACK fails has a broken connection and is destroyed. */
async function rollBack(clients: readonly pg.PoolClient[]): Promise<void> {
  await Promise.all(
    clients.map(async (c) => {
      const broken = await c.query('ROLLBACK').then(
        () => undefined,
        (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
      );
      c.release(broken);
    }),
  );
}

function txOf(client: pg.PoolClient): Tx {
  return {
    // Past the request's deadline no further statement starts (statement_timeout, set at BEGIN,
    // cuts one statement; a transaction of many short ones ran on to 4× the limit before its COMMIT).
    query: async (sql, params) => {
      checkDeadline();
      return run(client, sql, params);
    },
    async execScript(sql) {
      await client.query(sql);
    },
    async copyFrom(table, columns, data, format = 'csv') {
      const cols = columns.map(ident).join(', ');
      const stream = client.query(
        copyFromStream(`COPY ${ident(table)} (${cols}) FROM STDIN WITH (FORMAT ${copyFormat(format)})`),
      );
      // Pieces of an iterable are made while the server parses the earlier ones.
      await pipeline(Readable.from(typeof data === 'string' ? [data] : data), stream);
      return stream.rowCount ?? 0;
    },
  };
}

/**
 * `statementTimeoutSeconds`: no statement runs longer (the synchronous time-out); inside a request's
 * transaction the cut comes sooner, at the request's own deadline (SET LOCAL below).
 */
export function createPgDb(url: string, max: number, statementTimeoutSeconds?: number): Db {
  const feed = listenForAuthChanges(url);
  const pool = new pg.Pool({
    connectionString: url,
    max,
    application_name: 'ratecard',
    // An idle connection is kept 5 minutes (pg-pool closes it after 10 s by default): a backend's
    // first statements read the catalogs and plan anew, ~57 ms more than later for a 2,500-tuple
    // part of a condition-record look-up (PostgreSQL 15), so after every pause of over 10 s the
    // first requests paid it again (a 10,000-tuple look-up 240–340 ms instead of ~100, measured).
    idleTimeoutMillis: 300_000,
    // No parallel query plans, for throughput: with 32 concurrent requests on 2 cores, workers only
    // compete with the other requests (measured: the bench's scan fetch 19 req/s without, 15–17 with
    // them). Not for correctness any more: the safe casts are PARALLEL UNSAFE (migration 035), so a
    // session that turns parallel plans on gets them wherever they are safe. Index builds may use
    // parallel workers (the cast-expression indexes build serially, their functions being unsafe).
    // No JIT compilation either: the engine's statements carry long expression lists (a 30-field
    // update with its record history, a spliced condition-record load), and once a chunk's estimated
    // cost passes jit_above_cost PostgreSQL spent 0.2–1.1 s compiling them (auto_explain, a 10,000-row
    // chunk) for statements that run in less.
    options: '-c max_parallel_workers_per_gather=0 -c jit=off',
    // Every pooled connection listens before its first use (see listenForAuthChanges). pg-pool awaits
    // the promise (its types say void).
    // eslint-disable-next-line @typescript-eslint/no-misused-promises
    onConnect: (client) => feed.attach(client),
    ...(statementTimeoutSeconds === undefined ? {} : { statement_timeout: statementTimeoutSeconds * 1000 }),
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  return {
    kind: 'postgres',
    authChanges: feed,
    query: (sql, params) => run(pool, sql, params),
    async transaction(fn, opts) {
      for (let attempt = 1; ; attempt++) {
        const client = await pool.connect();
        try {
          await begin(client, opts?.readOnly ? READ_ONLY : 'BEGIN');
          const result = await fn(txOf(client));
          await commit([client]);
          return result;
        } catch (e) {
          await rollBack([client]);
          if (!opts?.retryDeadlocks || attempt >= DEADLOCK_ATTEMPTS || !isTransientConflict(e)) throw e;
          // A random pause before the next run: run again at once, the victim met the winner (or a
          // third writer) still holding its locks and deadlocked again (seen with three at once).
          await sleep(attempt * (10 + Math.random() * 40));
        }
      }
    },
    async parallelReads(n, fn) {
      const clients = [await pool.connect()];
      try {
        // The snapshot to share: exported with BEGIN in one round trip (the script's second result).
        const results = (await begin(clients[0]!, READ_ONLY, 'SELECT pg_export_snapshot() AS s')) as {
          rows: { s: string }[];
        }[];
        // More connections only while one is idle or the pool may open one, and nobody waits.
        const free = () => pool.waitingCount === 0 && (pool.idleCount > 0 || pool.totalCount < max);
        while (clients.length < n && free()) {
          clients.push(await pool.connect());
        }
        const snapshot = `SET TRANSACTION SNAPSHOT '${results[1]!.rows[0]!.s}'`;
        await Promise.all(clients.slice(1).map((c) => begin(c, READ_ONLY, snapshot)));
        const result = await fn(clients.map(txOf));
        await commit(clients);
        return result;
      } catch (e) {
        await rollBack(clients);
        throw e;
      }
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: async () => {
      feed.close();
      await pool.end();
    },
  };
}

/** Runs of a transaction with `retryDeadlocks` (the first and four more). */
const DEADLOCK_ATTEMPTS = 5;

const AUTH_CHANNEL = 'rc_auth';
const RELISTEN_MS = 1000;

/**
 * The `rc_auth` change feed. Every pooled connection listens, so the connection that commits a
 * change gets its notification with the COMMIT's answer (before the caller goes on); a dedicated
 * connection, which the pool never closes for idleness, catches other processes' changes. While
 * that connection is down the feed is not live, and it reconnects every second.
 */
function listenForAuthChanges(
  url: string,
): ChangeFeed & { attach(client: pg.ClientBase): Promise<void>; close(): void } {
  let generation = 0;
  let live = false;
  let closed = false;
  let listener: pg.Client | undefined;
  const bump = () => {
    generation++;
  };
  const connect = () => {
    if (closed) return;
    const c = new pg.Client({ connectionString: url, application_name: 'ratecard-listener' });
    listener = c;
    const lost = () => {
      if (listener !== c) return;
      listener = undefined;
      live = false;
      bump();
      c.end().catch(() => {});
      if (!closed) setTimeout(connect, RELISTEN_MS).unref();
    };
    c.on('error', lost);
    c.on('end', lost);
    c.on('notification', bump);
    c.connect()
      .then(() => c.query(`LISTEN ${AUTH_CHANNEL}`))
      .then(() => {
        if (listener !== c) return;
        bump(); // whatever was cached before the listener was up is not to be trusted
        live = true;
      })
      .catch(lost);
  };
  connect();
  return {
    get generation() {
      return generation;
    },
    get live() {
      return live && !closed;
    },
    async attach(client) {
      client.on('notification', bump);
      await client.query(`LISTEN ${AUTH_CHANNEL}`);
    },
    close() {
      closed = true;
      live = false;
      const c = listener;
      listener = undefined;
      c?.end().catch(() => {});
    },
  };
}
