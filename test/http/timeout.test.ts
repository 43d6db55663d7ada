// The synchronous time-out: a transaction of a request cannot commit past SYNC_TIMEOUT_SECONDS; the
// answer is 503/-100 and nothing of it is kept. On PostgreSQL a statement running past it is cut.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED } from '../../src/access/catalogue.ts';
import { PARTITION_MODULES } from '../../src/app.ts';
import { envelopeSchema, ok } from '../../src/http/envelope.ts';
import {
  ADMIN,
  ADMIN_PASSWORD,
  clientOf,
  startHarness,
  uniqueName,
  type Client,
  type Harness,
  type Reply,
} from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

function slowRoutes(app: FastifyInstance): void {
  const opts = {
    config: { access: AUTHENTICATED },
    schema: { response: { 200: envelopeSchema() } },
  } as const;
  // Writes a row, then takes longer than the time-out before committing.
  app.post('/probe.slowwrite', opts, async (req) => {
    await req.server.db.transaction(async (tx) => {
      await tx.query(`INSERT INTO login_failures (partition_id, login_key) VALUES ($1, 'slow')`, [
        req.partitionRef!.id,
      ]);
      await new Promise((r) => setTimeout(r, 1500));
    });
    return ok(req, []);
  });
  // One statement that runs past the time-out.
  app.post('/probe.slowsql', opts, async (req) => {
    await req.server.db.transaction((tx) => tx.query('SELECT pg_sleep(3)'));
    return ok(req, []);
  });
  // Many short statements, for longer than the time-out.
  app.post('/probe.manyshort', opts, async (req) => {
    await req.server.db.transaction(async (tx) => {
      const end = Date.now() + 4000;
      while (Date.now() < end) {
        await tx.query('SELECT 1');
        await new Promise((r) => setTimeout(r, 10));
      }
    });
    return ok(req, []);
  });
  app.post('/probe.quick', opts, async (req) => {
    await req.server.db.transaction((tx) => tx.query('SELECT 1'));
    return ok(req, []);
  });
}

describe('synchronous time-out', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({
      env: { SYNC_TIMEOUT_SECONDS: '1' },
      modules: [...PARTITION_MODULES, slowRoutes],
    });
  });
  after(() => h.close());

  test('a transaction committing past the deadline is rolled back: 503/-100', async () => {
    const r = await h.call('/probe.slowwrite', { basic: admin });
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.response.status, -100);
    const left = await h.db.query(
      `SELECT 1 FROM login_failures WHERE partition_id = $1 AND login_key = 'slow'`,
      [h.partitionId],
    );
    assert.equal(left.rows.length, 0);
  });

  test('a transaction of many short statements stops at the deadline, not at its COMMIT', async () => {
    const t0 = Date.now();
    const r = await h.call('/probe.manyshort', { basic: admin });
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.response.status, -100);
    assert.ok(Date.now() - t0 < 2500, `answered after ${Date.now() - t0} ms`);
  });

  test('within the deadline nothing changes', async () => {
    assert.equal((await h.call('/probe.quick', { basic: admin })).status, 200);
  });

  test(
    'PostgreSQL cuts a statement running past the deadline',
    { skip: process.env.DATABASE_URL === undefined },
    async () => {
      const t0 = Date.now();
      const r = await h.call('/probe.slowsql', { basic: admin });
      assert.equal(r.status, 503, r.text);
      assert.equal(r.body.response.status, -100);
      assert.ok(Date.now() - t0 < 2500, 'cut at the deadline, not after the statement');
    },
  );
});

describe('synchronous time-out of a bulk load that commits in chunks', () => {
  let h: Harness;
  let api: Client;
  // The first row of the second chunk takes longer than the time-out (a trigger of this test's):
  // the first chunk commits, the second is rolled back.
  const SLOW = uniqueName('slow');
  before(async () => {
    h = await startHarness({ env: { SYNC_TIMEOUT_SECONDS: '5' } });
    api = await clientOf(h);
    await h.db.query(`CREATE FUNCTION rc_test_slow_row() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep(6); RETURN NEW; END $$`);
    await h.db.query(`CREATE TRIGGER test_slow_product BEFORE INSERT ON products FOR EACH ROW
      WHEN (NEW.sku = '${SLOW}') EXECUTE FUNCTION rc_test_slow_row()`);
    await h.db.query(`CREATE TRIGGER test_slow_item BEFORE INSERT ON condition_records FOR EACH ROW
      WHEN (NEW.key1 = '${SLOW}') EXECUTE FUNCTION rc_test_slow_row()`);
  });
  after(async () => {
    await h.db.query('DROP TRIGGER test_slow_product ON products');
    await h.db.query('DROP TRIGGER test_slow_item ON condition_records');
    await h.db.query('DROP FUNCTION rc_test_slow_row()');
    await h.close();
  });

  const ROWS = 20_000;
  const key = (i: number, p: string) => (i === 10_000 ? SLOW : `${p}-${i}`);

  /** 503/-100, the first chunk kept, and the answer says what stays written — not "rolled back". */
  function stopped(r: Reply, kept: number, says: string): void {
    expectError(r, 503, -100);
    assert.equal(kept, 10_000);
    assert.ok(r.body.response.data.includes(says), r.body.response.data);
  }

  test('/loaddata/P', async () => {
    const p = uniqueName('to');
    const data = Array.from({ length: ROWS }, (_, i) => [key(i, p), `label ${i}`, `v${i % 97}`]);
    const r = await api('/loaddata/P', { data: { header: ['sku', 'label', 'attribute1'], data } });
    const kept = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM products WHERE partition_id = $1 AND (sku LIKE $2 OR sku = $3)',
      [h.partitionId, `${p}-%`, SLOW],
    );
    stopped(
      r,
      kept.rows[0]!.n,
      'the first 10000 rows were taken in whole chunks that stay committed (10000 inserted, 0 updated, 0 invalid)',
    );
  });

  test('/loaddata/CRCP', async () => {
    const [set] = okData(
      await api('/add/CRCS', { data: { uniqueName: uniqueName('TO'), label: 'x', keySize: 1 } }),
    );
    const data = Array.from({ length: ROWS }, (_, i) => [
      set.id,
      key(i, 'k'),
      '2026-01-01',
      '2026-12-31',
      '1',
    ]);
    const r = await api('/loaddata/CRCP', {
      data: { header: ['conditionRecordSetId', 'key1', 'validFrom', 'validTo', 'conditionValue'], data },
    });
    const kept = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM condition_records WHERE partition_id = $1 AND condition_record_set_id = $2',
      [h.partitionId, set.id],
    );
    stopped(
      r,
      kept.rows[0]!.n,
      'rows up to 9999 were taken in whole chunks that stay committed (10000 inserted, 0 cut, 0 split, 0 superseded)',
    );
  });
});
