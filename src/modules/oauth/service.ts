// The rules of OAuth 2.0 in Ratecard: the authorization code flow (RFC 6749 §4.1) with optional PKCE
// (RFC 7636), the refresh grant (§6), the scope rules of the spec, and the metadata (RFC 8414).
// A grant is an api_tokens row (kind 'oauth'); access and refresh tokens are our own session JWTs
// carrying its id, so authentication (src/auth/authenticate.ts) needs nothing OAuth-specific.
// The flow of /oauth/authorize: the client and redirect URI first (never redirect elsewhere) →
// the other parameters (errors go back by redirect) → login page → [TFA page] → consent page → code.

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { SignJWT, jwtVerify } from 'jose';
import { permissionsOfRoles } from '../../access/access.ts';
import { PERMISSIONS, isKnownPermission, type Permission } from '../../access/catalogue.ts';
import { clearFailures, isLockedOut, recordFailure } from '../../auth/login-guard.ts';
import { dummyHash, verifyPassword } from '../../auth/password.ts';
import { signSession, verifySession } from '../../auth/session.ts';
import { acceptCode } from '../../auth/tfa.ts';
import { revokeApiToken } from '../../auth/tokens.ts';
import type { Config } from '../../config.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { clientAuthenticates, findClient, presentedClient, type OAuthClient } from './clients.ts';
import { consentPage, errorPage, loginPage, tfaPage, type PageContext } from './pages.ts';

const CODE_TTL_SECONDS = 600;
const REFRESH_TTL_SECONDS = 30 * 86400;
/** The signed values that carry a login from one page to the next. */
const TFA_PENDING_SECONDS = 300;
const CONSENT_SECONDS = 600;
/** The CSRF nonce cookie outlives a slow login, not a day. */
export const CSRF_COOKIE_SECONDS = 1800;

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

// ---------------------------------------------------------------------------------------------
// Scope rules

export type ScopeResult = { readonly scope: readonly Permission[] | null } | { readonly invalid: string };

function permissionNames(text: string): Set<Permission> {
  // Rule 5: names that are not permissions are ignored. Space (RFC 6749 §3.3) or comma (the
  // spec's defaultScope) separate them.
  return new Set(text.split(/[\s,]+/).filter(isKnownPermission));
}

/** Catalogue order: the same scope always reads the same way, in tokens and on the consent page. */
const ordered = (names: ReadonlySet<string>): Permission[] => PERMISSIONS.filter((p) => names.has(p));

/**
 * The spec's scope rules: 1. default only → default; 2. request only → request; 3. neither → no
 * scope (a normal session); 4. both → intersection; 5. unknown names ignored. (6, the user's own
 * permissions, is applied per request: a scope only restricts.) A scope that applies but is empty
 * is refused (`invalid_scope`) rather than widened: an empty list never turns into "everything".
 */
export function effectiveScope(requested: string | undefined, defaultScope: string | null): ScopeResult {
  const req = requested !== undefined && requested.trim() !== '' ? permissionNames(requested) : null;
  const def = defaultScope !== null ? permissionNames(defaultScope) : null;
  if (req === null && def === null) return { scope: null };
  const names = req === null ? def! : def === null ? req : new Set([...req].filter((p) => def.has(p)));
  if (names.size === 0) {
    return {
      invalid:
        req === null
          ? "the client's default scope names no known permission"
          : def === null
            ? 'the requested scope names no known permission'
            : "no requested permission is within the client's scope",
    };
  }
  return { scope: ordered(names) };
}

const scopeText = (scope: readonly string[] | null): string | undefined =>
  scope === null ? undefined : scope.join(' ');

// ---------------------------------------------------------------------------------------------
// Keys, CSRF and the signed values of the login pages

async function secretOf(db: Queryable, partitionId: number): Promise<Uint8Array> {
  const r = await db.query<{ s: Uint8Array }>('SELECT jwt_secret AS s FROM partitions WHERE id = $1', [
    partitionId,
  ]);
  return r.rows[0]!.s;
}

/** A key of its own for the forms, so nothing they carry can ever verify as a session token. */
const formKey = (secret: Uint8Array): Uint8Array =>
  createHmac('sha256', secret).update('ratecard-oauth-form').digest();

const csrfTokenFor = (secret: Uint8Array, nonce: string): string =>
  createHmac('sha256', secret).update(`oauth-csrf:${nonce}`).digest('base64url');

const NONCE = /^[A-Za-z0-9_-]{43}$/;

function sameText(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y);
}

const FORM_AUDIENCE = 'ratecard-oauth-form';
type Stage = 'tfa' | 'consent';

/** Binds a login to one authorization request, so a login for one client cannot consent for another. */
const requestHash = (p: Params): string =>
  createHash('sha256')
    .update(JSON.stringify(CARRIED.map((k) => p[k] ?? null)))
    .digest('base64url');

async function signStage(
  secret: Uint8Array,
  stage: Stage,
  userId: number,
  epoch: number,
  p: Params,
  ttl: number,
): Promise<string> {
  return new SignJWT({ stg: stage, epc: epoch, req: requestHash(p) })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(String(userId))
    .setAudience(FORM_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(`${ttl}s`)
    .sign(formKey(secret));
}

/** The user a signed stage value vouches for, or null (forged, expired, other stage or request). */
async function verifyStage(
  secret: Uint8Array,
  stage: Stage,
  value: string | undefined,
  p: Params,
): Promise<{ userId: number; epoch: number } | null> {
  if (value === undefined) return null;
  try {
    const { payload } = await jwtVerify(value, formKey(secret), {
      algorithms: ['HS256'],
      audience: FORM_AUDIENCE,
    });
    if (payload.stg !== stage || payload.req !== requestHash(p) || typeof payload.epc !== 'number')
      return null;
    if (typeof payload.sub !== 'string' || !/^\d{1,15}$/.test(payload.sub)) return null;
    return { userId: Number(payload.sub), epoch: payload.epc };
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// The authorization request

/** The parameters of an authorization request that the pages carry from form to form. */
const CARRIED = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
] as const;
type Params = Partial<Record<(typeof CARRIED)[number], string>>;

interface AuthorizationRequest {
  readonly client: OAuthClient;
  readonly params: Params;
  /** Where answers go: the registered redirect URI (the request may only repeat it). */
  readonly redirectUri: string;
  readonly scope: readonly Permission[] | null;
  readonly challenge: { readonly value: string; readonly method: 'S256' | 'plain' } | null;
}

/** What the routes send: an HTML page (maybe with a new CSRF cookie) or a redirect. */
export type BrowserOutcome =
  | {
      readonly kind: 'page';
      readonly status: number;
      readonly html: string;
      /** Extra CSP form-action sources: the client's redirect target. */
      readonly formTargets: readonly string[];
      readonly csrfNonce?: string;
    }
  | { readonly kind: 'redirect'; readonly location: string };

type Parsed =
  | { readonly kind: 'ok'; readonly request: AuthorizationRequest }
  | { readonly kind: 'fail'; readonly outcome: BrowserOutcome };

const RFC7636_VALUE = /^[A-Za-z0-9._~-]{43,128}$/;

function fatal(ctx: OAuthContext, status: number, title: string, message: string): BrowserOutcome {
  return { kind: 'page', status, html: errorPage(ctx.config.productToken, title, message), formTargets: [] };
}

/** The client's redirect URI with the answer's parameters added; `iss` per RFC 9207 (mix-up defence). */
function redirectTo(
  ctx: OAuthContext,
  uri: string,
  params: Record<string, string | undefined>,
): BrowserOutcome {
  const url = new URL(uri);
  for (const [k, v] of Object.entries({ ...params, iss: ctx.issuer }))
    if (v !== undefined) url.searchParams.set(k, v);
  return { kind: 'redirect', location: url.href };
}

/** A CSP source for the redirect target: its origin, or its scheme for custom-scheme (native app) URIs. */
function formTarget(uri: string): string {
  const url = new URL(uri);
  return url.origin !== 'null' ? url.origin : url.protocol;
}

/**
 * Validates an authorization request (query of the GET, hidden fields of the POSTs). The client and
 * its redirect URI come first: until both are known good, every error is a page, never a redirect
 * (RFC 6749 §4.1.2.1). After that, errors go to the client by redirect with `state`.
 */
function parseAuthorization(ctx: OAuthContext, input: unknown): Parsed {
  const raw = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const one = (k: string): string | undefined | null => {
    const v = raw[k];
    if (v === undefined || v === '') return undefined;
    return typeof v === 'string' ? v : null; // null: repeated (an array) or not text
  };
  const fail = (outcome: BrowserOutcome): Parsed => ({ kind: 'fail', outcome });
  const clientId = one('client_id');
  if (clientId === null || one('redirect_uri') === null)
    return fail(fatal(ctx, 400, 'Invalid sign-in request', 'client_id and redirect_uri must be given once.'));
  if (clientId === undefined)
    return fail(
      fatal(ctx, 400, 'Invalid sign-in request', 'The request names no client (client_id is missing).'),
    );
  const client = findClient(ctx.config.oauthConfiguration, clientId);
  if (client === null)
    return fail(
      fatal(
        ctx,
        400,
        'Unknown application',
        `No application with client_id "${clientId.slice(0, 100)}" is registered.`,
      ),
    );
  const given = one('redirect_uri');
  if (given !== undefined && given !== client.redirectUri) {
    return fail(
      fatal(
        ctx,
        400,
        'Invalid sign-in request',
        'The redirect_uri is not the one registered for this application.',
      ),
    );
  }
  const redirectUri = client.redirectUri;

  const state = one('state');
  const params: Record<string, string> = {};
  for (const k of CARRIED) {
    const v = one(k);
    if (v === null) {
      return fail(
        redirectTo(ctx, redirectUri, {
          error: 'invalid_request',
          error_description: `parameter ${k} repeated`,
          state: state ?? undefined,
        }),
      );
    }
    if (v !== undefined) params[k] = v;
  }
  const error = (code: string, description: string): Parsed =>
    fail(redirectTo(ctx, redirectUri, { error: code, error_description: description, state: params.state }));

  const responseType = params.response_type;
  if (responseType === undefined) return error('invalid_request', 'response_type is missing');
  if (responseType !== 'code')
    return error('unsupported_response_type', 'only response_type=code is supported');

  let challenge: AuthorizationRequest['challenge'] = null;
  const method = params.code_challenge_method;
  if (params.code_challenge !== undefined) {
    // RFC 7636 §4.3: without a method the challenge is plain.
    const m = method ?? 'plain';
    if (m !== 'S256' && m !== 'plain')
      return error('invalid_request', 'code_challenge_method must be S256 or plain');
    if (!RFC7636_VALUE.test(params.code_challenge))
      return error('invalid_request', 'code_challenge must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~');
    challenge = { value: params.code_challenge, method: m };
  } else if (method !== undefined) {
    return error('invalid_request', 'code_challenge_method without code_challenge');
  }

  const scope = effectiveScope(params.scope, client.defaultScope);
  if ('invalid' in scope) return error('invalid_scope', scope.invalid);

  if (client.samlProfile !== null) {
    // The client is registered for SAML single sign-on, which this server does not have: say so
    // rather than show a password form the client's users may not be meant to use.
    ctx.log.warn(
      { client: client.clientId, samlProfile: client.samlProfile },
      'OAuth client needs SAML: not configured',
    );
    return error(
      'server_error',
      `SAML profile "${client.samlProfile}" of this client is not configured: this server has no SAML single sign-on`,
    );
  }
  return { kind: 'ok', request: { client, params, redirectUri, scope: scope.scope, challenge } };
}

function pageContext(ctx: OAuthContext, request: AuthorizationRequest, csrf: string): PageContext {
  return {
    product: ctx.config.productToken,
    partition: ctx.partition,
    clientName: request.client.description ?? request.client.clientId,
    carried: { ...request.params, csrf },
  };
}

function page(
  request: AuthorizationRequest,
  status: number,
  html: string,
  csrfNonce?: string,
): BrowserOutcome {
  return {
    kind: 'page',
    status,
    html,
    formTargets: [formTarget(request.redirectUri)],
    ...(csrfNonce === undefined ? {} : { csrfNonce }),
  };
}

/** GET /oauth/authorize: checks the request, then shows the login page with a fresh CSRF token. */
export async function startAuthorization(
  ctx: OAuthContext,
  query: unknown,
  csrfCookie: string | undefined,
): Promise<BrowserOutcome> {
  const parsed = parseAuthorization(ctx, query);
  if (parsed.kind === 'fail') return parsed.outcome;
  // A nonce already in the cookie is kept, so two tabs signing in at once do not spoil each other.
  const nonce =
    csrfCookie !== undefined && NONCE.test(csrfCookie) ? csrfCookie : randomBytes(32).toString('base64url');
  const secret = await secretOf(ctx.db, ctx.partitionId);
  const pc = pageContext(ctx, parsed.request, csrfTokenFor(secret, nonce));
  return page(parsed.request, 200, loginPage(pc), nonce);
}

interface AccountRow {
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

const ACCOUNT_SQL = (condition: string): string => `
  SELECT u.id, u.login_name AS login, u.password_hash AS hash, u.activated, u.token_epoch AS epoch,
         u.tfa_secret, u.tfa_enabled, u.tfa_last_step,
         coalesce((SELECT array_agg(r.role ORDER BY r.role) FROM user_roles r
                    WHERE r.partition_id = u.partition_id AND r.user_id = u.id), '{}') AS roles
    FROM users u WHERE u.partition_id = $1 AND ${condition}`;

async function accountBy(db: Db, partitionId: number, by: 'login' | 'id', key: string | number) {
  const sql = ACCOUNT_SQL(by === 'login' ? 'lower(u.login_name) = lower($2)' : 'u.id = $2');
  return (await db.query<AccountRow>(sql, [partitionId, key])).rows[0] ?? null;
}

const field = (body: Record<string, unknown>, k: string): string | undefined =>
  typeof body[k] === 'string' ? body[k] : undefined;

/**
 * POST /oauth/authorize: the login, TFA and consent forms. Each is CSRF-checked (HMAC of the nonce
 * in the HttpOnly cookie), then carries the same authorization request, checked again from scratch.
 */
export async function continueAuthorization(
  ctx: OAuthContext,
  body: unknown,
  csrfCookie: string | undefined,
): Promise<BrowserOutcome> {
  const form = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const secret = await secretOf(ctx.db, ctx.partitionId);
  const sent = field(form, 'csrf');
  if (
    csrfCookie === undefined ||
    !NONCE.test(csrfCookie) ||
    sent === undefined ||
    !sameText(sent, csrfTokenFor(secret, csrfCookie))
  ) {
    return fatal(
      ctx,
      403,
      'This form has expired',
      'The form was not sent from this sign-in page, or it is too old (cookies must be enabled).',
    );
  }
  const parsed = parseAuthorization(ctx, form);
  if (parsed.kind === 'fail') return parsed.outcome;
  const request = parsed.request;
  const pc = pageContext(ctx, request, sent);
  switch (field(form, 'step') ?? '') {
    case 'login':
      return loginStep(
        ctx,
        secret,
        request,
        pc,
        field(form, 'username') ?? '',
        field(form, 'password') ?? '',
      );
    case 'tfa':
      return tfaStep(ctx, secret, request, pc, field(form, 'pending'), field(form, 'tfa_code'));
    case 'consent':
      return consentStep(ctx, secret, request, pc, field(form, 'proof'), field(form, 'decision'));
    default:
      return fatal(
        ctx,
        400,
        'Invalid sign-in request',
        'The form is incomplete; start again from the application.',
      );
  }
}

const BAD_LOGIN = 'The user name or password is wrong.';
const LOCKED = 'Too many failed sign-ins for this user. Wait a few minutes and try again.';

/** Password check exactly as Basic does it: lock-out first, same time and answer for unknown users. */
async function loginStep(
  ctx: OAuthContext,
  secret: Uint8Array,
  request: AuthorizationRequest,
  pc: PageContext,
  login: string,
  password: string,
): Promise<BrowserOutcome> {
  const { db, config: cfg } = ctx;
  if (login.trim() === '' || password === '')
    return page(request, 422, loginPage(pc, { error: 'Enter your user name and password.', login }));
  const failures = await isLockedOut(db, ctx.partitionId, login, cfg);
  if (failures.locked) {
    ctx.log.warn({ partition: ctx.partition, login }, 'OAuth login refused: locked out');
    return page(request, 429, loginPage(pc, { error: LOCKED, login }));
  }
  const row = await accountBy(db, ctx.partitionId, 'login', login);
  const ok = await verifyPassword(password, row?.hash ?? (await dummyHash(cfg.scryptCost)));
  if (!ok || row === null || !row.activated) {
    await recordFailure(db, ctx.partitionId, login, cfg);
    ctx.log.info({ partition: ctx.partition, login }, 'OAuth login failed');
    return page(request, 422, loginPage(pc, { error: BAD_LOGIN, login }));
  }
  if (row.tfa_enabled) {
    const pending = await signStage(secret, 'tfa', row.id, row.epoch, request.params, TFA_PENDING_SECONDS);
    return page(request, 200, tfaPage(pc, pending));
  }
  if (failures.count > 0) await clearFailures(db, ctx.partitionId, row.login);
  return showConsent(secret, request, pc, row);
}

async function tfaStep(
  ctx: OAuthContext,
  secret: Uint8Array,
  request: AuthorizationRequest,
  pc: PageContext,
  pending: string | undefined,
  code: string | undefined,
): Promise<BrowserOutcome> {
  const { db, config: cfg } = ctx;
  const who = await verifyStage(secret, 'tfa', pending, request.params);
  const row = who === null ? null : await accountBy(db, ctx.partitionId, 'id', who.userId);
  if (who === null || row === null || !row.activated || row.epoch !== who.epoch || !row.tfa_enabled) {
    return page(request, 422, loginPage(pc, { error: 'Your sign-in has expired. Sign in again.' }));
  }
  const failures = await isLockedOut(db, ctx.partitionId, row.login, cfg);
  if (failures.locked) return page(request, 429, loginPage(pc, { error: LOCKED, login: row.login }));
  const state = { secret: row.tfa_secret, enabled: true, lastStep: row.tfa_last_step };
  if (!(await acceptCode(db, ctx.partitionId, row.id, state, code))) {
    await recordFailure(db, ctx.partitionId, row.login, cfg);
    ctx.log.info({ partition: ctx.partition, login: row.login }, 'OAuth login failed: two-factor code');
    return page(request, 422, tfaPage(pc, pending!, { error: 'The code is wrong or was already used.' }));
  }
  if (failures.count > 0) await clearFailures(db, ctx.partitionId, row.login);
  return showConsent(secret, request, pc, row);
}

async function showConsent(
  secret: Uint8Array,
  request: AuthorizationRequest,
  pc: PageContext,
  row: AccountRow,
): Promise<BrowserOutcome> {
  const proof = await signStage(secret, 'consent', row.id, row.epoch, request.params, CONSENT_SECONDS);
  const held = permissionsOfRoles(row.roles);
  const permissions =
    request.scope === null ? null : request.scope.map((name) => ({ name, held: held.has(name) }));
  return page(request, 200, consentPage(pc, proof, row.login, { permissions }));
}

async function consentStep(
  ctx: OAuthContext,
  secret: Uint8Array,
  request: AuthorizationRequest,
  pc: PageContext,
  proof: string | undefined,
  decision: string | undefined,
): Promise<BrowserOutcome> {
  const who = await verifyStage(secret, 'consent', proof, request.params);
  const row = who === null ? null : await accountBy(ctx.db, ctx.partitionId, 'id', who.userId);
  if (who === null || row === null || !row.activated || row.epoch !== who.epoch) {
    return page(request, 422, loginPage(pc, { error: 'Your sign-in has expired. Sign in again.' }));
  }
  const state = request.params.state;
  if (decision === 'deny') {
    return redirectTo(ctx, request.redirectUri, {
      error: 'access_denied',
      error_description: 'the user denied access',
      state,
    });
  }
  if (decision !== 'allow') return fatal(ctx, 400, 'Invalid sign-in request', 'Choose Allow or Deny.');
  const code = await issueCode(ctx, request, row.id);
  ctx.log.info(
    { partition: ctx.partition, login: row.login, client: request.client.clientId },
    'OAuth code issued',
  );
  return redirectTo(ctx, request.redirectUri, { code, state });
}

const hashOf = (text: string): string => createHash('sha256').update(text).digest('hex');

async function issueCode(ctx: OAuthContext, request: AuthorizationRequest, userId: number): Promise<string> {
  const code = randomBytes(32).toString('base64url');
  await ctx.db.query(
    `INSERT INTO oauth_codes (partition_id, code_hash, client_id, redirect_uri, user_id, scope,
                              code_challenge, code_challenge_method, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))`,
    [
      ctx.partitionId,
      hashOf(code),
      request.client.clientId,
      request.params.redirect_uri ?? '',
      userId,
      request.scope,
      request.challenge?.value ?? null,
      request.challenge?.method ?? null,
      CODE_TTL_SECONDS,
    ],
  );
  // Used and expired codes are kept a day, so a late replay still revokes what the code produced.
  await ctx.db.query(
    `DELETE FROM oauth_codes WHERE partition_id = $1 AND expires_at < now() - interval '1 day'`,
    [ctx.partitionId],
  );
  return code;
}

// ---------------------------------------------------------------------------------------------
// The token endpoint

export interface TokenSuccess {
  readonly access_token: string;
  readonly token_type: 'bearer';
  readonly expires_in: number;
  readonly refresh_token: string;
  readonly scope?: string;
}

export type TokenErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope';

export type TokenOutcome =
  | { readonly kind: 'tokens'; readonly body: TokenSuccess }
  | {
      readonly kind: 'error';
      /** 401 for invalid_client, 400 otherwise (RFC 6749 §5.2). */
      readonly status: 400 | 401;
      readonly body: { readonly error: TokenErrorCode; readonly error_description: string };
      /** The client authenticated with Basic: the 401 must carry a Basic challenge. */
      readonly challenge: boolean;
    };

const tokenError = (error: TokenErrorCode, description: string, challenge = false): TokenOutcome => ({
  kind: 'error',
  status: error === 'invalid_client' ? 401 : 400,
  body: { error, error_description: description },
  challenge,
});

/** POST /oauth/token: client authentication, then the grant. */
export async function exchangeToken(
  ctx: OAuthContext,
  contentType: string | undefined,
  body: unknown,
  authorization: string | undefined,
): Promise<TokenOutcome> {
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(contentType ?? '')) {
    return tokenError('invalid_request', 'send the parameters as application/x-www-form-urlencoded');
  }
  const form = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(form)) {
    if (typeof v !== 'string') return tokenError('invalid_request', `parameter ${k} repeated`);
  }
  const p = form as Record<string, string | undefined>;
  const presented = presentedClient(authorization, {
    client_id: p.client_id,
    client_secret: p.client_secret,
  });
  if ('error' in presented) return tokenError('invalid_request', presented.error);
  const basic = presented.method === 'basic';
  const client = findClient(ctx.config.oauthConfiguration, presented.clientId);
  if (client === null) return tokenError('invalid_client', 'unknown client or no client_id', basic);
  if (!clientAuthenticates(client, presented))
    return tokenError('invalid_client', 'client authentication failed', basic);

  switch (p.grant_type) {
    case undefined:
      return tokenError('invalid_request', 'grant_type is missing');
    case 'authorization_code':
      return codeGrant(ctx, client, p);
    case 'refresh_token':
      return refreshGrant(ctx, client, p);
    default:
      return tokenError('unsupported_grant_type', 'grant types: authorization_code, refresh_token');
  }
}

interface CodeRow {
  client_id: string;
  redirect_uri: string;
  user_id: number;
  scope: Permission[] | null;
  code_challenge: string | null;
  code_challenge_method: 'S256' | 'plain' | null;
}

function pkceMatches(row: CodeRow, verifier: string | undefined): string | null {
  if (row.code_challenge === null) {
    // RFC 9700 §2.1.1: a verifier for a request that had no challenge is a downgrade attempt.
    return verifier === undefined
      ? null
      : 'code_verifier sent, but the authorization request had no code_challenge';
  }
  if (verifier === undefined) return 'code_verifier is missing';
  if (!RFC7636_VALUE.test(verifier)) return 'code_verifier is malformed';
  const computed =
    row.code_challenge_method === 'S256'
      ? createHash('sha256').update(verifier).digest('base64url')
      : verifier;
  return sameText(computed, row.code_challenge) ? null : 'code_verifier does not match the code_challenge';
}

type Grant =
  | {
      readonly ok: true;
      readonly grantId: number;
      readonly userId: number;
      readonly epoch: number;
      readonly scope: Permission[] | null;
    }
  | { readonly ok: false; readonly outcome: TokenOutcome };

/**
 * authorization_code (RFC 6749 §4.1.3). Consuming the code, creating the grant and linking the two
 * are one transaction: a concurrent replay waits for it, then finds the grant to revoke.
 */
async function codeGrant(
  ctx: OAuthContext,
  client: OAuthClient,
  p: Record<string, string | undefined>,
): Promise<TokenOutcome> {
  if (p.code === undefined) return tokenError('invalid_request', 'code is missing');
  const codeHash = hashOf(p.code);
  const result = await ctx.db.transaction(async (tx): Promise<Grant> => {
    const failed = (o: TokenOutcome): Grant => ({ ok: false, outcome: o });
    const used = await tx.query<CodeRow>(
      `UPDATE oauth_codes SET used_at = now()
        WHERE partition_id = $1 AND code_hash = $2 AND used_at IS NULL AND expires_at > now()
        RETURNING client_id, redirect_uri, user_id, scope, code_challenge, code_challenge_method`,
      [ctx.partitionId, codeHash],
    );
    const row = used.rows[0];
    if (row === undefined) {
      const seen = await tx.query<{ used: boolean; grant_id: number | null; user_id: number }>(
        'SELECT used_at IS NOT NULL AS used, grant_id, user_id FROM oauth_codes WHERE partition_id = $1 AND code_hash = $2',
        [ctx.partitionId, codeHash],
      );
      const old = seen.rows[0];
      if (old?.used === true) {
        // RFC 6749 §4.1.2: a code used twice revokes the tokens issued for it. revoked_by names
        // the grant's own user: nobody revoked it by hand.
        if (old.grant_id !== null) await revokeApiToken(tx, ctx.partitionId, old.grant_id, old.user_id);
        ctx.log.warn(
          { partition: ctx.partition, client: client.clientId, grant: old.grant_id },
          'OAuth code replayed',
        );
        return failed(
          tokenError(
            'invalid_grant',
            'authorization code already used; the tokens issued for it are revoked',
          ),
        );
      }
      return failed(tokenError('invalid_grant', 'authorization code unknown or expired'));
    }
    // The code is spent from here on, whatever follows: a failed exchange is not retried.
    if (row.client_id !== client.clientId)
      return failed(tokenError('invalid_grant', 'authorization code issued to another client'));
    const expected = row.redirect_uri === '' ? client.redirectUri : row.redirect_uri;
    if (row.redirect_uri !== '' && p.redirect_uri === undefined)
      return failed(
        tokenError('invalid_request', 'redirect_uri is missing (the authorization request had one)'),
      );
    if (p.redirect_uri !== undefined && p.redirect_uri !== expected)
      return failed(tokenError('invalid_grant', 'redirect_uri does not match the authorization request'));
    const pkce = pkceMatches(row, p.code_verifier);
    if (pkce !== null) return failed(tokenError('invalid_grant', pkce));
    const user = await tx.query<{ epoch: number }>(
      'SELECT token_epoch AS epoch FROM users WHERE partition_id = $1 AND id = $2 AND activated',
      [ctx.partitionId, row.user_id],
    );
    if (user.rows[0] === undefined)
      return failed(tokenError('invalid_grant', 'the user is no longer active'));
    // permissions = scope, so token listings show the restriction like that of an api token.
    const grant = await tx.query<{ id: number }>(
      `INSERT INTO api_tokens (partition_id, user_id, permissions, kind, client_id, scope)
       VALUES ($1, $2, $3, 'oauth', $4, $3) RETURNING id`,
      [ctx.partitionId, row.user_id, row.scope, client.clientId],
    );
    const grantId = grant.rows[0]!.id;
    await tx.query('UPDATE oauth_codes SET grant_id = $3 WHERE partition_id = $1 AND code_hash = $2', [
      ctx.partitionId,
      codeHash,
      grantId,
    ]);
    return { ok: true, grantId, userId: row.user_id, epoch: user.rows[0].epoch, scope: row.scope };
  });
  if (!result.ok) return result.outcome;
  const secret = await secretOf(ctx.db, ctx.partitionId);
  const refresh = await signSession(
    secret,
    {
      userId: result.userId,
      partition: ctx.partition,
      epoch: result.epoch,
      sid: `oauth-${result.grantId}`,
      kind: 'refresh',
      tokenId: result.grantId,
    },
    REFRESH_TTL_SECONDS,
  );
  return issueAccess(ctx, secret, client, result, refresh);
}

async function issueAccess(
  ctx: OAuthContext,
  secret: Uint8Array,
  client: OAuthClient,
  grant: { grantId: number; userId: number; epoch: number; scope: readonly Permission[] | null },
  refreshToken: string,
): Promise<TokenOutcome> {
  const access = await signSession(
    secret,
    {
      userId: grant.userId,
      partition: ctx.partition,
      epoch: grant.epoch,
      sid: `oauth-${grant.grantId}`,
      kind: 'oauth',
      tokenId: grant.grantId,
      // Rule 3: no scope, no scp claim; the token is then a normal session.
      ...(grant.scope === null ? {} : { scope: grant.scope }),
    },
    client.tokenExpiry,
  );
  const scope = scopeText(grant.scope);
  return {
    kind: 'tokens',
    body: {
      access_token: access,
      token_type: 'bearer',
      expires_in: client.tokenExpiry,
      refresh_token: refreshToken,
      ...(scope === undefined ? {} : { scope }),
    },
  };
}

interface GrantRow {
  user_id: number;
  client_id: string | null;
  kind: string;
  scope: Permission[] | null;
  live: boolean;
  epoch: number;
  activated: boolean;
}

/**
 * refresh_token (RFC 6749 §6): the refresh token is ours, of kind refresh, for this client, and its
 * grant lives. A `scope` may narrow the grant's, never widen it. The refresh token is not rotated:
 * it stays valid until it expires or its grant is revoked, so the same one is answered.
 */
async function refreshGrant(
  ctx: OAuthContext,
  client: OAuthClient,
  p: Record<string, string | undefined>,
): Promise<TokenOutcome> {
  if (p.refresh_token === undefined) return tokenError('invalid_request', 'refresh_token is missing');
  const secret = await secretOf(ctx.db, ctx.partitionId);
  const claims = await verifySession(p.refresh_token, secret);
  if (
    claims === null ||
    claims.knd !== 'refresh' ||
    claims.ptn !== ctx.partition ||
    claims.tid === undefined
  ) {
    return tokenError('invalid_grant', 'refresh token invalid or expired');
  }
  const r = await ctx.db.query<GrantRow>(
    `SELECT t.user_id, t.client_id, t.kind, t.scope, u.token_epoch AS epoch, u.activated,
            (t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())) AS live
       FROM api_tokens t JOIN users u ON u.partition_id = t.partition_id AND u.id = t.user_id
      WHERE t.partition_id = $1 AND t.id = $2`,
    [ctx.partitionId, claims.tid],
  );
  const g = r.rows[0];
  if (
    g === undefined ||
    !g.live ||
    g.kind !== 'oauth' ||
    String(g.user_id) !== claims.sub ||
    !g.activated ||
    g.epoch !== claims.epc
  ) {
    return tokenError('invalid_grant', 'refresh token revoked or expired');
  }
  if (g.client_id !== client.clientId)
    return tokenError('invalid_grant', 'refresh token issued to another client');
  let scope = g.scope;
  if (p.scope !== undefined && p.scope.trim() !== '') {
    const asked = permissionNames(p.scope);
    if (asked.size === 0) return tokenError('invalid_scope', 'the requested scope names no known permission');
    if (g.scope !== null && [...asked].some((n) => !g.scope!.includes(n)))
      return tokenError('invalid_scope', 'the requested scope exceeds the scope of the grant');
    scope = ordered(asked);
  }
  return issueAccess(
    ctx,
    secret,
    client,
    { grantId: claims.tid, userId: g.user_id, epoch: g.epoch, scope },
    p.refresh_token,
  );
}

// ---------------------------------------------------------------------------------------------
// Metadata

/** RFC 8414 authorization server metadata. */
export function metadata(ctx: OAuthContext): Record<string, unknown> {
  return {
    issuer: ctx.issuer,
    authorization_endpoint: `${ctx.issuer}/oauth/authorize`,
    token_endpoint: `${ctx.issuer}/oauth/token`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256', 'plain'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    scopes_supported: [...PERMISSIONS],
    authorization_response_iss_parameter_supported: true,
  };
}
