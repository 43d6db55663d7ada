// A grid item waiting in a workflow cannot be deleted (a state rule of the database, migration 051):
// the 409 names the field that addressed the item, with its index in a batch, and nothing is deleted.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { adv, eq } from '../helpers/criteria.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { runnerFor, waitForJob } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';

describe('calculation grids: deleting a submitted item', () => {
  let h: Harness;
  let runner: JobRunner;
  let api: Client;
  let items: { id: number; typedId: string }[];

  before(async () => {
    h = await startHarness();
    runner = runnerFor(h).start();
    api = await clientOf(h);
    okData(
      await api('/loaddata/P', {
        data: {
          header: ['sku', 'attribute1'],
          data: [
            ['SD-1', '100'],
            ['SD-2', '10'],
          ],
        },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'SDPrice',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          elements: [{ elementName: 'ListPrice', expression: 'product.attribute1', overridable: true }],
        },
      }),
    );
    okData(
      await api('/add/WFD', {
        data: {
          uniqueName: 'sd-approval',
          approvableType: 'CGI',
          condition: 'ListPrice > 50',
          steps: [{ name: 'Admins', approverUsers: ['admin'] }],
        },
      }),
    );
    const [grid] = okData(
      await api('/calculationgridmanager.addgrid', {
        data: {
          formulaName: 'SDPrice',
          productFilter: { fieldName: 'sku', operator: 'startsWith', value: 'SD-' },
        },
      }),
    );
    const [jst] = okData(await api(`/calculationgridmanager.calculate/${grid.id}`, {}));
    assert.equal((await waitForJob(h, jst.jstId)).status, 'FINISHED');
    items = okData(await api('/fetch/CGI1', { data: adv(eq('calculationGridId', grid.id)), sortBy: 'key1' }));
    // The first item (ListPrice 100) goes into the workflow: SUBMITTED.
    okData(await api(`/calculationgridmanager.accept/${grid.id}`, { data: { items: [items[0]!.id] } }));
  });
  after(async () => {
    await runner.stop();
    await h.close();
  });

  test('the 409 names typedId or id as sent, 1.typedId in a batch; nothing is deleted', async () => {
    const [submitted, other] = items as [{ id: number; typedId: string }, { id: number; typedId: string }];
    expectError(await api('/delete/CGI1', { data: { typedId: submitted.typedId } }), 409, -1, 'typedId');
    expectError(await api('/delete/CGI1', { data: { id: submitted.id } }), 409, -1, 'id');
    const batch = await api('/delete/CGI1', [
      { data: { typedId: other.typedId } },
      { data: { typedId: submitted.typedId } },
    ]);
    expectError(batch, 409, -1, '1.typedId');
    assert.equal(okData(await api(`/fetch/CGI1/${other.id}`))[0].id, other.id);
    assert.equal(okData(await api(`/fetch/CGI1/${submitted.id}`))[0].id, submitted.id);
  });
});
