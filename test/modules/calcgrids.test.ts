// Calculation grids over real HTTP on both databases: a 1-key and a 3-key grid calculated by the
// CALCULATIONGRID job (values worked by hand), fetch filtered and sorted by results (numbers compare
// as numbers), an override surviving a recalculation with its dependent elements recomputed, a
// recalculation after its products changed (every item by hand), cancel and crash mid-way with the
// restart not recomputing finished items, accept/reject through a workflow, checks naming fields,
// permissions and partition isolation; the plan of the batch's look-up of existing items under
// statistics that do not know the grid's items.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness, type Reply } from '../helpers/app.ts';
import { runnerFor } from '../jobs/helpers.ts';
import { JobStopped, type JobRunner } from '../../src/jobs/runner.ts';
import { claimJobs, finishJob, recordProgress, sweepStale, type JobRow } from '../../src/jobs/store.ts';
import { principalForJob } from '../../src/jobs/principal.ts';
import { CALCULATIONGRID, calcGridJobKind } from '../../src/modules/calcgrids/job.ts';
import { existingOf, keysOf, writeItems } from '../../src/modules/calcgrids/store.ts';
import type { Db, Tx } from '../../src/db/db.ts';

type Who = { user: string; password: string };
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const reader: Who = { user: 'reader', password: 'reader-password-1' };
const approver: Who = { user: 'approver', password: 'approver-password-1' };
const nobody: Who = { user: 'nobody', password: 'nobody-password-1' };

function okData(r: Reply): any[] {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.response.status, 0, r.text);
  return r.body.response.data;
}

function expectError(r: Reply, http: number, status: number, field?: string): void {
  assert.equal(r.status, http, r.text);
  assert.equal(r.body.response.status, status, r.text);
  if (field !== undefined) assert.ok(r.body.response.errors?.[field], `error names ${field}: ${r.text}`);
}

const GRID_LOGIC = {
  uniqueName: 'GridPrice',
  validAfter: '2026-01-01',
  nature: 'CALCULATIONGRID',
  inputs: [{ name: 'Uplift', type: 'NUMBER', default: 0 }],
  elements: [
    { elementName: 'Cost', expression: 'product.attribute1', formatType: 'MONEY' },
    {
      elementName: 'ListPrice',
      expression: 'round(Cost * (1 + input.Uplift), 2)',
      formatType: 'MONEY',
      overridable: true,
    },
    { elementName: 'Net', expression: 'round(ListPrice * 0.9, 2)', formatType: 'MONEY' },
    { elementName: 'Tier', expression: 'if(ListPrice > 50, "high", "low")' },
  ],
};

const REGIONAL_LOGIC = {
  uniqueName: 'GridRegional',
  validAfter: '2026-01-01',
  nature: 'CALCULATIONGRID',
  inputs: [{ name: 'Region', type: 'OPTION', options: ['EU', 'US'], required: true }],
  elements: [
    { elementName: 'Cost', expression: 'product.attribute1', formatType: 'MONEY' },
    { elementName: 'Margin', expression: 'lookup("Margins", customer.attribute1)', formatType: 'PERCENT' },
    { elementName: 'Factor', expression: 'if(input.Region == "EU", 1, 1.1)' },
    { elementName: 'Price', expression: 'round(Cost * (1 + Margin) * Factor, 2)', formatType: 'MONEY' },
  ],
};

const byGrid = (id: number, extra: object[] = []) => ({
  _constructor: 'AdvancedCriteria',
  operator: 'and',
  criteria: [{ fieldName: 'calculationGridId', operator: 'equals', value: id }, ...extra],
});

const resultsOf = (item: any): Record<string, any> =>
  Object.fromEntries(item.calculationResults.map((r: any) => [r.resultName, r]));

describe('calculation grids', () => {
  let h: Harness;
  let other: Harness;
  let quiet: Harness;
  let runner: JobRunner;
  const call = (path: string, body?: unknown, who: Who = admin, on: Harness = h) =>
    on.call(path, { basic: who, ...(body === undefined ? {} : { body }) });

  async function waitJob(jstId: number, on: Harness = h): Promise<any> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const [job] = okData(await call(`/admin.fetchjst/${jstId}`, undefined, admin, on));
      if (['FINISHED', 'FAILED', 'CANCELLED'].includes(job.status)) return job;
      if (Date.now() > deadline) assert.fail(`job ${jstId} still ${job.status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function calculate(gridId: number, on: Harness = h, data: object = {}): Promise<any> {
    const [jst] = okData(await call(`/calculationgridmanager.calculate/${gridId}`, { data }, admin, on));
    assert.equal(jst.trackerType, 'CALCULATIONGRID');
    return jst;
  }

  /** The queued CALCULATIONGRID job of the `quiet` harness (no runner there), claimed by `node`. */
  async function claimQuiet(node: string): Promise<JobRow> {
    const [job] = await claimJobs(quiet.db, {
      node,
      kinds: [CALCULATIONGRID],
      limit: 1,
      perPartition: 10,
      partitions: [quiet.partitionId],
    });
    assert.ok(job, 'a queued job');
    return job;
  }

  const items = async (code: string, gridId: number, body: object = {}, on: Harness = h) =>
    okData(await call(`/fetch/${code}`, { data: byGrid(gridId), endRow: 1000, ...body }, admin, on));

  async function seed(on: Harness): Promise<void> {
    const c = (path: string, body: unknown) => call(path, body, admin, on);
    okData(await c('/add/PAM', { data: { fieldName: 'attribute1', label: 'Cost', fieldType: 'MONEY' } }));
    const products: [string, string, string][] = [
      ['G-01', '9.5', 'A'],
      ['G-02', '10', 'A'],
      ['G-03', '100', 'A'],
      ['G-04', '20', 'B'],
    ];
    for (let i = 1; i <= 30; i++) products.push([`R-${String(i).padStart(2, '0')}`, String(i), 'R']);
    okData(
      await c('/loaddata/P', {
        data: {
          header: ['sku', 'label', 'attribute1', 'attribute2'],
          data: products.map(([sku, cost, group]) => [sku, `label ${sku}`, cost, group]),
        },
      }),
    );
    okData(await c('/add/C', { data: { customerId: 'C-1', name: 'Euro', attribute1: 'EU' } }));
    okData(await c('/add/C', { data: { customerId: 'C-2', name: 'Yank', attribute1: 'US' } }));
    const [t] = okData(
      await c('/lookuptablemanager.add', {
        data: { uniqueName: 'Margins', label: 'Margins', type: 'SIMPLE', valueType: 'REAL' },
      }),
    );
    okData(
      await c(`/lookuptablemanager.add/${t.id}`, [
        { data: { name: 'EU', value: 0.25 } },
        { data: { name: 'US', value: 0.3 } },
      ]),
    );
    okData(await c('/add/F', { data: GRID_LOGIC }));
    okData(await c('/add/F', { data: REGIONAL_LOGIC }));
    okData(
      await c('/add/F', {
        data: {
          uniqueName: 'NotAGrid',
          validAfter: '2026-01-01',
          elements: [{ elementName: 'X', expression: '1' }],
        },
      }),
    );
  }

  const groupA = { fieldName: 'attribute2', operator: 'equals', value: 'A' };

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    quiet = await startHarness({ shareDbWith: h });
    runner = runnerFor(h).start();
    await h.newUser(reader.user, reader.password, ['PB_PRICEGRIDS_RO']);
    await h.newUser(approver.user, approver.password, ['WF_ADMIN', 'PRICESHOP_EDIT']);
    await h.newUser(nobody.user, nobody.password, ['USERAUDIT']);
    await seed(h);
    await seed(quiet);
  });
  after(async () => {
    await runner.stop();
    await quiet.close();
    await other.close();
    await h.close();
  });

  let grid1: any;

  test('addgrid checks the logic, key sources and inputs, naming the field', async () => {
    const add = (data: object) => call('/calculationgridmanager.addgrid', { data });
    expectError(await add({ label: 'x' }), 400, -4, 'formulaName');
    expectError(await add({ formulaName: 'Nowhere' }), 400, -4, 'formulaName');
    expectError(await add({ formulaName: 'NotAGrid' }), 400, -4, 'formulaName');
    expectError(
      await add({ formulaName: 'GridPrice', inputs: { Uplift: 'lots' } }),
      400,
      -4,
      'inputs.Uplift',
    );
    expectError(await add({ formulaName: 'GridPrice', inputs: { Other: 1 } }), 400, -4, 'inputs.Other');
    expectError(
      await add({
        formulaName: 'GridPrice',
        productFilter: { fieldName: 'nope', operator: 'equals', value: 1 },
      }),
      400,
      -4,
      'productFilter',
    );
    expectError(await add({ formulaName: 'GridPrice', keyNumber: 2 }), 400, -4, 'keySources');
    expectError(
      await add({
        formulaName: 'GridRegional',
        keySources: [{ type: 'products' }, { type: 'values', values: ['EU'], input: 'Nope' }],
      }),
      400,
      -4,
      'keySources[1].input',
    );
    // A lookup table no table of the partition is named: refused when the grid is added, not when
    // its calculation fails.
    for (const table of ['NoSuchTable', 'a\u0000b'])
      expectError(
        await add({
          formulaName: 'GridRegional',
          keySources: [{ type: 'products' }, { type: 'lookupTable', table, input: 'Region' }],
        }),
        400,
        -4,
        'keySources[1].table',
      );
    expectError(await add({ formulaName: 'GridPrice', colour: 'red' }), 400, -4, 'colour');
    expectError(await call('/add/CG', { data: { label: 'direct' } }), 400, -4);

    expectError(
      await add({ formulaName: 'GridPrice', indexedResults: ['ListPrice', 'Nope'] }),
      400,
      -4,
      'indexedResults.1',
    );
    [grid1] = okData(
      await add({
        label: 'Group A',
        formulaName: 'GridPrice',
        productFilter: groupA,
        inputs: { Uplift: 0.1 },
        indexedResults: ['ListPrice'],
      }),
    );
    const indexes = await h.db.query<{ indexdef: string }>(
      `SELECT indexdef FROM pg_indexes WHERE tablename = 'calc_grid_items' AND indexdef LIKE '%ListPrice%'`,
    );
    assert.equal(indexes.rows.length, 1, 'the result index exists');
    assert.match(indexes.rows[0]!.indexdef, /partition_id, grid_id/);
    assert.equal(grid1.keyNumber, 1);
    assert.equal(grid1.status, 'DRAFT');
    assert.deepEqual(grid1.inputs, { Uplift: 0.1 });
    assert.equal(grid1.typedId, `${grid1.id}.CG`);
    const [relabelled] = okData(
      await call('/update/CG', { data: { typedId: grid1.typedId, label: 'Group A prices' } }),
    );
    assert.equal(relabelled.label, 'Group A prices');
    assert.equal(relabelled.formulaName, 'GridPrice');
  });

  test('a 1-key grid is calculated by a job; results by hand; fetch filtered and sorted by a result', async () => {
    const jst = await calculate(grid1.id);
    const job = await waitJob(jst.jstId);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    assert.equal(job.progress, 100);
    assert.equal(job.calculationResults.computed, 3);
    const [g] = okData(await call(`/fetch/CG/${grid1.id}`));
    assert.equal(g.status, 'READY');
    assert.equal(g.itemCount, 3);
    assert.equal(g.calculatedCount, 3);
    assert.equal(g.jstId, jst.jstId);
    const rows = await items('CGI1', grid1.id, { sortBy: 'key1' });
    assert.deepEqual(
      rows.map((r: any) => r.key1),
      ['G-01', 'G-02', 'G-03'],
    );
    // 9.5 * 1.1 = 10.45; 10.45 * 0.9 = 9.405 → 9.41 (HALF_UP); 10 → 11 → 9.9; 100 → 110 → 99.
    const want: Record<string, [number, number, string]> = {
      'G-01': [10.45, 9.41, 'low'],
      'G-02': [11, 9.9, 'low'],
      'G-03': [110, 99, 'high'],
    };
    for (const r of rows) {
      const res = resultsOf(r);
      assert.deepEqual([res.ListPrice.result, res.Net.result, res.Tier.result], want[r.key1], r.key1);
      assert.equal(res.ListPrice.formatType, 'MONEY');
      assert.equal(res.ListPrice.overridable, true);
      assert.equal(res.ListPrice.overridden, false);
      // The interface's fields no element sets, with their defaults, as /formulamanager.execute answers.
      assert.deepEqual(
        [res.ListPrice.cssProperties, res.ListPrice.resultDescription, res.ListPrice.overrideValueOptions],
        [null, null, []],
      );
      assert.equal(res.ListPrice.excludeFromExport, false);
      assert.equal(r.approvalState, 'NOT_APPROVED');
      assert.equal(r.workflowStatus, 'DRAFT');
      assert.ok(r.calculationDate);
    }
    // Numbers compare as numbers: as text "11" > "100" and "110" < "11".
    const cheap = await items('CGI1', grid1.id, {
      data: byGrid(grid1.id, [{ fieldName: 'result.ListPrice', operator: 'lessThan', value: 100 }]),
      sortBy: '-result.ListPrice',
    });
    assert.deepEqual(
      cheap.map((r: any) => r.key1),
      ['G-02', 'G-01'],
    );
    const sorted = await items('CGI1', grid1.id, { sortBy: ['-result.ListPrice'] });
    assert.deepEqual(
      sorted.map((r: any) => r.key1),
      ['G-03', 'G-02', 'G-01'],
    );
    const high = await items('CGI1', grid1.id, {
      data: byGrid(grid1.id, [{ fieldName: 'result.Tier', operator: 'equals', value: 'high' }]),
      resultFields: ['key1', 'result.ListPrice'],
    });
    assert.deepEqual(high, [{ key1: 'G-03', 'result.ListPrice': 110 }]);
    expectError(
      await call('/fetch/CGI1', { data: { fieldName: 'result.Nope', operator: 'equals', value: 1 } }),
      400,
      -4,
    );
    expectError(
      await call('/fetch/CGI1', {
        data: { fieldName: 'result.ListPrice', operator: 'greaterThan', value: 'cheap' },
      }),
      400,
      -4,
    );
    // Another 1-key grid whose ListPrice is text: across grids the field is text, but grid1's own
    // element still types a filter, a sort and an accept filter on grid1's items.
    okData(
      await call('/add/F', {
        data: {
          uniqueName: 'GridTextPrice',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          elements: [{ elementName: 'ListPrice', expression: 'concat("p", product.sku)' }],
        },
      }),
    );
    const [textGrid] = okData(
      await call('/calculationgridmanager.addgrid', {
        data: { label: 'text prices', formulaName: 'GridTextPrice', productFilter: groupA },
      }),
    );
    assert.equal(textGrid.keyNumber, 1);
    const again = await items('CGI1', grid1.id, {
      data: byGrid(grid1.id, [{ fieldName: 'result.ListPrice', operator: 'lessThan', value: 100 }]),
      sortBy: '-result.ListPrice',
    });
    assert.deepEqual(
      again.map((r: any) => r.key1),
      ['G-02', 'G-01'],
    );
    assert.deepEqual(
      (await items('CGI1', grid1.id, { sortBy: ['-result.ListPrice'] })).map((r: any) => r.key1),
      ['G-03', 'G-02', 'G-01'],
    );
    okData(await call('/delete/CG', { data: { typedId: textGrid.typedId } }));
  });

  test('an override survives a recalculation; dependent elements are recomputed', async () => {
    const [g2] = await items('CGI1', grid1.id, {
      data: byGrid(grid1.id, [{ fieldName: 'key1', operator: 'equals', value: 'G-02' }]),
    });
    const upd = (id: string, data: object, oldValues?: object) =>
      call(`/calculationgridmanager.update/${id}`, { data, ...(oldValues ? { oldValues } : {}) });
    expectError(await upd(g2.typedId, { overrides: { Net: 5 } }), 400, -4, 'data.overrides.Net');
    expectError(await upd(g2.typedId, { overrides: { Nope: 5 } }), 400, -4, 'data.overrides.Nope');
    expectError(
      await upd(g2.typedId, { overrides: { ListPrice: 'much' } }),
      400,
      -4,
      'data.overrides.ListPrice',
    );
    expectError(
      await upd(g2.typedId, { overrides: { ListPrice: 20 } }, { version: g2.version + 7 }),
      409,
      -1,
    );
    expectError(await upd(`${g2.id}.CGI3`, { overrides: { ListPrice: 20 } }), 404, -1);
    let [item] = okData(await upd(g2.typedId, { overrides: { ListPrice: 20 } }, { version: g2.version }));
    let res = resultsOf(item);
    assert.equal(res.ListPrice.result, 20);
    assert.equal(res.ListPrice.overridden, true);
    assert.equal(res.ListPrice.computedResult, 11);
    assert.equal(res.Net.result, 18, 'the dependent element reads the override');
    assert.deepEqual(item.overrides, { ListPrice: 20 });
    const history = okData(await call(`/fetch/CGI1/${g2.id}/history`, {}));
    const change = history.find((e: any) => e.action === 'UPDATE');
    assert.ok(change, JSON.stringify(history));
    assert.deepEqual(change.changes.overrides, { old: {}, new: { ListPrice: 20 } });
    // The grid's own ADD is in its history, with the fields addgrid set.
    const gridHistory = okData(await call(`/fetch/CG/${grid1.id}/history`, {}));
    const added = gridHistory.find((e: any) => e.action === 'ADD');
    assert.ok(added, JSON.stringify(gridHistory));
    assert.ok(
      added.field.includes('formulaName') && added.field.includes('keyNumber'),
      JSON.stringify(added),
    );

    // The product's cost changes; the grid is calculated again.
    const [p] = okData(await call('/fetch/P', { data: { sku: 'G-02' } }));
    okData(await call('/update/P', { data: { typedId: p.typedId, attribute1: '12' } }));
    const job = await waitJob((await calculate(grid1.id)).jstId);
    assert.equal(job.status, 'FINISHED');
    [item] = await items('CGI1', grid1.id, {
      data: byGrid(grid1.id, [{ fieldName: 'key1', operator: 'equals', value: 'G-02' }]),
    });
    res = resultsOf(item);
    assert.equal(res.ListPrice.result, 20, 'the override stays');
    assert.equal(res.ListPrice.computedResult, 13.2, 'the computed value is refreshed beside it');
    assert.equal(res.Cost.result, 12);
    assert.equal(res.Net.result, 18);
    const overridden = await items('CGI1', grid1.id, {
      data: byGrid(grid1.id, [{ fieldName: 'result.ListPrice', operator: 'equals', value: 20 }]),
    });
    assert.deepEqual(
      overridden.map((r: any) => r.key1),
      ['G-02'],
    );
    // Removing the override brings the computed value back.
    [item] = okData(await upd(item.typedId, { overrides: { ListPrice: null } }));
    res = resultsOf(item);
    assert.equal(res.ListPrice.result, 13.2);
    assert.equal(res.ListPrice.overridden, false);
    assert.equal(res.Net.result, 11.88);

    // An override is exact, as the logic's numbers: a decimal past a double stays its text, and its
    // dependants compute from it; text that is no decimal (hexadecimal, binary) is refused.
    const exact = '12345678901234567890.12345678901234';
    [item] = okData(await upd(item.typedId, { overrides: { ListPrice: exact } }));
    res = resultsOf(item);
    assert.deepEqual(item.overrides, { ListPrice: exact });
    assert.equal(res.ListPrice.result, exact);
    assert.equal(res.Net.result, '11111111011111111101.11', 'ListPrice × 0.9, at 2 places');
    const byExact = await items('CGI1', grid1.id, {
      data: byGrid(grid1.id, [{ fieldName: 'result.ListPrice', operator: 'equals', value: exact }]),
    });
    assert.deepEqual(
      byExact.map((r: any) => r.key1),
      ['G-02'],
    );
    [item] = okData(await upd(item.typedId, { overrides: { ListPrice: '1.0000000000000000000000001' } }));
    assert.equal(resultsOf(item).ListPrice.result, '1.0000000000000000000000001');
    for (const bad of ['0x10', '0b101', '', ' ', '1e', true, [1]])
      expectError(
        await upd(item.typedId, { overrides: { ListPrice: bad } }),
        400,
        -4,
        'data.overrides.ListPrice',
      );
    assert.equal(
      resultsOf(okData(await call(`/fetch/CGI1/${item.id}`, {}))[0]).ListPrice.result,
      '1.0000000000000000000000001',
    );
    okData(await upd(item.typedId, { overrides: { ListPrice: null } }));
  });

  test('writeItems leaves an item whose overrides changed since they were read, and answers it', async () => {
    const [g] = okData(
      await call('/calculationgridmanager.addgrid', {
        data: {
          label: 'Race',
          formulaName: 'GridPrice',
          keySources: [
            { type: 'products', filter: { fieldName: 'attribute2', operator: 'equals', value: 'R' } },
            {
              type: 'values',
              values: ['0', '0.1'],
              input: 'Uplift',
            },
          ],
        },
      }),
    );
    assert.equal((await waitJob((await calculate(g.id)).jstId)).status, 'FINISHED');
    const all = await items('CGI2', g.id, { sortBy: 'id' });
    assert.equal(all.length, 60);
    const ref = { partitionId: h.partitionId, id: g.id, keyNumber: 2, runId: 0, userId: 1 };
    const row = (keys: string[], overrides: string) => ({
      keys: keysOf(keys),
      calculationResults: null,
      results: '{"ListPrice": 1}',
      warnings: null,
      alerts: null,
      error: null,
      inputHash: 'stale',
      overrides,
    });
    // The store: results computed with overrides that are no longer the item's are not written.
    const first = all[0];
    const upd = (id: string, price: number) =>
      call(`/calculationgridmanager.update/${id}`, { data: { overrides: { ListPrice: price } } });
    okData(await upd(first.typedId, 7));
    const keys = [first.key1, first.key2];
    assert.deepEqual(await writeItems(h.db, ref, [row(keys, '{}')], 'upsert'), [keysOf(keys)]);
    assert.equal(resultsOf(okData(await call(`/fetch/CGI2/${first.id}`))[0]).ListPrice.result, 7);
    const [now] = (await existingOf(h.db, h.partitionId, g.id, 0, [keysOf(keys)])).values();
    assert.deepEqual(await writeItems(h.db, ref, [row(keys, now!.overridesJson)], 'upsert'), []);
  });

  test('a recalculation writes an item overridden while its batch was computed with the new override', async () => {
    const c = (path: string, body?: unknown) => call(path, body, admin, quiet);
    const [g] = okData(
      await c('/calculationgridmanager.addgrid', {
        data: {
          label: 'Race',
          formulaName: 'GridPrice',
          keySources: [
            { type: 'products', filter: { fieldName: 'attribute2', operator: 'equals', value: 'R' } },
            { type: 'values', values: ['0', '0.1'], input: 'Uplift' },
          ],
        },
      }),
    );
    const quietRunner = runnerFor(quiet).start();
    try {
      assert.equal((await waitJob((await calculate(g.id, quiet)).jstId, quiet)).status, 'FINISHED');
    } finally {
      await quietRunner.stop();
    }
    const all = await items('CGI2', g.id, { sortBy: 'id' }, quiet);
    assert.equal(all.length, 60);
    // The recalculation in batches of 10, run here on a database that, right after the second batch
    // has read its items' overrides, lets an override of one of them be saved (before the batch
    // writes): the batch's results hold no override, so its write must leave that item and the job
    // compute it again — which it does by reading that one item again.
    const target = all[15];
    await calculate(g.id, quiet, { batchSize: 10 });
    const job = await claimQuiet('test-node-race');
    let reads = 0;
    let readAgain = false;
    // The look-up reads in a transaction of its own (store.existingOf): the override is saved once
    // that transaction has ended (PGlite runs one transaction at a time).
    const watched: Db = {
      ...quiet.db,
      async transaction(fn, opts) {
        let keys: unknown;
        const out = await quiet.db.transaction(
          (tx) =>
            fn({
              copyFrom: (...args) => tx.copyFrom(...args),
              execScript: (sql) => tx.execScript(sql),
              query: (sql, params) => {
                if (sql.includes('overrides_json')) keys = params?.[3];
                return tx.query(sql, params);
              },
            }),
          opts,
        );
        if (keys === undefined) return out;
        reads++;
        if (reads === 2) {
          assert.ok(Array.isArray(keys) && keys.includes(target.key1), 'the second batch holds the item');
          okData(
            await c(`/calculationgridmanager.update/${target.typedId}`, {
              data: { overrides: { ListPrice: 77 } },
            }),
          );
        } else if (reads > 2 && Array.isArray(keys) && keys.length === 1 && keys[0] === target.key1) {
          readAgain = true;
        }
        return out;
      },
    };
    const result = await calcGridJobKind(watched, { maxSteps: 100_000, maxMs: 1_000 }).run({
      job,
      principal: await principalForJob(quiet.db, job),
      signal: new AbortController().signal,
      async progress(p) {
        await recordProgress(quiet.db, job, p);
      },
    });
    assert.ok(readAgain, 'the item was computed again');
    await finishJob(quiet.db, job, { status: 'FINISHED', results: result });
    const [now] = okData(await c(`/fetch/CGI2/${target.id}`));
    const res = resultsOf(now);
    assert.deepEqual(now.overrides, { ListPrice: 77 });
    assert.deepEqual([res.ListPrice.result, res.ListPrice.overridden], [77, true]);
    assert.equal(res.Net.result, 69.3, 'the dependent element reads the override');
  });

  test('an element whose value is a record is the field result.<name> as its JSON text', async () => {
    okData(
      await call('/add/F', {
        data: {
          uniqueName: 'GridRow',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          elements: [
            { elementName: 'Cost', expression: 'product.attribute1', formatType: 'MONEY' },
            { elementName: 'Row', expression: 'lookupRow("Margins", if(Cost > 50, "EU", "XX"))' },
          ],
        },
      }),
    );
    const [g] = okData(
      await call('/calculationgridmanager.addgrid', {
        data: { formulaName: 'GridRow', productFilter: groupA },
      }),
    );
    assert.equal((await waitJob((await calculate(g.id)).jstId)).status, 'FINISHED');
    // G-03 (cost 100) finds its row, the others none (null).
    const found = await items('CGI1', g.id, {
      data: byGrid(g.id, [{ fieldName: 'result.Row', operator: 'notNull' }]),
      valueFields: ['key1', 'result.Row'],
    });
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.equal(found[0][0], 'G-03');
    assert.match(found[0][1], /"EU"/);
    assert.deepEqual(
      JSON.parse(found[0][1]),
      resultsOf((await items('CGI1', g.id)).find((i: any) => i.key1 === 'G-03')).Row.result,
    );
    const none = await items('CGI1', g.id, {
      data: byGrid(g.id, [{ fieldName: 'result.Row', operator: 'isNull' }]),
    });
    assert.deepEqual(none.map((i: any) => i.key1).sort(), ['G-01', 'G-02']);
  });

  test('a 3-key grid: products × customers × values; values by hand', async () => {
    const [g] = okData(
      await call('/calculationgridmanager.addgrid', {
        data: {
          label: 'Regional',
          formulaName: 'GridRegional',
          keySources: [
            { type: 'products', filter: groupA },
            { type: 'customers' },
            { type: 'values', values: ['EU', 'US'], input: 'Region' },
          ],
        },
      }),
    );
    assert.equal(g.keyNumber, 3);
    const job = await waitJob((await calculate(g.id)).jstId);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    const rows = await items('CGI3', g.id, { sortBy: ['key1', 'key2', 'key3'] });
    assert.equal(rows.length, 12);
    const price = (k1: string, k2: string, k3: string) =>
      resultsOf(rows.find((r: any) => r.key1 === k1 && r.key2 === k2 && r.key3 === k3)).Price.result;
    // G-01: 9.5 * 1.25 = 11.875 → 11.88; G-03 US/US: 100 * 1.3 * 1.1 = 143; G-02 (cost now 12) EU/US: 12 * 1.25 * 1.1 = 16.5.
    assert.equal(price('G-01', 'C-1', 'EU'), 11.88);
    assert.equal(price('G-03', 'C-2', 'US'), 143);
    assert.equal(price('G-02', 'C-1', 'US'), 16.5);
    assert.equal(price('G-01', 'C-2', 'EU'), 12.35);
    assert.equal((await items('CGI1', g.id)).length, 0, 'CGI1 holds no item of a 3-key grid');
    // The same with the regions taken from a lookup table's keys (Margins: EU, US).
    const [byTable] = okData(
      await call('/calculationgridmanager.addgrid', {
        data: {
          formulaName: 'GridRegional',
          keySources: [
            { type: 'products', filter: { fieldName: 'sku', operator: 'equals', value: 'G-03' } },
            { type: 'customers', filter: { fieldName: 'customerId', operator: 'equals', value: 'C-2' } },
            { type: 'lookupTable', table: 'Margins', input: 'Region' },
          ],
        },
      }),
    );
    assert.equal((await waitJob((await calculate(byTable.id)).jstId)).status, 'FINISHED');
    const fromTable = await items('CGI3', byTable.id, { sortBy: 'key3' });
    assert.deepEqual(
      fromTable.map((r: any) => [r.key3, resultsOf(r).Price.result]),
      [
        ['EU', 130],
        ['US', 143],
      ],
    );
    // A table of that name that is not valid yet at the grid's target date: the job says so.
    const [later] = okData(
      await call('/lookuptablemanager.add', {
        data: { uniqueName: 'Later', type: 'SIMPLE', valueType: 'REAL', validAfter: '2030-01-01' },
      }),
    );
    okData(await call(`/lookuptablemanager.add/${later.id}`, { data: { name: 'EU', value: 1 } }));
    const [early] = okData(
      await call('/calculationgridmanager.addgrid', {
        data: {
          formulaName: 'GridRegional',
          targetDate: '2026-05-01',
          keySources: [
            { type: 'products', filter: { fieldName: 'sku', operator: 'equals', value: 'G-03' } },
            { type: 'customers', filter: { fieldName: 'customerId', operator: 'equals', value: 'C-2' } },
            { type: 'lookupTable', table: 'Later', input: 'Region' },
          ],
        },
      }),
    );
    const failed = await waitJob((await calculate(early.id)).jstId);
    assert.equal(failed.status, 'FAILED');
    assert.match(
      JSON.stringify(failed.messages),
      /no lookup table Later is valid at the target date 2026-05-01/,
    );
    // An item added by hand is calculated by the next run.
    okData(
      await call('/add/CGI3', { data: { calculationGridId: g.id, key1: 'G-04', key2: 'C-1', key3: 'EU' } }),
    );
    expectError(
      await call('/add/CGI2', { data: { calculationGridId: g.id, key1: 'G-04', key2: 'C-1' } }),
      400,
      -4,
      'calculationGridId',
    );
    expectError(
      await call('/add/CGI3', { data: { calculationGridId: g.id, key1: 'G-04', key2: 'C-1' } }),
      400,
      -4,
      'key3',
    );
    await waitJob((await calculate(g.id)).jstId);
    const [added] = await items('CGI3', g.id, {
      data: byGrid(g.id, [{ fieldName: 'key1', operator: 'equals', value: 'G-04' }]),
    });
    assert.equal(resultsOf(added).Price.result, 25);
    const [deleted] = okData(await call('/delete/CGI3', { data: { typedId: added.typedId } }));
    assert.equal(deleted.key1, 'G-04');
  });

  test('cancel mid-way, then a restart continues without recomputing finished items; same after a crash', async () => {
    const c = (path: string, body?: unknown) => call(path, body, admin, quiet);
    const [g] = okData(
      await c('/calculationgridmanager.addgrid', {
        data: {
          formulaName: 'GridPrice',
          productFilter: { fieldName: 'attribute2', operator: 'equals', value: 'R' },
        },
      }),
    );
    const kind = calcGridJobKind(quiet.db, { maxSteps: 100_000, maxMs: 1_000 });
    const claim = () => claimQuiet('test-node-crashy');
    /** Runs the job's attempt until its `stopAt`-th progress report, which fails as given. */
    const runUntil = async (job: JobRow, stopAt: number, fail: () => Error) => {
      let calls = 0;
      const principal = await principalForJob(quiet.db, job);
      await assert.rejects(
        kind.run({
          job,
          principal,
          signal: new AbortController().signal,
          async progress(p) {
            if (++calls === stopAt) throw fail();
            await recordProgress(quiet.db, job, p);
          },
        }),
      );
    };
    const versions = async () =>
      Object.fromEntries((await items('CGI1', g.id, {}, quiet)).map((r: any) => [r.key1, r.version]));

    // Cancelled at the progress report after the 3rd batch of 5: 15 items written, 10 checkpointed.
    const first = await calculate(g.id, quiet, { batchSize: 5 });
    let job = await claim();
    await runUntil(job, 3, () => new JobStopped('cancel'));
    await finishJob(quiet.db, job, {
      status: 'CANCELLED',
      message: 'cancelled on request',
      level: 'WARNING',
    });
    let [grid] = okData(await c(`/fetch/CG/${g.id}`));
    assert.equal(grid.status, 'CANCELLED');
    assert.equal(grid.itemCount, 15);
    const cancelled = await versions();
    // Calculating again continues the cancelled run: the 15 finished items are not recomputed.
    const second = await calculate(g.id, quiet, { batchSize: 5 });
    assert.notEqual(second.jstId, first.jstId);
    const quietRunner = runnerFor(quiet).start();
    try {
      const resumed = await waitJob(second.jstId, quiet);
      assert.equal(resumed.status, 'FINISHED', JSON.stringify(resumed));
      assert.equal(resumed.calculationResults.skipped, 15);
      assert.equal(resumed.calculationResults.computed, 15);
      const after1 = await versions();
      for (const [sku, v] of Object.entries(cancelled)) assert.equal(after1[sku], v, `${sku} not rewritten`);
      assert.equal(Object.keys(after1).length, 30);
      [grid] = okData(await c(`/fetch/CG/${g.id}`));
      assert.equal(grid.status, 'READY');
      assert.equal(grid.itemCount, 30);
    } finally {
      await quietRunner.stop();
    }

    // A crash at the 4th progress report (20 items written, 15 checkpointed); the stale sweep hands
    // the job to another node, which resumes after the checkpoint and skips the 5 written since.
    const before = await versions();
    const third = await calculate(g.id, quiet, { batchSize: 5 });
    job = await claim();
    await runUntil(job, 4, () => new Error('simulated crash'));
    const crashed = await versions();
    const rewritten = Object.keys(crashed).filter((k) => crashed[k] !== before[k]);
    assert.equal(rewritten.length, 20);
    await quiet.db.query(
      `UPDATE jobs SET heartbeat_at = now() - interval '1 hour' WHERE partition_id = $1 AND id = $2`,
      [quiet.partitionId, job.id],
    );
    const swept = await sweepStale(quiet.db, 600);
    assert.ok(swept.some((j) => Number(j.id) === Number(job.id)));
    const resumeRunner = runnerFor(quiet).start();
    try {
      const done = await waitJob(third.jstId, quiet);
      assert.equal(done.status, 'FINISHED', JSON.stringify(done));
      const final = await versions();
      for (const k of rewritten) assert.equal(final[k], crashed[k], `${k} not recomputed after the crash`);
      for (const k of Object.keys(final).filter((x) => !rewritten.includes(x)))
        assert.equal(final[k], before[k]! + 1, `${k} computed once`);
    } finally {
      await resumeRunner.stop();
    }
  });

  test('a job cancelled before it ran ends its grid CANCELLED; a job not ended cannot be deleted', async () => {
    const c = (path: string, body?: unknown) => call(path, body, admin, quiet);
    const [g] = okData(await c('/calculationgridmanager.addgrid', { data: { formulaName: 'GridPrice' } }));
    const status = async () => okData(await c(`/fetch/CG/${g.id}`))[0].status;
    // Queued (no runner on `quiet`): deleting the job is refused, cancelling it ends the grid.
    let jst = await calculate(g.id, quiet);
    assert.equal(await status(), 'QUEUED');
    const del = (id: number) => c('/delete/JST', { data: { typedId: `${id}.JST` } });
    let refused = await del(jst.jstId);
    expectError(refused, 409, -1);
    assert.match(refused.body.response.data, /is QUEUED_FOR_EXECUTION: cancel it/);
    assert.equal(okData(await c(`/admin.canceljst/${jst.jstId}`))[0].status, 'CANCELLED');
    assert.equal(await status(), 'CANCELLED');
    okData(await del(jst.jstId));
    // Running: refused too. Its last attempt lost with its node (the stale sweep): the grid FAILED.
    jst = await calculate(g.id, quiet);
    const job = await claimQuiet('test-node-lost');
    refused = await del(jst.jstId);
    expectError(refused, 409, -1);
    assert.match(refused.body.response.data, /is PROCESSING/);
    await quiet.db.query(
      `UPDATE jobs SET heartbeat_at = now() - interval '1 hour', attempts = max_attempts
        WHERE partition_id = $1 AND id = $2`,
      [quiet.partitionId, job.id],
    );
    await sweepStale(quiet.db, 600);
    assert.equal(okData(await c(`/admin.fetchjst/${jst.jstId}`))[0].status, 'FAILED');
    assert.equal(await status(), 'FAILED');
    // Either way it can be calculated again.
    jst = await calculate(g.id, quiet);
    assert.equal(await status(), 'QUEUED');
    okData(await c(`/admin.canceljst/${jst.jstId}`));
  });

  test('accept and reject: through a workflow, by list and by filter', async () => {
    okData(
      await call('/add/WFD', {
        data: {
          uniqueName: 'grid-approval',
          approvableType: 'CGI',
          condition: 'ListPrice > 50',
          steps: [{ name: 'Pricing managers', approverUsers: ['approver'], rule: 'ANY' }],
        },
      }),
    );
    const rows = await items('CGI1', grid1.id, { sortBy: 'key1' });
    const [g1, g2, g3] = rows;
    expectError(await call(`/calculationgridmanager.accept/${grid1.id}`, { data: {} }), 400, -4, 'data');
    expectError(
      await call(`/calculationgridmanager.accept/${grid1.id}`, { data: { items: ['999999.CGI1'] } }),
      404,
      -1,
    );
    // A typedId of another key number names no item of this grid (never the item of that id).
    const otherType = `${String(g1.typedId).split('.')[0]}.CGI4`;
    expectError(
      await call(`/calculationgridmanager.accept/${grid1.id}`, { data: { items: [otherType] } }),
      404,
      -1,
    );
    expectError(
      await call(`/calculationgridmanager.reject/${grid1.id}`, { data: { items: [otherType] } }),
      404,
      -1,
    );
    // A field beside `data` is unknown (-4 naming it), on every operation; nothing is decided.
    for (const op of ['accept', 'reject'])
      expectError(
        await call(`/calculationgridmanager.${op}/${grid1.id}`, { foo: 1, data: { items: [g1.typedId] } }),
        400,
        -4,
        'foo',
      );
    expectError(await call(`/calculationgridmanager.calculate/${grid1.id}`, { foo: 1 }), 400, -4, 'foo');
    expectError(
      await call(`/calculationgridmanager.update/${g1.typedId}`, {
        data: { overrides: { ListPrice: 1 } },
        oldValues: { version: g1.version },
        foo: 1,
      }),
      400,
      -4,
      'foo',
    );
    expectError(
      await call('/calculationgridmanager.addgrid', { data: { formulaName: 'GridPrice' }, foo: 1 }),
      400,
      -4,
      'foo',
    );
    assert.deepEqual(await items('CGI1', grid1.id, { sortBy: 'key1' }), rows);
    // An item without results (added since the last run, or whose product does not exist) gives
    // the approvers nothing to decide on: 409 naming it, nothing submitted.
    const [fresh] = okData(await call('/add/CGI1', { data: { calculationGridId: grid1.id, key1: 'NOPE' } }));
    const uncalculated = await call(`/calculationgridmanager.accept/${grid1.id}`, {
      data: { items: [g1.typedId, fresh.typedId] },
    });
    expectError(uncalculated, 409, -1);
    assert.match(uncalculated.body.response.data, new RegExp(`${fresh.id}\\.CGI1.*never calculated`));
    assert.equal(okData(await call(`/fetch/CGI1/${g1.id}`))[0].workflowStatus, 'DRAFT');
    await waitJob((await calculate(grid1.id)).jstId);
    const [failed] = okData(await call(`/fetch/CGI1/${fresh.id}`));
    assert.ok(failed.error, JSON.stringify(failed));
    expectError(
      await call(`/calculationgridmanager.accept/${grid1.id}`, { data: { items: [fresh.id] } }),
      409,
      -1,
    );
    okData(await call('/delete/CGI1', { data: { typedId: fresh.typedId } }));
    // G-03 (110) needs an approval; G-01 (10.45) meets no definition and is approved at once.
    const accepted = okData(
      await call(`/calculationgridmanager.accept/${grid1.id}`, { data: { items: [g1.typedId, g3.typedId] } }),
    );
    assert.deepEqual(
      accepted.map((a: any) => [a.typedId, a.workflowStatus, a.approvalState]),
      [
        [g1.typedId, 'APPROVED', 'APPROVED'],
        [g3.typedId, 'SUBMITTED', 'NOT_APPROVED'],
      ],
    );
    // Under review, an item cannot be overridden; once decided, an override makes it a new proposal.
    const override = (id: string) =>
      call(`/calculationgridmanager.update/${id}`, { data: { overrides: { ListPrice: 9 } } });
    expectError(await override(g3.typedId), 409, -1);
    const [changed] = okData(await override(g1.typedId));
    assert.deepEqual([changed.workflowStatus, changed.approvalState], ['DRAFT', 'NOT_APPROVED']);
    expectError(
      await call(`/calculationgridmanager.reject/${grid1.id}`, { data: { items: [g3.id] } }),
      409,
      -1,
    );
    // Waiting in a workflow, the item is not deleted on any path, nor is its grid (the workflow
    // would point at nothing): 409 saying why, nothing deleted.
    const byId = { fieldName: 'id', operator: 'equals', value: g3.id };
    const refusals = [
      await call('/delete/CGI1', { data: { typedId: g3.typedId } }),
      await call('/delete/CGI1', [{ data: { typedId: g1.typedId } }, { data: { typedId: g3.typedId } }]),
      await call('/delete/CGI1/batch/forcefilter', { data: byId }),
      await call('/delete/CG', { data: { typedId: grid1.typedId } }),
      await call('/delete/CG/batch/forcefilter', {
        data: { fieldName: 'id', operator: 'equals', value: grid1.id },
      }),
    ];
    for (const r of refusals) {
      expectError(r, 409, -1);
      assert.match(r.body.response.data, /waiting in a workflow/, r.text);
    }
    assert.match(refusals[0]!.body.response.data, new RegExp(`${g3.id}\\.CGI1`));
    assert.equal((await items('CGI1', grid1.id)).length, 3, 'nothing deleted');
    const active = okData(await call('/workflowsmanager.fetch/active', {}, approver));
    const wf = active.find((w: any) => w.approvableTypedId === g3.typedId);
    assert.ok(wf, JSON.stringify(active));
    okData(
      await call(
        `/workflowsmanager.deny/${wf.id}`,
        { data: { reason: 'too high' }, oldValues: { version: wf.version } },
        approver,
      ),
    );
    let [item] = okData(await call(`/fetch/CGI1/${g3.id}`));
    assert.equal(item.workflowStatus, 'DENIED');
    assert.equal(item.approvalState, 'DENIED');
    // Submitted again (by filter on a result) and approved this time.
    const again = okData(
      await call(
        `/calculationgridmanager.accept/${grid1.id}`,
        { data: { filter: { fieldName: 'result.ListPrice', operator: 'greaterThan', value: 100 } } },
        approver,
      ),
    );
    assert.deepEqual(
      again.map((a: any) => a.typedId),
      [g3.typedId],
    );
    const [wf2] = okData(await call('/workflowsmanager.fetch/active', {}, approver)).filter(
      (w: any) => w.approvableTypedId === g3.typedId,
    );
    okData(
      await call(
        `/workflowsmanager.approve/${wf2.id}`,
        { data: {}, oldValues: { version: wf2.version } },
        approver,
      ),
    );
    [item] = okData(await call(`/fetch/CGI1/${g3.id}`));
    assert.equal(item.workflowStatus, 'APPROVED');
    assert.equal(item.approvalState, 'APPROVED');
    // Reject without a workflow.
    const [rejected] = okData(
      await call(`/calculationgridmanager.reject/${grid1.id}`, { data: { items: [g2.id] } }),
    );
    assert.deepEqual([rejected.workflowStatus, rejected.approvalState], ['DENIED', 'DENIED']);
    expectError(
      await call(`/calculationgridmanager.accept/${grid1.id}`, {
        data: { filter: { fieldName: 'nope', operator: 'equals', value: 1 } },
      }),
      400,
      -4,
      'data.filter',
    );
  });

  test('permissions', async () => {
    // PB_PRICEGRIDS_RO reads grids and items, changes nothing.
    okData(await call('/fetch/CG', {}, reader));
    okData(await call('/fetch/CGI1', { data: byGrid(grid1.id) }, reader));
    expectError(
      await call('/calculationgridmanager.addgrid', { data: { formulaName: 'GridPrice' } }, reader),
      403,
      -3,
    );
    expectError(await call(`/calculationgridmanager.calculate/${grid1.id}`, {}, reader), 403, -3);
    expectError(
      await call(`/calculationgridmanager.accept/${grid1.id}`, { data: { items: [1] } }, reader),
      403,
      -3,
    );
    expectError(
      await call(`/calculationgridmanager.update/1.CGI1`, { data: { overrides: { ListPrice: 1 } } }, reader),
      403,
      -3,
    );
    expectError(await call('/delete/CG', { data: { typedId: grid1.typedId } }, reader), 403, -3);
    // Without a grid role, not even reading.
    expectError(await call('/fetch/CG', {}, nobody), 403, -3);
    expectError(await call('/fetch/CGI1', {}, nobody), 403, -3);
  });

  test('partition isolation', async () => {
    const mine = await items('CGI1', grid1.id);
    assert.ok(mine.length > 0);
    const c = (path: string, body?: unknown) => call(path, body, admin, other);
    assert.equal(okData(await c('/fetch/CG', {})).length, 0);
    assert.equal(okData(await c('/fetch/CGI1', {})).length, 0);
    expectError(await c(`/fetch/CG/${grid1.id}`), 404, -1);
    expectError(await c(`/calculationgridmanager.calculate/${grid1.id}`, {}), 404, -1);
    expectError(
      await c(`/calculationgridmanager.update/${mine[0].typedId}`, { data: { overrides: { ListPrice: 1 } } }),
      404,
      -1,
    );
    expectError(
      await c(`/calculationgridmanager.accept/${grid1.id}`, { data: { items: [mine[0].id] } }),
      404,
      -1,
    );
    expectError(
      await c('/add/CGI1', { data: { calculationGridId: grid1.id, key1: 'G-01' } }),
      404,
      -1,
      'calculationGridId',
    );
    // Result fields of this partition's grids are unknown there.
    expectError(
      await c('/fetch/CGI1', { data: { fieldName: 'result.ListPrice', operator: 'equals', value: 1 } }),
      400,
      -4,
    );
  });

  test('a grid whose calculation is queued or running is not deleted (409), on every path', async () => {
    // No runner serves this server's partition: the job stays queued.
    const c = (path: string, body?: unknown) => call(path, body, admin, quiet);
    const [q] = okData(await c('/calculationgridmanager.addgrid', { data: { formulaName: 'GridPrice' } }));
    const queued = await calculate(q.id, quiet);
    const byId = { fieldName: 'id', operator: 'equals', value: q.id };
    for (const r of [
      await c('/delete/CG', { data: { typedId: q.typedId } }),
      await c('/delete/CG/batch/forcefilter', { data: byId }),
    ]) {
      expectError(r, 409, -1);
      assert.match(r.body.response.data, new RegExp(`being calculated \\(job ${queued.jstId}\\.JST\\)`));
    }
    okData(await c(`/admin.canceljst/${queued.jstId}`, {}));
    assert.equal((await waitJob(queued.jstId, quiet)).status, 'CANCELLED');
    okData(await c('/delete/CG', { data: { typedId: q.typedId } }));
  });

  test('while a calculation runs (PGlite too): a second one and a delete of the grid are refused', async () => {
    // Every product, one item per batch: the job reports progress after each of its 34 batches,
    // giving the server back to requests in between (on PGlite as well).
    const [g] = okData(await call('/calculationgridmanager.addgrid', { data: { formulaName: 'GridPrice' } }));
    const first = await calculate(g.id, h, { batchSize: 1 });
    const second = await call(`/calculationgridmanager.calculate/${g.id}`, {});
    expectError(second, 409, -1);
    assert.match(second.body.response.data, new RegExp(`being calculated \\(job ${first.jstId}\\.JST\\)`));
    const deleting = await call('/delete/CG', { data: { typedId: g.typedId } });
    expectError(deleting, 409, -1);
    const job = await waitJob(first.jstId);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    assert.equal(job.calculationResults.computed, 34);
    okData(await call('/delete/CG', { data: { typedId: g.typedId } }));
  });

  test('delete a grid: answers it and removes its items', async () => {
    const [g] = okData(
      await call('/calculationgridmanager.addgrid', {
        data: { formulaName: 'GridPrice', productFilter: groupA },
      }),
    );
    await waitJob((await calculate(g.id)).jstId);
    assert.equal((await items('CGI1', g.id)).length, 3);
    const [deleted] = okData(await call('/delete/CG', { data: { typedId: g.typedId } }));
    assert.equal(deleted.id, g.id);
    assert.equal((await items('CGI1', g.id)).length, 0);
    expectError(await call(`/calculationgridmanager.calculate/${g.id}`, {}), 404, -1);
  });

  test('an override of an element no longer overridable is inert at a recalculation, and removed by null', async () => {
    const logic = (overridable: boolean) => ({
      inputs: [],
      elements: [
        { elementName: 'X', expression: '2', overridable },
        { elementName: 'Y', expression: 'X * 3' },
      ],
    });
    const [f] = okData(
      await call('/add/F', {
        data: { uniqueName: 'GridO', validAfter: '2026-01-01', nature: 'CALCULATIONGRID', ...logic(true) },
      }),
    );
    const setOverridable = async (overridable: boolean) =>
      okData(await call('/update/F', { data: { id: f.id, ...logic(overridable) } }));
    const [g] = okData(
      await call('/calculationgridmanager.addgrid', {
        data: {
          formulaName: 'GridO',
          keySources: [{ type: 'products', filter: { fieldName: 'sku', operator: 'equals', value: 'R-01' } }],
        },
      }),
    );
    const first = await waitJob((await calculate(g.id)).jstId);
    assert.equal(first.status, 'FINISHED', JSON.stringify(first));
    const [item] = await items('CGI1', g.id);
    const override = (overrides: object) =>
      call(`/calculationgridmanager.update/${item.typedId}`, { data: { overrides } });
    const current = async () => (await items('CGI1', g.id))[0];
    okData(await override({ X: 5 }));
    assert.equal(resultsOf(await current()).Y.result, 15);
    // X made not overridable: its held override is removed by null; a new one is refused.
    await setOverridable(false);
    expectError(await override({ X: 7 }), 400, -4);
    okData(await override({ X: null }));
    let res = resultsOf(await current());
    assert.deepEqual([res.X.result, res.X.overridden ?? false, res.Y.result], [2, false, 6]);
    // Held when the logic changed, it does not apply at the next recalculation (the item keeps it
    // until removed).
    await setOverridable(true);
    okData(await override({ X: 5 }));
    await setOverridable(false);
    const again = await waitJob((await calculate(g.id)).jstId);
    assert.equal(again.status, 'FINISHED', JSON.stringify(again.messages));
    res = resultsOf(await current());
    assert.deepEqual([res.X.result, res.X.overridden ?? false, res.Y.result], [2, false, 6]);
    okData(await override({ X: null }));
    assert.deepEqual((await current()).overrides ?? {}, {});
  });

  test('a recalculation after the products change computes every item again; an override stays', async () => {
    okData(
      await call('/add/F', {
        data: {
          uniqueName: 'GridV',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          inputs: [{ name: 'v', type: 'NUMBER' }],
          elements: [
            { elementName: 'Cost', expression: 'product.attribute1', formatType: 'MONEY' },
            { elementName: 'Price', expression: 'round(Cost * input.v, 2)', overridable: true },
            { elementName: 'Label', expression: 'product.label' },
          ],
        },
      }),
    );
    const [g] = okData(
      await call('/calculationgridmanager.addgrid', {
        data: {
          formulaName: 'GridV',
          keySources: [
            { type: 'products', filter: { fieldName: 'attribute2', operator: 'equals', value: 'R' } },
            { type: 'values', values: ['1', '2', '3'], input: 'v' },
          ],
        },
      }),
    );
    assert.equal((await waitJob((await calculate(g.id)).jstId)).status, 'FINISHED');
    const byKeys = async () =>
      new Map((await items('CGI2', g.id)).map((r: any) => [`${r.key1}/${r.key2}`, r]));
    const overridden = (await byKeys()).get('R-05/2');
    okData(
      await call(`/calculationgridmanager.update/${overridden.typedId}`, {
        data: { overrides: { Price: 1 } },
      }),
    );
    // Every R product renamed, R-07's cost 7 → 70; recalculated in batches of 20 (5 batches).
    const rows = Array.from({ length: 30 }, (_, n) => {
      const sku = `R-${String(n + 1).padStart(2, '0')}`;
      return [sku, `renamed ${sku}`, sku === 'R-07' ? '70' : String(n + 1)];
    });
    const loaded = okData(
      await call('/loaddata/P', {
        data: { header: ['sku', 'label', 'attribute1'], data: rows, options: { detectJoinFields: true } },
      }),
    );
    assert.equal(loaded[0].updated, 30, JSON.stringify(loaded));
    const job = await waitJob((await calculate(g.id, h, { batchSize: 20 })).jstId);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    assert.deepEqual([job.calculationResults.computed, job.calculationResults.skipped], [90, 0]);
    const after = await byKeys();
    assert.equal(after.size, 90);
    for (const [sku, label, cost] of rows)
      for (const v of [1, 2, 3]) {
        const res = resultsOf(after.get(`${sku}/${v}`));
        const price = Number(cost) * v;
        assert.equal(res.Label.result, label, `${sku}/${v}`);
        assert.equal(res.Cost.result, Number(cost), `${sku}/${v}`);
        if (sku === 'R-05' && v === 2) {
          assert.deepEqual(
            [res.Price.result, res.Price.overridden, res.Price.computedResult],
            [1, true, price],
          );
        } else {
          assert.equal(res.Price.result, price, `${sku}/${v}`);
        }
      }
    assert.equal(resultsOf(after.get('R-07/3')).Price.result, 210);
    const [grid] = okData(await call(`/fetch/CG/${g.id}`));
    assert.deepEqual([grid.status, grid.itemCount, grid.calculatedCount], ['READY', 90, 90]);
  });

  test('a recalculation looks the items of its batch up by key, whatever the statistics say', async () => {
    // The look-up joined the batch's keys to the items: with statistics taking this run's items for
    // none, the plan scanned every item of the table per key (a 50,000-item recalculation: 536 s).
    // Probed per key, it then took the grid's (partition, grid, id) index when the statistics did not
    // know the grid's items yet (written by its first calculation moments before) and filtered every
    // item of the grid per key (20,000 items: minutes). The plan is read twice: with statistics
    // taken while the grid had no item, its items written in a transaction no analysis sees; then
    // with statistics that know them.
    const [g] = okData(await call('/calculationgridmanager.addgrid', { data: { formulaName: 'GridPrice' } }));
    await h.db.query('ANALYZE calc_grid_items');
    const keys = Array.from({ length: 500 }, (_, n) => keysOf([`X-${n + 1}`]));
    /** The lines of the look-up's plan in `tx` (its set_config run, its SELECT explained). */
    const planIn = async (tx: Tx): Promise<string[]> => {
      const explained: string[] = [];
      const explain = async (sql: string, params?: readonly unknown[]) => {
        if (sql.startsWith('SELECT set_config')) return tx.query(sql, params);
        const r = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params);
        explained.push(...r.rows.map((row) => row['QUERY PLAN']));
        return { rows: [], rowCount: 0 };
      };
      const explaining = {
        transaction: (fn: (t: Tx) => Promise<unknown>) => fn({ query: explain } as unknown as Tx),
        // As well: the look-up read outside a transaction before it disabled sorting in its own.
        query: explain,
      } as unknown as Db;
      await existingOf(explaining, h.partitionId, g.id, 999_999, keys);
      return explained;
    };
    const unknown = await h.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO calc_grid_items (partition_id, grid_id, key_number, key1, run_id)
         SELECT $1, $2, 1, 'X-' || n, 1 FROM generate_series(1, 5000) n`,
        [h.partitionId, g.id],
      );
      return planIn(tx);
    });
    await h.db.query('ANALYZE calc_grid_items');
    const known = await h.db.transaction(planIn);
    for (const plan of [unknown, known]) {
      const scans = plan.filter((line) => /calc_grid_items/.test(line));
      assert.ok(scans.length > 0, plan.join('\n'));
      // The unique key index (partition, grid, key1..key6): its name is cut at 63 characters.
      for (const line of scans)
        assert.match(
          line,
          /Index Scan using calc_grid_items_partition_id_grid_id_key1_\w+ on calc_grid_items/,
          plan.join('\n'),
        );
    }
  });
});
