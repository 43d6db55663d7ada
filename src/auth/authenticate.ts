// Authentication of partition routes: credentials → Principal, then the route's permission.
// Order: partition exists (404) → credentials valid (401) → CSRF for cookie sessions (403) →
// permission (403). Runs in `onRequest`, before the body is read, so refused requests cost little.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { can, permissionsOfRoles, type Principal } from '../access/access.ts';
import { AUTHENTICATED, PUBLIC } from '../access/catalogue.ts';
import { AppError } from '../http/errors.ts';
import type {} from '../http/fastify-types.ts';
import { dummyHash, verifyPassword } from './password.ts';
import { clearFailures, isLockedOut, recordFailure } from './login-guard.ts';
import { csrfTokenOf, peekSession, signSession, verifySession } from './session.ts';

interface AccountRow {
  pid: number;
  secret: Uint8Array;
  csrf: boolean;
  uid: number | null;
  login: string | null;
  hash: string | null;
  activated: boolean | null;
  epoch: number | null;
  roles: string[];
  groups: string[];
}

const ACCOUNT_SQL = (userCondition: string): string => `
  SELECT p.id AS pid, p.jwt_secret AS secret, p.csrf_enabled AS csrf,
         u.id AS uid, u.login_name AS login, u.password_hash AS hash, u.activated, u.token_epoch AS epoch,
         coalesce((SELECT array_agg(r.role ORDER BY r.role) FROM user_roles r
                    WHERE r.partition_id = u.partition_id AND r.user_id = u.id), '{}') AS roles,
         coalesce((SELECT array_agg(g.unique_name ORDER BY g.unique_name)
                     FROM user_group_members m
                     JOIN user_groups g ON g.partition_id = m.partition_id AND g.id = m.group_id
                    WHERE m.partition_id = u.partition_id AND m.user_id = u.id), '{}') AS groups
    FROM partitions p
    LEFT JOIN users u ON u.partition_id = p.id AND ${userCondition}
   WHERE p.name = $1`;
const BY_LOGIN = ACCOUNT_SQL('lower(u.login_name) = lower($2)');
const BY_ID = ACCOUNT_SQL('u.id = $2');

export interface AuthNames {
  readonly cookie: string;
  readonly header: string;
  readonly csrfHeader: string;
  readonly csrfCookie: string;
}

/** Header and cookie names for a product token (`X-Ratecard-jwt`, ...). Headers are lower-case. */
export function authNames(productToken: string): AuthNames {
  return {
    cookie: `X-${productToken}-jwt`,
    header: `x-${productToken.toLowerCase()}-jwt`,
    csrfHeader: `x-${productToken.toLowerCase()}-csrf-token`,
    csrfCookie: `X-${productToken}-Csrf-Token`,
  };
}

function principalOf(req: FastifyRequest, row: AccountRow, via: Principal['via']): Principal {
  return {
    partitionId: row.pid,
    partition: req.partitionRef!.name,
    userId: row.uid!,
    loginName: row.login!,
    roles: row.roles,
    groups: row.groups,
    admin: row.roles.includes('ADMIN'),
    permissions: permissionsOfRoles(row.roles),
    via,
    restriction: null,
  };
}

async function loadAccount(req: FastifyRequest, partition: string, sql: string, user: string | number) {
  const row = (await req.server.db.query<AccountRow>(sql, [partition, user])).rows[0];
  if (!row) throw new AppError('PARTITION_NOT_FOUND', `Unknown partition ${partition}`);
  req.partitionRef = { id: row.pid, name: partition };
  return row;
}

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
  return login === '' ? null : { login, password: decoded.slice(colon + 1) };
}

function setSessionCookies(
  req: FastifyRequest,
  reply: FastifyReply,
  token: string,
  csrf: string | undefined,
): void {
  const names = authNames(req.server.config.productToken);
  const opts = {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: req.protocol === 'https',
  };
  void reply.setCookie(names.cookie, token, opts);
  if (csrf !== undefined) void reply.setCookie(names.csrfCookie, csrf, opts);
}

async function issueSession(
  req: FastifyRequest,
  reply: FastifyReply,
  row: AccountRow,
  sid: string,
): Promise<string> {
  const cfg = req.server.config;
  return signSession(
    row.secret,
    { userId: row.uid!, partition: req.partitionRef!.name, epoch: row.epoch!, sid },
    cfg.jwtTtlSeconds,
  ).then((token) => {
    void reply.header(authNames(cfg.productToken).header, token);
    return token;
  });
}

async function basicAuth(req: FastifyRequest, reply: FastifyReply, partition: string, header: string) {
  const cfg = req.server.config;
  const creds = parseBasic(header, partition);
  const row = await loadAccount(req, partition, BY_LOGIN, creds?.login ?? '');
  if (!creds) throw new AppError('BAD_CREDENTIALS');
  const db = req.server.db;
  const failures = await isLockedOut(db, row.pid, creds.login, cfg);
  if (failures.locked) {
    req.log.warn({ partition, login: creds.login }, 'login refused: locked out');
    throw new AppError('LOCKED_OUT');
  }
  // Unknown users verify against a dummy hash: same time, same answer as a wrong password.
  const ok = await verifyPassword(creds.password, row.hash ?? (await dummyHash(cfg.scryptCost)));
  if (!ok || row.uid === null || row.activated !== true) {
    await recordFailure(db, row.pid, creds.login, cfg);
    req.log.info({ partition, login: creds.login }, 'login failed');
    throw new AppError('BAD_CREDENTIALS');
  }
  if (failures.count > 0) await clearFailures(db, row.pid, creds.login);
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

async function sessionAuth(
  req: FastifyRequest,
  reply: FastifyReply,
  partition: string,
  token: string,
  via: 'cookie' | 'header',
) {
  const cfg = req.server.config;
  const peek = peekSession(token);
  const userId = peek && /^\d{1,15}$/.test(peek.sub) ? Number(peek.sub) : 0;
  const row = await loadAccount(req, partition, BY_ID, userId);
  // A token of another partition names another partition (and fails this partition's key anyway).
  if (!peek || peek.ptn !== partition) throw new AppError('UNAUTHENTICATED', 'Session token not valid here');
  const claims = await verifySession(token, row.secret);
  if (!claims || row.uid === null || row.activated !== true || claims.epc !== row.epoch) {
    throw new AppError('UNAUTHENTICATED', 'Session expired or revoked; log in again');
  }
  if (via === 'cookie' && row.csrf && req.method !== 'GET' && req.method !== 'HEAD') {
    const sent = req.headers[authNames(cfg.productToken).csrfHeader];
    if (typeof sent !== 'string' || !sameToken(sent, csrfTokenOf(row.secret, claims.sid))) {
      throw new AppError('CSRF');
    }
  }
  // Re-issue when less than a quarter of the lifetime is left; the session id (and CSRF token) stay.
  const now = Math.floor(Date.now() / 1000);
  if (claims.exp - now < cfg.jwtTtlSeconds / 4) {
    const fresh = await issueSession(req, reply, row, claims.sid);
    setSessionCookies(req, reply, fresh, undefined);
  }
  return principalOf(req, row, via);
}

/** The `onRequest` hook of every partition route. */
export async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const access = req.routeOptions.config.access;
  const partition = (req.params as { partition: string }).partition;
  const cfg = req.server.config;
  const names = authNames(cfg.productToken);
  if (access === undefined) throw new Error(`route ${req.routeOptions.url} declares no access`);

  const authorization = req.headers.authorization;
  const headerToken = req.headers[names.header];
  const cookieToken = req.cookies[names.cookie];
  if (access === PUBLIC) {
    await loadAccount(req, partition, BY_ID, 0);
    return;
  }
  let principal: Principal;
  if (authorization !== undefined && /^basic /i.test(authorization)) {
    principal = await basicAuth(req, reply, partition, authorization);
  } else if (typeof headerToken === 'string' && headerToken !== '') {
    principal = await sessionAuth(req, reply, partition, headerToken, 'header');
  } else if (cookieToken !== undefined && cookieToken !== '') {
    principal = await sessionAuth(req, reply, partition, cookieToken, 'cookie');
  } else {
    await loadAccount(req, partition, BY_ID, 0);
    throw new AppError('UNAUTHENTICATED');
  }
  req.principal = principal;
  if (access !== AUTHENTICATED && !can(principal, access)) {
    throw new AppError('FORBIDDEN', `Permission ${access} required`);
  }
}
