// Session authentication over HTTP: Basic login, cookie and header tokens, CSRF, expiry and
// re-issue, token epoch, cross-partition refusal, lock-out.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { signSession } from '../../src/auth/session.ts';
import { setUserPassword } from '../../src/modules/admin/partitions.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

async function secretOf(h: Harness): Promise<Uint8Array> {
  const r = await h.db.query<{ s: Uint8Array }>('SELECT jwt_secret AS s FROM partitions WHERE id = $1', [
    h.partitionId,
  ]);
  return r.rows[0]!.s;
}

async function adminId(h: Harness): Promise<number> {
  const r = await h.db.query<{ id: number }>(
    'SELECT id FROM users WHERE partition_id = $1 AND login_name = $2',
    [h.partitionId, ADMIN],
  );
  return r.rows[0]!.id;
}

describe('session authentication', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { LOGIN_MAX_FAILURES: '3', JWT_TTL_SECONDS: '400' } });
  });
  after(() => h.close());

  test('Basic login answers the user, extendedData, cookie and csrfToken, never the hash', async () => {
    const r = await h.call('/login/extended', { basic: admin });
    assert.equal(r.status, 200);
    const user = r.body.response.data[0];
    assert.equal(user.loginName, ADMIN);
    assert.match(user.typedId, /^\d+\.U$/);
    assert.equal(user.extendedData.partition, h.partition);
    assert.equal(typeof user.extendedData.Release, 'string');
    assert.ok(user.extendedData.permissions.includes('USER_FETCH'));
    assert.doesNotMatch(r.text, /scrypt|password/i);
    assert.equal(typeof r.body.response.csrfToken, 'string');
    const cookies = r.headers.getSetCookie();
    const jwt = cookies.find((c) => c.startsWith('X-Ratecard-jwt='));
    assert.ok(jwt, 'session cookie set');
    assert.match(jwt, /HttpOnly/);
    assert.match(jwt, /SameSite=Lax/);
    assert.doesNotMatch(jwt, /Secure/, 'not Secure over plain http');
    assert.ok(cookies.some((c) => c.startsWith('X-Ratecard-Csrf-Token=') && /HttpOnly/.test(c)));
  });

  test('Secure cookie behind https (trusted proxy)', async () => {
    const proxied = await startHarness({ env: { TRUST_PROXY: 'true' } });
    try {
      const r = await proxied.call('/login/extended', {
        basic: admin,
        headers: { 'x-forwarded-proto': 'https' },
      });
      assert.match(
        r.headers.getSetCookie().find((c) => c.startsWith('X-Ratecard-jwt='))!,
        /Secure/,
      );
    } finally {
      await proxied.close();
    }
  });

  test('a bare user name in Basic means the partition of the path; another partition prefix is refused', async () => {
    const bare = await h.call('/login/extended', {
      headers: { authorization: `Basic ${Buffer.from(`${ADMIN}:${ADMIN_PASSWORD}`).toString('base64')}` },
    });
    assert.equal(bare.status, 200);
    const other = await h.call('/login/extended', { basic: { ...admin, partition: 'elsewhere' } });
    assert.equal(other.status, 401);
    assert.equal(other.body.response.status, -5);
  });

  test('wrong password and unknown user give the same 401/-5 answer', async () => {
    const wrong = await h.call('/login/extended', { basic: { user: ADMIN, password: 'nope-nope' } });
    const unknown = await h.call('/login/extended', { basic: { user: 'ghost', password: 'nope-nope' } });
    // A user name no user can have (NUL, which the database cannot take as text) is just as wrong.
    const nul = await h.call('/login/extended', { basic: { user: 'ad\u0000min', password: 'nope-nope' } });
    // The right password followed by NUL is wrong too (scrypt's HMAC pads its key with NUL bytes, so
    // it derived the same key).
    const padded = await h.call('/login/extended', {
      basic: { user: ADMIN, password: `${ADMIN_PASSWORD}\u0000\u0000` },
    });
    for (const r of [wrong, unknown, nul, padded]) {
      assert.equal(r.status, 401);
      assert.equal(r.body.response.status, -5);
    }
    assert.equal(wrong.body.response.data, unknown.body.response.data);
    await h.db.query('DELETE FROM login_failures WHERE partition_id = $1', [h.partitionId]);
  });

  test('the header token needs no CSRF token; the cookie needs it', async () => {
    const s = await h.login();
    const viaHeader = await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': s.token } });
    assert.equal(viaHeader.status, 200);
    const noCsrf = await h.call('/login/extended', { headers: { cookie: s.cookie } });
    assert.equal(noCsrf.status, 403);
    assert.equal(noCsrf.body.response.status, -3);
    const badCsrf = await h.call('/login/extended', {
      headers: { cookie: s.cookie, 'X-Ratecard-Csrf-Token': 'x' + s.csrf },
    });
    assert.equal(badCsrf.status, 403);
    const withCsrf = await h.call('/login/extended', {
      headers: { cookie: s.cookie, 'x-ratecard-csrf-token': s.csrf },
    });
    assert.equal(withCsrf.status, 200);
    assert.equal(withCsrf.body.response.csrfToken, undefined, 'csrfToken only on the first response');
  });

  test('GET operations that change state need the CSRF token with the cookie; read-only GETs do not', async () => {
    const s = await h.login();
    const get = (path: string, headers: Record<string, string>) =>
      h.call(path, { method: 'GET', headers: { cookie: s.cookie, ...headers } });
    const csrf = { 'X-Ratecard-Csrf-Token': s.csrf };
    const refused = await get('/uploadmanager.newuploadslot', {});
    assert.deepEqual([refused.status, refused.body.response.status], [403, -3]);
    const head = await h.call('/uploadmanager.newuploadslot', {
      method: 'HEAD',
      headers: { cookie: s.cookie },
    });
    assert.equal(head.status, 403);
    const created = await get('/uploadmanager.newuploadslot', csrf);
    assert.equal(created.status, 200, created.text);
    const slotId = created.body.response.data[0].slotId;
    const notDeleted = await get(`/uploadmanager.deleteslot/${slotId}`, {});
    assert.deepEqual([notDeleted.status, notDeleted.body.response.status], [403, -3]);
    assert.equal((await get(`/uploadmanager.deleteslot/${slotId}`, csrf)).status, 200);
    // The header token and Basic need none, on GET as elsewhere.
    const viaHeader = await h.call('/uploadmanager.newuploadslot', {
      method: 'GET',
      headers: { 'X-Ratecard-jwt': s.token },
    });
    assert.equal(viaHeader.status, 200);
    // A read-only GET (a download) stays exempt: the cookie alone reaches the operation (404: no such file).
    const read = await get('/bdmanager.downloaddata/999999999', {});
    assert.equal(read.status, 404, read.text);
  });

  test('CSRF off for the partition: the cookie alone is enough', async () => {
    await h.db.query('UPDATE partitions SET csrf_enabled = false WHERE id = $1', [h.partitionId]);
    try {
      const s = await h.call('/login/extended', { basic: admin });
      assert.equal(s.body.response.csrfToken, undefined);
      const cookie = s.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      assert.equal((await h.call('/login/extended', { headers: { cookie } })).status, 200);
    } finally {
      await h.db.query('UPDATE partitions SET csrf_enabled = true WHERE id = $1', [h.partitionId]);
    }
  });

  test('a token near expiry is re-issued with the same session; an expired one is refused', async () => {
    const secret = await secretOf(h);
    const userId = await adminId(h);
    // 60 s left of a 400 s lifetime: under a quarter, so a fresh token comes back.
    const near = await signSession(secret, { userId, partition: h.partition, epoch: 0, sid: 's1' }, 60);
    const r = await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': near } });
    assert.equal(r.status, 200);
    const fresh = r.headers.get('x-ratecard-jwt');
    assert.ok(fresh && fresh !== near);
    assert.ok(r.headers.getSetCookie().some((c) => c.startsWith(`X-Ratecard-jwt=${fresh}`)));
    assert.equal((await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': fresh } })).status, 200);
    // 300 s left: no re-issue.
    const young = await signSession(secret, { userId, partition: h.partition, epoch: 0, sid: 's2' }, 300);
    const y = await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': young } });
    assert.equal(y.headers.get('x-ratecard-jwt'), null);
    const expired = await signSession(secret, { userId, partition: h.partition, epoch: 0, sid: 's3' }, -5);
    const e = await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': expired } });
    assert.equal(e.status, 401);
    assert.equal(e.body.response.status, -7);
  });

  test('garbage and forged tokens are 401/-7', async () => {
    for (const token of ['garbage', 'a.b.c', (await h.login()).token.slice(0, -3) + 'AAA']) {
      const r = await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': token } });
      assert.equal(r.status, 401, token);
      assert.equal(r.body.response.status, -7);
    }
    // Unsigned tokens whose token id is no id (it reaches the account query before the signature is
    // checked): the same 401/-7, never the database's refusal of the value.
    const unsigned = (claims: Record<string, unknown>) =>
      ['{"alg":"HS256","typ":"JWT"}', JSON.stringify(claims)]
        .map((x) => Buffer.from(x).toString('base64url'))
        .join('.') + '.AAAA';
    for (const tid of [1.5, 1e20, -1, 0]) {
      const token = unsigned({ sub: '1', ptn: h.partition, tid });
      for (const path of ['/login/extended', '/fetch/P']) {
        const r = await h.call(path, { headers: { 'X-Ratecard-jwt': token }, body: {} });
        assert.equal(r.status, 401, `${tid} ${path}: ${r.text}`);
        assert.equal(r.body.response.status, -7);
      }
    }
    // A malformed token is not a partition matter.
    for (const headers of [{ 'X-Ratecard-jwt': 'garbage' }, { authorization: 'Bearer garbage' }] as Record<
      string,
      string
    >[]) {
      const r = await h.call('/login/extended', { headers });
      assert.equal(r.body.response.data, 'Token not valid', r.text);
    }
  });

  test('a password change bumps the epoch and invalidates older tokens', async () => {
    await h.newUser('epochuser', 'first-password');
    const s = await h.login('epochuser', 'first-password');
    assert.equal((await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': s.token } })).status, 200);
    await setUserPassword(h.db, h.partition, 'epochuser', 'second-password', h.config.scryptCost);
    const r = await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': s.token } });
    assert.equal(r.status, 401);
    assert.equal(r.body.response.status, -7);
    const again = await h.login('epochuser', 'second-password');
    assert.equal(
      (await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': again.token } })).status,
      200,
    );
  });

  test('a token of one partition is refused in another', async () => {
    const other = await startHarness({ shareDbWith: h });
    try {
      const s = await other.login();
      const r = await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': s.token } });
      assert.equal(r.status, 401);
      assert.equal(r.body.response.status, -7);
      // Even when the attacker rewrites the partition claim, the signature (other key) fails.
      const [head, payload, sig] = s.token.split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
      claims.ptn = h.partition;
      const forged = [head, Buffer.from(JSON.stringify(claims)).toString('base64url'), sig].join('.');
      const f = await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': forged } });
      assert.equal(f.status, 401);
    } finally {
      await other.close();
    }
  });

  test('lock-out after repeated failures: -6 even with the right password, other users unaffected', async () => {
    await h.newUser('victim', 'victim-password');
    for (let i = 0; i < 3; i++) {
      const r = await h.call('/login/extended', { basic: { user: 'victim', password: 'wrong-password' } });
      assert.equal(r.body.response.status, -5);
    }
    const locked = await h.call('/login/extended', {
      basic: { user: 'VICTIM', password: 'victim-password' },
    });
    assert.equal(locked.status, 401);
    assert.equal(locked.body.response.status, -6);
    assert.equal((await h.call('/login/extended', { basic: admin })).status, 200);
    // Once the window has passed the user may log in again.
    await h.db.query(
      `UPDATE login_failures SET failed_at = now() - interval '1 hour' WHERE partition_id = $1`,
      [h.partitionId],
    );
    assert.equal(
      (await h.call('/login/extended', { basic: { user: 'victim', password: 'victim-password' } })).status,
      200,
    );
  });

  test('a password an administrator sets (API or CLI) ends the lock-out at once', async () => {
    const id = await h.newUser('locked1', 'locked1-password');
    const lockOut = async (user: string) => {
      for (let i = 0; i < 3; i++)
        await h.call('/login/extended', { basic: { user, password: 'wrong-password' } });
      const r = await h.call('/login/extended', { basic: { user, password: `${user}-password` } });
      assert.equal(r.body.response.status, -6);
    };
    await lockOut('locked1');
    const set = await h.call(`/accountmanager.changepassword/${id}`, {
      basic: admin,
      body: { data: { newPassword: 'Brand-new-pass-1' } },
    });
    assert.equal(set.status, 200, set.text);
    assert.equal(
      (await h.call('/login/extended', { basic: { user: 'locked1', password: 'Brand-new-pass-1' } })).status,
      200,
    );
    // Another user's lock-out stays.
    await h.newUser('locked2', 'locked2-password');
    await lockOut('locked2');
    await setUserPassword(h.db, h.partition, 'locked1', 'Cli-new-pass-1', h.config.scryptCost);
    const still = await h.call('/login/extended', {
      basic: { user: 'locked2', password: 'locked2-password' },
    });
    assert.equal(still.body.response.status, -6);
    await setUserPassword(h.db, h.partition, 'LOCKED2', 'Cli-new-pass-2', h.config.scryptCost);
    assert.equal(
      (await h.call('/login/extended', { basic: { user: 'locked2', password: 'Cli-new-pass-2' } })).status,
      200,
    );
  });

  test('parallel right passwords are never locked out for being many (past the limit they wait)', async () => {
    await h.newUser('busy', 'busy-password');
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        h.call('/login/extended', { basic: { user: 'busy', password: 'busy-password' } }),
      ),
    );
    assert.deepEqual(new Set(answers.map((r) => r.body.response.status)), new Set([0]));
    // Two wrong ones among them leave room (limit 3): the right ones still get in.
    const mixed = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        h.call('/login/extended', { basic: { user: 'busy', password: i < 2 ? 'nope' : 'busy-password' } }),
      ),
    );
    assert.deepEqual(
      mixed.map((r) => r.body.response.status),
      [-5, -5, 0, 0, 0, 0, 0, 0],
    );
  });

  test('lock-out holds under parallel attempts: only LOGIN_MAX_FAILURES of them check a password', async () => {
    await h.newUser('burst', 'burst-password');
    const wrong = (i: number) =>
      h.call('/login/extended', { basic: { user: i % 2 ? 'burst' : 'BURST', password: `wrong-${i}` } });
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => wrong(i)));
    const codes = answers.map((r) => r.body.response.status);
    assert.equal(codes.filter((c) => c === -5).length, 3, JSON.stringify(codes));
    assert.equal(codes.filter((c) => c === -6).length, 27, JSON.stringify(codes));
    // Once the limit is reached the right password sent among wrong ones does not get in either.
    const mixed = await Promise.all([
      wrong(100),
      h.call('/login/extended', { basic: { user: 'burst', password: 'burst-password' } }),
      wrong(101),
    ]);
    assert.deepEqual(
      mixed.map((r) => [r.status, r.body.response.status]),
      [
        [401, -6],
        [401, -6],
        [401, -6],
      ],
    );
  });

  test('a deactivated user cannot log in nor use an existing token', async () => {
    await h.newUser('leaver', 'leaver-password');
    const s = await h.login('leaver', 'leaver-password');
    await h.db.query(`UPDATE users SET activated = false WHERE partition_id = $1 AND login_name = 'leaver'`, [
      h.partitionId,
    ]);
    assert.equal((await h.call('/login/extended', { headers: { 'X-Ratecard-jwt': s.token } })).status, 401);
    const r = await h.call('/login/extended', { basic: { user: 'leaver', password: 'leaver-password' } });
    assert.equal(r.body.response.status, -5);
  });
});
