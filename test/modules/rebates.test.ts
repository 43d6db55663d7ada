// Rebate types and rebate record groups over HTTP on both databases: RBT, RBTAM (attributes typed
// per rebate type), RRG with the general operations and /fetch/RRG (single criterion, empty body),
// bad input (-4 naming the field, nothing written), calculate with alerts (values checked by hand),
// submit approved at once, approved and denied through a workflow definition, async submit as a
// REBATERECORD job, locked groups, permissions and user groups, partition isolation.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness, type Reply } from '../helpers/app.ts';
import { runnerFor } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';

type Who = { user: string; password: string };
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const rebater: Who = { user: 'rebater', password: 'rebater-password-1' };
const reader: Who = { user: 'reader', password: 'reader-password-1' };
const nobody: Who = { user: 'nobody', password: 'nobody-password-1' };
const approver: Who = { user: 'approver', password: 'approver-password-1' };

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

/** The REBATE logic of the tests; every value below is worked out by hand from it. */
const REBATE_LOGIC = {
  uniqueName: 'VolumeRebate',
  validAfter: '2026-01-01',
  nature: 'REBATE',
  inputs: [
    { name: 'Volume', type: 'NUMBER', required: true },
    { name: 'Rate', type: 'PERCENT', default: 0.02 },
  ],
  elements: [
    { elementName: 'Days', expression: 'daysBetween(row.startDate, row.endDate)' },
    { elementName: 'Volume', expression: 'input.Volume', displayOptions: 0 },
    { elementName: 'Bonus', expression: 'row.attribute1' },
    { elementName: 'Rebate', expression: 'round(Volume * input.Rate + Bonus, 2)', formatType: 'MONEY' },
    {
      elementName: 'Cap',
      expression: 'if(Rebate > 1000, critical("rebate above 1000", 1000), Rebate)',
    },
    {
      elementName: 'LowVolume',
      expression: 'if(Volume < 500, warning("volume below 500", true), false)',
    },
    { elementName: 'Target', expression: 'targetDate' },
  ],
};

describe('rebate record groups', () => {
  let h: Harness;
  let other: Harness;
  let runner: JobRunner;
  const call = (path: string, body?: unknown, who: Who = admin) =>
    h.call(path, { basic: who, ...(body === undefined ? {} : { body }) });
  let n = 0;
  const newGroup = async (extra: Record<string, unknown> = {}, who: Who = admin) =>
    okData(
      await call(
        '/add/RRG',
        {
          data: {
            uniqueName: `RRG-${++n}`,
            label: `group ${n}`,
            rebateType: 'Volume',
            startDate: '2026-01-01',
            endDate: '2026-12-31',
            targetDate: '2026-06-30',
            attribute1: '12.5',
            inputs: [{ name: 'Volume', value: 60000 }],
            ...extra,
          },
        },
        who,
      ),
    )[0];

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    runner = runnerFor(h).start();
    await h.newUser(rebater.user, rebater.password, ['RM_REBATEAGREEMENTS']);
    await h.newUser(reader.user, reader.password, ['RM_REBATEAGREEMENTS_RO']);
    await h.newUser(nobody.user, nobody.password, ['USERAUDIT']);
    await h.newUser(approver.user, approver.password, ['WF_ADMIN', 'RM_REBATEAGREEMENTS_RO']);
    okData(await call('/add/F', { data: REBATE_LOGIC }));
    okData(
      await call('/add/RBT', {
        data: { uniqueName: 'Volume', label: 'Volume rebate', formulaName: 'VolumeRebate' },
      }),
    );
    okData(await call('/add/RBT', { data: { uniqueName: 'Plain', label: 'No meta' } }));
    okData(
      await call('/add/RBTAM', {
        data: { name: 'Volume', fieldName: 'attribute1', label: 'Bonus', fieldType: 'NUMERIC' },
      }),
    );
    okData(
      await call('/add/RBTAM', {
        data: { name: 'Volume', fieldName: 'attribute100', label: 'Region', fieldType: 'TEXT' },
      }),
    );
  });
  after(async () => {
    await runner.stop();
    await other.close();
    await h.close();
  });

  test('rebate types and their attribute meta; bad meta is -4 naming the field', async () => {
    const types = okData(await call('/fetch/RBT', {}, reader));
    assert.deepEqual(types.map((t) => t.uniqueName).sort(), ['Plain', 'Volume']);
    assert.equal(types.find((t) => t.uniqueName === 'Volume').formulaName, 'VolumeRebate');
    const meta = okData(await call('/fetch/RBTAM', { data: { name: 'Volume' } }, reader));
    assert.deepEqual(meta.map((m) => m.fieldName).sort(), ['attribute1', 'attribute100']);
    expectError(
      await call('/add/RBTAM', { data: { name: 'Volume', fieldName: 'attribute101', fieldType: 'TEXT' } }),
      400,
      -4,
      'fieldName',
    );
    expectError(
      await call('/add/RBTAM', { data: { name: 'Nope', fieldName: 'attribute2', fieldType: 'TEXT' } }),
      400,
      -4,
      'name',
    );
    expectError(await call('/add/RBT', { data: { label: 'no name' } }), 400, -4, 'uniqueName');
    // Writing rebate types is REBATETYPE_EDIT (not in RM_REBATEAGREEMENTS); any user reads them.
    expectError(await call('/add/RBT', { data: { uniqueName: 'X' } }, rebater), 403, -3);
    okData(await call('/fetch/RBT', {}, nobody));
  });

  test('RRG: every field of the spec, general add/update/delete, fetch by uniqueName or all', async () => {
    const g = await newGroup({ attribute100: 'EMEA', comments: 'first', payoutDate: '2027-01-31' });
    for (const f of [
      'typedId',
      'uniqueName',
      'name',
      'label',
      'sourceId',
      'sourceIdNoRev',
      'parentTypedId',
      'status',
      'workflowStatus',
      'agreementStatus',
      'approvalState',
      'workStatus',
      'locked',
      'hasWorkflowHistory',
      'calculationStatus',
      'submittedMsg',
      'calculatedMsg',
      'calculatedWithErrorsMsg',
      'ongoingCalculationMsg',
      'alerts',
      'warnings',
      'comments',
      'startDate',
      'endDate',
      'payoutDate',
      'targetDate',
      'calculationDate',
      'createDate',
      'lastUpdateDate',
      'approvalDate',
      'createdBy',
      'lastUpdateBy',
      'createdByName',
      'lastUpdateByName',
      'submittedByName',
      'approvedByName',
      'deniedByName',
      'rebateType',
      'headerRebateType',
      'formulaName',
      'userGroupEdit',
      'userGroupViewDetails',
      'manualOverrides',
      'allowedOverrides',
      'completeResultsAvailable',
      'version',
      'attribute1',
      'attribute100',
      'calculationResults',
      'allCalculationResults',
      'inputs',
      'serverMessagesExtended',
      'approvalRequiredEmailAttachments',
      'itemExtensions',
    ]) {
      assert.ok(Object.hasOwn(g, f), `field ${f} in ${JSON.stringify(Object.keys(g))}`);
    }
    assert.equal(g.typedId, `${g.id}.RRG`);
    assert.equal(g.status, 'DRAFT');
    assert.equal(g.workflowStatus, 'DRAFT');
    assert.equal(g.agreementStatus, 'DRAFT');
    assert.equal(g.approvalState, 'NOT_APPROVED');
    assert.equal(g.locked, false);
    assert.equal(g.hasWorkflowHistory, false);
    assert.equal(g.calculationStatus, 0);
    assert.equal(g.createdByName, ADMIN);
    assert.equal(g.lastUpdateByName, ADMIN);
    assert.equal(g.startDate, '2026-01-01');
    // Typed by the rebate type's RBTAM: attribute1 is NUMERIC.
    assert.equal(g.attribute1, 12.5);
    assert.deepEqual(g.inputs, [{ name: 'Volume', value: 60000 }]);
    // Server fields are ignored on input.
    const [u] = okData(
      await call(
        '/update/RRG',
        {
          data: { typedId: g.typedId, label: 'renamed', workflowStatus: 'APPROVED' },
          oldValues: { version: g.version },
        },
        rebater,
      ),
    );
    assert.equal(u.label, 'renamed');
    assert.equal(u.workflowStatus, 'DRAFT');
    assert.equal(u.lastUpdateByName, rebater.user);
    assert.equal(u.createdByName, ADMIN);
    expectError(
      await call('/update/RRG', {
        data: { typedId: g.typedId, label: 'x' },
        oldValues: { version: g.version },
      }),
      409,
      -1,
    );
    // A single criterion on uniqueName, the AdvancedCriteria form, and the empty body (all).
    assert.equal(okData(await call('/fetch/RRG', { data: { uniqueName: g.uniqueName } }, reader)).length, 1);
    const single = okData(
      await call(
        '/fetch/RRG',
        { data: { fieldName: 'uniqueName', operator: 'equals', value: g.uniqueName } },
        reader,
      ),
    );
    assert.deepEqual(
      single.map((r) => r.id),
      [g.id],
    );
    const other2 = await newGroup({ attribute1: '9' });
    const all = okData(await call('/fetch/RRG', undefined, reader));
    assert.ok(all.some((r) => r.id === g.id) && all.some((r) => r.id === other2.id));
    // With the rebate type in the criteria, attributes compare as their meta types them: 12.5 > 9
    // numerically (as text "12.5" < "9").
    const bigger = okData(
      await call('/fetch/RRG', {
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [
            { fieldName: 'rebateType', operator: 'equals', value: 'Volume' },
            { fieldName: 'attribute1', operator: 'greaterThan', value: 10 },
            { fieldName: 'id', operator: 'inSet', value: [g.id, other2.id] },
          ],
        },
      }),
    );
    assert.deepEqual(
      bigger.map((r) => r.id),
      [g.id],
    );
    const [d] = okData(await call('/delete/RRG', { data: { typedId: other2.typedId } }, rebater));
    assert.equal(d.id, other2.id);
    expectError(await call(`/fetch/RRG/${other2.id}`), 404, -1);
  });

  test('bad input: -4 naming the field, nothing written', async () => {
    const bad = async (data: Record<string, unknown>, field: string) =>
      expectError(
        await call('/add/RRG', { data: { uniqueName: 'BAD', rebateType: 'Volume', ...data } }),
        400,
        -4,
        field,
      );
    await bad({ attribute1: 'lots' }, 'attribute1');
    await bad({ rebateType: 'Nope' }, 'rebateType');
    await bad({ startDate: '2026-05-01', endDate: '2026-04-30' }, 'endDate');
    await bad({ startDate: '2026-02-30' }, 'startDate');
    await bad({ locked: 'yes' }, 'locked');
    await bad({ inputs: { Volume: 1 } }, 'inputs');
    await bad({ inputs: [{ value: 1 }] }, 'inputs[0].name');
    await bad({ itemExtensions: [1] }, 'itemExtensions');
    await bad({ colour: 'red' }, 'colour');
    expectError(await call('/add/RRG', { data: { label: 'no key' } }), 400, -4, 'uniqueName');
    assert.equal(okData(await call('/fetch/RRG', { data: { uniqueName: 'BAD' } })).length, 0);
    // A batch add is all or nothing.
    expectError(
      await call('/add/RRG', [
        { data: { uniqueName: 'BATCH-1', rebateType: 'Volume' } },
        { data: { uniqueName: 'BATCH-2', rebateType: 'Volume', attribute1: 'x' } },
      ]),
      400,
      -4,
      'attribute1',
    );
    assert.equal(okData(await call('/fetch/RRG', { data: { uniqueName: 'BATCH-1' } })).length, 0);
  });
});
