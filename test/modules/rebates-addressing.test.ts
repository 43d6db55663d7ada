// Rebate record groups over HTTP on both databases (audit fixes): a repeated input name is a -4 naming
// the later entry on every write path that takes inputs (add, update, integrate, calculate's update),
// nothing written; a group the path names by an unknown uniqueName is a 404 showing the name plainly;
// a uniqueName a path would take for an id or typedId is refused at add and integrate (-4), and a
// path that names one group by id and another (stored before that check) by uniqueName is refused by
// calculate and submit (-4 naming typedId) instead of changing the group of that id.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { okData, expectError } from '../helpers/envelope.ts';

const LOGIC = {
  uniqueName: 'AddrRebate',
  validAfter: '2026-01-01',
  nature: 'REBATE',
  inputs: [{ name: 'Volume', type: 'NUMBER', required: true }],
  elements: [{ elementName: 'Rebate', expression: 'input.Volume * 2' }],
};

describe('rebate record groups: inputs and path addressing', () => {
  let h: Harness;
  const basic = { user: ADMIN, password: ADMIN_PASSWORD };
  const call = (path: string, body?: unknown) =>
    h.call(path, { basic, ...(body === undefined ? {} : { body }) });
  let n = 0;
  const newGroup = async (extra: Record<string, unknown> = {}) =>
    okData(
      await call('/add/RRG', {
        data: {
          uniqueName: `G-${++n}`,
          rebateType: 'Addr',
          targetDate: '2026-06-30',
          inputs: [{ name: 'Volume', value: 1 }],
          ...extra,
        },
      }),
    )[0];
  const byId = async (id: number) => okData(await call(`/fetch/RRG/${id}`))[0];
  const twice = [
    { name: 'Volume', value: 1 },
    { name: 'Volume', value: 1_000_000 },
  ];

  before(async () => {
    h = await startHarness();
    okData(await call('/add/F', { data: LOGIC }));
    okData(await call('/add/RBT', { data: { uniqueName: 'Addr', formulaName: 'AddrRebate' } }));
  });
  after(async () => {
    await h.close();
  });

  test('a repeated input name is -4 naming the later entry, on add, update, integrate and calculate', async () => {
    const add = await call('/add/RRG', { data: { uniqueName: 'I3', rebateType: 'Addr', inputs: twice } });
    expectError(add, 400, -4, 'inputs[1].name');
    assert.equal(add.body.response.errors['inputs[0].name'], undefined, add.text);
    assert.match(add.body.response.errors['inputs[1].name'].errorMessage, /Volume.*inputs\[0\]/);
    expectError(await call('/fetch/RRG/I3'), 404, -1);
    // Not next to each other, and in a batch: named with the element's index.
    const later = [{ name: 'Volume', value: 1 }, { name: 'Other' }, { name: 'Volume', value: 2 }];
    expectError(
      await call('/add/RRG', [
        { data: { uniqueName: 'I4', rebateType: 'Addr' } },
        { data: { uniqueName: 'I5', rebateType: 'Addr', inputs: later } },
      ]),
      400,
      -4,
      '1.inputs[2].name',
    );
    expectError(await call('/fetch/RRG/I4'), 404, -1);

    const g = await newGroup();
    expectError(
      await call('/update/RRG', { data: { typedId: g.typedId, inputs: twice } }),
      400,
      -4,
      'inputs[1].name',
    );
    expectError(
      await call('/integrate/RRG', { data: { uniqueName: g.uniqueName, inputs: twice } }),
      400,
      -4,
      'inputs[1].name',
    );
    expectError(
      await call('/integrate/RRG', { data: { uniqueName: 'I6', rebateType: 'Addr', inputs: twice } }),
      400,
      -4,
      'inputs[1].name',
    );
    expectError(await call('/fetch/RRG/I6'), 404, -1);
    expectError(
      await call(`/rebaterecordgroup.calculate/${g.typedId}`, {
        data: { rebateRecordGroup: { inputs: twice } },
      }),
      400,
      -4,
      'data.rebateRecordGroup.inputs[1].name',
    );
    const after = await byId(g.id);
    assert.deepEqual([after.version, after.inputs, after.calculationStatus], [g.version, g.inputs, 0]);
    // Distinct names are still taken.
    okData(
      await call('/update/RRG', { data: { typedId: g.typedId, inputs: [{ name: 'Volume', value: 3 }] } }),
    );
  });

  test('a group the path names by an unknown name: 404 showing the name as given', async () => {
    for (const path of [
      '/rebaterecordgroup.calculate/NOPE',
      '/rebaterecordgroup.submit/NOPE',
      '/rebaterecordgroup.submit/NOPE/async',
    ]) {
      const r = await call(path, {});
      expectError(r, 404, -1, 'uniqueName');
      assert.equal(r.body.response.data, 'Rebate record group NOPE not found', r.text);
      assert.equal(r.body.response.errors.uniqueName.errorMessage, 'Rebate record group NOPE not found');
    }
    const r = await call('/rebaterecordgroup.calculate/999999.RRG', {});
    expectError(r, 404, -1, 'typedId');
    assert.equal(r.body.response.data, 'Rebate record group 999999.RRG not found', r.text);
  });

  test('names that are no id or typedId of a group are reached by path; a name like an id is taken (as numeric skus are)', async () => {
    for (const name of ['1.C', '2.5', 'R-7', '12345678901234567']) {
      const g = await newGroup({ uniqueName: name });
      const [read] = okData(await call(`/fetch/RRG/${encodeURIComponent(name)}`));
      assert.equal(read.id, g.id, name);
      const [c] = okData(await call(`/rebaterecordgroup.calculate/${encodeURIComponent(name)}`, {}));
      assert.equal(c.id, g.id, name);
    }
    // Digits are an id in a path: a group named so is added, and reached by its typedId.
    const numeric = await newGroup({ uniqueName: '987654' });
    const [c] = okData(await call(`/rebaterecordgroup.calculate/${numeric.typedId}`, {}));
    assert.equal(c.id, numeric.id);
    expectError(await call('/rebaterecordgroup.calculate/987654', {}), 400, -4, 'typedId');
  });

  test('digits with blanks around them are a uniqueName, not an id', async () => {
    const a = await newGroup();
    const b = await newGroup({ uniqueName: ` ${a.id}` });
    const [read] = okData(await call(`/fetch/RRG/%20${a.id}`));
    assert.equal(read.id, b.id);
    const [c] = okData(await call(`/rebaterecordgroup.calculate/%20${a.id}`, {}));
    assert.equal(c.id, b.id);
    assert.equal((await byId(a.id)).calculationStatus, 0, 'the group of that id is left alone');
    // (An input named __proto__: rebates-input-names.test.ts.)
  });

  test('calculate and submit refuse a path naming one group by id and another by uniqueName', async () => {
    const a = await newGroup();
    const b = await newGroup();
    const c = await newGroup();
    // b is named as a's id, c as a's typedId (written directly: no update changes a uniqueName).
    await h.db.query('UPDATE rebate_record_groups SET unique_name = $1 WHERE partition_id = $2 AND id = $3', [
      String(a.id),
      h.partitionId,
      b.id,
    ]);
    await h.db.query('UPDATE rebate_record_groups SET unique_name = $1 WHERE partition_id = $2 AND id = $3', [
      `${a.id}.RRG`,
      h.partitionId,
      c.id,
    ]);
    for (const text of [String(a.id), `${a.id}.RRG`]) {
      for (const path of [
        `/rebaterecordgroup.calculate/${text}`,
        `/rebaterecordgroup.submit/${text}`,
        `/rebaterecordgroup.submit/${text}/async`,
      ]) {
        const r = await call(path, {});
        expectError(r, 400, -4, 'typedId');
        assert.match(r.body.response.data, new RegExp(`reads as the id ${a.id}\\.RRG in a path`), r.text);
      }
    }
    for (const g of [a, b, c]) {
      const now = await byId(g.id);
      assert.deepEqual([now.version, now.calculationStatus, now.workflowStatus], [g.version, 0, 'DRAFT']);
    }
    // Unambiguous forms still work: a's typedId when no group is named so, b's and c's typedIds.
    const [cb] = okData(await call(`/rebaterecordgroup.calculate/${b.typedId}`, {}));
    assert.equal(cb.id, b.id);
  });
});
