// Calculation grids over HTTP on both databases (audit fixes): an override takes a value of its
// element's own type (a list for a list, a number for a number, a date for a date, anything for an
// element typed by its values), refusals and NUL name `data.overrides.<name>` (and where in it);
// 409s of calculate and update name the path's `id`; addgrid names `productFilter` when the request
// gave one; values key sources take numbers for number inputs and name each value at fault.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, type Client, type Harness, type Reply } from '../helpers/app.ts';
import { adv, eq } from '../helpers/criteria.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { runnerFor, waitForJob } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';

/** A -4 naming exactly `field`, with a message matching `text`. */
function refused(r: Reply, field: string, text?: RegExp): void {
  expectError(r, 400, -4, field);
  assert.deepEqual(Object.keys(r.body.response.errors), [field], r.text);
  if (text) assert.match(r.body.response.errors[field].errorMessage, text, r.text);
}

const resultsOf = (item: any): Record<string, any> =>
  Object.fromEntries(item.calculationResults.map((r: any) => [r.resultName, r]));

describe('calculation grids: request fields named as sent', () => {
  let h: Harness;
  let runner: JobRunner | undefined;
  let api: Client;
  let grid: any;
  let item: any;

  const addgrid = (data: object) => api('/calculationgridmanager.addgrid', { data });
  const override = (overrides: object, id = item.typedId) =>
    api(`/calculationgridmanager.update/${id}`, { data: { overrides } });
  const itemsOf = async (gridId: number) =>
    okData(await api('/fetch/CGI1', { data: adv(eq('calculationGridId', gridId)), sortBy: 'key1' }));
  const itemsOf2 = async (gridId: number) =>
    okData(
      await api('/fetch/CGI2', { data: adv(eq('calculationGridId', gridId)), sortBy: ['key1', 'key2'] }),
    );

  before(async () => {
    h = await startHarness();
    api = await clientOf(h);
    okData(
      await api('/loaddata/P', {
        data: {
          header: ['sku', 'attribute1', 'attribute2'],
          data: [
            ['RF-1', '10', 'x'],
            ['RF-2', '100', 'y'],
          ],
        },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'RFTypes',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          elements: [
            { elementName: 'L', expression: '[1, 2]', overridable: true },
            { elementName: 'LSum', expression: 'sum(L)' },
            { elementName: 'N', expression: '2', overridable: true },
            { elementName: 'T', expression: 'concat("a", product.sku)', overridable: true },
            { elementName: 'D', expression: 'date("2026-01-01")', overridable: true },
            { elementName: 'DNext', expression: 'addDays(D, 1)' },
            { elementName: 'A', expression: 'product.attribute2', overridable: true },
          ],
        },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'RFKeys',
          validAfter: '2026-01-01',
          nature: 'CALCULATIONGRID',
          inputs: [
            { name: 'Uplift', type: 'NUMBER', default: 0 },
            { name: 'Region', type: 'OPTION', options: ['EU', 'US'] },
            { name: 'Code', type: 'TEXT' },
            { name: 'Flag', type: 'BOOLEAN' },
          ],
          elements: [{ elementName: 'P', expression: 'round(10 * (1 + input.Uplift), 2)' }],
        },
      }),
    );
    // Items of RF-1 wait in a workflow once accepted.
    okData(
      await api('/add/WFD', {
        data: {
          uniqueName: 'rf-approval',
          approvableType: 'CGI',
          condition: 'T == "aRF-1"',
          steps: [{ name: 'Admins', approverUsers: ['admin'] }],
        },
      }),
    );
    [grid] = okData(
      await addgrid({
        label: 'RF',
        formulaName: 'RFTypes',
        productFilter: { fieldName: 'sku', operator: 'startsWith', value: 'RF-' },
      }),
    );
  });
  after(async () => {
    await runner?.stop();
    await h.close();
  });

  test('calculate while a calculation is queued: 409 naming the path id', async () => {
    // No runner yet: the first job stays queued.
    const [jst] = okData(await api(`/calculationgridmanager.calculate/${grid.id}`, {}));
    const again = await api(`/calculationgridmanager.calculate/${grid.typedId}`, {});
    expectError(again, 409, -1, 'id');
    assert.match(again.body.response.data, /is being calculated/);
    runner = runnerFor(h).start();
    assert.equal((await waitForJob(h, jst.jstId)).status, 'FINISHED');
    [item] = await itemsOf(grid.id);
    assert.equal(item.key1, 'RF-1');
  });

  test('a list element takes a list override, and refuses text or a number', async () => {
    for (const bad of ['x', 5, { a: 1 }])
      refused(await override({ L: bad }), 'data.overrides.L', /must be a list/);
    const [after] = okData(await override({ L: [3, 4] }));
    const res = resultsOf(after);
    assert.deepEqual(after.overrides, { L: [3, 4] });
    assert.deepEqual(
      [res.L.result, res.L.resultType, res.L.overridden, res.L.computedResult],
      [[3, 4], 'LIST', true, [1, 2]],
    );
    assert.equal(res.LSum.result, 7, 'the dependent element reads the list');
    okData(await override({ L: null }));
  });

  test('number, text and date elements take their own type; an element typed by its values any', async () => {
    for (const bad of [[1], 'x', true]) refused(await override({ N: bad }), 'data.overrides.N', /numbers/);
    for (const bad of [5, [1], true]) refused(await override({ T: bad }), 'data.overrides.T', /must be text/);
    for (const bad of ['x', '2026-02-30', 5, ['2026-03-01']])
      refused(await override({ D: bad }), 'data.overrides.D', /date/);
    let [after] = okData(await override({ D: '2026-03-01' }));
    let res = resultsOf(after);
    assert.deepEqual([res.D.result, res.D.resultType], ['2026-03-01', 'DATE']);
    assert.equal(res.DNext.result, '2026-03-02');
    // product.attribute2: text or a number, as its values are.
    for (const v of [5, 'z', [1, 'b']]) {
      [after] = okData(await override({ A: v }));
      res = resultsOf(after);
      assert.deepEqual(res.A.result, v);
    }
    okData(await override({ D: null, A: null }));
  });

  test('NUL in an override is named where it stands, inside data.overrides', async () => {
    refused(await override({ T: 'a\u0000b' }), 'data.overrides.T', /NUL/);
    refused(await override({ L: [1, 'a\u0000'] }), 'data.overrides.L.1', /NUL/);
    const [now] = okData(await api(`/fetch/CGI1/${item.id}`));
    assert.deepEqual([now.overrides?.T, now.overrides?.L], [undefined, undefined]);
  });

  test('an override of an item waiting in a workflow: 409 naming the path id', async () => {
    okData(await api(`/calculationgridmanager.accept/${grid.id}`, { data: { items: [item.id] } }));
    assert.equal(okData(await api(`/fetch/CGI1/${item.id}`))[0].workflowStatus, 'SUBMITTED');
    const r = await override({ N: 3 });
    expectError(r, 409, -1, 'id');
    assert.match(r.body.response.data, /waiting in a workflow/);
  });

  test('addgrid names productFilter as sent, keySources[0].filter when sent so', async () => {
    const bad = { fieldName: 'nope', operator: 'equals', value: 1 };
    refused(await addgrid({ formulaName: 'RFTypes', productFilter: bad }), 'productFilter', /nope/);
    refused(await addgrid({ formulaName: 'RFTypes', productFilter: 5 }), 'productFilter');
    refused(
      await addgrid({ formulaName: 'RFTypes', keySources: [{ type: 'products', filter: bad }] }),
      'keySources[0].filter',
    );
    // A 2-key grid needs its sources: productFilter gives one.
    refused(
      await addgrid({ formulaName: 'RFTypes', keyNumber: 2, productFilter: eq('sku', 'RF-1') }),
      'keySources',
      /required for a grid of 2 keys/,
    );
    // null is "not given".
    const [g] = okData(
      await addgrid({
        formulaName: 'RFTypes',
        productFilter: null,
        keySources: [{ type: 'products', filter: eq('sku', 'RF-2') }],
      }),
    );
    assert.equal(g.keyNumber, 1);
    okData(await api('/delete/CG', { data: { typedId: g.typedId } }));
  });

  test('values key sources: numbers for number inputs; each value at fault named by its index', async () => {
    const values = (input: string, vals: unknown) =>
      addgrid({
        formulaName: 'RFKeys',
        keySources: [
          { type: 'products', filter: eq('sku', 'RF-1') },
          { type: 'values', values: vals, input },
        ],
      });
    const at = 'keySources[1].values';
    refused(await values('Uplift', [0.1, 'x']), `${at}.1`, /not a number/);
    refused(await values('Uplift', [true]), `${at}.0`, /number or its text/);
    refused(await values('Code', [5]), `${at}.0`, /must be text/);
    refused(await values('Code', ['a', 'b'.repeat(256)]), `${at}.1`, /longer than 255 characters/);
    refused(await values('Code', ['a', '']), `${at}.1`, /empty/);
    refused(await values('Code', ['a\u0000b']), `${at}.0`, /NUL/);
    refused(await values('Region', ['EU', 'FR']), `${at}.1`, /one of EU, US/);
    refused(
      await values('Region', ['EU', 'US', 'EU']),
      `${at}.2`,
      /repeats "EU" \(keySources\[1\]\.values\.0\)/,
    );
    refused(await values('Uplift', [1, '1']), `${at}.1`, /repeats/);
    refused(await values('Code', []), at, /1 to 10000/);
    refused(await values('Code', 'a'), at, /list/);
    refused(await values('Flag', ['true']), 'keySources[1].input', /BOOLEAN/);
    // 255 characters is a key's most: taken.
    const long = 'c'.repeat(255);
    const [withLong] = okData(await values('Code', [long]));
    assert.deepEqual(withLong.keySources[1].values, [long]);
    okData(await api('/delete/CG', { data: { typedId: withLong.typedId } }));

    const [g] = okData(await values('Uplift', [0.1, '0.2', 1]));
    assert.deepEqual(g.keySources[1].values, ['0.1', '0.2', '1']);
    const [jst] = okData(await api(`/calculationgridmanager.calculate/${g.id}`, {}));
    assert.equal((await waitForJob(h, jst.jstId)).status, 'FINISHED');
    const rows = await itemsOf2(g.id);
    assert.deepEqual(
      rows.map((r: any) => [r.key2, resultsOf(r).P.result, r.error ?? null]),
      [
        ['0.1', 11, null],
        ['0.2', 12, null],
        ['1', 20, null],
      ],
    );
  });
});
