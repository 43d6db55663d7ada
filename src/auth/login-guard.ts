// Login lock-out: failed logins are logged per partition and login name; after LOGIN_MAX_FAILURES
// within LOGIN_LOCKOUT_MINUTES further attempts are refused (-6) without checking the password.
// Unknown login names are counted too, so the answer never reveals whether a user exists.
//
// Concurrency: a password is checked only while the failures already logged plus the attempts being
// checked stay below the limit (a gate per login name in this process). A burst of parallel wrong
// passwords therefore gets at most LOGIN_MAX_FAILURES checks and the rest -6, and a right password
// in the burst gets in only while the limit is not reached. Parallel right passwords are never
// refused for being many: past the budget they wait for a slot. (Counting every attempt before its
// check, success or not, refused the 11th of 11 parallel Basic requests of one user: tried, dropped.)

import type { Db, Queryable } from '../db/db.ts';

export interface GuardLimits {
  readonly loginMaxFailures: number;
  readonly loginLockoutMinutes: number;
}

const keyOf = (login: string): string => login.toLowerCase();

/** The attempts of one login name being checked now, and who waits for one of them to end. */
interface Gate {
  checking: number;
  /** Bumped whenever an attempt ends: a failure count read before it may be stale. */
  ended: number;
  waiters: (() => void)[];
}
const gates = new Map<string, Gate>();

/** A login attempt: refused at once (`locked`), or being checked until `done` reports its outcome. */
export type Attempt =
  | { readonly locked: true }
  | {
      readonly locked: false;
      /**
       * The outcome: `failure` logs a failed login; `success` forgets the logged ones; `pending`
       * (a password right but a second step to come, e.g. OAuth's TFA page) logs one too, which the
       * second step's success forgets.
       */
      done(outcome: 'success' | 'failure' | 'pending'): Promise<void>;
    };

async function recentFailures(db: Db, partitionId: number, key: string, lim: GuardLimits): Promise<number> {
  const r = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM login_failures
      WHERE partition_id = $1 AND login_key = $2 AND failed_at > now() - make_interval(mins => $3)`,
    [partitionId, key, lim.loginLockoutMinutes],
  );
  return r.rows[0]?.n ?? 0;
}

/** Takes one attempt of `login`: `locked` when the logged failures reach the limit. */
export async function takeAttempt(
  db: Db,
  partitionId: number,
  login: string,
  lim: GuardLimits,
): Promise<Attempt> {
  const key = keyOf(login);
  const id = `${partitionId}\u0000${key}`;
  let gate = gates.get(id);
  if (gate === undefined) gates.set(id, (gate = { checking: 0, ended: 0, waiters: [] }));
  const g = gate;
  let failures: number;
  for (;;) {
    const seen = g.ended;
    failures = await recentFailures(db, partitionId, key, lim);
    // An attempt ended while counting: its failure may be neither in the count nor in `checking`.
    if (g.ended !== seen) continue;
    if (failures >= lim.loginMaxFailures) {
      if (g.checking === 0 && g.waiters.length === 0) gates.delete(id);
      return { locked: true };
    }
    if (failures + g.checking < lim.loginMaxFailures) break;
    await new Promise<void>((resolve) => g.waiters.push(resolve));
  }
  g.checking++;
  let finished = false;
  return {
    locked: false,
    async done(outcome) {
      if (finished) return;
      finished = true;
      try {
        if (outcome !== 'success') await recordFailure(db, partitionId, key, lim);
        else if (failures > 0) await clearFailures(db, partitionId, login);
      } finally {
        g.checking--;
        g.ended++;
        const waiting = g.waiters.splice(0);
        for (const wake of waiting) wake();
        if (g.checking === 0 && g.waiters.length === 0 && waiting.length === 0) gates.delete(id);
      }
    },
  };
}

async function recordFailure(db: Db, partitionId: number, key: string, lim: GuardLimits): Promise<void> {
  await db.transaction(async (tx) => {
    // Forget failures older than the window so the log stays small.
    await tx.query(
      `DELETE FROM login_failures
        WHERE partition_id = $1 AND login_key = $2 AND failed_at <= now() - make_interval(mins => $3)`,
      [partitionId, key, lim.loginLockoutMinutes],
    );
    // clock_timestamp(): the rows of one window compare by when they happened, not by when a
    // transaction began.
    await tx.query(
      'INSERT INTO login_failures (partition_id, login_key, failed_at) VALUES ($1, $2, clock_timestamp())',
      [partitionId, key],
    );
  });
}

/**
 * A successful login, or a password set by an administrator: the failures logged for the login name
 * are forgotten (its lock-out ends).
 */
export async function clearFailures(q: Queryable, partitionId: number, login: string): Promise<void> {
  await q.query('DELETE FROM login_failures WHERE partition_id = $1 AND login_key = $2', [
    partitionId,
    keyOf(login),
  ]);
}
