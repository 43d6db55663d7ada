// Api tokens, one-time tokens, Bearer, external JWTs and two-factor authentication over HTTP.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT, exportSPKI, generateKeyPair } from 'jose';
import { generate } from 'otplib';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness, type Reply } from '../helpers/app.ts';
import { signSession } from '../../src/auth/session.ts';
import { setUserPassword } from '../../src/modules/admin/partitions.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

function status(r: Reply): [number, number] {
  return [r.status, r.body?.response?.status];
}

describe('api tokens and one-time tokens', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  test('getjsonwebtoken needs Basic credentials and gives a non-expiring token', async () => {
    const session = await h.login();
    assert.deepEqual(
      status(
        await h.call('/accountmanager.getjsonwebtoken', { headers: { 'X-Ratecard-jwt': session.token } }),
      ),
      [401, -7],
    );
    const r = await h.call('/accountmanager.getjsonwebtoken', { basic: admin });
    assert.equal(r.status, 200, r.text);
    const { token, tokenId, expires } = r.body.response.data[0];
    assert.equal(expires, null);
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
    assert.equal(claims.exp, undefined);
    for (const headers of [{ 'X-Ratecard-jwt': token }, { authorization: `Bearer ${token}` }] as Record<
      string,
      string
    >[]) {
      assert.equal((await h.call('/fetch/P', { headers, body: {} })).status, 200);
    }
    // Revoked by an admin: refused from then on.
    const listed = await h.call('/accountmanager.listjsonwebtokens', { basic: admin });
    assert.ok(listed.body.response.data.some((t: any) => t.id === tokenId && t.revoked === null));
    assert.equal(listed.body.response.totalRows, listed.body.response.data.length);
    const paged = await h.call('/accountmanager.listjsonwebtokens', {
      basic: admin,
      body: { operationType: 'fetch', startRow: 0, endRow: 1 },
    });
    assert.equal(paged.body.response.data.length, 1);
    assert.equal(paged.body.response.totalRows, listed.body.response.totalRows);
    const nulls = await h.call('/accountmanager.listjsonwebtokens', {
      basic: admin,
      body: { startRow: 0, endRow: 1, sortBy: null, resultFields: null },
    });
    assert.deepEqual(status(nulls), [200, 0], nulls.text);
    // Paged as fetches are: at most the largest page, the end not before the start (-4 on endRow).
    for (const body of [
      { startRow: 0, endRow: 100_000 },
      { startRow: 3, endRow: 1 },
    ]) {
      const r = await h.call('/accountmanager.listjsonwebtokens', { basic: admin, body });
      assert.deepEqual(status(r), [400, -4]);
      assert.ok(r.body.response.errors.endRow, r.text);
    }
    assert.equal(
      (await h.call(`/accountmanager.revokejsonwebtoken/${tokenId}`, { basic: admin })).status,
      200,
    );
    assert.deepEqual(
      status(await h.call('/fetch/P', { headers: { authorization: `Bearer ${token}` }, body: {} })),
      [401, -7],
    );
    assert.deepEqual(
      status(await h.call('/accountmanager.revokejsonwebtoken/99999999', { basic: admin })),
      [404, -1],
    );
  });

  test('an expiring token carries its expiry; minutes are validated', async () => {
    const r = await h.call('/accountmanager.getjsonwebtoken/5', { basic: admin });
    const claims = JSON.parse(
      Buffer.from(r.body.response.data[0].token.split('.')[1], 'base64url').toString(),
    );
    assert.ok(Math.abs(claims.exp - claims.iat - 300) <= 1);
    assert.deepEqual(status(await h.call('/accountmanager.getjsonwebtoken/0', { basic: admin })), [400, -4]);
    assert.deepEqual(
      status(await h.call('/accountmanager.getjsonwebtoken/abc', { basic: admin })),
      [400, -4],
    );
  });

  test('a restricted token never exceeds the listed permissions nor the user’s own', async () => {
    const r = await h.call('/accountmanager.getjsonwebtoken', {
      basic: admin,
      body: { data: { permissions: ['USER_FETCH'] } },
    });
    const token = r.body.response.data[0].token;
    const headers = { 'X-Ratecard-jwt': token };
    assert.equal(
      (await h.call('/fetch/P', { headers, body: {} })).status,
      200,
      'open types need no permission',
    );
    assert.deepEqual(status(await h.call('/add/P', { headers, body: { data: { sku: 'R' } } })), [403, -3]);
    assert.deepEqual(status(await h.call('/fetch/PX', { headers, body: {} })), [403, -3]);
    // Its login answers the permissions it may use: the list, not all the user's.
    const [login] = (await h.call('/login/extended', { headers })).body.response.data;
    assert.deepEqual(login.extendedData.permissions, ['USER_FETCH']);
    // A one-time token it asks for carries the same restriction (it cannot widen it); one asked
    // for by unrestricted Basic credentials carries none.
    const oneTime = async (how: { headers: Record<string, string> } | { basic: typeof admin }) =>
      encodeURIComponent((await h.call('/accountmanager.getonetimetoken', how)).body.response.data[0].token);
    const addWith = async (ott: string) =>
      status(await h.call(`/add/P?token=${ott}`, { body: { data: { sku: `OTT-${Math.random()}` } } }));
    assert.deepEqual(await addWith(await oneTime({ headers })), [403, -3]);
    assert.equal((await h.call(`/fetch/U?token=${await oneTime({ headers })}`, { body: {} })).status, 200);
    assert.deepEqual(await addWith(await oneTime({ basic: admin })), [200, 0]);
    const bad = await h.call('/accountmanager.getjsonwebtoken', {
      basic: admin,
      body: { data: { permissions: ['USER_FETCH', 'NO_SUCH'] } },
    });
    assert.deepEqual(status(bad), [400, -4]);
    assert.deepEqual(Object.keys(bad.body.response.errors), ['data.permissions.1'], 'names the entry');
    // Bodies that are no permission list: -4 naming the field at fault, and only it.
    const unknown = await h.call('/accountmanager.getjsonwebtoken', {
      basic: admin,
      body: { data: { foo: 1 } },
    });
    assert.deepEqual(status(unknown), [400, -4]);
    assert.deepEqual(Object.keys(unknown.body.response.errors), ['data.foo']);
    for (const body of [{ bogus: 1 }, { data: { foo: 1 } }, { data: 1 }, [1]]) {
      const r = await h.call('/accountmanager.getonetimetoken', { basic: admin, body });
      assert.deepEqual(status(r), [400, -4], JSON.stringify(body));
    }
    await h.newUser('plain', 'plain-password');
    const beyond = await h.call('/accountmanager.getjsonwebtoken', {
      basic: { user: 'plain', password: 'plain-password' },
      body: { data: { permissions: ['PRODUCT_EDIT'] } },
    });
    assert.deepEqual(status(beyond), [403, -3]);
    assert.deepEqual(Object.keys(beyond.body.response.errors), ['data.permissions.0']);
  });

  test('a password change revokes api tokens too', async () => {
    await h.newUser('changer', 'changer-password');
    const r = await h.call('/accountmanager.getjsonwebtoken', {
      basic: { user: 'changer', password: 'changer-password' },
    });
    const token = r.body.response.data[0].token;
    assert.equal((await h.call('/fetch/P', { headers: { 'X-Ratecard-jwt': token }, body: {} })).status, 200);
    await setUserPassword(h.db, h.partition, 'changer', 'changed-password', h.config.scryptCost);
    assert.deepEqual(
      status(await h.call('/fetch/P', { headers: { 'X-Ratecard-jwt': token }, body: {} })),
      [401, -7],
    );
    // ... and the token list says so.
    const listed = await h.call('/accountmanager.listjsonwebtokens', {
      basic: { user: 'changer', password: 'changed-password' },
    });
    const row = listed.body.response.data.find((t: any) => t.id === r.body.response.data[0].tokenId);
    assert.ok(row && row.revoked !== null, JSON.stringify(listed.body));
  });

  test('a refresh token is never a credential', async () => {
    const s = await h.db.query<{ s: Uint8Array; id: number }>(
      `SELECT p.jwt_secret AS s, u.id FROM partitions p JOIN users u ON u.partition_id = p.id WHERE p.id = $1 AND u.login_name = $2`,
      [h.partitionId, ADMIN],
    );
    const refresh = await signSession(
      s.rows[0]!.s,
      { userId: s.rows[0]!.id, partition: h.partition, epoch: 0, sid: 'x', kind: 'refresh' },
      600,
    );
    assert.deepEqual(
      status(await h.call('/fetch/P', { headers: { authorization: `Bearer ${refresh}` }, body: {} })),
      [401, -7],
    );
  });

  test('a one-time token works for one request only', async () => {
    const r = await h.call('/accountmanager.getonetimetoken', { basic: admin });
    const { token } = r.body.response.data[0];
    assert.equal((await h.call(`/fetch/P?token=${encodeURIComponent(token)}`, { body: {} })).status, 200);
    assert.deepEqual(
      status(await h.call(`/fetch/P?token=${encodeURIComponent(token)}`, { body: {} })),
      [401, -7],
    );
    const late = (await h.call('/accountmanager.getonetimetoken', { basic: admin })).body.response.data[0]
      .token;
    await h.db.query(
      `UPDATE one_time_tokens SET expires_at = now() - interval '1 second' WHERE partition_id = $1`,
      [h.partitionId],
    );
    assert.deepEqual(
      status(await h.call(`/fetch/P?token=${encodeURIComponent(late)}`, { body: {} })),
      [401, -7],
    );
  });

  test('a one-time token also works as the bearer, the header or the cookie (no CSRF), once', async () => {
    const fresh = async () =>
      (await h.call('/accountmanager.getonetimetoken', { basic: admin })).body.response.data[0]
        .token as string;
    for (const how of [
      (t: string) => ({ authorization: `Bearer ${t}` }),
      (t: string) => ({ 'X-Ratecard-jwt': t }),
      (t: string) => ({ cookie: `X-Ratecard-jwt=${t}` }),
    ]) {
      const headers = how(await fresh());
      const add = () => h.call('/add/P', { headers, body: { data: { sku: `OTT-${Math.random()}` } } });
      assert.deepEqual(status(await add()), [200, 0], JSON.stringify(headers));
      assert.deepEqual(status(await add()), [401, -7], 'used once');
    }
  });
});

describe('one-time tokens die with what asked for them', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  const ott = async (headers: Record<string, string>): Promise<string> => {
    const r = await h.call('/accountmanager.getonetimetoken', { headers });
    assert.equal(r.status, 200, r.text);
    return r.body.response.data[0].token;
  };
  const use = (token: string) => h.call(`/fetch/P?token=${encodeURIComponent(token)}`, { body: {} });

  test('a password change ends the one-time tokens of the user', async () => {
    await h.newUser('ottpw', 'ottpw-password-1');
    const s = await h.login('ottpw', 'ottpw-password-1');
    const a = await ott({ 'X-Ratecard-jwt': s.token });
    const b = await ott({ 'X-Ratecard-jwt': s.token });
    assert.equal((await use(a)).status, 200);
    const changed = await h.call('/accountmanager.changepassword', {
      basic: { user: 'ottpw', password: 'ottpw-password-1' },
      body: { data: { newPassword: 'Second-secret-2' } },
    });
    assert.equal(changed.status, 200, changed.text);
    assert.deepEqual(status(await use(b)), [401, -7]);
  });

  test('a one-time token cannot ask for another one (no self-renewal)', async () => {
    const a = await ott({ 'X-Ratecard-jwt': (await h.login()).token });
    const r = await h.call(`/accountmanager.getonetimetoken?token=${encodeURIComponent(a)}`);
    assert.deepEqual(status(r), [403, -3]);
  });

  test('revoking the api token (or OAuth grant) that asked ends its one-time tokens', async () => {
    const api = (await h.call('/accountmanager.getjsonwebtoken', { basic: admin })).body.response.data[0];
    const a = await ott({ authorization: `Bearer ${api.token}` });
    const b = await ott({ authorization: `Bearer ${api.token}` });
    assert.equal((await use(a)).status, 200);
    const revoked = await h.call(`/accountmanager.revokejsonwebtoken/${api.tokenId}`, { basic: admin });
    assert.equal(revoked.status, 200, revoked.text);
    assert.deepEqual(status(await use(b)), [401, -7]);
    // An expiring api token: its one-time token expires with it at the latest.
    const short = (await h.call('/accountmanager.getjsonwebtoken/1', { basic: admin })).body.response.data[0];
    const c = await h.call('/accountmanager.getonetimetoken', {
      headers: { authorization: `Bearer ${short.token}` },
    });
    assert.ok(new Date(c.body.response.data[0].expires) <= new Date(short.expires), c.text);
  });

  test('deactivating the user ends his one-time tokens', async () => {
    const id = await h.newUser('ottgone', 'ottgone-password');
    const a = await ott({ 'X-Ratecard-jwt': (await h.login('ottgone', 'ottgone-password')).token });
    const r = await h.call('/update/U', {
      basic: admin,
      body: { data: { typedId: `${id}.U`, activated: false } },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(status(await use(a)), [401, -7]);
  });

  test('deactivating the user ends his session and api tokens: activated again, they stay dead', async () => {
    const id = await h.newUser('comeback', 'comeback-password');
    const session = (await h.login('comeback', 'comeback-password')).token;
    const api = (
      await h.call('/accountmanager.getjsonwebtoken', {
        basic: { user: 'comeback', password: 'comeback-password' },
      })
    ).body.response.data[0].token;
    const bySession = () => h.call('/login/extended', { headers: { 'X-Ratecard-jwt': session } });
    const byApi = () => h.call('/login/extended', { headers: { authorization: `Bearer ${api}` } });
    assert.equal((await bySession()).status, 200);
    assert.equal((await byApi()).status, 200);
    for (const activated of [false, true]) {
      const r = await h.call('/update/U', {
        basic: admin,
        body: { data: { typedId: `${id}.U`, activated } },
      });
      assert.equal(r.status, 200, r.text);
    }
    assert.deepEqual(status(await bySession()), [401, -7]);
    assert.deepEqual(status(await byApi()), [401, -7]);
    // His password still works: a new login gives a new session.
    assert.equal(
      (await h.call('/login/extended', { basic: { user: 'comeback', password: 'comeback-password' } }))
        .status,
      200,
    );
  });
});

describe('external JWT', () => {
  let h: Harness;
  let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  before(async () => {
    h = await startHarness();
    const pair = await generateKeyPair('RS256', { extractable: true });
    privateKey = pair.privateKey;
    const config = {
      entries: {
        ERP: { publicKey: await exportSPKI(pair.publicKey), permissions: null },
        Reader: { publicKey: await exportSPKI(pair.publicKey), permissions: ['USER_FETCH'] },
      },
    };
    await h.db.query(
      `INSERT INTO advanced_config (partition_id, unique_name, value) VALUES ($1, 'externalJWTConfiguration', $2)`,
      [h.partitionId, JSON.stringify(config)],
    );
  });
  after(() => h.close());

  const sign = (claims: Record<string, unknown>, opts: { iss?: string; aud?: string; exp?: string } = {}) =>
    new SignJWT({ partition: h.partition, ...claims })
      .setProtectedHeader({ alg: 'RS256' })
      .setSubject(ADMIN)
      .setIssuer(opts.iss ?? 'ERP')
      .setAudience(opts.aud ?? 'ratecard')
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? '5m')
      .sign(privateKey);
  const call = (
    system: string,
    jwt: string,
    path = '/add/P',
    body: unknown = { data: { sku: `E-${Math.random()}` } },
  ) => h.call(path, { headers: { authorization: `BEARER ${system};${jwt}` }, body });

  test('a valid token of a trusted system acts as the user', async () => {
    const r = await call('ERP', await sign({}));
    assert.equal(r.status, 200, r.text);
    // The interface's claims are alg, sub, iss, aud and partition: a token without exp is taken.
    const noExp = await new SignJWT({ partition: h.partition })
      .setProtectedHeader({ alg: 'RS256' })
      .setSubject(ADMIN)
      .setIssuer('ERP')
      .setAudience('ratecard')
      .sign(privateKey);
    const r2 = await call('ERP', noExp);
    assert.equal(r2.status, 200, r2.text);
  });

  test('the permission list filters', async () => {
    const jwt = await sign({}, { iss: 'Reader' });
    assert.deepEqual(status(await call('Reader', jwt)), [403, -3]);
    assert.equal((await call('Reader', jwt, '/fetch/P', {})).status, 200);
    // ... and so do one-time tokens the system asks for.
    const ott = (await call('Reader', jwt, '/accountmanager.getonetimetoken', {})).body.response.data[0]
      .token;
    const r = await h.call(`/add/P?token=${encodeURIComponent(ott)}`, { body: { data: { sku: 'E-OTT' } } });
    assert.deepEqual(status(r), [403, -3]);
  });

  test('every other token is refused with 401', async () => {
    const cases: Array<[string, string]> = [
      ['ERP', await sign({}, { aud: 'other-cluster' })],
      ['ERP', await sign({}, { iss: 'Reader' })],
      ['ERP', await sign({ partition: 'elsewhere' })],
      ['ERP', await sign({}, { exp: '-1m' })],
      ['Unknown', await sign({}, { iss: 'Unknown' })],
      ['Bad-Name', await sign({}, { iss: 'Bad-Name' })],
      ['ERP', (await sign({})).slice(0, -4) + 'AAAA'],
      [
        'ERP',
        await new SignJWT({ partition: h.partition })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject(ADMIN)
          .setIssuer('ERP')
          .setAudience('ratecard')
          .setExpirationTime('5m')
          .sign(new Uint8Array(32)),
      ],
    ];
    for (const [system, jwt] of cases) assert.deepEqual(status(await call(system, jwt)), [401, -7], system);
    const ghost = await new SignJWT({ partition: h.partition })
      .setProtectedHeader({ alg: 'RS256' })
      .setSubject('ghost')
      .setIssuer('ERP')
      .setAudience('ratecard')
      .setExpirationTime('5m')
      .sign(privateKey);
    assert.deepEqual(status(await call('ERP', ghost)), [401, -7]);
    // A subject no user name can be (NUL, which the database cannot take as text): refused the same way.
    const nul = await new SignJWT({ partition: h.partition })
      .setProtectedHeader({ alg: 'RS256' })
      .setSubject('ad\u0000min')
      .setIssuer('ERP')
      .setAudience('ratecard')
      .setExpirationTime('5m')
      .sign(privateKey);
    assert.deepEqual(status(await call('ERP', nul)), [401, -7]);
  });
});

describe('two-factor authentication', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  test('enrol, confirm, then Basic logins need a fresh code; sessions do not', async () => {
    await h.newUser('secure', 'secure-password', ['ADMIN']);
    const basic = { user: 'secure', password: 'secure-password' };
    const e = await h.call('/accountmanager.tfa.enroll', { basic });
    assert.equal(e.status, 200, e.text);
    const { secret, uri } = e.body.response.data[0];
    assert.match(uri, /^otpauth:\/\/totp\//);
    assert.deepEqual(
      status(await h.call('/accountmanager.tfa.confirm', { basic, body: { data: { code: '000000' } } })),
      [400, -4],
    );
    const now = Math.floor(Date.now() / 1000);
    const code = await generate({ secret, epoch: now });
    assert.equal(
      (await h.call('/accountmanager.tfa.confirm', { basic, body: { data: { code } } })).status,
      200,
    );

    assert.deepEqual(status(await h.call('/login/extended', { basic })), [401, -5]);
    assert.deepEqual(
      status(await h.call('/login/extended', { basic, headers: { 'Ratecard-TFA': code } })),
      [401, -5],
      'replay',
    );
    const next = await generate({ secret, epoch: now + 30 });
    const ok = await h.call('/login/extended', { basic, headers: { 'ratecard-tfa': next } });
    assert.equal(ok.status, 200, ok.text);
    const token = ok.headers.get('x-ratecard-jwt')!;
    assert.equal((await h.call('/fetch/P', { headers: { 'X-Ratecard-jwt': token }, body: {} })).status, 200);
    // With the user's session cookie present, Basic needs no code (the interface asks for one only when
    // no session cookie is present); another user's cookie, or one that is no valid token, does not count.
    const cookie = { cookie: `X-Ratecard-jwt=${token}` };
    assert.equal((await h.call('/fetch/P', { basic, headers: cookie, body: {} })).status, 200);
    const others = (await h.login()).token;
    assert.deepEqual(
      status(await h.call('/fetch/P', { basic, headers: { cookie: `X-Ratecard-jwt=${others}` }, body: {} })),
      [401, -5],
    );
    assert.deepEqual(
      status(await h.call('/fetch/P', { basic, headers: { cookie: 'X-Ratecard-jwt=garbage' }, body: {} })),
      [401, -5],
    );

    await h.db.query(
      `UPDATE users SET tfa_last_step = tfa_last_step - 2 WHERE partition_id = $1 AND login_name = 'secure'`,
      [h.partitionId],
    );
    // Not with the session cookie, under which Basic asks for no code: TFA stays on.
    const withCookie = await h.call('/accountmanager.tfa.disable', { basic, headers: cookie });
    assert.deepEqual(status(withCookie), [401, -5]);
    assert.match(withCookie.body.response.data, /no session cookie/);
    assert.deepEqual(status(await h.call('/login/extended', { basic })), [401, -5], 'still on');
    const off = await h.call('/accountmanager.tfa.disable', { basic, headers: { 'Ratecard-TFA': next } });
    assert.equal(off.status, 200, off.text);
    assert.equal((await h.call('/login/extended', { basic })).status, 200);
    // Both switches are in the user's history, with his new version, and never the secret.
    const me = (await h.call('/login/extended', { basic })).body.response.data[0];
    const history = await h.call(`/fetch/U/${me.id}/history`, { basic, body: { sortBy: 'id' } });
    assert.equal(history.status, 200, history.text);
    const tfa = history.body.response.data.filter((e: any) => 'tfaEnabled' in (e.changes ?? {}));
    assert.deepEqual(
      tfa.map((e: any) => [e.action, e.changes.tfaEnabled.old, e.changes.tfaEnabled.new]),
      [
        ['UPDATE', false, true],
        ['UPDATE', true, false],
      ],
    );
    assert.ok(tfa.every((e: any) => typeof e.version === 'number'));
    const [record] = (await h.call(`/fetch/U/${me.id}`, { basic })).body.response.data;
    assert.equal(tfa[1].version, record.version);
    assert.ok(!history.text.includes(secret));
  });
});
