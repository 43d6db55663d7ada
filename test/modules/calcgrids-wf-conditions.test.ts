// Workflow conditions on calculation grid items, over HTTP on both databases: a definition or step
// condition that reads a name the item's grid does not have (a typo, an element of another grid's
// logic) cannot be evaluated — accept answers -4 on `condition` naming the definition (and step)
// and the name, nothing is submitted — while an element whose value is null reads as null, and a
// name the condition does not reach (`calculationGridId == 0 and Nope > 1`) is not looked up.
// Also: addgrid without keyNumber and with no key sources names keySources.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { runnerFor, waitForJob } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';

describe('workflow conditions of calculation grid items', () => {
  let h: Harness;
  let runner: JobRunner;
  let api: Client;
  let gridId: number;
  let itemIds: number[];
  let defs = 0;
  const definition = async (fields: Record<string, unknown>) =>
    okData(
      await api('/add/WFD', {
        data: {
          uniqueName: `c-${++defs}`,
          approvableType: 'CGI',
          priority: -100,
          steps: [{ name: 'Check', approverUsers: ['admin'] }],
          ...fields,
        },
      }),
    )[0];
  const drop = async (d: { typedId: string }) =>
    okData(await api('/delete/WFD', { data: { typedId: d.typedId } }));
  const accept = (id: number) => api(`/calculationgridmanager.accept/${gridId}`, { data: { items: [id] } });
  const itemOf = async (id: number) => okData(await api(`/fetch/CGI1/${id}`))[0];

  before(async () => {
    h = await startHarness();
    runner = runnerFor(h).start();
    api = await clientOf(h);
    okData(await api('/add/PAM', { data: { fieldName: 'attribute1', label: 'Cost', fieldType: 'MONEY' } }));
    for (const sku of ['K-1', 'K-2', 'K-3'])
      okData(await api('/integrate/P', { data: { sku, attribute1: '45' } }));
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'KPrice',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          elements: [
            { elementName: 'ListPrice', expression: 'product.attribute1' },
            { elementName: 'Empty', expression: 'null' },
          ],
        },
      }),
    );
    const [grid] = okData(
      await api('/calculationgridmanager.addgrid', {
        data: {
          formulaName: 'KPrice',
          productFilter: { fieldName: 'sku', operator: 'startsWith', value: 'K-' },
        },
      }),
    );
    gridId = grid.id;
    const [jst] = okData(await api(`/calculationgridmanager.calculate/${gridId}`, {}));
    assert.equal((await waitForJob(h, jst.jstId)).status, 'FINISHED');
    itemIds = okData(await api('/fetch/CGI1', { data: { calculationGridId: gridId }, sortBy: 'key1' })).map(
      (i: any) => i.id,
    );
    assert.equal(itemIds.length, 3);
  });
  after(async () => {
    await runner.stop();
    await h.close();
  });

  test('a definition condition naming no field or element of the item is -4 at accept, nothing submitted', async () => {
    const [id] = itemIds as [number];
    for (const condition of ['Nope > 1', 'Cost > 0 or ListPrice > 0']) {
      // Saved: the elements differ per grid, so the name is looked up on the item.
      const d = await definition({ condition });
      try {
        const r = await accept(id);
        expectError(r, 400, -4, 'condition');
        const name = condition.startsWith('Nope') ? 'Nope' : 'Cost';
        assert.match(
          r.body.response.data,
          new RegExp(`workflow definition ${d.uniqueName}: unknown name ${name}`),
        );
        assert.match(r.body.response.data, /ListPrice/, 'names what the item has');
      } finally {
        await drop(d);
      }
    }
    const item = await itemOf(id);
    assert.deepEqual([item.workflowStatus, item.approvalState], ['DRAFT', 'NOT_APPROVED']);
    assert.equal(okData(await api('/workflowsmanager.fetch', {})).length, 0, 'no workflow');
  });

  test('a mistyped step condition is -4 naming the step, not a skipped step', async () => {
    const [, id] = itemIds as [number, number];
    const d = await definition({
      steps: [{ name: 'Typo', approverUsers: ['admin'], condition: 'ListPirce > 1' }],
    });
    try {
      const r = await accept(id);
      expectError(r, 400, -4, 'condition');
      assert.match(r.body.response.data, /step 1 of workflow definition c-\d+: unknown name ListPirce/);
      assert.equal((await itemOf(id)).workflowStatus, 'DRAFT');
    } finally {
      await drop(d);
    }
  });

  test('an element valued null, a name not reached and the keys evaluate; the workflow runs', async () => {
    const [, , id] = itemIds as [number, number, number];
    // Not reached: the definition does not apply (calculationGridId differs), no error.
    const skipped = await definition({ condition: `calculationGridId == ${gridId + 1000} and Nope > 1` });
    // Empty is an element of the grid whose value is null: it reads as null (false), no error.
    const nulls = await definition({ condition: 'Empty > 1' });
    const applies = await definition({
      condition: 'key1 == "K-3" and ListPrice > 40',
      steps: [
        { name: 'Skipped', approverUsers: ['admin'], condition: 'Empty != null' },
        { name: 'Check', approverUsers: ['admin'] },
      ],
    });
    const [accepted] = okData(await accept(id));
    assert.equal(accepted.workflowStatus, 'SUBMITTED');
    const [wf] = okData(await api('/workflowsmanager.fetch', {})).filter(
      (w: any) => w.approvableTypedId === `${id}.CGI1`,
    );
    assert.deepEqual([wf.definitionName, wf.currentStep], [applies.uniqueName, 2]);
    for (const d of [skipped, nulls, applies]) await drop(d);
  });

  test('addgrid without keyNumber and with no key sources names keySources', async () => {
    const r = await api('/calculationgridmanager.addgrid', {
      data: { formulaName: 'KPrice', keySources: [] },
    });
    expectError(r, 400, -4, 'keySources');
    assert.equal(r.body.response.errors.keyNumber, undefined);
    expectError(
      await api('/calculationgridmanager.addgrid', { data: { formulaName: 'KPrice', keyNumber: 7 } }),
      400,
      -4,
      'keyNumber',
    );
  });
});
