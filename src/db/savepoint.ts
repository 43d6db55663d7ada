// A part of a transaction that can be undone alone (SAVEPOINT): a batch tried at once before one by
// one, a row of a load that may fail, an apply whose failure is recorded, a trial run.

import type { Queryable } from './types.ts';

const NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * Runs `fn` behind savepoint `name` of the transaction `tx`. When `fn` resolves, its writes are kept
 * (the savepoint released), or with `keep` false undone (a trial run). When it throws, they are undone
 * — the transaction goes on as before the savepoint — and the error is thrown again.
 */
export async function inSavepoint<T>(
  tx: Queryable,
  name: string,
  fn: () => Promise<T>,
  keep = true,
): Promise<T> {
  if (!NAME.test(name)) throw new Error(`savepoint: bad name ${name}`);
  await tx.query(`SAVEPOINT ${name}`);
  let value: T;
  try {
    value = await fn();
  } catch (e) {
    await tx.query(`ROLLBACK TO SAVEPOINT ${name}`);
    throw e;
  }
  await tx.query(keep ? `RELEASE SAVEPOINT ${name}` : `ROLLBACK TO SAVEPOINT ${name}`);
  return value;
}
