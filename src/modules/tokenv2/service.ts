// API version 2 tokens: `POST /token` (password, lock-out and TFA as for Basic) issues an access
// token and a refresh token bound to one grant — an api_tokens row of kind 'v2'. Both are our
// signed JWTs carrying the grant id (`tid`), so revoking the row kills both. A refresh consumes
// its grant (revoked by a conditional UPDATE, so two concurrent refreshes cannot both win) and
// issues a new grant: the old refresh token — and the access token of the old pair — stop working.
// The refresh token is of kind `refresh`, which authentication refuses as a credential.

import { randomBytes } from 'node:crypto';
import type { Config } from '../../config.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { peekSession, signSession, verifySession } from '../../auth/session.ts';
import type { VerifiedLogin } from '../../auth/authenticate.ts';
import { AppError } from '../../http/errors.ts';

/** The answer of `POST /token` and `/token/refresh`, as API version 2 clients expect it. */
export interface TokenPair {
  readonly 'access-token': string;
  readonly 'refresh-token': string;
  readonly 'token-type': 'Bearer';
  readonly 'expires-in': number;
}

type Lifetimes = Pick<Config, 'tokenV2AccessSeconds' | 'tokenV2RefreshSeconds'>;

async function newGrant(q: Queryable, who: VerifiedLogin, cfg: Lifetimes): Promise<number> {
  const r = await q.query<{ id: number }>(
    `INSERT INTO api_tokens (partition_id, user_id, kind, expires_at)
     VALUES ($1, $2, 'v2', now() + make_interval(secs => $3)) RETURNING id`,
    [who.partitionId, who.userId, cfg.tokenV2RefreshSeconds],
  );
  return r.rows[0]!.id;
}

async function signPair(
  who: VerifiedLogin,
  partition: string,
  grantId: number,
  cfg: Lifetimes,
): Promise<TokenPair> {
  const spec = { userId: who.userId, partition, epoch: who.epoch, tokenId: grantId };
  // Distinct session ids per pair: the CSRF token derived from it never matters for Bearer use.
  const sid = `v2-${grantId}-${randomBytes(6).toString('base64url')}`;
  const access = await signSession(who.secret, { ...spec, sid, kind: 'oauth' }, cfg.tokenV2AccessSeconds);
  const refresh = await signSession(who.secret, { ...spec, sid, kind: 'refresh' }, cfg.tokenV2RefreshSeconds);
  return {
    'access-token': access,
    'refresh-token': refresh,
    'token-type': 'Bearer',
    'expires-in': cfg.tokenV2AccessSeconds,
  };
}

/** `POST /token`, once the password (and TFA code) were verified. */
export async function issueTokens(
  db: Db,
  who: VerifiedLogin,
  partition: string,
  cfg: Lifetimes,
): Promise<TokenPair> {
  const grantId = await newGrant(db, who, cfg);
  return signPair(who, partition, grantId, cfg);
}

interface GrantOwner {
  secret: Uint8Array;
  user_id: number;
  login: string;
  epoch: number;
  activated: boolean;
}

const REFUSED = 'Refresh token invalid, expired, revoked or already used';

/** `POST /token/refresh`: consumes the grant of a refresh token and answers a new pair. */
export async function refreshTokens(
  db: Db,
  partitionId: number,
  partition: string,
  refreshToken: string,
  cfg: Lifetimes,
): Promise<TokenPair> {
  const peek = peekSession(refreshToken);
  if (peek === null || peek.ptn !== partition || peek.tid === undefined) {
    throw new AppError('UNAUTHENTICATED', REFUSED);
  }
  return db.transaction(async (tx) => {
    const s = await tx.query<{ secret: Uint8Array }>(
      'SELECT jwt_secret AS secret FROM partitions WHERE id = $1',
      [partitionId],
    );
    const claims = await verifySession(refreshToken, s.rows[0]!.secret);
    if (claims === null || claims.knd !== 'refresh' || claims.tid === undefined) {
      throw new AppError('UNAUTHENTICATED', REFUSED);
    }
    // Consume the grant: only a live v2 grant of this user, whose password did not change since.
    const r = await tx.query<GrantOwner>(
      `UPDATE api_tokens t SET revoked_at = now(), revoked_by = t.user_id
         FROM users u
        WHERE t.partition_id = $1 AND t.id = $2 AND t.kind = 'v2' AND t.revoked_at IS NULL
          AND t.expires_at > now() AND u.partition_id = t.partition_id AND u.id = t.user_id
          AND u.id = $3 AND u.token_epoch = $4 AND u.activated
       RETURNING u.id AS user_id, u.login_name AS login, u.token_epoch AS epoch, u.activated`,
      [partitionId, claims.tid, Number(claims.sub), claims.epc],
    );
    const g = r.rows[0];
    if (g === undefined) throw new AppError('UNAUTHENTICATED', REFUSED);
    const who: VerifiedLogin = {
      partitionId,
      userId: g.user_id,
      loginName: g.login,
      epoch: g.epoch,
      secret: s.rows[0]!.secret,
    };
    const grantId = await newGrant(tx, who, cfg);
    return signPair(who, partition, grantId, cfg);
  });
}

/**
 * `DELETE /token`: revokes the grant of the access token that authenticated the request (and so
 * its refresh token). Anything but an API version 2 access token is a -4.
 */
export async function revokeToken(
  db: Db,
  partitionId: number,
  userId: number,
  accessToken: string | undefined,
): Promise<void> {
  const tid = accessToken === undefined ? undefined : peekSession(accessToken)?.tid;
  const r =
    tid === undefined
      ? { rowCount: 0 }
      : await db.query(
          `UPDATE api_tokens SET revoked_at = now(), revoked_by = $3
            WHERE partition_id = $1 AND id = $2 AND user_id = $3 AND kind = 'v2' AND revoked_at IS NULL`,
          [partitionId, tid, userId],
        );
  if (r.rowCount !== 1) {
    throw new AppError(
      'VALIDATION',
      'DELETE /token takes an API version 2 access token (Authorization: Bearer)',
      {
        field: 'authorization',
      },
    );
  }
}
