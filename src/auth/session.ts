// Tokens we sign: HS256 JWTs with the partition's own secret, so a token of one partition never
// verifies in another. Claims: sub (user id), ptn (partition), epc (the user's token epoch), sid
// (session id, kept across re-issues; the CSRF token derives from it), knd (kind), iat, exp, and
// optionally scp (the only permissions the token may use) and tid (the api_tokens row).

import { createHmac } from 'node:crypto';
import { SignJWT, decodeJwt, jwtVerify } from 'jose';

/**
 * session: a login session (cookie or header); api: from getjsonwebtoken (revocable, may never
 * expire); oauth: an OAuth access token; refresh: an OAuth refresh token — never a credential.
 */
export type TokenKind = 'session' | 'api' | 'oauth' | 'refresh';
const KINDS: readonly TokenKind[] = ['session', 'api', 'oauth', 'refresh'];

export interface SessionClaims {
  readonly sub: string;
  readonly ptn: string;
  readonly epc: number;
  readonly sid: string;
  readonly knd: TokenKind;
  readonly scp: readonly string[] | undefined;
  readonly tid: number | undefined;
  readonly iat: number;
  readonly exp: number | undefined;
}

export interface TokenSpec {
  readonly userId: number;
  readonly partition: string;
  readonly epoch: number;
  readonly sid: string;
  readonly kind?: TokenKind;
  readonly scope?: readonly string[];
  readonly tokenId?: number;
}

/** Signs a token; `ttlSeconds` null makes a non-expiring token (api tokens only). */
export async function signSession(
  secret: Uint8Array,
  spec: TokenSpec,
  ttlSeconds: number | null,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    ptn: spec.partition,
    epc: spec.epoch,
    sid: spec.sid,
    knd: spec.kind ?? 'session',
  };
  if (spec.scope !== undefined) claims.scp = spec.scope;
  if (spec.tokenId !== undefined) claims.tid = spec.tokenId;
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(String(spec.userId))
    .setIssuedAt(now);
  if (ttlSeconds !== null) jwt.setExpirationTime(now + ttlSeconds);
  return jwt.sign(secret);
}

/** Reads the claims without verifying, only to know whom to load; `verifySession` decides. */
export function peekSession(token: string): { sub: string; ptn: string; tid: number | undefined } | null {
  try {
    const c = decodeJwt(token);
    if (typeof c.sub !== 'string' || typeof c.ptn !== 'string') return null;
    // (Unverified claims reach the account query: a token id that is not one is no token of ours.)
    if (c.tid !== undefined && !(Number.isSafeInteger(c.tid) && (c.tid as number) > 0)) return null;
    return { sub: c.sub, ptn: c.ptn, tid: c.tid as number | undefined };
  } catch {
    return null;
  }
}

/**
 * Tokens verified before, with the secret they verified under: a client sends the same token on
 * every call, and the HMAC check through WebCrypto (jose) cost about a tenth of the server's CPU per
 * call (/formulamanager.execute, 32 clients). A hit needs the same secret bytes and an unexpired
 * token; revocation (epoch, api_tokens row, active user) is still checked per call by the caller.
 * Bounded: the oldest entries go first.
 */
const verified = new Map<string, { readonly claims: SessionClaims; readonly secret: Buffer }>();
const VERIFIED_MAX = 10_000;

const bytesOf = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

export async function verifySession(token: string, secret: Uint8Array): Promise<SessionClaims | null> {
  const hit = verified.get(token);
  if (hit !== undefined && hit.secret.equals(bytesOf(secret))) {
    // jose's rule: expired when exp <= now.
    if (hit.claims.exp === undefined || hit.claims.exp > Math.floor(Date.now() / 1000)) return hit.claims;
    verified.delete(token);
    return null;
  }
  const claims = await verifyUncached(token, secret);
  if (claims !== null) {
    if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value!);
    verified.set(token, { claims, secret: Buffer.from(secret) });
  }
  return claims;
}

async function verifyUncached(token: string, secret: Uint8Array): Promise<SessionClaims | null> {
  try {
    const { payload } = await jwtVerify(token, secret, {
      algorithms: ['HS256'],
      requiredClaims: ['iat', 'sub'],
    });
    const { sub, ptn, epc, sid, knd, scp, tid, iat, exp } = payload;
    if (
      typeof sub !== 'string' ||
      typeof ptn !== 'string' ||
      typeof epc !== 'number' ||
      typeof sid !== 'string'
    ) {
      return null;
    }
    const kind = KINDS.find((k) => k === knd);
    if (kind === undefined) return null;
    // Only api tokens may live forever.
    if (exp === undefined && kind !== 'api') return null;
    if (scp !== undefined && !(Array.isArray(scp) && scp.every((s) => typeof s === 'string'))) return null;
    return {
      sub,
      ptn,
      epc,
      sid,
      knd: kind,
      scp: scp,
      tid: typeof tid === 'number' ? tid : undefined,
      iat: iat!,
      exp,
    };
  } catch {
    return null;
  }
}

/** The CSRF token of a session: derived, so nothing needs to be stored. */
export function csrfTokenOf(secret: Uint8Array, sid: string): string {
  return createHmac('sha256', secret).update(`csrf:${sid}`).digest('base64url');
}
