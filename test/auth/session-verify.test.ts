// verifySession's cache of verified tokens: a hit answers the same claims, but never under another
// secret, never once the token has expired, and never for a token that did not verify.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { signSession, verifySession } from '../../src/auth/session.ts';

const spec = { userId: 7, partition: 'p1', epoch: 2, sid: 's-1' };

test('a verified token verifies again from the cache, with the same claims', async () => {
  const secret = randomBytes(32);
  const token = await signSession(secret, spec, 60);
  const first = await verifySession(token, secret);
  assert.equal(first?.sub, '7');
  assert.deepEqual(await verifySession(token, new Uint8Array(secret)), first, 'equal bytes, another array');
});

test('a cached token does not verify under another secret (rotation)', async () => {
  const secret = randomBytes(32);
  const token = await signSession(secret, spec, 60);
  assert.notEqual(await verifySession(token, secret), null);
  assert.equal(await verifySession(token, randomBytes(32)), null);
  assert.notEqual(await verifySession(token, secret), null, 'the right secret still verifies');
});

test('a cached token stops verifying when it expires', async (t) => {
  const secret = randomBytes(32);
  const token = await signSession(secret, spec, 2);
  assert.notEqual(await verifySession(token, secret), null);
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() + 3_000 });
  try {
    assert.equal(await verifySession(token, secret), null);
  } finally {
    t.mock.timers.reset();
  }
});

test('a tampered token is refused, before and after its original was cached', async () => {
  const secret = randomBytes(32);
  const token = await signSession(secret, spec, 60);
  const [h, p, s] = token.split('.');
  const forged = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: '1' })).toString('base64url')}.${s}`;
  assert.equal(await verifySession(forged, secret), null);
  assert.notEqual(await verifySession(token, secret), null);
  assert.equal(await verifySession(forged, secret), null);
  assert.equal(await verifySession(`${token}x`, secret), null);
});
