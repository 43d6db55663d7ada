// Embedded adapter: PGlite (PostgreSQL in wasm) in-process, a "pool of one". PGlite serialises
// queries and transactions itself; a transaction must never wait on a second query outside it.
// Data lives in `<dataDir>/pgdata`; `:memory:` keeps everything in memory (tests).

import { PGlite } from '@electric-sql/pglite';
import { btree_gist } from '@electric-sql/pglite/contrib/btree_gist';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { join } from 'node:path';
import { acquireDirLock } from './lock.ts';
import parseDate from 'postgres-date';
import { OID, parseInt8 } from './parse.ts';
import type { ChangeFeed, CopyFormat, Db, QueryResult, Tx } from './types.ts';
import { copyFormat, ident } from './sql.ts';
import { checkDeadline } from './deadline.ts';

// Timestamps through the parser node-postgres uses (pg.ts), so both adapters answer the same Date:
// PGlite's own (`new Date(text)`) read years 1–99 as 1901–1999 (`0050-06-15 10:00:00+00` → 1950).
const parsers = {
  [OID.INT8]: parseInt8,
  [OID.DATE]: (s: string) => s,
  [OID.NUMERIC]: (s: string) => s,
  [OID.TIMESTAMP]: parseDate,
  [OID.TIMESTAMPTZ]: parseDate,
};

interface PgliteQueryable {
  query<R>(
    sql: string,
    params?: unknown[],
    opts?: { blob?: Blob },
  ): Promise<{ rows: R[]; affectedRows?: number }>;
  exec(sql: string): Promise<unknown>;
}

/** When the last event loop turn was given (turns, pauseIfLong): shared by every database of the process. */
let turnGiven = performance.now();

/**
 * An event loop turn once statements ran back to back for TURN_MS: a transaction's statements
 * follow each other as promise continuations, which never let the server read what arrives (a
 * 20,000-record /integrate held the process, /health too, for 100 s).
 */
function pauseIfLong(): Promise<void> | undefined {
  if (performance.now() - turnGiven < TURN_MS) return undefined;
  return new Promise<void>((r) =>
    setImmediate(() => {
      turnGiven = performance.now();
      r();
    }),
  );
}

function wrap(q: PgliteQueryable, inTransaction = false): Tx {
  return {
    async query<R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
      if (inTransaction) {
        await pauseIfLong();
        // Past the request's deadline no further statement of its transaction starts (it would only
        // be rolled back at COMMIT).
        checkDeadline();
      }
      const r = await q.query<R>(sql, [...params]);
      return { rows: r.rows, rowCount: r.affectedRows || r.rows.length };
    },
    async execScript(sql: string): Promise<void> {
      await q.exec(sql);
    },
    async copyFrom(
      table: string,
      columns: readonly string[],
      data: string | Iterable<string>,
      format: CopyFormat = 'csv',
    ): Promise<number> {
      const cols = columns.map(ident).join(', ');
      const sql = `COPY ${ident(table)} (${cols}) FROM '/dev/blob' WITH (FORMAT ${copyFormat(format)})`;
      const r = await q.query(sql, [], {
        blob: new Blob(typeof data === 'string' ? [data] : [...data]),
      });
      return r.affectedRows ?? 0;
    },
  };
}

/** How long statements may run back to back before the server gets a turn to read what has arrived. */
export const TURN_MS = 10;

/**
 * Statements and transactions one at a time, in the order they were asked for; once they have run
 * back to back for TURN_MS, the next one waits for an event loop turn of its own. PGlite runs a
 * statement synchronously on this thread and serialises the rest; left to itself it ran a queue of
 * waiting statements back to back in one turn, during which the server neither accepted connections
 * nor read requests. Under 32 clients doing 17 ms scans (the bench's scan line), a new connection's
 * first request waited up to 10 s while the connections already read were served again and again:
 * p99 7 s against a p50 of 0.4 s. With a turn between them, what has arrived is read and queued here
 * in order: p99 1.2 s, p50 0.6 s (32 clients ÷ 48 req/s), the rate unchanged.
 */
export function turns(): <T>(fn: () => Promise<T>) => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = last.then(pauseIfLong).then(fn);
    last = run.catch(() => {});
    return run;
  };
}

export interface EmbeddedDb extends Db {
  /** The data directory as a tarball, after a checkpoint (an `image` for `createEmbeddedDb`). */
  dumpImage(): Promise<Blob>;
}

/**
 * `image`: for `:memory:`, a data directory to start from (a tarball of `dumpImage`) instead of an
 * empty cluster; PGlite's initdb costs seconds, loading an image a few hundred milliseconds.
 */
export async function createEmbeddedDb(dataDir: string, image?: Blob): Promise<EmbeddedDb> {
  const inMemory = dataDir === ':memory:';
  const release = inMemory ? () => {} : acquireDirLock(dataDir);
  let pg: PGlite;
  // Changes of authentication data (the `rc_auth` notifications of migration 022). This process is
  // the only one that opens the data directory (its lock), so every change is made here; PGlite
  // calls the listener as it reads the COMMIT's answer, before the committing call returns, and
  // never for a rolled-back transaction.
  let generation = 0;
  try {
    pg = await PGlite.create(inMemory ? undefined : join(dataDir, 'pgdata'), {
      parsers,
      // Trigram indexes for contains-style filters (migration 012) and btree_gist for the exclusion
      // constraint of condition records (migration 014), as on PostgreSQL.
      extensions: { pg_trgm, btree_gist },
      ...(inMemory && image ? { loadDataDir: image } : {}),
    });
    await pg.listen('rc_auth', () => {
      generation++;
    });
  } catch (e) {
    release();
    throw e;
  }
  const root = wrap(pg);
  const inTurn = turns();
  let closed = false;
  const authChanges: ChangeFeed = {
    get generation() {
      return generation;
    },
    get live() {
      return !closed;
    },
  };
  return {
    kind: 'embedded',
    authChanges,
    query: (sql, params) => inTurn(() => root.query(sql, params)),
    // PGlite cannot interrupt a running statement (one wasm thread); past the request's deadline
    // the transaction is refused at COMMIT time instead, so nothing half-done is kept.
    transaction: (fn) =>
      inTurn(() =>
        pg.transaction(async (tx) => {
          checkDeadline();
          const result = await fn(wrap(tx, true));
          checkDeadline();
          return result;
        }),
      ),
    poolStats: () => ({ total: 1, idle: 1, waiting: 0 }),
    dumpImage: () =>
      inTurn(async () => {
        await pg.query('CHECKPOINT');
        return pg.dumpDataDir('none');
      }),
    async close() {
      if (closed) return;
      closed = true;
      try {
        if (!inMemory) await pg.query('CHECKPOINT');
        await pg.close();
      } finally {
        release();
      }
    },
  };
}
