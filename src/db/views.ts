// A database seen from inside an open transaction: engine functions that open their own
// transaction on a `Db` join `tx` instead, so a request's whole work commits or rolls back as one.

import type { Db, Tx } from './types.ts';

/**
 * `db` as seen from inside `tx` while it runs; the database itself once `ended()` (for work an
 * engine function defers, such as the background ANALYZE after bulk writes — never a finished
 * transaction).
 */
export function inTransaction(db: Db, tx: Tx, ended: () => boolean = () => false): Db {
  const view: Db = {
    kind: db.kind,
    query: (sql, params) => (ended() ? db.query(sql, params) : tx.query(sql, params)),
    transaction: (fn) => (ended() ? db.transaction(fn) : fn(tx)),
    poolStats: () => db.poolStats(),
    close: () => Promise.reject(new Error('a transaction view of the database cannot be closed')),
  };
  views.set(view, ended);
  return view;
}

const views = new WeakMap<Db, () => boolean>();

/**
 * Whether a statement run on `db` runs inside an open transaction (a view of `inTransaction` whose
 * transaction goes on): a statement that fails there aborts the transaction, so the caller cannot
 * try something else on it — the error has to end it (and a serialization failure retries it whole).
 */
export function runsInTransaction(db: Db): boolean {
  const ended = views.get(db);
  return ended !== undefined && !ended();
}
