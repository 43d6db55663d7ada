// Login lock-out: failed logins are logged per partition and login name; after LOGIN_MAX_FAILURES
// within LOGIN_LOCKOUT_MINUTES further attempts are refused (-6) without checking the password.
// Unknown login names are counted too, so the answer never reveals whether a user exists.
//
// Concurrency: an attempt is counted *before* its password is checked. `takeAttempt` checks the
// count and records the attempt as a failure in one transaction under an advisory lock of the login
// name, so of any number of parallel attempts at most LOGIN_MAX_FAILURES get to verify a password;
// the others are refused. The (slow) scrypt check runs outside that critical section. A success
// clears the failures (its own provisional one with them); a failure leaves its row in place.

import type { Db } from '../db/db.ts';

export interface GuardLimits {
  readonly loginMaxFailures: number;
  readonly loginLockoutMinutes: number;
}

const keyOf = (login: string): string => login.toLowerCase();

/**
 * Takes one login attempt of `login`: `locked` when the recent failures already reach the limit
 * (nothing is recorded then); otherwise the attempt is recorded as a failure until
 * `clearFailures` is called on success.
 */
export async function takeAttempt(
  db: Db,
  partitionId: number,
  login: string,
  lim: GuardLimits,
): Promise<{ locked: boolean }> {
  const key = keyOf(login);
  return db.transaction(async (tx) => {
    await tx.query(
      `SELECT pg_advisory_xact_lock(hashtextextended('rc_login:' || $1::text || ':' || $2, 0))`,
      [partitionId, key],
    );
    // Forget failures older than the window so the log stays small.
    await tx.query(
      `DELETE FROM login_failures
        WHERE partition_id = $1 AND login_key = $2 AND failed_at <= now() - make_interval(mins => $3)`,
      [partitionId, key, lim.loginLockoutMinutes],
    );
    const r = await tx.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM login_failures WHERE partition_id = $1 AND login_key = $2`,
      [partitionId, key],
    );
    if ((r.rows[0]?.n ?? 0) >= lim.loginMaxFailures) return { locked: true };
    // clock_timestamp(): the rows of one window compare by when they happened, not by when a
    // transaction began.
    await tx.query(
      'INSERT INTO login_failures (partition_id, login_key, failed_at) VALUES ($1, $2, clock_timestamp())',
      [partitionId, key],
    );
    return { locked: false };
  });
}

/** A successful login: its attempt and the earlier failures of the login name are forgotten. */
export async function clearFailures(db: Db, partitionId: number, login: string): Promise<void> {
  await db.query('DELETE FROM login_failures WHERE partition_id = $1 AND login_key = $2', [
    partitionId,
    keyOf(login),
  ]);
}
