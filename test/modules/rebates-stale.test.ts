// Results of a rebate record group that are no longer current, over HTTP on both databases: a change
// of what the calculation reads (inputs, dates, attributes, rebate type...) through /update or
// /integrate marks them (calculationStatus 0, no SUCCESS) and submit refuses the group until it is
// calculated again; comments, locked and values sent back as stored leave them current. The
// version given to calculate in data.rebateRecordGroup is named so when stale.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

describe('rebate record groups: results after a change', () => {
  let h: Harness;
  let api: Client;
  let n = 0;
  const newGroup = async () =>
    okData(
      await api('/add/RRG', {
        data: {
          uniqueName: `ST-${++n}`,
          rebateType: 'Flat',
          startDate: '2026-01-01',
          endDate: '2026-01-31',
          attribute1: '1.50',
          inputs: [{ name: 'Volume', value: 100 }],
        },
      }),
    )[0];
  const calculate = async (g: { typedId: string }, fields?: Record<string, unknown>) =>
    okData(
      await api(
        `/rebaterecordgroup.calculate/${g.typedId}`,
        fields === undefined ? {} : { data: { rebateRecordGroup: fields } },
      ),
    )[0];
  const fetchGroup = async (g: { id: number }) => okData(await api(`/fetch/RRG/${g.id}`))[0];
  const resultOf = (g: any, name: string) =>
    g.calculationResults.find((r: any) => r.resultName === name)?.result;
  const state = (g: any) => [g.calculationStatus, g.calculatedMsg, g.calculatedWithErrorsMsg];
  const CURRENT = [1, 'SUCCESS', null];
  const STALE = [0, null, null];

  before(async () => {
    h = await startHarness();
    api = await clientOf(h);
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'FlatRebate',
          validAfter: '2026-01-01',
          nature: 'REBATE',
          inputs: [{ name: 'Volume', type: 'NUMBER', required: true }],
          elements: [
            { elementName: 'Rebate', expression: 'input.Volume * row.attribute1' },
            { elementName: 'Days', expression: 'daysBetween(row.startDate, row.endDate)' },
          ],
        },
      }),
    );
    okData(await api('/add/RBT', { data: { uniqueName: 'Flat', formulaName: 'FlatRebate' } }));
    okData(await api('/add/RBT', { data: { uniqueName: 'Other', formulaName: 'FlatRebate' } }));
    okData(
      await api('/add/RBTAM', { data: { name: 'Flat', fieldName: 'attribute1', fieldType: 'NUMERIC' } }),
    );
  });
  after(async () => {
    await h.close();
  });

  test('an update of inputs marks the results not current; submit refuses until calculated again', async () => {
    const g = await newGroup();
    const c = await calculate(g);
    assert.deepEqual(state(c), CURRENT);
    assert.equal(resultOf(c, 'Rebate'), 150);
    const [u] = okData(
      await api('/update/RRG', { data: { typedId: g.typedId, inputs: [{ name: 'Volume', value: 1 }] } }),
    );
    assert.deepEqual(state(u), STALE);
    assert.deepEqual(state(await fetchGroup(g)), STALE);
    // The last results stay readable, with the date they were computed.
    assert.equal(resultOf(u, 'Rebate'), 150);
    assert.equal(u.calculationDate, c.calculationDate);
    const refused = await api(`/rebaterecordgroup.submit/${g.typedId}`, {});
    expectError(refused, 409, -1);
    assert.match(refused.body.response.data, /changed since its last calculation.*calculate it again first/);
    // The generic submit applies the same rule; nothing was submitted.
    expectError(await api(`/workflowsmanager.submit/${g.id}.RRG`, {}), 409, -1);
    const after = await fetchGroup(g);
    assert.equal(after.workflowStatus, 'DRAFT');
    assert.equal(after.version, u.version);
    // The history of the update records the status it changed.
    const hist = okData(await api(`/fetch/RRG/${g.id}/history`, { sortBy: 'id' }));
    const last = hist[hist.length - 1];
    assert.ok(last.field.includes('inputs') && last.field.includes('calculationStatus'), last.field);
    assert.deepEqual(last.changes.calculationStatus, { old: 1, new: 0 });
    assert.deepEqual(last.changes.calculatedMsg, { old: 'SUCCESS', new: null });

    // Calculated again: current, with the new inputs' results; submitted.
    const again = await calculate(g);
    assert.deepEqual(state(again), CURRENT);
    assert.equal(resultOf(again, 'Rebate'), 1.5);
    const [s] = okData(await api(`/rebaterecordgroup.submit/${g.typedId}`, {}));
    assert.equal(s.workflowStatus, 'APPROVED');
  });

  test('dates, attributes, the rebate type and integrate mark them too; comments, locked and values sent back do not', async () => {
    const g = await newGroup();
    const changes: Record<string, unknown>[] = [
      { startDate: '2026-01-02' },
      { endDate: '2026-02-28' },
      { attribute1: 2 },
      { rebateType: 'Other' },
      { attribute2: 'x' },
    ];
    for (const change of changes) {
      const c = await calculate(g);
      assert.deepEqual(state(c), CURRENT);
      const [u] = okData(await api('/update/RRG', { data: { typedId: g.typedId, ...change } }));
      assert.deepEqual(state(u), STALE, JSON.stringify(change));
    }
    const g2 = await newGroup();
    await calculate(g2);
    const [i] = okData(await api('/integrate/RRG', { data: { uniqueName: g2.uniqueName, attribute1: '3' } }));
    assert.deepEqual(state(i), STALE);

    // What leaves them current: comments, locking, the group sent back as read (typed values).
    const g3 = await newGroup();
    const c3 = await calculate(g3);
    const kept: Record<string, unknown>[] = [
      { comments: 'checked' },
      { locked: true },
      { locked: false },
      { attribute1: 1.5, startDate: '2026-01-01T00:00:00Z', inputs: [{ value: 100, name: 'Volume' }] },
    ];
    let last = c3;
    for (const change of kept) {
      [last] = okData(await api('/update/RRG', { data: { typedId: g3.typedId, ...change } }));
      assert.deepEqual(state(last), CURRENT, JSON.stringify(change));
    }
    assert.equal(last.version, c3.version + kept.length);
    okData(await api(`/rebaterecordgroup.submit/${g3.typedId}`, {}));

    // Calculate with fields: the update and the new results in one step, current.
    const g4 = await newGroup();
    await calculate(g4);
    const c4 = await calculate(g4, { inputs: [{ name: 'Volume', value: 10 }] });
    assert.deepEqual(state(c4), CURRENT);
    assert.equal(resultOf(c4, 'Rebate'), 15);
  });

  test('calculate: a stale or bad version names data.rebateRecordGroup.version, the field sent', async () => {
    const g = await newGroup();
    const stale = await api(`/rebaterecordgroup.calculate/${g.typedId}`, {
      data: { rebateRecordGroup: { version: g.version + 5, comments: 'x' } },
    });
    expectError(stale, 409, -1, 'data.rebateRecordGroup.version');
    assert.equal(stale.body.response.errors['oldValues.version'], undefined);
    const bad = await api(`/rebaterecordgroup.calculate/${g.typedId}`, {
      data: { rebateRecordGroup: { version: 'one' } },
    });
    expectError(bad, 400, -4, 'data.rebateRecordGroup.version');
    assert.match(bad.body.response.data, /^data\.rebateRecordGroup\.version: /);
    const now = await fetchGroup(g);
    assert.deepEqual([now.version, now.calculationStatus, now.comments], [g.version, 0, null]);
  });
});
