// Password hashing with node:crypto scrypt (salted, cost tunable by SCRYPT_COST). The stored form is
// `scrypt$N$r$p$salt$hash` (base64url), so the cost can rise later without invalidating old hashes.

import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const KEY_LEN = 32;
const R = 8;
const P = 1;

function derive(password: string, salt: Buffer, opts: ScryptOptions): Promise<Buffer> {
  const N = opts.N ?? 16_384;
  const r = opts.r ?? R;
  // scrypt needs 128·N·r bytes; give it headroom so high costs do not fail with "memory limit exceeded".
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_LEN, { ...opts, maxmem: 256 * N * r + 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string, cost: number): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, { N: cost, r: R, p: P });
  return ['scrypt', cost, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/**
 * Constant-time check; a malformed stored hash is simply "no match". A password with NUL never
 * matches: scrypt's HMAC pads its key with NUL bytes, so `pw\u0000` derived the key of `pw` (no set
 * password holds NUL: the policy refuses it).
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltText, keyText] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(keyText, 'base64url');
  const key = await derive(password, Buffer.from(saltText, 'base64url'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return key.length === expected.length && timingSafeEqual(key, expected) && !password.includes('\u0000');
}

const dummyHashes = new Map<number, Promise<string>>();

/**
 * A hash to verify against when the user does not exist, so that an unknown user costs the same
 * time as a wrong password and the two cannot be told apart.
 */
export function dummyHash(cost: number): Promise<string> {
  let h = dummyHashes.get(cost);
  if (!h) {
    h = hashPassword(randomBytes(16).toString('hex'), cost);
    dummyHashes.set(cost, h);
  }
  return h;
}
