// Accept and reject of grid items over HTTP on both databases: an accept and a reject of the same
// items at the same moment end as one of the two serial orders (never an item DENIED while its
// workflow runs), a decided item is not rejected (409), and accept submits many items set-based with
// the same outcome per item as one submit: definitions and step conditions, skipped steps, approvers,
// watchers, events, notifications, record history.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { adv, eq } from '../helpers/criteria.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { runnerFor, waitForJob } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';

/** Items in the many-items case (the documented maximum per call is 10,000). */
const MANY = Number(process.env.CGI_ACCEPT_ITEMS ?? 2000);
/** A page of workflows or notifications (at most 10,000 rows): this grid's and a few of the other tests. */
const PAGE = Math.min(MANY + 100, 10_000);

describe('calculation grid items: accept and reject', () => {
  let h: Harness;
  let runner: JobRunner;
  let api: Client;
  let approver: Client;
  let watcher: Client;

  async function gridOver(prefix: string, count: number): Promise<{ id: number; items: any[] }> {
    okData(
      await api('/loaddata/P', {
        data: {
          header: ['sku', 'attribute1'],
          data: Array.from({ length: count }, (_, i) => [
            `${prefix}${String(i).padStart(5, '0')}`,
            String(i % 2 === 0 ? 10 : 100),
          ]),
        },
      }),
    );
    const [grid] = okData(
      await api('/calculationgridmanager.addgrid', {
        data: {
          label: prefix,
          formulaName: 'DPrice',
          productFilter: { fieldName: 'sku', operator: 'startsWith', value: prefix },
        },
      }),
    );
    const [jst] = okData(await api(`/calculationgridmanager.calculate/${grid.id}`, {}));
    assert.equal((await waitForJob(h, jst.jstId)).status, 'FINISHED');
    const items = okData(
      await api('/fetch/CGI1', {
        data: adv(eq('calculationGridId', grid.id)),
        sortBy: 'key1',
        endRow: count,
      }),
    );
    assert.equal(items.length, count);
    return { id: grid.id, items };
  }
  const item = async (id: number) => okData(await api(`/fetch/CGI1/${id}`))[0];
  const workflowsOf = async (typedId: string) =>
    okData(await api('/workflowsmanager.fetch', { data: { approvableTypedId: typedId } }));

  before(async () => {
    h = await startHarness();
    runner = runnerFor(h).start();
    api = await clientOf(h);
    await h.newUser('approver', 'approver-password-1', ['WF_ADMIN', 'PRICESHOP_EDIT']);
    await h.newUser('watcher', 'watcher-password-1', ['PRICESHOP_EDIT']);
    approver = await clientOf(h, 'approver', 'approver-password-1');
    watcher = await clientOf(h, 'watcher', 'watcher-password-1');
    okData(await api('/add/PAM', { data: { fieldName: 'attribute1', label: 'Cost', fieldType: 'MONEY' } }));
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'DPrice',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          elements: [{ elementName: 'ListPrice', expression: 'product.attribute1', formatType: 'MONEY' }],
        },
      }),
    );
    // Items of ListPrice 100 wait for the approver (a first step they skip); those of 10 are approved at once.
    okData(
      await api('/add/WFD', {
        data: {
          uniqueName: 'd-approval',
          approvableType: 'CGI',
          condition: 'ListPrice > 50',
          steps: [
            { name: 'Never', approverUsers: ['approver'], condition: 'ListPrice > 1000' },
            { name: 'Managers', approverUsers: ['approver'], watcherUsers: ['watcher'], rule: 'ANY' },
            { name: 'Later', approverUsers: ['watcher'] },
          ],
        },
      }),
    );
  });
  after(async () => {
    await runner.stop();
    await h.close();
  });

  test('accept and reject of the same items at the same moment: one serial order, never a DENIED item with a running workflow', async () => {
    const { id: gridId, items } = await gridOver('RACE-', 40);
    const waiting = items.filter((_, i) => i % 2 === 1); // ListPrice 100: accept makes them wait
    const check = async (i: any, accept: { status: number }, reject: { status: number }) => {
      const now = await item(i.id);
      const pending = (await workflowsOf(i.typedId)).filter((w: any) => w.workflowStatus === 'SUBMITTED');
      // accept then reject: the reject is refused; reject then accept: both answer 200, item SUBMITTED.
      assert.equal(accept.status, 200, `${i.typedId}: accept ${accept.status}`);
      assert.ok([200, 409].includes(reject.status), `${i.typedId}: reject ${reject.status}`);
      assert.deepEqual(
        [now.workflowStatus, now.approvalState, pending.length],
        ['SUBMITTED', 'NOT_APPROVED', 1],
        `${i.typedId} after accept ${accept.status} / reject ${reject.status}`,
      );
    };
    // One item per pair of calls.
    for (const i of waiting.slice(0, 12)) {
      const body = { data: { items: [i.id] } };
      const [accept, reject] = await Promise.all([
        api(`/calculationgridmanager.accept/${gridId}`, body),
        api(`/calculationgridmanager.reject/${gridId}`, body),
      ]);
      await check(i, accept, reject);
    }
    // Many items per call, listed in opposite orders (no deadlock either).
    const rest = waiting.slice(12);
    const ids = rest.map((i) => i.id);
    const [accept, reject] = await Promise.all([
      api(`/calculationgridmanager.accept/${gridId}`, { data: { items: ids } }),
      api(`/calculationgridmanager.reject/${gridId}`, { data: { items: [...ids].reverse() } }),
    ]);
    for (const i of rest) await check(i, accept, reject);
  });

  test('a decided item is not rejected (409): approved through its workflow, approved at once, or denied', async () => {
    const { id: gridId, items } = await gridOver('DONE-', 3);
    const [cheap, dear, third] = items;
    const reject = (i: any) => api(`/calculationgridmanager.reject/${gridId}`, { data: { items: [i.id] } });
    okData(await api(`/calculationgridmanager.accept/${gridId}`, { data: { items: [cheap.id, dear.id] } }));
    assert.equal((await item(cheap.id)).workflowStatus, 'APPROVED');
    const [wf] = (await workflowsOf(dear.typedId)).filter((w: any) => w.workflowStatus === 'SUBMITTED');
    okData(
      await approver(`/workflowsmanager.approve/${wf.id}`, { data: {}, oldValues: { version: wf.version } }),
    );
    const [wf2] = okData(await approver(`/workflowsmanager.details/${wf.id}`, {}));
    // The second step is decided by the watcher (approver of step Later).
    okData(
      await watcher(`/workflowsmanager.approve/${wf.id}`, { data: {}, oldValues: { version: wf2.version } }),
    );
    const approved = await item(dear.id);
    assert.deepEqual([approved.workflowStatus, approved.approvalState], ['APPROVED', 'APPROVED']);
    for (const i of [cheap, dear]) {
      const before = await item(i.id);
      const r = await reject(i);
      expectError(r, 409, -1);
      assert.match(r.body.response.data, new RegExp(`${i.id}\\.CGI1 is already approved`));
      assert.deepEqual(await item(i.id), before, 'nothing changed');
    }
    // Refused as a whole when one of the list is decided.
    const r = await api(`/calculationgridmanager.reject/${gridId}`, {
      data: { items: [third.id, cheap.id] },
    });
    expectError(r, 409, -1);
    assert.equal((await item(third.id)).workflowStatus, 'DRAFT');
    const [denied] = okData(await reject(third));
    assert.deepEqual([denied.workflowStatus, denied.approvalState], ['DENIED', 'DENIED']);
    expectError(await reject(third), 409, -1);
    // A denied item can be proposed again.
    const [again] = okData(
      await api(`/calculationgridmanager.accept/${gridId}`, { data: { items: [third.id] } }),
    );
    assert.equal(again.workflowStatus, 'APPROVED');
    // Every decision is in the items' record history (accept, each workflow outcome, reject).
    const changes = async (i: any) =>
      okData(await api(`/fetch/CGI1/${i.id}/history`, { sortBy: 'id' }))
        .filter((e: any) => e.action === 'UPDATE' && e.changes?.workflowStatus !== undefined)
        .map((e: any) => [
          e.changes.workflowStatus.old,
          e.changes.workflowStatus.new,
          e.changes.approvalState?.new,
        ]);
    assert.deepEqual(await changes(cheap), [['DRAFT', 'APPROVED', 'APPROVED']]);
    assert.deepEqual(await changes(dear), [
      ['DRAFT', 'SUBMITTED', undefined],
      ['SUBMITTED', 'APPROVED', 'APPROVED'],
    ]);
    assert.deepEqual(await changes(third), [
      ['DRAFT', 'DENIED', 'DENIED'],
      ['DENIED', 'APPROVED', 'APPROVED'],
    ]);
  });

  test(`accept of ${MANY} items: set-based, each item as one submit would leave it`, async () => {
    const { id: gridId, items } = await gridOver('MANY-', MANY);
    // (Its speed is no test's business: item by item, 2,000 items took 78 s on PostgreSQL; set-based
    // 3 to 7 s. See the CHANGELOG.)
    const answer = okData(
      await api(`/calculationgridmanager.accept/${gridId}`, { data: { items: items.map((i) => i.id) } }),
    );
    assert.equal(answer.length, MANY);
    answer.forEach((a: any, k: number) =>
      assert.deepEqual(
        [a.typedId, a.workflowStatus, a.approvalState],
        k % 2 === 0
          ? [items[k].typedId, 'APPROVED', 'APPROVED']
          : [items[k].typedId, 'SUBMITTED', 'NOT_APPROVED'],
      ),
    );

    // An item approved at once: its workflow APPROVED with no definition, one event, history ADD + UPDATE.
    const [at] = await workflowsOf(items[0].typedId);
    assert.deepEqual(
      [at.workflowStatus, at.definitionName ?? null, at.approvableTypedId],
      ['APPROVED', null, items[0].typedId],
    );
    const [atDetails] = okData(await api(`/workflowsmanager.details/${at.id}`, {}));
    assert.deepEqual(
      atDetails.history.map((e: any) => [e.action, e.comment]),
      [['SUBMITTED', 'no workflow definition applies: approved at once']],
    );
    const atHistory = await h.db.query<{ action: string; record_version: number }>(
      `SELECT action, record_version FROM record_history
        WHERE partition_id = $1 AND type_code = 'WF' AND record_id = $2 ORDER BY id`,
      [h.partitionId, at.id],
    );
    assert.deepEqual(
      atHistory.rows.map((e) => [e.action, e.record_version]),
      [
        ['ADD', 0],
        ['UPDATE', 1],
      ],
    );
    // An item waiting: step 1 skipped, step 2 active with its approver and watcher, told so.
    const dear = items[1];
    const [wf] = await workflowsOf(dear.typedId);
    assert.deepEqual(
      [wf.workflowStatus, wf.definitionName, wf.currentStep, wf.version],
      ['SUBMITTED', 'd-approval', 2, 1],
    );
    const [details] = okData(await approver(`/workflowsmanager.details/${wf.id}`, {}));
    assert.deepEqual(
      details.steps.map((s: any) => [s.stepNo, s.name, s.status]),
      [
        [1, 'Never', 'SKIPPED'],
        [2, 'Managers', 'ACTIVE'],
        [3, 'Later', 'WAITING'],
      ],
    );
    assert.deepEqual(
      details.history.map((e: any) => [e.action, e.stepNo ?? null]),
      [
        ['SUBMITTED', null],
        ['SKIPPED', 1],
        ['STEP_STARTED', 2],
      ],
    );
    const mineToDecide = new Set(items.map((i) => i.typedId));
    const active = okData(await approver('/workflowsmanager.fetch/active', { endRow: PAGE }));
    assert.equal(
      active.filter((w: any) => mineToDecide.has(w.approvableTypedId)).length,
      MANY / 2,
      'every waiting item is the approver’s to decide',
    );
    const told = okData(
      await approver('/notification.list', { data: adv(eq('topic', 'WORKFLOW')), endRow: PAGE }),
    ).filter((n: any) => mineToDecide.has(n.payload?.approvableTypedId));
    assert.equal(told.filter((n: any) => /^Approval required/.test(n.title)).length, MANY / 2);
    const mine = told.find((n: any) => n.payload?.approvableTypedId === dear.typedId);
    assert.ok(mine, 'the approver is told of each item');
    assert.equal(mine.title, `Approval required: Calculation grid item ${dear.id} (MANY-: ${dear.key1})`);
    assert.deepEqual(mine.payload, {
      workflowId: wf.id,
      typedId: `${wf.id}.WF`,
      code: 'CGI',
      approvableTypedId: dear.typedId,
    });
    const watched = okData(
      await watcher('/notification.list', { data: adv(eq('topic', 'WORKFLOW')), endRow: PAGE }),
    ).filter((n: any) => mineToDecide.has(n.payload?.approvableTypedId));
    assert.equal(watched.filter((n: any) => /^Step Managers reached/.test(n.title)).length, MANY / 2);
    // The workflow goes on as any other: approve step 2, then step 3 by its approver.
    okData(
      await approver(`/workflowsmanager.approve/${wf.id}`, { data: {}, oldValues: { version: wf.version } }),
    );
    const [w3] = okData(await watcher(`/workflowsmanager.details/${wf.id}`, {}));
    assert.equal(w3.currentStep, 3);
    okData(
      await watcher(`/workflowsmanager.approve/${wf.id}`, { data: {}, oldValues: { version: w3.version } }),
    );
    assert.equal((await item(dear.id)).approvalState, 'APPROVED');
    // A second accept of the same items: 409, nothing changed.
    expectError(
      await api(`/calculationgridmanager.accept/${gridId}`, { data: { items: [items[3].id] } }),
      409,
      -1,
    );
  });
});
