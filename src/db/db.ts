// The one door to the database: a small `Db` interface with two adapters (embedded PGlite and
// PostgreSQL through `pg`). Both speak the same SQL, parse values the same way, and run the same
// migrations; nothing above this layer knows which one it has. The interface lives in ./types.ts and
// the shared value parsing in ./parse.ts, which the adapters import: no import cycle through here.

import type { Config } from '../config.ts';

export type { ChangeFeed, Db, PoolStats, Queryable, QueryResult, Tx, TxOptions } from './types.ts';
export { isTransientConflict } from './types.ts';
export { OID, parseInt8 } from './parse.ts';
import type { Db, Tx } from './types.ts';

export async function createDb(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'dbPoolSize'> &
    Partial<Pick<Config, 'syncTimeoutSeconds'>>,
): Promise<Db> {
  if (config.databaseUrl !== undefined) {
    const { createPgDb } = await import('./pg.ts');
    return createPgDb(config.databaseUrl, config.dbPoolSize, config.syncTimeoutSeconds);
  }
  const { createEmbeddedDb } = await import('./pglite.ts');
  return createEmbeddedDb(config.dataDir);
}

/**
 * `db.transaction(fn)` for a request's batch of writes: run again after PostgreSQL broke a deadlock
 * with another transaction by rolling this one back (TxOptions.retryDeadlocks), so two batches that
 * lock the same records in other orders both succeed, one after the other.
 */
export function batchTransaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction(fn, { retryDeadlocks: true });
}
