// Api tokens and API-version-2 access tokens authenticate from the account cache, as session
// tokens do (perf audit 2: they re-ran the 9-relation account statement on every request). Every
// change that ends or narrows such a token still takes effect on the very next request: revocation,
// a removed role, a deactivated or deleted user, a password change, and the expiry of the token's
// row, which no database change announces. Both databases; on PostgreSQL also a revocation made
// through another process's connection.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDb, type Db } from '../../src/db/db.ts';
import { ADMIN, ADMIN_PASSWORD, startHarness, testConfig, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

const onPostgres = process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== '';
const admin = { user: ADMIN, password: ADMIN_PASSWORD };

describe('api tokens and v2 access tokens from the account cache', () => {
  let h: Harness;
  /** Runs of the account statement (src/auth/authenticate.ts) since the last reset. */
  let accountReads = 0;
  before(async () => {
    h = await startHarness();
    const db = h.db as { query: Db['query'] };
    const query = db.query.bind(h.db);
    db.query = (sql, params) => {
      if (sql.includes('AS token_ok')) accountReads++;
      return query(sql, params);
    };
  });
  after(() => h.close());

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const fetchP = async (token: string) =>
    (await h.call('/fetch/P', { headers: bearer(token), body: {} })).status;
  const addP = (token: string) =>
    h.call('/add/P', { headers: bearer(token), body: { data: { sku: `TC-${Math.random()}` } } });

  /**
   * Until the change feed is quiet: on PostgreSQL every pooled connection and the listener hear each
   * change, some of them a little later than the committing one, and each bumps the generation.
   */
  async function settle(): Promise<void> {
    let seen = h.db.authChanges!.generation;
    for (;;) {
      await sleep(250);
      const now = h.db.authChanges!.generation;
      if (now === seen) return;
      seen = now;
    }
  }

  /** A user with PRICESHOP_EDIT, an api token of his and a v2 access token of his. */
  async function holder(login: string) {
    const id = await h.newUser(login, `${login}-password-1`, ['PRICESHOP_EDIT']);
    return { id, ...(await tokensOf(login)) };
  }

  /** A new api token and v2 access token of a user `holder` made. */
  async function tokensOf(login: string) {
    const password = `${login}-password-1`;
    const r = await h.call('/accountmanager.getjsonwebtoken', { basic: { user: login, password } });
    const [{ token: api, tokenId }] = okData(r);
    const v2 = await h.call('/token', { body: { username: login, password } });
    assert.equal(v2.status, 200, v2.text);
    return { api: api as string, tokenId: tokenId as number, access: v2.body['access-token'] as string };
  }

  test('a token used again is served from the cache: no account read', async () => {
    const u = await holder('tc-cached');
    await settle();
    for (const token of [u.api, u.access]) {
      assert.equal(await fetchP(token), 200);
      accountReads = 0;
      assert.equal(await fetchP(token), 200);
      assert.equal(await fetchP(token), 200);
      assert.equal(accountReads, 0, 'the second and third requests read no account row');
    }
  });

  test('a revoked api token and a revoked v2 pair are refused on the next request', async () => {
    const u = await holder('tc-revoked');
    for (const token of [u.api, u.access]) assert.equal(await fetchP(token), 200);
    okData(await h.call(`/accountmanager.revokejsonwebtoken/${u.tokenId}`, { basic: admin }));
    expectError(await h.call('/fetch/P', { headers: bearer(u.api), body: {} }), 401, -7);
    assert.equal(await fetchP(u.access), 200, 'the other token of the user lives on');
    const del = await h.call('/token', { method: 'DELETE', headers: bearer(u.access) });
    assert.equal(del.status, 204, del.text);
    expectError(await h.call('/fetch/P', { headers: bearer(u.access), body: {} }), 401, -7);
  });

  test('an api token whose row is gone from the database is refused', async () => {
    const u = await holder('tc-gone');
    assert.equal(await fetchP(u.api), 200);
    await h.db.query('DELETE FROM api_tokens WHERE partition_id = $1 AND id = $2', [
      h.partitionId,
      u.tokenId,
    ]);
    expectError(await h.call('/fetch/P', { headers: bearer(u.api), body: {} }), 401, -7);
    assert.equal(await fetchP(u.access), 200, 'the other token of the user lives on');
  });

  test('a removed role is refused and a role given back is granted on the next request', async () => {
    const u = await holder('tc-role');
    for (const token of [u.api, u.access]) {
      okData(await addP(token));
      okData(await addP(token));
    }
    okData(
      await h.call(`/accountmanager.assignrole/${u.id}`, {
        basic: admin,
        body: { data: { unassign: ['PRICESHOP_EDIT'] } },
      }),
    );
    for (const token of [u.api, u.access]) expectError(await addP(token), 403, -3);
    okData(
      await h.call(`/accountmanager.assignrole/${u.id}`, {
        basic: admin,
        body: { data: { roles: ['PRICESHOP_EDIT'] } },
      }),
    );
    for (const token of [u.api, u.access]) okData(await addP(token));
  });

  test('a deactivated user is refused; reactivated, his old tokens stay dead and new ones work; deleted refused', async () => {
    const u = await holder('tc-active');
    for (const token of [u.api, u.access]) assert.equal(await fetchP(token), 200);
    const activate = (activated: boolean) =>
      h.call('/update/U', { basic: admin, body: { data: { typedId: `${u.id}.U`, activated } } });
    okData(await activate(false));
    for (const token of [u.api, u.access]) assert.equal(await fetchP(token), 401);
    okData(await activate(true));
    // Deactivation ended them (migration 062): reactivation does not bring them back.
    for (const token of [u.api, u.access]) assert.equal(await fetchP(token), 401);
    const again = await tokensOf('tc-active');
    for (const token of [again.api, again.access]) assert.equal(await fetchP(token), 200);
    okData(await h.call('/delete/U', { basic: admin, body: { data: { typedId: `${u.id}.U` } } }));
    for (const token of [again.api, again.access]) assert.equal(await fetchP(token), 401);
  });

  test('a password change retires both tokens on the next request', async () => {
    const u = await holder('tc-password');
    for (const token of [u.api, u.access]) assert.equal(await fetchP(token), 200);
    okData(
      await h.call(`/accountmanager.changepassword/${u.id}`, {
        basic: admin,
        body: { data: { newPassword: 'Another-secret-9' } },
      }),
    );
    for (const token of [u.api, u.access]) {
      expectError(await h.call('/fetch/P', { headers: bearer(token), body: {} }), 401, -7);
    }
  });

  test('a cached token whose row expires is refused from its expiry on, with no change announced', async () => {
    const u = await holder('tc-expiry');
    const v2Grant = JSON.parse(Buffer.from(u.access.split('.')[1]!, 'base64url').toString()).tid as number;
    const expireSoon = (ms: number) =>
      h.db.query(
        `UPDATE api_tokens SET expires_at = now() + make_interval(secs => $3)
          WHERE partition_id = $1 AND id = ANY($2::bigint[])`,
        [h.partitionId, [u.tokenId, v2Grant], ms / 1000],
      );
    const ms = 5000;
    await expireSoon(ms);
    const end = Date.now() + ms;
    await settle();
    for (const token of [u.api, u.access]) assert.equal(await fetchP(token), 200);
    accountReads = 0;
    for (const token of [u.api, u.access]) assert.equal(await fetchP(token), 200);
    if (Date.now() < end) assert.equal(accountReads, 0, 'served from the cache before the expiry');
    const generation = h.db.authChanges!.generation;
    await sleep(end - Date.now() + 50);
    for (const token of [u.api, u.access]) {
      expectError(await h.call('/fetch/P', { headers: bearer(token), body: {} }), 401, -7);
    }
    assert.equal(h.db.authChanges!.generation, generation, 'nothing changed in the database');
  });
});

describe('api token revoked through another process (PostgreSQL)', { skip: !onPostgres }, () => {
  let h: Harness;
  let other: Db;
  before(async () => {
    h = await startHarness();
    other = await createDb({ ...testConfig(), dbPoolSize: 1 });
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('the revocation reaches this process', async () => {
    const [{ token, tokenId }] = okData(await h.call('/accountmanager.getjsonwebtoken', { basic: admin }));
    const fetchP = async () =>
      (await h.call('/fetch/P', { headers: { authorization: `Bearer ${token}` }, body: {} })).status;
    assert.equal(await fetchP(), 200);
    assert.equal(await fetchP(), 200);
    await other.query('UPDATE api_tokens SET revoked_at = now() WHERE partition_id = $1 AND id = $2', [
      h.partitionId,
      tokenId,
    ]);
    const deadline = Date.now() + 5000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) status = await fetchP();
    assert.equal(status, 401);
  });
});
