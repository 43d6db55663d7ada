// Accept and reject of grid items over HTTP on both databases (audit fix): a 409 about an item the
// request chose names the field that chose it — `data.items.<i>` of an items list (the first entry
// naming it, id or typedId), `data.filter` when a filter chose it — as a 404 of an unknown id does;
// nothing is changed.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { adv, eq } from '../helpers/criteria.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { runnerFor, waitForJob } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';

describe('calculation grid decisions: 409s name the item of the request', () => {
  let h: Harness;
  let runner: JobRunner;
  let api: Client;
  let grid: number;
  let items: any[];
  let fresh: any;

  const item = async (id: number) => okData(await api(`/fetch/CGI1/${id}`))[0];
  const conflict = (r: any, field: string, text: RegExp) => {
    expectError(r, 409, -1, field);
    assert.equal(Object.keys(r.body.response.errors).length, 1, r.text);
    assert.match(r.body.response.data, text);
  };

  before(async () => {
    h = await startHarness();
    runner = runnerFor(h).start();
    api = await clientOf(h);
    okData(
      await api('/loaddata/P', {
        data: {
          header: ['sku', 'attribute1'],
          data: [
            ['DF-1', '10'],
            ['DF-2', '100'],
            ['DF-3', '100'],
          ],
        },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'DFPrice',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          elements: [{ elementName: 'ListPrice', expression: 'product.attribute1' }],
        },
      }),
    );
    // Items of ListPrice 100 wait in a workflow; DF-1 (10) is approved at once.
    okData(
      await api('/add/WFD', {
        data: {
          uniqueName: 'df-approval',
          approvableType: 'CGI',
          condition: 'ListPrice > 50',
          steps: [{ name: 'Admins', approverUsers: ['admin'] }],
        },
      }),
    );
    const [g] = okData(
      await api('/calculationgridmanager.addgrid', {
        data: {
          label: 'DF',
          formulaName: 'DFPrice',
          productFilter: { fieldName: 'sku', operator: 'startsWith', value: 'DF-' },
        },
      }),
    );
    grid = g.id;
    const [jst] = okData(await api(`/calculationgridmanager.calculate/${grid}`, {}));
    assert.equal((await waitForJob(h, jst.jstId)).status, 'FINISHED');
    items = okData(await api('/fetch/CGI1', { data: adv(eq('calculationGridId', grid)), sortBy: 'key1' }));
    assert.equal(items.length, 3);
    // An item added since the run: no results.
    [fresh] = okData(await api('/add/CGI1', { data: { calculationGridId: grid, key1: 'DF-4' } }));
  });
  after(async () => {
    await runner.stop();
    await h.close();
  });

  test('accept: an item without results, an approved one, a waiting one: 409 naming data.items.<i>', async () => {
    const [one, two] = items;
    conflict(
      await api(`/calculationgridmanager.accept/${grid}`, { data: { items: [one.id, fresh.id] } }),
      'data.items.1',
      new RegExp(`${fresh.id}\\.CGI1: no results`),
    );
    // Named by typedId, and the first entry naming it when named twice.
    conflict(
      await api(`/calculationgridmanager.accept/${grid}`, {
        data: { items: [fresh.typedId, fresh.id] },
      }),
      'data.items.0',
      /no results/,
    );
    assert.equal((await item(one.id)).workflowStatus, 'DRAFT');

    okData(await api(`/calculationgridmanager.accept/${grid}`, { data: { items: [one.id, two.id] } }));
    assert.equal((await item(one.id)).workflowStatus, 'APPROVED');
    assert.equal((await item(two.id)).workflowStatus, 'SUBMITTED');
    const third = items[2];
    conflict(
      await api(`/calculationgridmanager.accept/${grid}`, { data: { items: [third.id, one.typedId] } }),
      'data.items.1',
      new RegExp(`${one.id}\\.CGI1 is already approved`),
    );
    conflict(
      await api(`/calculationgridmanager.accept/${grid}`, { data: { items: [third.id, two.id] } }),
      'data.items.1',
      new RegExp(`${two.id}\\.CGI1 is already submitted`),
    );
    // Chosen by a filter: the filter is named.
    conflict(
      await api(`/calculationgridmanager.accept/${grid}`, {
        data: { filter: adv(eq('key1', one.key1)) },
      }),
      'data.filter',
      /already approved/,
    );
    assert.equal((await item(third.id)).workflowStatus, 'DRAFT');
  });

  test('reject: an approved item, one waiting in a workflow: 409 naming data.items.<i>', async () => {
    const [one, two, third] = items;
    conflict(
      await api(`/calculationgridmanager.reject/${grid}`, { data: { items: [third.id, one.id] } }),
      'data.items.1',
      new RegExp(`${one.id}\\.CGI1 is already approved`),
    );
    conflict(
      await api(`/calculationgridmanager.reject/${grid}`, { data: { items: [third.typedId, two.typedId] } }),
      'data.items.1',
      new RegExp(`${two.id}\\.CGI1 waits in workflow`),
    );
    conflict(
      await api(`/calculationgridmanager.reject/${grid}`, { data: { filter: adv(eq('key1', two.key1)) } }),
      'data.filter',
      /waits in workflow/,
    );
    assert.equal((await item(third.id)).workflowStatus, 'DRAFT');
    okData(await api(`/calculationgridmanager.reject/${grid}`, { data: { items: [third.id] } }));
    conflict(
      await api(`/calculationgridmanager.reject/${grid}`, { data: { items: [fresh.id, third.id] } }),
      'data.items.1',
      new RegExp(`${third.id}\\.CGI1 is already denied`),
    );
  });
});
