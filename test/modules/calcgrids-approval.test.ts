// Calculation grid items in workflows, over HTTP on both databases: `/workflowsmanager.submit` of an
// item under accept's rules (results required; its own typedId `12.CGI1` or the approvable's `12.CGI`),
// the workflow naming the item by its own typedId, a withdrawn item WITHDRAWN, a recalculation leaving
// items under review as submitted and making a decided item whose results changed a new proposal,
// and a stale override version naming oldValues.version.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { adv, eq } from '../helpers/criteria.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { runnerFor, waitForJob } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';

describe('calculation grid items in workflows', () => {
  let h: Harness;
  let runner: JobRunner;
  let api: Client;
  let approver: Client;
  let gridId: number;
  const item = async (key: string) =>
    okData(await api('/fetch/CGI1', { data: adv(eq('calculationGridId', gridId), eq('key1', key)) }))[0];
  const listPrice = (i: any) => i.calculationResults.find((r: any) => r.resultName === 'ListPrice').result;
  /** Runs a calculation of the grid; answers what it computed (each item once, a held one too). */
  async function calculate(): Promise<{ items: number; computed: number }> {
    const [jst] = okData(await api(`/calculationgridmanager.calculate/${gridId}`, {}));
    const job = await waitForJob(h, jst.jstId);
    assert.equal(job.status, 'FINISHED');
    return job.calculationResults;
  }
  const cost = async (sku: string, attribute1: string) =>
    okData(await api('/integrate/P', { data: { sku, attribute1 } }));

  before(async () => {
    h = await startHarness();
    runner = runnerFor(h).start();
    api = await clientOf(h);
    await h.newUser('approver', 'approver-password-1', ['WF_ADMIN', 'PRICESHOP_EDIT']);
    approver = await clientOf(h, 'approver', 'approver-password-1');
    okData(await api('/add/PAM', { data: { fieldName: 'attribute1', label: 'Cost', fieldType: 'MONEY' } }));
    await cost('W-1', '10');
    await cost('W-2', '100');
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'WPrice',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          elements: [
            {
              elementName: 'ListPrice',
              expression: 'product.attribute1',
              formatType: 'MONEY',
              overridable: true,
            },
          ],
        },
      }),
    );
    okData(
      await api('/add/WFD', {
        data: {
          uniqueName: 'w-approval',
          approvableType: 'CGI',
          condition: 'ListPrice > 50',
          steps: [{ name: 'Managers', approverUsers: ['approver'], rule: 'ANY' }],
        },
      }),
    );
    const [grid] = okData(
      await api('/calculationgridmanager.addgrid', {
        data: {
          label: 'W',
          formulaName: 'WPrice',
          productFilter: { fieldName: 'sku', operator: 'startsWith', value: 'W-' },
        },
      }),
    );
    gridId = grid.id;
    await calculate();
  });
  after(async () => {
    await runner.stop();
    await h.close();
  });

  test('/workflowsmanager.submit of an item: results required, its own typedId or CGI, never another key number', async () => {
    // Definitions name the approvable's own code: one for CGI1 would never apply (items approved at once).
    expectError(
      await api('/add/WFD', {
        data: { uniqueName: 'w-alias', approvableType: 'CGI1', steps: [{ approverUsers: ['approver'] }] },
      }),
      400,
      -4,
      'approvableType',
    );
    const [fresh] = okData(await api('/add/CGI1', { data: { calculationGridId: gridId, key1: 'W-9' } }));
    for (const typedId of [`${fresh.id}.CGI1`, `${fresh.id}.CGI`]) {
      const r = await api(`/workflowsmanager.submit/${typedId}`, {});
      expectError(r, 409, -1);
      assert.match(r.body.response.data, new RegExp(`${fresh.id}\\.CGI1: no results`));
    }
    expectError(await api(`/workflowsmanager.submit/${fresh.id}.CGI2`, {}), 404, -1);
    // A type code no approvable has: a 404 naming the path's typedId.
    expectError(await api(`/workflowsmanager.submit/${fresh.id}.XYZ`, {}), 404, -1, 'typedId');
    assert.equal((await item('W-9')).workflowStatus, 'DRAFT', 'nothing submitted');
    assert.equal(okData(await api('/workflowsmanager.fetch', {})).length, 0);
    okData(await api('/delete/CGI1', { data: { typedId: fresh.typedId } }));

    // With results: submitted by its own typedId, the workflow names the item so.
    const w2 = await item('W-2');
    okData(await api(`/workflowsmanager.submit/${w2.typedId}`, {}));
    const [wf] = okData(await api('/workflowsmanager.fetch', {}));
    assert.equal(wf.approvableTypedId, w2.typedId);
    assert.equal(wf.approvableTypedId, `${w2.id}.CGI1`);
    assert.equal((await item('W-2')).workflowStatus, 'SUBMITTED');
    const [details] = okData(await api(`/workflowsmanager.details/${wf.id}`, {}));
    assert.equal(details.approvableTypedId, w2.typedId);
  });

  test('a recalculation leaves an item under review as submitted; a decided one whose results change is proposed again', async () => {
    const w1 = await item('W-1');
    const [accepted] = okData(
      await api(`/calculationgridmanager.accept/${gridId}`, { data: { items: [w1.id] } }),
    );
    assert.deepEqual([accepted.workflowStatus, accepted.approvalState], ['APPROVED', 'APPROVED']);
    await cost('W-1', '12');
    await cost('W-2', '200');
    const run = await calculate();
    // The item under review is computed once, as the others (left out of the run, it was taken up
    // again by the run's last pass, three times in all).
    assert.deepEqual([run.items, run.computed], [2, 2]);
    const [a, b] = [await item('W-1'), await item('W-2')];
    assert.deepEqual([a.workflowStatus, a.approvalState, listPrice(a)], ['DRAFT', 'NOT_APPROVED', 12]);
    // Under review: the approvers decide on the values submitted.
    assert.deepEqual([b.workflowStatus, listPrice(b)], ['SUBMITTED', 100]);
    // An approved item whose results stay the same stays approved.
    okData(await api(`/calculationgridmanager.accept/${gridId}`, { data: { items: [a.id] } }));
    await calculate();
    assert.equal((await item('W-1')).workflowStatus, 'APPROVED');
  });

  test('withdrawn, an item is WITHDRAWN and can be accepted again; recalculated then', async () => {
    const [wf] = okData(await api('/workflowsmanager.fetch', {})).filter(
      (w: any) => w.workflowStatus === 'SUBMITTED',
    );
    okData(
      await api(`/workflowsmanager.withdraw/${wf.id}`, { data: {}, oldValues: { version: wf.version } }),
    );
    let b = await item('W-2');
    assert.deepEqual([b.workflowStatus, b.approvalState], ['WITHDRAWN', 'NOT_APPROVED']);
    await calculate();
    b = await item('W-2');
    assert.deepEqual([b.workflowStatus, listPrice(b)], ['WITHDRAWN', 200]);
    const [again] = okData(
      await api(`/calculationgridmanager.accept/${gridId}`, { data: { items: [b.id] } }),
    );
    assert.equal(again.workflowStatus, 'SUBMITTED');
    const [wf2] = okData(await approver('/workflowsmanager.fetch/active', {}));
    assert.equal(wf2.approvableTypedId, b.typedId);
    okData(
      await approver(`/workflowsmanager.approve/${wf2.id}`, {
        data: {},
        oldValues: { version: wf2.version },
      }),
    );
    assert.equal((await item('W-2')).workflowStatus, 'APPROVED');
  });

  test('a stale override version is a 409 naming oldValues.version', async () => {
    const a = await item('W-1');
    const stale = await api(`/calculationgridmanager.update/${a.typedId}`, {
      data: { overrides: { ListPrice: 5 } },
      oldValues: { version: a.version - 1 },
    });
    expectError(stale, 409, -1, 'oldValues.version');
    assert.equal(listPrice(await item('W-1')), 12, 'nothing written');
    const [done] = okData(
      await api(`/calculationgridmanager.update/${a.typedId}`, {
        data: { overrides: { ListPrice: 5 } },
        oldValues: { version: a.version },
      }),
    );
    assert.equal(listPrice(done), 5);
  });
});
