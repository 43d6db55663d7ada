// Rebate record groups over HTTP on both databases (audit fixes of the general writes): an input
// named as no logic may name one (`__proto__`, `constructor`, `prototype`, `__x`) is refused when
// written — add, update, integrate, calculate's update — naming the element (it could never be
// calculated); groups are not bulk-loaded at all. A delete refused by the group's state (locked, in
// a running workflow) names the group as the request did, with the element's index in a batch.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { okData, expectError } from '../helpers/envelope.ts';

const LOGIC = {
  uniqueName: 'WcRebate',
  validAfter: '2026-01-01',
  nature: 'REBATE',
  inputs: [{ name: 'Volume', type: 'NUMBER', required: true }],
  elements: [{ elementName: 'Rebate', expression: 'input.Volume * 2' }],
};
const FORBIDDEN = ['__proto__', 'constructor', 'prototype', '__x'];

describe('rebate record groups: checks of the general writes', () => {
  let h: Harness;
  const basic = { user: ADMIN, password: ADMIN_PASSWORD };
  const call = (path: string, body: unknown = {}) => h.call(path, { basic, body });
  let n = 0;
  const newGroup = async (extra: Record<string, unknown> = {}) =>
    okData(
      await call('/add/RRG', {
        data: {
          uniqueName: `W-${++n}`,
          rebateType: 'Wc',
          targetDate: '2026-06-30',
          inputs: [{ name: 'Volume', value: 1 }],
          ...extra,
        },
      }),
    )[0];
  const byId = async (id: number) => okData(await call(`/fetch/RRG/${id}`))[0];

  before(async () => {
    h = await startHarness();
    okData(await call('/add/F', { data: LOGIC }));
    okData(await call('/add/RBT', { data: { uniqueName: 'Wc', formulaName: 'WcRebate' } }));
    // Groups of this type go into a running workflow when submitted (SUBMITTED until decided).
    okData(
      await call('/add/WFD', {
        data: {
          uniqueName: 'rrg-wc',
          approvableType: 'RRG',
          condition: 'rebateType == "Wc"',
          steps: [{ name: 'Managers', approverUsers: [ADMIN], rule: 'ANY' }],
        },
      }),
    );
  });
  after(async () => {
    await h.close();
  });

  test('an input no logic may declare is -4 naming the element on every write, nothing written', async () => {
    const g = await newGroup();
    for (const name of FORBIDDEN) {
      const inputs = [
        { name: 'Volume', value: 1 },
        { name, value: 1 },
      ];
      const add = await call('/add/RRG', { data: { uniqueName: `X-${name}`, rebateType: 'Wc', inputs } });
      expectError(add, 400, -4, 'inputs[1].name');
      assert.match(
        add.body.response.errors['inputs[1].name'].errorMessage,
        /no logic has an input/,
        add.text,
      );
      expectError(
        await call('/add/RRG', [
          { data: { uniqueName: `Y-${name}` } },
          { data: { uniqueName: `Z-${name}`, inputs } },
        ]),
        400,
        -4,
        '1.inputs[1].name',
      );
      expectError(
        await call('/integrate/RRG', { data: { uniqueName: `X-${name}`, inputs } }),
        400,
        -4,
        'inputs[1].name',
      );
      for (const u of [`X-${name}`, `Y-${name}`, `Z-${name}`])
        expectError(await call(`/fetch/RRG/${encodeURIComponent(u)}`), 404, -1);
      expectError(
        await call('/update/RRG', { data: { typedId: g.typedId, inputs } }),
        400,
        -4,
        'inputs[1].name',
      );
      expectError(
        await call('/integrate/RRG', { data: { uniqueName: g.uniqueName, inputs } }),
        400,
        -4,
        'inputs[1].name',
      );
      expectError(
        await call(`/rebaterecordgroup.calculate/${g.typedId}`, { data: { rebateRecordGroup: { inputs } } }),
        400,
        -4,
        'data.rebateRecordGroup.inputs[1].name',
      );
    }
    const now = await byId(g.id);
    assert.deepEqual([now.version, now.inputs], [g.version, g.inputs]);
    // Names a logic may declare are taken, and calculated.
    okData(
      await call('/update/RRG', { data: { typedId: g.typedId, inputs: [{ name: 'Volume', value: 4 }] } }),
    );
    const [c] = okData(await call(`/rebaterecordgroup.calculate/${g.typedId}`));
    assert.equal(c.calculationStatus, 1, JSON.stringify(c));
    // No other way in: groups are not bulk-loaded.
    const load = await call('/loaddata/RRG', {
      data: { header: ['uniqueName', 'inputs'], data: [['L-1', '[{"name":"__proto__","value":1}]']] },
    });
    expectError(load, 400, -4, 'typeCode');
    expectError(await call('/fetch/RRG/L-1'), 404, -1);
  });

  test('a delete refused by the group state names the group as the request did', async () => {
    const free = await newGroup();
    const running = await newGroup();
    okData(await call(`/rebaterecordgroup.calculate/${running.typedId}`));
    const [s] = okData(await call(`/rebaterecordgroup.submit/${running.typedId}`));
    assert.equal(s.workflowStatus, 'SUBMITTED');
    const locked = await newGroup({ locked: true });
    const batch = (key: 'uniqueName' | 'typedId', refused: typeof running) => [
      { data: { [key]: free[key] } },
      { data: { [key]: refused[key] } },
    ];
    for (const refused of [running, locked]) {
      expectError(await call('/delete/RRG', batch('uniqueName', refused)), 409, -1, '1.uniqueName');
      expectError(await call('/delete/RRG', batch('typedId', refused)), 409, -1, '1.typedId');
      expectError(
        await call('/delete/RRG', { data: { uniqueName: refused.uniqueName } }),
        409,
        -1,
        'uniqueName',
      );
      expectError(await call('/delete/RRG', { data: { typedId: refused.typedId } }), 409, -1, 'typedId');
    }
    // As the same batch through /update/RRG names the field at fault.
    expectError(
      await call('/update/RRG', [
        { data: { uniqueName: free.uniqueName, label: 'a' } },
        { data: { uniqueName: running.uniqueName, label: 'b' } },
      ]),
      409,
      -1,
      '1.label',
    );
    for (const g of [free, s, locked]) assert.equal((await byId(g.id)).version, g.version, 'nothing deleted');
  });
});
