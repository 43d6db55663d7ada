// What carries a sign-in from one page of /oauth/authorize to the next, with no state on the server:
// the CSRF token (an HMAC of the nonce in an HttpOnly cookie) and the signed stage values (TFA
// pending, consent proof), bound to the user, their token epoch and the authorization request.
// Both are keyed from the partition's secret (store.ts) through keys of their own.

import { createHash, createHmac } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';

/** The CSRF nonce cookie outlives a slow login, not a day. */
export const CSRF_COOKIE_SECONDS = 1800;

/** The parameters of an authorization request that the pages carry from form to form. */
export const CARRIED = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
] as const;
export type Params = Partial<Record<(typeof CARRIED)[number], string>>;

/** A key of its own for the forms, so nothing they carry can ever verify as a session token. */
const formKey = (secret: Uint8Array): Uint8Array =>
  createHmac('sha256', secret).update('ratecard-oauth-form').digest();

export const csrfTokenFor = (secret: Uint8Array, nonce: string): string =>
  createHmac('sha256', secret).update(`oauth-csrf:${nonce}`).digest('base64url');

export const NONCE = /^[A-Za-z0-9_-]{43}$/;

const FORM_AUDIENCE = 'ratecard-oauth-form';
type Stage = 'tfa' | 'consent';

/** Binds a login to one authorization request, so a login for one client cannot consent for another. */
const requestHash = (p: Params): string =>
  createHash('sha256')
    .update(JSON.stringify(CARRIED.map((k) => p[k] ?? null)))
    .digest('base64url');

export async function signStage(
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
export async function verifyStage(
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
