// The synchronous time-out: a transaction of a request cannot commit past SYNC_TIMEOUT_SECONDS; the
// answer is 503/-100 and nothing of it is kept. On PostgreSQL a statement running past it is cut.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED } from '../../src/access/catalogue.ts';
import { PARTITION_MODULES } from '../../src/app.ts';
import { envelopeSchema, ok } from '../../src/http/envelope.ts';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';

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
