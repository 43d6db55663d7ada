// The `Db` interface both adapters implement (./pg.ts, ./pglite.ts); ./db.ts re-exports it.

export interface QueryResult<R> {
  readonly rows: R[];
  readonly rowCount: number;
}

export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
}

/** A connection inside a transaction. */
export interface Tx extends Queryable {
  /** Runs a script of several statements without parameters (migrations). */
  execScript(sql: string): Promise<void>;
  /**
   * Bulk-loads one chunk of CSV text (no header, `FORMAT csv`, NULL as an unquoted empty field) —
   * or, with `format: 'text'`, of COPY's text format (tab-separated, `\N` for NULL, backslash
   * escapes) — into `table(columns)` with COPY. Names come from the registry; the caller checks them.
   */
  copyFrom(
    table: string,
    columns: readonly string[],
    data: string | Iterable<string>,
    format?: CopyFormat,
  ): Promise<number>;
}

/** COPY's input formats the adapters take. */
export type CopyFormat = 'csv' | 'text';

export interface PoolStats {
  readonly total: number;
  readonly idle: number;
  readonly waiting: number;
}

/**
 * Committed changes of what authentication reads (migration 022 notifies the channel `rc_auth`).
 * A cache may keep what it read at `generation` for as long as the generation stays the same and the
 * feed is `live`.
 */
export interface ChangeFeed {
  /** Grows with every change seen: the committing connection's own before its COMMIT returns,
   * other processes' within milliseconds. */
  readonly generation: number;
  /** False while no listener is connected (changes could be missed): trust no cache then. */
  readonly live: boolean;
}

/**
 * PostgreSQL broke a deadlock by failing this transaction (40P01), or found a serialization failure
 * (40001: a history that read a stale snapshot, migration 064): a conflict with another transaction
 * that the same work, run again, does not meet — never the request's fault.
 */
export function isTransientConflict(e: unknown): boolean {
  const code = typeof e === 'object' && e !== null ? String((e as { code?: unknown }).code) : '';
  return code === '40P01' || code === '40001';
}

export interface TxOptions {
  /**
   * Reads only, all on one snapshot (PostgreSQL: REPEATABLE READ READ ONLY; PGlite runs one
   * transaction at a time, so every transaction there reads one snapshot).
   */
  readonly readOnly?: boolean;
  /**
   * `fn` may run again, from the start in a new transaction, when PostgreSQL rolled it back to
   * break a deadlock with another one (40P01): for work that only the transaction holds (no state
   * outside it that a first run would leave behind). A batch of writes whose records another batch
   * locks in the other order then waits for it instead of failing. PGlite runs one transaction at a
   * time and never deadlocks; a transaction view (views.ts) leaves it to the outer transaction.
   */
  readonly retryDeadlocks?: boolean;
}

export interface Db extends Queryable {
  readonly kind: 'embedded' | 'postgres';
  /** Changes of authentication data (PostgreSQL: from every process; PGlite: this process's own). */
  readonly authChanges?: ChangeFeed;
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Tx) => Promise<T>, opts?: TxOptions): Promise<T>;
  /**
   * Where the database can run one request's reads in parallel (PostgreSQL's pool): runs `fn` with
   * up to `n` read-only transactions on one snapshot, each on its own connection — the first
   * exports its snapshot, the others take it — so that their statements run at once and read what
   * one statement would. Takes one connection as `transaction` does, and more only while the pool
   * has one idle or room to open one and no one waits for it: `fn` may get fewer readers than `n`,
   * always at least one.
   */
  readonly parallelReads?: <T>(n: number, fn: (readers: readonly Queryable[]) => Promise<T>) => Promise<T>;
  poolStats(): PoolStats;
  close(): Promise<void>;
}
