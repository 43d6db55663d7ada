// A grid's counts and its calculation's second pass, over HTTP on both databases: `itemCount`,
// `calculatedCount` and `errorCount` follow items added and deleted (every delete path) in the same
// request, and an item added with /add/CGI{k} is computed once by the next run (PostgreSQL computed
// it twice: the second pass read its next page before the previous one was written).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { adv, eq } from '../helpers/criteria.ts';
import { okData } from '../helpers/envelope.ts';
import { runnerFor, waitForJob } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';

describe('calculation grid counts and added items', () => {
  let h: Harness;
  let runner: JobRunner;
  let api: Client;

  const counts = async (gridId: number) => {
    const [g] = okData(await api(`/fetch/CG/${gridId}`));
    return [g.itemCount, g.calculatedCount, g.errorCount];
  };
  const itemsOf = async (gridId: number) =>
    okData(await api('/fetch/CGI1', { data: adv(eq('calculationGridId', gridId)), sortBy: 'key1' }));
  async function calculate(gridId: number, data: object = {}) {
    const [jst] = okData(await api(`/calculationgridmanager.calculate/${gridId}`, { data }));
    const job = await waitForJob(h, jst.jstId);
    assert.equal(job.status, 'FINISHED');
    return job.calculationResults;
  }
  async function newGrid(prefix: string, products: number): Promise<number> {
    okData(
      await api('/loaddata/P', {
        data: {
          header: ['sku', 'attribute1'],
          data: Array.from({ length: products }, (_, i) => [`${prefix}${i}`, String(10 + i)]),
        },
      }),
    );
    const [grid] = okData(
      await api('/calculationgridmanager.addgrid', {
        data: {
          formulaName: 'CPrice',
          productFilter: { fieldName: 'sku', operator: 'startsWith', value: prefix },
        },
      }),
    );
    return grid.id;
  }

  before(async () => {
    h = await startHarness();
    runner = runnerFor(h).start();
    api = await clientOf(h);
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'CPrice',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          elements: [{ elementName: 'ListPrice', expression: 'product.attribute1', formatType: 'MONEY' }],
        },
      }),
    );
  });
  after(async () => {
    await runner.stop();
    await h.close();
  });

  test('itemCount, calculatedCount and errorCount follow items added and deleted, on every path', async () => {
    const gridId = await newGrid('CNT-', 8);
    assert.deepEqual(await counts(gridId), [0, 0, 0]);
    await calculate(gridId);
    assert.deepEqual(await counts(gridId), [8, 8, 0]);
    // Items of products that do not exist: their calculation fails (errors).
    for (const key1 of ['NOPE-1', 'NOPE-2', 'NOPE-3'])
      okData(await api('/add/CGI1', { data: { calculationGridId: gridId, key1 } }));
    assert.deepEqual(await counts(gridId), [11, 8, 0], 'added, not calculated yet');
    await calculate(gridId);
    assert.deepEqual(await counts(gridId), [11, 8, 3]);
    const items = await itemsOf(gridId);
    const key = (k: string) => items.find((i: any) => i.key1 === k);
    // One, a batch, by filter: each answers with the counts right.
    okData(await api('/delete/CGI1', { data: { typedId: key('NOPE-1').typedId } }));
    assert.deepEqual(await counts(gridId), [10, 8, 2]);
    okData(
      await api('/delete/CGI1', [
        { data: { typedId: key('CNT-0').typedId } },
        { data: { typedId: key('NOPE-2').typedId } },
      ]),
    );
    assert.deepEqual(await counts(gridId), [8, 7, 1]);
    okData(
      await api('/delete/CGI1/batch/forcefilter', {
        data: adv(eq('calculationGridId', gridId), {
          fieldName: 'key1',
          operator: 'inSet',
          value: ['CNT-1', 'CNT-2', 'CNT-3'],
        }),
      }),
    );
    assert.deepEqual(await counts(gridId), [5, 4, 1]);
    assert.equal((await itemsOf(gridId)).length, 5);
    // Another grid's counts are its own.
    const other = await newGrid('OTH-', 2);
    await calculate(other);
    assert.deepEqual(await counts(other), [2, 2, 0]);
    assert.deepEqual(await counts(gridId), [5, 4, 1]);
  });

  test('an item added with /add/CGI1 is computed once by the next run', async () => {
    const gridId = await newGrid('ADD-', 8);
    await calculate(gridId);
    for (let round = 1; round <= 5; round++) {
      const [added] = okData(
        await api('/add/CGI1', { data: { calculationGridId: gridId, key1: `ADD-${round + 7}` } }),
      );
      if (round > 1)
        okData(await api('/integrate/P', { data: { sku: `ADD-${round + 7}`, attribute1: '5' } }));
      assert.equal(added.version, 0);
      const before = new Map((await itemsOf(gridId)).map((i: any) => [i.key1, i.version]));
      // Small batches: the second pass reads several pages (round 3 on).
      const run = await calculate(gridId, round >= 3 ? { batchSize: 2 } : {});
      const n = 8 + round;
      assert.deepEqual([run.computed + run.skipped, run.computed], [n, n], JSON.stringify(run));
      for (const i of await itemsOf(gridId))
        assert.equal(i.version, (before.get(i.key1) ?? 0) + 1, `${i.key1} written once in round ${round}`);
    }
  });
});
