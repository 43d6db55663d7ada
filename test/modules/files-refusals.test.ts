// What the attachment and upload operations refuse, on both databases: an update of an attachment
// deleted while it waited for the row (404, not a version conflict; PostgreSQL only, where another
// connection can hold the row).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { assertError, assertOk, send, slotWith } from '../jobs/helpers.ts';

const json = { 'content-type': 'application/json' };

describe('attachment and upload refusals', () => {
  let h: Harness;

  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  async function attached(): Promise<{ typedId: string; id: number }> {
    const sku = uniqueName('sku');
    const [p] = assertOk(
      await send(h, '/add/P', { body: JSON.stringify({ data: { sku, label: 'x' } }), headers: json }),
    );
    const att = assertOk(
      await send(h, `/bdmanager.upload/${p.typedId}/${await slotWith(h, 'abc', 'a.txt')}`),
    );
    return { typedId: p.typedId, id: att[0].id };
  }

  test(
    'an update waiting for the row of an attachment deleted meanwhile is a 404 (PostgreSQL)',
    { skip: !process.env.DATABASE_URL },
    async () => {
      for (const oldValues of [undefined, { version: 0 }, { version: 5 }]) {
        const { typedId, id } = await attached();
        // Another connection holds the row, as a delete does until it commits; the update passes
        // its first look-up (plain reads are not blocked) and waits at its FOR UPDATE.
        let release!: () => void;
        const released = new Promise<void>((r) => (release = r));
        let holding!: (pid: number) => void;
        const held = new Promise<number>((r) => (holding = r));
        const holder = h.db.transaction(async (tx) => {
          const r = await tx.query<{ pid: number }>(
            `SELECT pg_backend_pid() AS pid FROM attachments WHERE partition_id = $1 AND id = $2 FOR UPDATE`,
            [h.partitionId, id],
          );
          holding(r.rows[0]!.pid);
          await released;
          await tx.query('DELETE FROM attachments WHERE partition_id = $1 AND id = $2', [h.partitionId, id]);
        });
        const pid = await held;
        const update = send(h, `/bdmanager.update/${typedId}`, {
          body: JSON.stringify({ data: { id, fileName: 'z.txt' }, ...(oldValues ? { oldValues } : {}) }),
          headers: json,
        });
        for (let waiting = 0; waiting === 0;) {
          await new Promise((r) => setTimeout(r, 20));
          const r = await h.db.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
            [pid],
          );
          waiting = r.rows[0]!.n;
        }
        release();
        await holder;
        const res = await update;
        assertError(res, 404, -1);
        assert.equal(res.body.response.data, `Attachment ${id} not found`);
      }
    },
  );

  test('a stale version is still a conflict, the current one an update', async () => {
    const { typedId, id } = await attached();
    const update = (version: number) =>
      send(h, `/bdmanager.update/${typedId}`, {
        body: JSON.stringify({ data: { id, fileName: 'b.txt' }, oldValues: { version } }),
        headers: json,
      });
    const stale = await update(3);
    assertError(stale, 409, -1);
    assert.equal(stale.body.response.data, `Attachment ${id} is not at version 3`);
    assert.equal(assertOk(await update(0))[0].version, 1);
  });
});
