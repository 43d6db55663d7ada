// Session tokens: HS256 JWTs signed with the partition's own secret, so a token of one partition can
// never verify in another. Claims: sub (user id), ptn (partition name), epc (the user's token epoch),
// sid (session id, kept across re-issues; the CSRF token is derived from it), iat, exp.

import { createHmac } from 'node:crypto';
import { SignJWT, decodeJwt, jwtVerify } from 'jose';

export interface SessionClaims {
  readonly sub: string;
  readonly ptn: string;
  readonly epc: number;
  readonly sid: string;
  readonly iat: number;
  readonly exp: number;
}

export async function signSession(
  secret: Uint8Array,
  claims: { userId: number; partition: string; epoch: number; sid: string },
  ttlSeconds: number,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ ptn: claims.partition, epc: claims.epoch, sid: claims.sid })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(String(claims.userId))
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSeconds)
    .sign(secret);
}

/** Reads the claims without verifying, only to know whom to load; `verifySession` decides. */
export function peekSession(token: string): { sub: string; ptn: string } | null {
  try {
    const c = decodeJwt(token);
    return typeof c.sub === 'string' && typeof c.ptn === 'string' ? { sub: c.sub, ptn: c.ptn } : null;
  } catch {
    return null;
  }
}

export async function verifySession(token: string, secret: Uint8Array): Promise<SessionClaims | null> {
  try {
    const { payload } = await jwtVerify(token, secret, {
      algorithms: ['HS256'],
      requiredClaims: ['exp', 'iat', 'sub'],
    });
    const { sub, ptn, epc, sid, iat, exp } = payload;
    if (
      typeof sub !== 'string' ||
      typeof ptn !== 'string' ||
      typeof epc !== 'number' ||
      typeof sid !== 'string'
    ) {
      return null;
    }
    return { sub, ptn, epc, sid, iat: iat!, exp: exp! };
  } catch {
    return null;
  }
}

/** The CSRF token of a session: derived, so nothing needs to be stored. */
export function csrfTokenOf(secret: Uint8Array, sid: string): string {
  return createHmac('sha256', secret).update(`csrf:${sid}`).digest('base64url');
}
