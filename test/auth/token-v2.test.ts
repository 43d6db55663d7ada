// API version 2 tokens over HTTP on both databases: POST /token answers plain JSON; the access token
// works as Bearer on operations, the refresh token never does; refresh rotates (the old refresh
// token and the old access token stop working); DELETE /token revokes the pair; bad credentials,
// lock-out, TFA, a foreign partition, a password change and malformed bodies.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generate } from 'otplib';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness, type Reply } from '../helpers/app.ts';

const status = (r: Reply): [number, number | undefined] => [r.status, r.body?.response?.status];

describe('API version 2 token', () => {
  let h: Harness;
  let other: Harness;

  const issue = (body: unknown, headers: Record<string, string> = {}) => h.call('/token', { body, headers });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const fetchP = (token: string) => h.call('/fetch/P', { headers: bearer(token), body: {} });

  before(async () => {
    h = await startHarness({ env: { LOGIN_MAX_FAILURES: '3', TOKEN_V2_ACCESS_SECONDS: '600' } });
    other = await startHarness({ shareDbWith: h });
    await h.newUser('plain', 'plain-password-1');
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('issue: plain JSON pair; the access token works as Bearer; the refresh token never does', async () => {
    const r = await issue({ username: ADMIN, password: ADMIN_PASSWORD });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.body).sort(), [
      'access-token',
      'expires-in',
      'refresh-token',
      'token-type',
    ]);
    assert.equal(r.body['token-type'], 'Bearer');
    assert.equal(r.body['expires-in'], 600);
    assert.equal(r.headers.get('cache-control'), 'no-store');
    assert.equal(r.body.response, undefined, 'not the envelope');
    assert.equal(status(await fetchP(r.body['access-token']))[0], 200);
    assert.deepEqual(status(await fetchP(r.body['refresh-token'])), [401, -7]);
    // Also as the session header: the access token is one of our tokens.
    const viaHeader = await h.call('/fetch/P', {
      headers: { 'X-Ratecard-jwt': r.body['access-token'] },
      body: {},
    });
    assert.equal(viaHeader.status, 200);
    // The partition in the body must be the path's; the login name is case-insensitive as with Basic.
    assert.equal(
      (await issue({ username: 'ADMIN', password: ADMIN_PASSWORD, partition: h.partition })).status,
      200,
    );
    const wrong = await issue({ username: ADMIN, password: ADMIN_PASSWORD, partition: other.partition });
    assert.deepEqual(status(wrong), [400, -4]);
    assert.ok(wrong.body.response.errors.partition);
  });

  test('the access token of one partition is refused in another', async () => {
    const r = await issue({ username: ADMIN, password: ADMIN_PASSWORD });
    const foreign = await other.call('/fetch/P', { headers: bearer(r.body['access-token']), body: {} });
    assert.deepEqual(status(foreign), [401, -7]);
    const refresh = await other.call('/token/refresh', {
      body: { 'refresh-token': r.body['refresh-token'] },
    });
    assert.deepEqual(status(refresh), [401, -7]);
  });

  test('refresh rotates: a new pair; the old refresh token (and old access token) stop working', async () => {
    const first = (await issue({ username: 'plain', password: 'plain-password-1' })).body;
    const r = await h.call('/token/refresh', { body: { 'refresh-token': first['refresh-token'] } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body['token-type'], 'Bearer');
    assert.notEqual(r.body['refresh-token'], first['refresh-token']);
    assert.equal((await fetchP(r.body['access-token'])).status, 200);
    assert.deepEqual(
      status(await h.call('/token/refresh', { body: { 'refresh-token': first['refresh-token'] } })),
      [401, -7],
      'the old refresh token is used up',
    );
    assert.deepEqual(status(await fetchP(first['access-token'])), [401, -7]);
    // An access token is not a refresh token; garbage is refused the same way.
    for (const t of [r.body['access-token'], 'not-a-token', first['access-token'] + 'x']) {
      assert.deepEqual(status(await h.call('/token/refresh', { body: { 'refresh-token': t } })), [401, -7]);
    }
    // Concurrent refreshes of one token: exactly one wins.
    const tok = r.body['refresh-token'];
    const both = await Promise.all(
      [1, 2].map(() => h.call('/token/refresh', { body: { 'refresh-token': tok } })),
    );
    assert.deepEqual(both.map((x) => x.status).sort(), [200, 401]);
  });

  test('DELETE /token revokes the access token and its refresh token: 204', async () => {
    const p = (await issue({ username: 'plain', password: 'plain-password-1' })).body;
    const del = await h.call('/token', { method: 'DELETE', headers: bearer(p['access-token']) });
    assert.equal(del.status, 204, del.text);
    assert.equal(del.text, '');
    assert.deepEqual(status(await fetchP(p['access-token'])), [401, -7]);
    assert.deepEqual(
      status(await h.call('/token/refresh', { body: { 'refresh-token': p['refresh-token'] } })),
      [401, -7],
    );
    assert.deepEqual(
      status(await h.call('/token', { method: 'DELETE', headers: bearer(p['access-token']) })),
      [401, -7],
    );
    // Without credentials 401; with Basic (not an access token) -4; other tokens of the user live on.
    assert.deepEqual(status(await h.call('/token', { method: 'DELETE' })), [401, -7]);
    const basic = await h.call('/token', {
      method: 'DELETE',
      basic: { user: 'plain', password: 'plain-password-1' },
    });
    assert.deepEqual(status(basic), [400, -4]);
  });

  test('bad credentials are 401/-5; repeated failures lock out (-6) as with Basic', async () => {
    await h.newUser('lockme', 'lockme-password-1');
    assert.deepEqual(status(await issue({ username: 'nobody', password: 'x' })), [401, -5]);
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(status(await issue({ username: 'lockme', password: 'wrong' })), [401, -5]);
    }
    assert.deepEqual(status(await issue({ username: 'lockme', password: 'lockme-password-1' })), [401, -6]);
    // Basic shares the counter.
    const basic = await h.call('/login/extended', {
      basic: { user: 'lockme', password: 'lockme-password-1' },
    });
    assert.deepEqual(status(basic), [401, -6]);
  });

  test('malformed bodies are -4 naming the field', async () => {
    for (const [body, field] of [
      [{ password: 'x' }, 'username'],
      [{ username: 'a' }, 'password'],
      [{ username: 'a', password: 'b', extra: 1 }, 'extra'],
      [{ username: 5, password: 'b' }, 'username'],
    ] as const) {
      const r = await issue(body);
      assert.deepEqual(status(r), [400, -4]);
      assert.ok(r.body.response.errors[field], JSON.stringify(r.body));
    }
    const r = await h.call('/token/refresh', { body: {} });
    assert.deepEqual(status(r), [400, -4]);
    assert.ok(r.body.response.errors['refresh-token']);
  });

  test('a password change invalidates issued pairs', async () => {
    const id = await h.newUser('changer', 'changer-password-1');
    const p = (await issue({ username: 'changer', password: 'changer-password-1' })).body;
    await h.db.query('UPDATE users SET token_epoch = token_epoch + 1 WHERE partition_id = $1 AND id = $2', [
      h.partitionId,
      id,
    ]);
    assert.deepEqual(status(await fetchP(p['access-token'])), [401, -7]);
    assert.deepEqual(
      status(await h.call('/token/refresh', { body: { 'refresh-token': p['refresh-token'] } })),
      [401, -7],
    );
  });

  test('TFA: the code goes in the Ratecard-TFA header; missing or replayed is 401', async () => {
    await h.newUser('secure', 'secure-password-1', ['ADMIN']);
    const basic = { user: 'secure', password: 'secure-password-1' };
    const { secret } = (await h.call('/accountmanager.tfa.enroll', { basic })).body.response.data[0];
    const now = Math.floor(Date.now() / 1000);
    const code = await generate({ secret, epoch: now });
    assert.equal(
      (await h.call('/accountmanager.tfa.confirm', { basic, body: { data: { code } } })).status,
      200,
    );
    const creds = { username: 'secure', password: 'secure-password-1' };
    assert.deepEqual(status(await issue(creds)), [401, -5]);
    // (Two failures only: the suite locks out after three.)
    assert.deepEqual(status(await issue(creds, { 'Ratecard-TFA': code })), [401, -5], 'replay');
    const next = await generate({ secret, epoch: now + 30 });
    const ok = await issue(creds, { 'Ratecard-TFA': next });
    assert.equal(ok.status, 200, ok.text);
    // The access token needs no code afterwards.
    assert.equal((await fetchP(ok.body['access-token'])).status, 200);
  });
});
