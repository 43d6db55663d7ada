// Authentication of partition routes: credentials → Principal, then the route's permission.
// Order: partition exists (404) → credentials valid (401) → CSRF for session cookies (403) →
// permission (403). Runs in `onRequest`, before the body is read, so refused requests cost little.
// Credentials, first match wins: `?token=` (one-time), Authorization Basic, Authorization
// `BEARER <system>;<jwt>` (external), Authorization Bearer <jwt> (OAuth/api token), the
// `X-Ratecard-jwt` header, the `X-Ratecard-jwt` cookie. A one-time token (no JWT: no dots) may also
// come as the bearer, the header or the cookie, and needs no CSRF token there (issue 19).

import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { can, permissionsOfRoles, type Principal } from '../access/access.ts';
import { AUTHENTICATED, PUBLIC } from '../access/catalogue.ts';
import { AppError } from '../http/errors.ts';
import type {} from '../http/fastify-types.ts';
import { dummyHash, verifyPassword } from './password.ts';
import { takeAttempt } from './login-guard.ts';
import { csrfTokenOf, peekSession, signSession, verifySession, type SessionClaims } from './session.ts';
import { acceptCode } from './tfa.ts';
import { consumeOneTimeToken } from './tokens.ts';
import { verifyExternal } from './external-jwt.ts';
import { AccountCache } from './account-cache.ts';
import type { Db } from '../db/db.ts';
import { prepared } from '../db/prepared.ts';

interface AccountRow {
  pid: number;
  meta_version: number;
  secret: Uint8Array;
  csrf: boolean;
  uid: number | null;
  login: string | null;
  hash: string | null;
  activated: boolean | null;
  epoch: number | null;
  roles: string[];
  groups: string[];
  tfa_secret: string | null;
  tfa_enabled: boolean | null;
  tfa_last_step: number | null;
  /** For api tokens: the token row exists, is not revoked and has not expired. */
  token_ok: boolean | null;
  /** For api tokens with an expiry: milliseconds it had left when the statement ran. */
  token_ms_left: number | null;
}

// Effective roles: the user's own and those of the business roles assigned to the user, read on
// every request, so an assignment takes effect on the user's next request. Groups likewise. UNION
// (not UNION ALL) because a role held both directly and through a business role counts once.
// Prepared (db/prepared.ts): a 9-relation statement planned 5 ms per run unprepared (perf audit 2).
const ACCOUNT_SQL = (userCondition: string): string => `
  SELECT p.id AS pid, p.jwt_secret AS secret, p.csrf_enabled AS csrf, p.meta_version AS meta_version,
         u.id AS uid, u.login_name AS login, u.password_hash AS hash, u.activated, u.token_epoch AS epoch,
         u.tfa_secret, u.tfa_enabled, u.tfa_last_step,
         coalesce((SELECT array_agg(x.role ORDER BY x.role) FROM (
                     SELECT r.role FROM user_roles r
                      WHERE r.partition_id = u.partition_id AND r.user_id = u.id
                     UNION
                     SELECT brr.role FROM user_business_roles ub
                       JOIN business_role_roles brr
                         ON brr.partition_id = ub.partition_id AND brr.business_role_id = ub.business_role_id
                      WHERE ub.partition_id = u.partition_id AND ub.user_id = u.id) x), '{}') AS roles,
         coalesce((SELECT array_agg(g.unique_name ORDER BY g.unique_name) FROM user_groups g
                    WHERE g.partition_id = u.partition_id AND g.id IN (
                      SELECT m.group_id FROM user_group_members m
                       WHERE m.partition_id = u.partition_id AND m.user_id = u.id
                      UNION
                      SELECT brg.group_id FROM user_business_roles ub
                        JOIN business_role_groups brg
                          ON brg.partition_id = ub.partition_id AND brg.business_role_id = ub.business_role_id
                       WHERE ub.partition_id = u.partition_id AND ub.user_id = u.id)), '{}') AS groups,
         CASE WHEN t.id IS NOT NULL
              THEN t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()) END AS token_ok,
         (extract(epoch FROM t.expires_at - now()) * 1000)::float8 AS token_ms_left
    FROM partitions p
    LEFT JOIN users u ON u.partition_id = p.id AND ${userCondition}
    -- The api token of the request, if any (at most one row: the primary key).
    LEFT JOIN api_tokens t ON t.partition_id = p.id AND t.id = $3 AND t.user_id = u.id
   WHERE p.name = $1`;
const BY_LOGIN = prepared(ACCOUNT_SQL('lower(u.login_name) = lower($2)'));
const BY_ID = prepared(ACCOUNT_SQL('u.id = $2'));

export interface AuthNames {
  readonly cookie: string;
  readonly header: string;
  readonly csrfHeader: string;
  readonly csrfCookie: string;
  readonly tfaHeader: string;
}

/** Header and cookie names for a product token (`X-Ratecard-jwt`, ...). Headers are lower-case. */
export function authNames(productToken: string): AuthNames {
  const lower = productToken.toLowerCase();
  return {
    cookie: `X-${productToken}-jwt`,
    header: `x-${lower}-jwt`,
    csrfHeader: `x-${lower}-csrf-token`,
    csrfCookie: `X-${productToken}-Csrf-Token`,
    tfaHeader: `${lower}-tfa`,
  };
}

function principalOf(
  req: FastifyRequest,
  row: AccountRow,
  via: Principal['via'],
  restriction: readonly string[] | null = null,
  actor: Pick<Principal, 'tokenId' | 'externalSystem' | 'expiresAt'> = {},
): Principal {
  return {
    ...actor,
    epoch: row.epoch!,
    partitionId: row.pid,
    partition: req.partitionRef!.name,
    metaVersion: row.meta_version,
    userId: row.uid!,
    loginName: row.login!,
    roles: row.roles,
    groups: row.groups,
    admin: row.roles.includes('ADMIN'),
    permissions: permissionsOfRoles(row.roles),
    via,
    restriction: restriction === null ? null : new Set(restriction),
  };
}

const caches = new WeakMap<Db, AccountCache<AccountRow>>();

function cacheOf(db: Db): AccountCache<AccountRow> {
  let c = caches.get(db);
  if (!c) caches.set(db, (c = new AccountCache<AccountRow>(db.authChanges)));
  return c;
}

/** How long a row stays true by the clock alone: a live, expiring token's time left; else no limit. */
const tokenLifetime = (row: AccountRow): number | undefined =>
  row.token_ok === true && row.token_ms_left !== null ? row.token_ms_left : undefined;

async function loadAccount(
  req: FastifyRequest,
  partition: string,
  sql: string,
  user: string | number,
  tokenId: number | null = null,
): Promise<AccountRow> {
  const db = req.server.db;
  const query = async () => (await db.query<AccountRow>(sql, [partition, user, tokenId])).rows[0];
  // Rows by user id (session tokens, api tokens, OAuth and v2 grants, the partition alone) come from
  // the account cache while the database reports no change. A live token row with an expiry is kept
  // only for the time the database said it has left (account-cache.ts), so it expires on time.
  const row =
    sql === BY_ID
      ? await cacheOf(db).get(`${partition}\u0000${user}\u0000${tokenId ?? ''}`, query, tokenLifetime)
      : await query();
  if (!row) throw new AppError('PARTITION_NOT_FOUND', `Unknown partition ${partition}`);
  req.partitionRef = { id: row.pid, name: partition };
  return row;
}

const isActive = (row: AccountRow): boolean => row.uid !== null && row.activated === true;

/** `<partition>/<user>:<password>`; a bare `<user>` means the partition of the path. */
function parseBasic(header: string, partition: string): { login: string; password: string } | null {
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  let login = decoded.slice(0, colon);
  const slash = login.indexOf('/');
  if (slash >= 0) {
    if (login.slice(0, slash).toLowerCase() !== partition.toLowerCase()) return null;
    login = login.slice(slash + 1);
  }
  // (No user name holds NUL, which the database cannot take as text: a wrong login, not a bad value.)
  return login === '' || login.includes('\u0000') ? null : { login, password: decoded.slice(colon + 1) };
}

function setSessionCookies(
  req: FastifyRequest,
  reply: FastifyReply,
  token: string,
  csrf: string | undefined,
): void {
  const names = authNames(req.server.config.productToken);
  const opts = { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: req.protocol === 'https' };
  void reply.setCookie(names.cookie, token, opts);
  if (csrf !== undefined) void reply.setCookie(names.csrfCookie, csrf, opts);
}

/**
 * Takes back the session this request's Basic credentials issued (header, cookies, `csrfToken`): for
 * an answer after which it is void — the caller's own password changed, which ends every token made
 * before. The session cookie is cleared, as the browser's one is revoked too.
 */
export function withdrawIssuedSession(req: FastifyRequest, reply: FastifyReply): void {
  const names = authNames(req.server.config.productToken);
  if (reply.getHeader(names.header) === undefined) return;
  void reply.removeHeader(names.header);
  void reply.clearCookie(names.cookie, { path: '/' });
  if (req.issuedCsrfToken !== undefined) void reply.clearCookie(names.csrfCookie, { path: '/' });
  req.issuedCsrfToken = undefined;
}

async function issueSession(
  req: FastifyRequest,
  reply: FastifyReply,
  row: AccountRow,
  sid: string,
): Promise<string> {
  const cfg = req.server.config;
  const token = await signSession(
    row.secret,
    { userId: row.uid!, partition: req.partitionRef!.name, epoch: row.epoch!, sid },
    cfg.jwtTtlSeconds,
  );
  void reply.header(authNames(cfg.productToken).header, token);
  return token;
}

/** Whether the request carries a live session cookie of this user (a session token, this partition). */
async function holdsSession(req: FastifyRequest, partition: string, row: AccountRow): Promise<boolean> {
  const cookie = req.cookies[authNames(req.server.config.productToken).cookie];
  if (cookie === undefined || cookie === '') return false;
  const peek = peekSession(cookie);
  if (peek === null || peek.ptn !== partition || peek.sub !== String(row.uid)) return false;
  const claims = await verifySession(cookie, row.secret);
  return claims !== null && claims.knd === 'session' && claims.epc === row.epoch;
}

/**
 * The checks of a password login, shared by Basic and `POST /token` (API version 2): lock-out,
 * password (unknown users verify against a dummy hash: same time, same answer), active user, and
 * the TFA code in the `<product>-TFA` header when the user has TFA on and sends no session cookie of
 * his. Every attempt counts toward
 * the lock-out before its password is checked (./login-guard.ts); a success clears them.
 */
async function verifyLogin(
  req: FastifyRequest,
  partition: string,
  login: string | undefined,
  password: string,
): Promise<AccountRow> {
  const cfg = req.server.config;
  const row = await loadAccount(req, partition, BY_LOGIN, login ?? '');
  if (login === undefined || login === '') throw new AppError('BAD_CREDENTIALS');
  const db = req.server.db;
  const attempt = await takeAttempt(db, row.pid, login, cfg);
  if (attempt.locked) {
    req.log.warn({ partition, login }, 'login refused: locked out');
    throw new AppError('LOCKED_OUT');
  }
  let outcome: 'success' | 'failure' = 'failure';
  try {
    const ok = await verifyPassword(password, row.hash ?? (await dummyHash(cfg.scryptCost)));
    if (!ok || !isActive(row)) {
      req.log.info({ partition, login }, 'login failed');
      throw new AppError('BAD_CREDENTIALS');
    }
    // The code is asked for when no session cookie of the user is present (interface: TFA).
    if (row.tfa_enabled === true && !(await holdsSession(req, partition, row))) {
      const code = req.headers[authNames(cfg.productToken).tfaHeader];
      const state = { secret: row.tfa_secret, enabled: true, lastStep: row.tfa_last_step };
      if (!(await acceptCode(db, row.pid, row.uid!, state, typeof code === 'string' ? code : undefined))) {
        req.log.info({ partition, login }, 'login failed: two-factor code');
        throw new AppError(
          'BAD_CREDENTIALS',
          `Two-factor code missing, wrong or already used (header ${cfg.productToken}-TFA)`,
        );
      }
    }
    outcome = 'success';
  } finally {
    await attempt.done(outcome);
  }
  return row;
}

/** A user who proved a password (and TFA code) for a token of their own: `POST /token`. */
export interface VerifiedLogin {
  readonly partitionId: number;
  readonly userId: number;
  readonly loginName: string;
  readonly epoch: number;
  /** The partition's token signing key. */
  readonly secret: Uint8Array;
}

export async function passwordLogin(
  req: FastifyRequest,
  partition: string,
  login: string,
  password: string,
): Promise<VerifiedLogin> {
  const row = await verifyLogin(req, partition, login, password);
  return {
    partitionId: row.pid,
    userId: row.uid!,
    loginName: row.login!,
    epoch: row.epoch!,
    secret: row.secret,
  };
}

async function basicAuth(req: FastifyRequest, reply: FastifyReply, partition: string, header: string) {
  const creds = parseBasic(header, partition);
  const row = await verifyLogin(req, partition, creds?.login, creds?.password ?? '');
  const sid = randomBytes(16).toString('base64url');
  const token = await issueSession(req, reply, row, sid);
  const csrf = row.csrf ? csrfTokenOf(row.secret, sid) : undefined;
  setSessionCookies(req, reply, token, csrf);
  req.issuedCsrfToken = csrf;
  return principalOf(req, row, 'basic');
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A signed token of ours, from the cookie, the header or `Authorization: Bearer`. */
async function tokenAuth(
  req: FastifyRequest,
  reply: FastifyReply,
  partition: string,
  token: string,
  via: 'cookie' | 'header' | 'bearer',
) {
  const cfg = req.server.config;
  const peek = peekSession(token);
  const userId = peek && /^\d{1,15}$/.test(peek.sub) ? Number(peek.sub) : 0;
  const row = await loadAccount(req, partition, BY_ID, userId, peek?.tid ?? null);
  if (!peek) throw new AppError('UNAUTHENTICATED', 'Token not valid');
  // A token of another partition names another partition (and fails this partition's key anyway).
  if (peek.ptn !== partition) throw new AppError('UNAUTHENTICATED', 'Token not valid in this partition');
  const claims = await verifySession(token, row.secret);
  if (!claims || !isActive(row) || claims.epc !== row.epoch || claims.knd === 'refresh') {
    throw new AppError('UNAUTHENTICATED', 'Token expired or revoked; log in again');
  }
  // Tokens recorded in api_tokens (api tokens, OAuth grants) die with their row.
  if (claims.tid !== undefined && row.token_ok !== true) {
    throw new AppError('UNAUTHENTICATED', 'Token revoked or expired');
  }
  if (claims.knd === 'api' && claims.tid === undefined)
    throw new AppError('UNAUTHENTICATED', 'Token not valid');
  // CSRF guards sessions a browser holds: only a session token sent as the cookie needs it. Api and
  // OAuth tokens are not set as cookies by us (a client that sends one as the cookie chose to), and
  // their CSRF value would derive from an id no client can obtain.
  // GET and HEAD are exempt, except on the few GET operations that change state (changesState).
  const safeMethod =
    (req.method === 'GET' || req.method === 'HEAD') && req.routeOptions.config.changesState !== true;
  if (via === 'cookie' && claims.knd === 'session' && row.csrf && !safeMethod) {
    const sent = req.headers[authNames(cfg.productToken).csrfHeader];
    if (typeof sent !== 'string' || !sameToken(sent, csrfTokenOf(row.secret, claims.sid))) {
      throw new AppError('CSRF');
    }
  }
  if (claims.knd === 'session') await reissueIfOld(req, reply, row, claims);
  return principalOf(req, row, via, claims.scp ?? null, {
    ...(claims.tid === undefined ? {} : { tokenId: claims.tid }),
    ...(claims.exp === undefined ? {} : { expiresAt: claims.exp }),
  });
}

/** Less than a quarter of its lifetime left: a fresh session token, same session id (and CSRF token). */
async function reissueIfOld(
  req: FastifyRequest,
  reply: FastifyReply,
  row: AccountRow,
  claims: SessionClaims,
): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  if (claims.exp === undefined || claims.exp - now >= req.server.config.jwtTtlSeconds / 4) return;
  // The spec re-issues "as an updated cookie"; header clients read the same value from the header.
  setSessionCookies(req, reply, await issueSession(req, reply, row, claims.sid), undefined);
}

/**
 * A one-time token is consumed, then must still be backed by what asked for it: an active user whose
 * token epoch has not moved (no password change since), and a live api_tokens row when an api
 * token, OAuth grant or v2 pair asked for it (not revoked, not expired).
 */
async function oneTimeAuth(req: FastifyRequest, partition: string, token: string) {
  const row0 = await loadAccount(req, partition, BY_ID, 0);
  const used = await consumeOneTimeToken(req.server.db, row0.pid, token);
  const refused = () => new AppError('UNAUTHENTICATED', 'One-time token unknown, used or expired');
  if (used === null) throw refused();
  const row = await loadAccount(req, partition, BY_ID, used.userId, used.apiTokenId);
  if (!isActive(row) || used.epoch === null || used.epoch !== row.epoch) throw refused();
  if (used.apiTokenId !== null && row.token_ok !== true) throw refused();
  return principalOf(req, row, 'onetime', used.restriction);
}

async function externalAuth(req: FastifyRequest, partition: string, system: string, jwt: string) {
  const cfg = req.server.config;
  const row0 = await loadAccount(req, partition, BY_ID, 0);
  const result = await verifyExternal(req.server.db, row0.pid, partition, cfg.clusterName, system, jwt);
  if (!result.ok) {
    req.log.warn({ partition, system, reason: result.reason }, 'external JWT refused');
    throw new AppError('UNAUTHENTICATED', 'External token refused');
  }
  const row = result.login.includes('\u0000')
    ? row0
    : await loadAccount(req, partition, BY_LOGIN, result.login);
  if (!isActive(row)) {
    req.log.warn({ partition, system, login: result.login }, 'external JWT refused: no such active user');
    throw new AppError('UNAUTHENTICATED', 'External token refused');
  }
  return principalOf(req, row, 'external', result.permissions, { externalSystem: system });
}

/** The form of a one-time token (tokens.ts: 24 random bytes, base64url); a JWT has dots. */
const ONE_TIME_TOKEN = /^[A-Za-z0-9_-]{32}$/;

async function principalFor(req: FastifyRequest, reply: FastifyReply, partition: string): Promise<Principal> {
  const names = authNames(req.server.config.productToken);
  const viaToken = (token: string, via: 'cookie' | 'header' | 'bearer') =>
    ONE_TIME_TOKEN.test(token)
      ? oneTimeAuth(req, partition, token)
      : tokenAuth(req, reply, partition, token, via);
  const oneTime = (req.query as Record<string, unknown> | undefined)?.token;
  if (typeof oneTime === 'string' && oneTime !== '') return oneTimeAuth(req, partition, oneTime);
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    if (/^basic /i.test(authorization)) return basicAuth(req, reply, partition, authorization);
    const bearer = /^bearer\s+(.+)$/i.exec(authorization.trim());
    if (bearer) {
      const value = bearer[1]!;
      const semi = value.indexOf(';');
      if (semi >= 0)
        return externalAuth(req, partition, value.slice(0, semi).trim(), value.slice(semi + 1).trim());
      return viaToken(value, 'bearer');
    }
  }
  const headerToken = req.headers[names.header];
  if (typeof headerToken === 'string' && headerToken !== '') return viaToken(headerToken, 'header');
  const cookieToken = req.cookies[names.cookie];
  if (cookieToken !== undefined && cookieToken !== '') return viaToken(cookieToken, 'cookie');
  await loadAccount(req, partition, BY_ID, 0);
  throw new AppError('UNAUTHENTICATED');
}

/** The `onRequest` hook of every partition route. */
export async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { access, credentials } = req.routeOptions.config;
  const partition = (req.params as { partition: string }).partition;
  if (access === undefined) throw new Error(`route ${req.routeOptions.url} declares no access`);
  if (access === PUBLIC) {
    await loadAccount(req, partition, BY_ID, 0);
    return;
  }
  const principal = await principalFor(req, reply, partition);
  req.principal = principal;
  if (credentials === 'basic' && principal.via !== 'basic') {
    throw new AppError('UNAUTHENTICATED', 'This operation needs real credentials (Basic), not a token');
  }
  if (access !== AUTHENTICATED && !can(principal, access)) {
    throw new AppError('FORBIDDEN', `Permission ${access} required`);
  }
}
