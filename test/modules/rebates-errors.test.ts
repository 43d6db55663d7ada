// Rebate record groups over HTTP on both databases (audit fixes): the errors of calculate and submit
// name the field at fault as the request named it — a field of `data.rebateRecordGroup` by its path
// in the body (update errors, version, typedId, inputs and formulaName alike), a stored field of the
// group the body did not give by its name, and the group itself, refused by its edit group (403) or
// its state (409), by the path's `typedId` or `uniqueName`.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { okData, expectError } from '../helpers/envelope.ts';

type Who = { user: string; password: string };
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const outsider: Who = { user: 'outsider', password: 'outsider-password-1' };

const LOGIC = {
  uniqueName: 'ErrRebate',
  validAfter: '2026-01-01',
  nature: 'REBATE',
  inputs: [{ name: 'Volume', type: 'NUMBER', required: true }],
  elements: [{ elementName: 'Rebate', expression: 'input.Volume * 2' }],
};
const SENT = 'data.rebateRecordGroup';

describe('rebate record groups: errors name what the request named', () => {
  let h: Harness;
  const call = (path: string, body: unknown = {}, who: Who = admin) => h.call(path, { basic: who, body });
  let n = 0;
  const newGroup = async (extra: Record<string, unknown> = {}) =>
    okData(
      await call('/add/RRG', {
        data: {
          uniqueName: `E-${++n}`,
          rebateType: 'Err',
          targetDate: '2026-06-30',
          inputs: [{ name: 'Volume', value: 1 }],
          ...extra,
        },
      }),
    )[0];
  const byId = async (id: number) => okData(await call(`/fetch/RRG/${id}`))[0];
  const calculate = (path: string, fields?: Record<string, unknown>, who: Who = admin) =>
    call(
      `/rebaterecordgroup.calculate/${path}`,
      fields === undefined ? {} : { data: { rebateRecordGroup: fields } },
      who,
    );
  /** The error names exactly these fields. */
  const names = (r: Awaited<ReturnType<typeof call>>, http: number, status: number, fields: string[]) => {
    expectError(r, http, status);
    assert.deepEqual(Object.keys(r.body.response.errors ?? {}).sort(), [...fields].sort(), r.text);
  };

  before(async () => {
    h = await startHarness();
    okData(await call('/add/F', { data: LOGIC }));
    okData(await call('/add/RBT', { data: { uniqueName: 'Err', formulaName: 'ErrRebate' } }));
    okData(
      await call('/add/RBTAM', { data: { name: 'Err', fieldName: 'attribute7', fieldType: 'NUMERIC' } }),
    );
    await h.newUser(outsider.user, outsider.password, ['RM_REBATEAGREEMENTS'], ['Outsiders']);
  });
  after(async () => {
    await h.close();
  });

  test('calculate names a field the body gave by its path there, one it did not give by its name', async () => {
    const g = await newGroup();
    const r = await calculate(g.typedId, {
      attribute7: 'lots',
      bogus: 1,
      startDate: '2026-02-01',
      endDate: '2026-01-01',
    });
    names(r, 400, -4, [`${SENT}.attribute7`, `${SENT}.bogus`, `${SENT}.endDate`]);
    assert.match(r.body.response.data, /^data\.rebateRecordGroup\.\w+: /, r.text);
    const twice = [
      { name: 'Volume', value: 1 },
      { name: 'Volume', value: 2 },
    ];
    names(await calculate(g.typedId, { inputs: twice }), 400, -4, [`${SENT}.inputs[1].name`]);
    names(await calculate(g.typedId, { inputs: [{ name: 'Volume', value: 'many' }] }), 400, -4, [
      `${SENT}.inputs.Volume`,
    ]);
    names(await calculate(g.typedId, { label: 'x', version: g.version + 3 }), 409, -1, [`${SENT}.version`]);
    names(await calculate(g.typedId, { typedId: '999999.RRG' }), 400, -4, [`${SENT}.typedId`]);
    names(await calculate(g.typedId, { formulaName: 'NoSuchLogic' }), 400, -4, [`${SENT}.formulaName`]);
    // The group's own stored fields, not in the body: named as the group's fields.
    const bare = await newGroup({ inputs: [] });
    names(await calculate(bare.typedId), 400, -4, ['inputs.Volume']);
    names(await calculate(bare.typedId, { label: 'y' }), 400, -4, ['inputs.Volume']);
    const lost = await newGroup({ formulaName: 'NoSuchLogic' });
    names(await calculate(lost.typedId), 400, -4, ['formulaName']);
    for (const x of [g, bare, lost]) assert.equal((await byId(x.id)).version, x.version, 'nothing written');
  });

  test('outside the group userGroupEdit: 403 naming the path typedId or uniqueName', async () => {
    const g = await newGroup({ userGroupEdit: 'Editors' });
    okData(await calculate(g.typedId));
    for (const [path, field] of [
      [g.typedId, 'typedId'],
      [String(g.id), 'typedId'],
      [g.uniqueName, 'uniqueName'],
    ]) {
      names(await calculate(path, undefined, outsider), 403, -3, [field]);
      // With fields to update first: the general update refuses, named the same way.
      names(await calculate(path, { label: 'x' }, outsider), 403, -3, [field]);
      names(await call(`/rebaterecordgroup.submit/${path}`, {}, outsider), 403, -3, [field]);
      names(await call(`/rebaterecordgroup.submit/${path}/async`, {}, outsider), 403, -3, [field]);
    }
    names(await call(`/workflowsmanager.submit/${g.typedId}`, {}, outsider), 403, -3, ['typedId']);
    // As the general update names it.
    names(await call('/update/RRG', { data: { uniqueName: g.uniqueName, label: 'x' } }, outsider), 403, -3, [
      'uniqueName',
    ]);
    const now = await byId(g.id);
    assert.deepEqual([now.version, now.workflowStatus], [g.version + 1, 'DRAFT']);
  });

  test('refused by its state: 409 naming the path typedId or uniqueName', async () => {
    const locked = await newGroup({ locked: true });
    for (const [path, field] of [
      [locked.typedId, 'typedId'],
      [locked.uniqueName, 'uniqueName'],
    ]) {
      names(await calculate(path), 409, -1, [field]);
      names(await call(`/rebaterecordgroup.submit/${path}`), 409, -1, [field]);
      names(await call(`/rebaterecordgroup.submit/${path}/async`), 409, -1, [field]);
    }
    names(await call(`/workflowsmanager.submit/${locked.typedId}`), 409, -1, ['typedId']);
    const fresh = await newGroup();
    names(await call(`/rebaterecordgroup.submit/${fresh.uniqueName}`), 409, -1, ['uniqueName']);
    // No workflow definition: approved at once; then neither calculated nor submitted again.
    const g = await newGroup();
    okData(await calculate(g.uniqueName));
    assert.equal(okData(await call(`/rebaterecordgroup.submit/${g.typedId}`))[0].workflowStatus, 'APPROVED');
    names(await call(`/rebaterecordgroup.submit/${g.typedId}`), 409, -1, ['typedId']);
    names(await call(`/rebaterecordgroup.submit/${g.uniqueName}/async`), 409, -1, ['uniqueName']);
    names(await calculate(g.uniqueName), 409, -1, ['uniqueName']);
    // Fields to update first: the state rule names the field the body gave.
    names(await calculate(g.typedId, { label: 'x' }), 409, -1, [`${SENT}.label`]);
  });
});
