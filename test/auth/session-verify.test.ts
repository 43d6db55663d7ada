// verifySession keeps tokens it verified (one HMAC per token, not per request); a kept token still
// needs the same key and must not have expired, exactly as a fresh verification would decide.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { signSession, verifySession } from '../../src/auth/session.ts';

const spec = { userId: 7, partition: 'p1', epoch: 3, sid: 'sid-1' };

test('a verified token verifies again with the same key, and only with it', async () => {
  const key = randomBytes(32);
  const token = await signSession(key, spec, 3600);
  const first = await verifySession(token, key);
  assert.equal(first?.sub, '7');
  assert.deepEqual(await verifySession(token, Buffer.from(key)), first);
  assert.equal(await verifySession(token, randomBytes(32)), null);
  // A rotated key refuses it from then on; the old key still verifies it.
  assert.deepEqual(await verifySession(token, key), first);
});

test('a verified token is refused once it expires', async () => {
  const key = randomBytes(32);
  const token = await signSession(key, spec, 2);
  assert.notEqual(await verifySession(token, key), null);
  await new Promise((r) => setTimeout(r, 3100));
  assert.equal(await verifySession(token, key), null);
});

test('forged and malformed tokens are refused, before and after a valid one was kept', async () => {
  const key = randomBytes(32);
  const token = await signSession(key, spec, 3600);
  const [h, p] = token.split('.');
  const forged = `${h}.${p}.${'A'.repeat(43)}`;
  assert.equal(await verifySession(forged, key), null);
  assert.notEqual(await verifySession(token, key), null);
  assert.equal(await verifySession(forged, key), null);
  assert.equal(await verifySession('garbage', key), null);
});
