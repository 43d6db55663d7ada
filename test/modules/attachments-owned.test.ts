// Attachments of records that belong to users, over HTTP on both databases: a notification's files
// are its recipient's alone (administrators included), a delegation's are who gives or receives it
// (and workflow administrators'), a workflow's are who takes part (in person or as an assignee's
// active delegate) and workflow administrators' — list, details, download, checkifexists and attach
// alike, as the records themselves are seen by their manager operations.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { admin, assertError, assertOk, send, slotWith, type Who } from '../jobs/helpers.ts';
import { adv, eq } from '../helpers/criteria.ts';

const json = (body: unknown) => ({
  body: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

describe('attachments of notifications, delegations and workflows', () => {
  let h: Harness;
  const who = (user: string): Who => ({ user, password: `${user}-password-1` });
  const [ann, bob, cid, wfa, snd] = ['ann', 'bob', 'cid', 'wfa', 'snd'].map(who) as [Who, Who, Who, Who, Who];
  const ids: Record<string, number> = {};
  const call = (as: Who, path: string, body: unknown = {}) => send(h, path, { who: as, ...json(body) });

  before(async () => {
    h = await startHarness();
    ids.ann = await h.newUser(ann.user, ann.password, ['PRICESHOP_RO']);
    ids.bob = await h.newUser(bob.user, bob.password, ['PRICESHOP_RO']);
    ids.cid = await h.newUser(cid.user, cid.password, ['PRICESHOP_RO']);
    ids.wfa = await h.newUser(wfa.user, wfa.password, ['WF_ADMIN']);
    // NOTIFICATION_SEND (the notification type's write permission), without user management.
    ids.snd = await h.newUser(snd.user, snd.password, ['ADMIN_WO_USER_MGMT']);
  });
  after(() => h.close());

  /** Attaches a file to `typedId` as `as`; answers the attachment's id. */
  async function attach(as: Who, typedId: string): Promise<number> {
    const slot = await slotWith(h, `file of ${typedId}`, 'f.txt', as);
    return Number(assertOk(await call(as, `/bdmanager.upload/${typedId}/${slot}`))[0].id);
  }

  /** What `as` gets of the attachment `id` of `typedId`: every read answers the same. */
  async function sees(as: Who, typedId: string, id: number): Promise<boolean> {
    const list = await call(as, `/bdmanager.list/${typedId}`);
    const details = await call(as, `/bdmanager.download/${typedId}/${id}`);
    const data = await send(h, `/bdmanager.downloaddata/${id}`, { who: as, method: 'GET' });
    const exists = await call(as, `/bdmanager.checkifexists/${id}`);
    if (list.status === 200) {
      assert.equal(details.status, 200, JSON.stringify(details.body));
      assert.equal(data.status, 200);
      assert.equal(assertOk(exists), true);
      return true;
    }
    for (const r of [list, details, data]) assertError(r, 404, -1);
    assert.equal(assertOk(exists), false);
    return false;
  }

  /** A notification the admin sends to snd: the typedId of snd's newest one. */
  async function notifySnd(title: string): Promise<string> {
    assertOk(
      await call(admin, '/notification.send', {
        data: { notification: { title }, recipients: { users: ['snd'] } },
      }),
    );
    const [n] = assertOk(await call(snd, '/notification.list', {}));
    return `${n.id}.NTF`;
  }

  test("a condition record item's files are one list, whether its CRCI or its sized typedId addresses it", async () => {
    const [set] = assertOk(
      await call(admin, '/add/CRCS', { data: { uniqueName: 'ATT-SET', label: 's', keySize: 2 } }),
    );
    const [item] = assertOk(
      await call(admin, '/add/CRCI', {
        data: { conditionRecordSetId: set.id, key1: 'A', key2: 'B', validFrom: '2026-01-01' },
      }),
    );
    const [plain, sized] = [`${item.id}.CRCI`, `${item.id}.CRCI2`];
    const viaSized = await attach(admin, sized);
    const viaPlain = await attach(admin, plain);
    for (const typedId of [plain, sized]) {
      const ids = assertOk(await call(admin, `/bdmanager.list/${typedId}`, { sortBy: 'id' })).map(
        (a: { id: number }) => Number(a.id),
      );
      assert.deepEqual(ids, [viaSized, viaPlain], typedId);
      for (const id of [viaSized, viaPlain]) assert.equal(await sees(admin, typedId, id), true);
    }
    // Another key size's code names no such item: its files are not found there.
    assertError(await call(admin, `/bdmanager.list/${item.id}.CRCI3`), 404, -1);
  });

  test('record history rows take no attachments (their files were readable by anyone reading history)', async () => {
    assertOk(await call(admin, '/add/P', { data: { sku: 'RH-OWNER' } })); // a history row
    const r = await h.db.query<{ id: number }>(
      'SELECT id FROM record_history WHERE partition_id = $1 ORDER BY id LIMIT 1',
      [h.partitionId],
    );
    const typedId = `${r.rows[0]!.id}.RH`;
    const slot = await slotWith(h, 'note', 'note.txt', admin);
    const up = await call(admin, `/bdmanager.upload/${typedId}/${slot}`);
    assertError(up, 400, -4);
    assert.match(up.body.response.data, /take no attachments/);
    assertError(await call(ann, `/bdmanager.list/${typedId}`), 400, -4);
  });

  test("a notification's files: its recipient's alone, administrators included", async () => {
    const typedId = await notifySnd('for snd');
    // The administrator holds the type's write permission (NOTIFICATION_SEND), not the record.
    assertError(
      await call(admin, `/bdmanager.upload/${typedId}/${await slotWith(h, 'x', 'x.txt')}`),
      404,
      -1,
    );
    const id = await attach(snd, typedId);
    assert.equal(await sees(snd, typedId, id), true);
    assert.equal(await sees(admin, typedId, id), false);
    assert.equal(await sees(ann, typedId, id), false);
  });

  test("their history (/history.fetch) follows the record: another user's notification file is not listed", async () => {
    const typedId = await notifySnd('history of snd');
    await attach(snd, typedId);
    const rows = async (as: Who) =>
      assertOk(
        await call(as, '/history.fetch', {
          data: adv(eq('typeCode', 'ATT'), eq('businessKey', typedId)),
        }),
      ).length;
    // Both hold HISTORY_FETCH; only the recipient sees the row (an ADMIN no more than its file).
    assert.equal(await rows(snd), 1);
    assert.equal(await rows(admin), 0);
  });

  test("a delegation's files: who gives or receives it, and workflow administrators", async () => {
    const [d] = assertOk(
      await call(bob, '/workflowdelegationmanager.add', {
        data: { delegate: 'ann', startDate: '2031-01-01', endDate: '2031-01-31', note: 'holiday' },
      }),
    );
    const typedId = `${d.id}.WFDG`;
    const id = await attach(wfa, typedId);
    assert.equal(await sees(bob, typedId, id), true);
    assert.equal(await sees(ann, typedId, id), true);
    assert.equal(await sees(wfa, typedId, id), true);
    assert.equal(await sees(cid, typedId, id), false);
    assert.equal(await sees(admin, typedId, id), true, 'ADMIN holds WORKFLOW_ADMIN');
  });

  test("a workflow's files: who takes part (or an assignee's active delegate), and workflow administrators", async () => {
    const wf = await h.db.query<{ id: number }>(
      `INSERT INTO workflows (partition_id, code, approvable_id, workflow_status, current_step, submitted_by)
       VALUES ($1, 'DCR', 999, 'SUBMITTED', 1, $2) RETURNING id`,
      [h.partitionId, ids.ann],
    );
    const wfId = Number(wf.rows[0]!.id);
    await h.db.query(
      `INSERT INTO workflow_assignees (partition_id, workflow_id, step_no, role, user_id) VALUES ($1, $2, 1, 'APPROVER', $3)`,
      [h.partitionId, wfId, ids.bob],
    );
    const typedId = `${wfId}.WF`;
    const id = await attach(wfa, typedId);
    assert.equal(await sees(ann, typedId, id), true, 'the submitter');
    assert.equal(await sees(bob, typedId, id), true, 'an approver');
    assert.equal(await sees(wfa, typedId, id), true);
    assert.equal(await sees(cid, typedId, id), false, 'takes no part');
    // cid becomes bob's active delegate: he sees what bob must decide.
    await h.db.query(
      `INSERT INTO workflow_delegations (partition_id, delegator_id, delegate_id, start_date, end_date)
       VALUES ($1, $2, $3, current_date - 1, current_date + 1)`,
      [h.partitionId, ids.bob, ids.cid],
    );
    assert.equal(await sees(cid, typedId, id), true, "bob's active delegate");
    const details = await call(cid, `/workflowsmanager.details/${wfId}`);
    assert.equal(details.status, 200, 'the details agree');
  });
});
