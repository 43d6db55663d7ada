// The account cache of token authentication: entries live while the change feed's generation
// stays; a change made through another connection (another server process) reaches this one.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AccountCache } from '../../src/auth/account-cache.ts';
import { createDb, type ChangeFeed, type Db } from '../../src/db/db.ts';
import { startHarness, testConfig, type Harness } from '../helpers/app.ts';

const onPostgres = process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== '';

class FakeFeed implements ChangeFeed {
  generation = 0;
  live = true;
}

describe('AccountCache', () => {
  test('serves a row until the generation moves; reads through while the feed is not live', async () => {
    const feed = new FakeFeed();
    const cache = new AccountCache<{ n: number }>(feed);
    let loads = 0;
    const load = () => Promise.resolve({ n: ++loads });
    assert.deepEqual(await cache.get('k', load), { n: 1 });
    assert.deepEqual(await cache.get('k', load), { n: 1 });
    feed.generation++;
    assert.deepEqual(await cache.get('k', load), { n: 2 });
    feed.live = false;
    assert.deepEqual(await cache.get('k', load), { n: 3 });
    assert.deepEqual(await cache.get('k', load), { n: 4 });
  });

  test('a read that raced with a change is not kept; no feed means no cache', async () => {
    const feed = new FakeFeed();
    const cache = new AccountCache<{ n: number }>(feed);
    let loads = 0;
    const racing = () => {
      feed.generation++; // a change committed while the auth query ran
      return Promise.resolve({ n: ++loads });
    };
    assert.deepEqual(await cache.get('k', racing), { n: 1 });
    assert.deepEqual(await cache.get('k', () => Promise.resolve({ n: ++loads })), { n: 2 });
    const none = new AccountCache<{ n: number }>(undefined);
    assert.deepEqual(await none.get('k', () => Promise.resolve({ n: ++loads })), { n: 3 });
    assert.deepEqual(await none.get('k', () => Promise.resolve({ n: ++loads })), { n: 4 });
  });
});

describe('token authentication with the cache (PostgreSQL)', { skip: !onPostgres }, () => {
  let h: Harness;
  let other: Db;
  before(async () => {
    h = await startHarness();
    // Another server process's connection to the same database.
    other = await createDb({ ...testConfig(), dbPoolSize: 1 });
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('a role removed by another process is refused on the next requests, a role added is granted', async () => {
    const id = await h.newUser('cached', 'cached-password-1', ['PRICESHOP_EDIT']);
    const { token } = await h.login('cached', 'cached-password-1');
    const add = (sku: string) =>
      h.call('/add/P', { headers: { 'X-Ratecard-jwt': token }, body: { data: { sku } } });
    assert.equal((await add('C-1')).status, 200);
    assert.equal((await add('C-2')).status, 200); // served from the cache
    await other.query('DELETE FROM user_roles WHERE partition_id = $1 AND user_id = $2', [h.partitionId, id]);
    const deadline = Date.now() + 5000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) status = (await add(`C-${Date.now()}`)).status;
    assert.equal(status, 403);
    await other.query(
      `INSERT INTO user_roles (partition_id, user_id, role) VALUES ($1, $2, 'PRICESHOP_EDIT')`,
      [h.partitionId, id],
    );
    while (status === 403 && Date.now() < deadline) status = (await add(`D-${Date.now()}`)).status;
    assert.equal(status, 200);
  });
});

// Both databases: on PGlite the feed is this process's own notifications (src/db/pglite.ts).
describe('token authentication with the cache, changes through this process', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  test('the feed is live, and a change is seen by the very next request', async () => {
    assert.equal(h.db.authChanges?.live, true);
    const id = await h.newUser('sameproc', 'sameproc-password-1', ['PRICESHOP_EDIT']);
    const { token } = await h.login('sameproc', 'sameproc-password-1');
    const add = (sku: string) =>
      h.call('/add/P', { headers: { 'X-Ratecard-jwt': token }, body: { data: { sku } } });
    assert.equal((await add('S-1')).status, 200);
    const before = h.db.authChanges.generation;
    assert.equal((await add('S-2')).status, 200); // served from the cache: nothing changed
    assert.equal(h.db.authChanges.generation, before);
    // A rolled-back change moves nothing; a committed one is seen at once.
    await assert.rejects(
      h.db.transaction(async (tx) => {
        await tx.query('DELETE FROM user_roles WHERE partition_id = $1 AND user_id = $2', [
          h.partitionId,
          id,
        ]);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.equal(h.db.authChanges.generation, before);
    assert.equal((await add('S-3')).status, 200);
    await h.db.query('DELETE FROM user_roles WHERE partition_id = $1 AND user_id = $2', [h.partitionId, id]);
    assert.equal((await add('S-4')).status, 403);
    await h.db.query(
      `INSERT INTO user_roles (partition_id, user_id, role) VALUES ($1, $2, 'PRICESHOP_EDIT')`,
      [h.partitionId, id],
    );
    assert.equal((await add('S-5')).status, 200);
    await h.db.query('UPDATE users SET activated = false WHERE partition_id = $1 AND id = $2', [
      h.partitionId,
      id,
    ]);
    assert.equal((await add('S-6')).status, 401);
  });
});
