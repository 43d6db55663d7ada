// Login lock-out: failed logins are logged per partition and login name; after LOGIN_MAX_FAILURES
// within LOGIN_LOCKOUT_MINUTES further attempts are refused (-6) without checking the password.
// Unknown login names are counted too, so the answer never reveals whether a user exists.

import type { Db } from '../db/db.ts';

export interface GuardLimits {
  readonly loginMaxFailures: number;
  readonly loginLockoutMinutes: number;
}

const keyOf = (login: string): string => login.toLowerCase();

/** The recent failures of a login name, and whether they lock it out. */
export async function isLockedOut(
  db: Db,
  partitionId: number,
  login: string,
  lim: GuardLimits,
): Promise<{ count: number; locked: boolean }> {
  const r = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM login_failures
      WHERE partition_id = $1 AND login_key = $2 AND failed_at > now() - make_interval(mins => $3)`,
    [partitionId, keyOf(login), lim.loginLockoutMinutes],
  );
  const count = r.rows[0]?.n ?? 0;
  return { count, locked: count >= lim.loginMaxFailures };
}

export async function recordFailure(
  db: Db,
  partitionId: number,
  login: string,
  lim: GuardLimits,
): Promise<void> {
  await db.transaction(async (tx) => {
    // Forget failures older than the window so the log stays small.
    await tx.query(
      `DELETE FROM login_failures
        WHERE partition_id = $1 AND login_key = $2 AND failed_at <= now() - make_interval(mins => $3)`,
      [partitionId, keyOf(login), lim.loginLockoutMinutes],
    );
    await tx.query('INSERT INTO login_failures (partition_id, login_key) VALUES ($1, $2)', [
      partitionId,
      keyOf(login),
    ]);
  });
}

export async function clearFailures(db: Db, partitionId: number, login: string): Promise<void> {
  await db.query('DELETE FROM login_failures WHERE partition_id = $1 AND login_key = $2', [
    partitionId,
    keyOf(login),
  ]);
}
