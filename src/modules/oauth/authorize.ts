// The authorization endpoint (RFC 6749 §4.1, with optional PKCE per RFC 7636): GET and POST
// /oauth/authorize. The flow: the client and redirect URI first (never redirect elsewhere) → the
// other parameters (errors go back by redirect) → login page → [TFA page] → consent page → a code,
// stored hashed in oauth_codes for the token endpoint (token.ts) to exchange.

import { randomBytes } from 'node:crypto';
import { permissionsOfRoles } from '../../access/access.ts';
import type { Permission } from '../../access/catalogue.ts';
import { takeAttempt } from '../../auth/login-guard.ts';
import { dummyHash, verifyPassword } from '../../auth/password.ts';
import { acceptCode } from '../../auth/tfa.ts';
import { validationError, type AppError } from '../../http/errors.ts';
import { CARRIED, NONCE, csrfTokenFor, signStage, verifyStage, type Params } from './browser-state.ts';
import { findClient, type OAuthClient } from './clients.ts';
import { consentPage, errorPage, loginPage, tfaPage, type PageContext } from './pages.ts';
import { effectiveScope } from './scope.ts';
import {
  RFC7636_VALUE,
  accountBy,
  hashOf,
  sameText,
  secretOf,
  type AccountRow,
  type OAuthContext,
} from './store.ts';

const CODE_TTL_SECONDS = 600;
/** The signed values that carry a login from one page to the next. */
const TFA_PENDING_SECONDS = 300;
const CONSENT_SECONDS = 600;

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
  | { readonly kind: 'redirect'; readonly location: string }
  /** A request no client of ours can have sent: the API's error envelope, as any other API error. */
  | { readonly kind: 'error'; readonly error: AppError };

type Parsed =
  | { readonly kind: 'ok'; readonly request: AuthorizationRequest }
  | { readonly kind: 'fail'; readonly outcome: BrowserOutcome };

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
  // Before the client is known good there is nobody to redirect to: the error envelope (400/-4
  // naming the parameter), as the conventions answer any API request, never an HTML error page.
  const refuse = (param: string, message: string): Parsed =>
    fail({ kind: 'error', error: validationError(param, message) });
  const clientId = one('client_id');
  if (clientId === null) return refuse('client_id', 'must be given once');
  if (one('redirect_uri') === null) return refuse('redirect_uri', 'must be given once');
  if (clientId === undefined) return refuse('client_id', 'is missing: the request names no client');
  const client = findClient(ctx.config.oauthConfiguration, clientId);
  if (client === null)
    return refuse('client_id', `no application with client_id "${clientId.slice(0, 100)}" is registered`);
  const given = one('redirect_uri');
  if (given !== undefined && given !== client.redirectUri)
    return refuse('redirect_uri', 'is not the one registered for this application');
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
  // No user name holds NUL (the database cannot take it as text): a wrong login, answered as one.
  if (login.includes('\u0000'))
    return page(request, 422, loginPage(pc, { error: BAD_LOGIN, login: login.replaceAll('\u0000', '') }));
  // Gated by the lock-out (../../auth/login-guard.ts); a TFA user's right password counts as a
  // failure until the code step succeeds.
  const attempt = await takeAttempt(db, ctx.partitionId, login, cfg);
  if (attempt.locked) {
    ctx.log.warn({ partition: ctx.partition, login }, 'OAuth login refused: locked out');
    return page(request, 429, loginPage(pc, { error: LOCKED, login }));
  }
  let outcome: 'success' | 'failure' | 'pending' = 'failure';
  try {
    const row = await accountBy(db, ctx.partitionId, 'login', login);
    const ok = await verifyPassword(password, row?.hash ?? (await dummyHash(cfg.scryptCost)));
    if (!ok || row === null || !row.activated) {
      ctx.log.info({ partition: ctx.partition, login }, 'OAuth login failed');
      return page(request, 422, loginPage(pc, { error: BAD_LOGIN, login }));
    }
    if (row.tfa_enabled) {
      outcome = 'pending';
      const pending = await signStage(secret, 'tfa', row.id, row.epoch, request.params, TFA_PENDING_SECONDS);
      return page(request, 200, tfaPage(pc, pending));
    }
    outcome = 'success';
    return await showConsent(secret, request, pc, row);
  } finally {
    await attempt.done(outcome);
  }
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
  const attempt = await takeAttempt(db, ctx.partitionId, row.login, cfg);
  if (attempt.locked) return page(request, 429, loginPage(pc, { error: LOCKED, login: row.login }));
  let outcome: 'success' | 'failure' = 'failure';
  try {
    const state = { secret: row.tfa_secret, enabled: true, lastStep: row.tfa_last_step };
    if (!(await acceptCode(db, ctx.partitionId, row.id, state, code))) {
      ctx.log.info({ partition: ctx.partition, login: row.login }, 'OAuth login failed: two-factor code');
      return page(request, 422, tfaPage(pc, pending!, { error: 'The code is wrong or was already used.' }));
    }
    outcome = 'success';
  } finally {
    await attempt.done(outcome);
  }
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

async function issueCode(ctx: OAuthContext, request: AuthorizationRequest, userId: number): Promise<string> {
  const code = randomBytes(32).toString('base64url');
  await ctx.db.query(
    `INSERT INTO oauth_codes (partition_id, code_hash, client_id, redirect_uri, user_id, scope,
                              code_challenge, code_challenge_method, expires_at, token_epoch)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9),
             (SELECT token_epoch FROM users WHERE partition_id = $1 AND id = $5))`,
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
