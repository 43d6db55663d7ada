// Tokens a user asks for: api tokens (`getjsonwebtoken`, recorded so they can be listed and
// revoked; optionally restricted to a permission list and/or expiring) and one-time tokens (random,
// stored as a hash, short-lived, consumed atomically by the one request that presents them). A
// one-time token carries what asked for it: the user's token epoch, the api_tokens row of an api
// token / OAuth grant / v2 pair, and a lifetime within the asking token's own.

import { createHash, randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../db/db.ts';

const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex');

/** The credential a one-time token is asked with, which it must not outlive. */
export interface OneTimeIssuer {
  /** The user's token epoch the asking credential is valid for. */
  readonly epoch: number;
  /** The api_tokens row of the asking api token, OAuth grant or v2 pair. */
  readonly apiTokenId: number | null;
  /** When the asking token expires (seconds since the epoch), if it does. */
  readonly expiresAt: number | null;
}

export async function issueOneTimeToken(
  q: Queryable,
  partitionId: number,
  userId: number,
  ttlSeconds: number,
  restriction: readonly string[] | null,
  issuer: OneTimeIssuer,
): Promise<{ token: string; expires: Date }> {
  const token = randomBytes(24).toString('base64url');
  const r = await q.query<{ expires: Date }>(
    `INSERT INTO one_time_tokens (partition_id, token_hash, user_id, expires_at, permissions, token_epoch, api_token_id)
     VALUES ($1, $2, $3,
             -- No later than the credential that asks: its JWT's expiry (whole seconds) and, for an
             -- api token, its row's expiry (the one answered when it was issued, up to a second earlier).
             least(now() + make_interval(secs => $4), coalesce(to_timestamp($8::float8), 'infinity'),
                   coalesce((SELECT a.expires_at FROM api_tokens a WHERE a.partition_id = $1 AND a.id = $7),
                            'infinity')),
             $5::text[], $6, $7)
     RETURNING expires_at AS expires`,
    [
      partitionId,
      hashOf(token),
      userId,
      ttlSeconds,
      restriction,
      issuer.epoch,
      issuer.apiTokenId,
      issuer.expiresAt,
    ],
  );
  // Expired tokens are of no use to anyone: clear them while we are here.
  await q.query(
    `DELETE FROM one_time_tokens WHERE partition_id = $1 AND expires_at < now() - interval '1 hour'`,
    [partitionId],
  );
  return { token, expires: r.rows[0]!.expires };
}

export interface ConsumedOneTimeToken {
  readonly userId: number;
  /** The permission restriction of the credential that asked for it. */
  readonly restriction: string[] | null;
  /** The user's token epoch at issue (null: issued before tokens carried it — refused). */
  readonly epoch: number | null;
  /** The api_tokens row of the asking credential, which must still be live. */
  readonly apiTokenId: number | null;
}

/**
 * Marks the token used and answers its user and what it was asked with; null if unknown, used or
 * expired. The caller checks the epoch and the api_tokens row against the user's current ones.
 */
export async function consumeOneTimeToken(
  q: Queryable,
  partitionId: number,
  token: string,
): Promise<ConsumedOneTimeToken | null> {
  const r = await q.query<{
    user_id: number;
    permissions: string[] | null;
    token_epoch: number | null;
    api_token_id: number | null;
  }>(
    `UPDATE one_time_tokens SET used_at = now()
      WHERE partition_id = $1 AND token_hash = $2 AND used_at IS NULL AND expires_at > now()
      RETURNING user_id, permissions, token_epoch, api_token_id`,
    [partitionId, hashOf(token)],
  );
  const row = r.rows[0];
  return row === undefined
    ? null
    : {
        userId: Number(row.user_id),
        restriction: row.permissions,
        epoch: row.token_epoch === null ? null : Number(row.token_epoch),
        apiTokenId: row.api_token_id === null ? null : Number(row.api_token_id),
      };
}

export interface ApiTokenRow {
  readonly id: number;
  readonly userId: number;
  readonly loginName: string;
  readonly permissions: string[] | null;
  readonly expires: Date | null;
  readonly created: Date;
  readonly revoked: Date | null;
}

export async function createApiToken(
  db: Db,
  partitionId: number,
  userId: number,
  permissions: readonly string[] | null,
  minutes: number | null,
): Promise<{ id: number; expires: Date | null }> {
  const r = await db.query<{ id: number; expires: Date | null }>(
    `INSERT INTO api_tokens (partition_id, user_id, permissions, expires_at)
     VALUES ($1, $2, $3, CASE WHEN $4::int IS NULL THEN NULL ELSE now() + make_interval(mins => $4::int) END)
     RETURNING id, expires_at AS expires`,
    [partitionId, userId, permissions, minutes],
  );
  return r.rows[0]!;
}

export async function listApiTokens(
  q: Queryable,
  partitionId: number,
  userId: number | null,
): Promise<ApiTokenRow[]> {
  const r = await q.query<ApiTokenRow>(
    `SELECT t.id, t.user_id AS "userId", u.login_name AS "loginName", t.permissions, t.expires_at AS expires,
            t.created_at AS created, t.revoked_at AS revoked
       FROM api_tokens t JOIN users u ON u.partition_id = t.partition_id AND u.id = t.user_id
      WHERE t.partition_id = $1 AND ($2::bigint IS NULL OR t.user_id = $2)
      ORDER BY t.id`,
    [partitionId, userId],
  );
  return r.rows;
}

/** The user an api token (or OAuth grant, v2 pair) belongs to; undefined when there is none. */
export async function apiTokenOwner(
  q: Queryable,
  partitionId: number,
  id: number,
): Promise<number | undefined> {
  const r = await q.query<{ user_id: number }>(
    'SELECT user_id FROM api_tokens WHERE partition_id = $1 AND id = $2',
    [partitionId, id],
  );
  const row = r.rows[0];
  return row === undefined ? undefined : Number(row.user_id);
}

/** Revokes a token; answers false when there is no such token in the partition. */
export async function revokeApiToken(
  q: Queryable,
  partitionId: number,
  id: number,
  by: number,
): Promise<boolean> {
  const r = await q.query(
    `UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()), revoked_by = coalesce(revoked_by, $3)
      WHERE partition_id = $1 AND id = $2`,
    [partitionId, id, by],
  );
  return r.rowCount === 1;
}
