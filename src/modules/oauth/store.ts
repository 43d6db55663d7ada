// The SQL of the OAuth flows that the generic engine does not cover (the partition's signing
// secret, the account a sign-in names, the rows of oauth_codes and of grants) and what both flows
// share: the request context, code hashing, the PKCE value syntax and constant-time comparison.
// The lowest file of the module: it imports none of the others.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Permission } from '../../access/catalogue.ts';
import type { Config } from '../../config.ts';
import type { Db, Queryable } from '../../db/db.ts';

/** What a request of the flow knows about where it is; built by the routes from the request. */
export interface OAuthContext {
  readonly db: Db;
  readonly config: Config;
  readonly log: FastifyBaseLogger;
  readonly partitionId: number;
  readonly partition: string;
  /** `<scheme>://<host>{base}`: the issuer identifier and the base of the endpoints. */
  readonly issuer: string;
}

/** The syntax of a PKCE code_challenge and code_verifier (RFC 7636 §4.1, §4.2). */
export const RFC7636_VALUE = /^[A-Za-z0-9._~-]{43,128}$/;

/** Constant-time comparison; hashing first makes texts of any length comparable. */
export function sameText(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y);
}

export const hashOf = (text: string): string => createHash('sha256').update(text).digest('hex');

export async function secretOf(db: Queryable, partitionId: number): Promise<Uint8Array> {
  const r = await db.query<{ s: Uint8Array }>('SELECT jwt_secret AS s FROM partitions WHERE id = $1', [
    partitionId,
  ]);
  return r.rows[0]!.s;
}

export interface AccountRow {
  id: number;
  login: string;
  hash: string | null;
  activated: boolean;
  epoch: number;
  roles: string[];
  tfa_secret: string | null;
  tfa_enabled: boolean;
  tfa_last_step: number | null;
}

export const ACCOUNT_SQL = (condition: string): string => `
  SELECT u.id, u.login_name AS login, u.password_hash AS hash, u.activated, u.token_epoch AS epoch,
         u.tfa_secret, u.tfa_enabled, u.tfa_last_step,
         coalesce((SELECT array_agg(r.role ORDER BY r.role) FROM user_roles r
                    WHERE r.partition_id = u.partition_id AND r.user_id = u.id), '{}') AS roles
    FROM users u WHERE u.partition_id = $1 AND ${condition}`;

export async function accountBy(db: Db, partitionId: number, by: 'login' | 'id', key: string | number) {
  const sql = ACCOUNT_SQL(by === 'login' ? 'lower(u.login_name) = lower($2)' : 'u.id = $2');
  return (await db.query<AccountRow>(sql, [partitionId, key])).rows[0] ?? null;
}

export interface CodeRow {
  client_id: string;
  redirect_uri: string;
  user_id: number;
  scope: Permission[] | null;
  code_challenge: string | null;
  code_challenge_method: 'S256' | 'plain' | null;
  /** The user's token epoch when the code was issued (null: a code of before migration 054). */
  token_epoch: number | null;
}

export interface GrantRow {
  user_id: number;
  client_id: string | null;
  kind: string;
  scope: Permission[] | null;
  live: boolean;
  epoch: number;
  activated: boolean;
}
