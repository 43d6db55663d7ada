// Two-factor authentication: per-user TOTP (RFC 6238, otplib). Enrolment stores a pending secret,
// confirmation with a valid code switches TFA on, disabling needs a valid code too. A code is
// accepted once: the time step of the last accepted code is kept, and older or equal steps fail.

import { generateSecret, generateURI, verify } from 'otplib';
import type { Queryable } from '../db/db.ts';

export interface TfaState {
  readonly secret: string | null;
  readonly enabled: boolean;
  readonly lastStep: number | null;
}

/** Checks a code and records its time step; false for a wrong, stale or replayed code. */
export async function acceptCode(
  q: Queryable,
  partitionId: number,
  userId: number,
  state: TfaState,
  code: string | undefined,
): Promise<boolean> {
  if (state.secret === null || code === undefined || !/^\d{6}$/.test(code.trim())) return false;
  const result = await verify({
    secret: state.secret,
    token: code.trim(),
    epochTolerance: 30,
    ...(state.lastStep !== null ? { afterTimeStep: state.lastStep } : {}),
  });
  if (!result.valid || !('timeStep' in result)) return false;
  // The conditional update makes two concurrent uses of one code accept only one.
  const r = await q.query(
    `UPDATE users SET tfa_last_step = $3
      WHERE partition_id = $1 AND id = $2 AND (tfa_last_step IS NULL OR tfa_last_step < $3)`,
    [partitionId, userId, result.timeStep],
  );
  return r.rowCount === 1;
}

export async function loadTfa(q: Queryable, partitionId: number, userId: number): Promise<TfaState> {
  const r = await q.query<{ secret: string | null; enabled: boolean; step: number | null }>(
    'SELECT tfa_secret AS secret, tfa_enabled AS enabled, tfa_last_step AS step FROM users WHERE partition_id = $1 AND id = $2',
    [partitionId, userId],
  );
  const row = r.rows[0]!;
  return { secret: row.secret, enabled: row.enabled, lastStep: row.step };
}

/** A new pending secret (TFA stays off until confirmed) and its otpauth:// URI for authenticator apps. */
export async function enroll(
  q: Queryable,
  partitionId: number,
  userId: number,
  issuer: string,
  label: string,
): Promise<{ secret: string; uri: string }> {
  const secret = generateSecret();
  await q.query(
    'UPDATE users SET tfa_secret = $3, tfa_enabled = false, tfa_last_step = NULL WHERE partition_id = $1 AND id = $2',
    [partitionId, userId, secret],
  );
  return { secret, uri: generateURI({ issuer, label, secret }) };
}

export async function setEnabled(
  q: Queryable,
  partitionId: number,
  userId: number,
  enabled: boolean,
): Promise<void> {
  await q.query(
    `UPDATE users SET tfa_enabled = $3, tfa_secret = CASE WHEN $3 THEN tfa_secret END,
            tfa_last_step = CASE WHEN $3 THEN tfa_last_step END
      WHERE partition_id = $1 AND id = $2`,
    [partitionId, userId, enabled],
  );
}
