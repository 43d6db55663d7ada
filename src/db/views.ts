// A database seen from inside an open transaction: engine functions that open their own
// transaction on a `Db` join `tx` instead, so a request's whole work commits or rolls back as one.

import type { Db, Tx } from './types.ts';

/**
 * `db` as seen from inside `tx` while it runs; the database itself once `ended()` (for work an
 * engine function defers, such as the background ANALYZE after bulk writes — never a finished
 * transaction).
 */
export function inTransaction(db: Db, tx: Tx, ended: () => boolean = () => false): Db {
  return {
    kind: db.kind,
    query: (sql, params) => (ended() ? db.query(sql, params) : tx.query(sql, params)),
    transaction: (fn) => (ended() ? db.transaction(fn) : fn(tx)),
    poolStats: () => db.poolStats(),
    close: () => Promise.reject(new Error('a transaction view of the database cannot be closed')),
  };
}
