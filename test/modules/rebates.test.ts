// Rebate types and rebate record groups over HTTP on both databases: RBT, RBTAM (attributes typed
// per rebate type), RRG with the general operations and /fetch/RRG (single criterion, empty body),
// bad input (-4 naming the field, nothing written), calculate with alerts (values checked by hand),
// submit approved at once, approved and denied through a workflow definition, async submit as a
// REBATERECORD job, locked groups, permissions and user groups, partition isolation.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { runnerFor, waitForJob } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';
import { okData, expectError } from '../helpers/envelope.ts';

type Who = { user: string; password: string };
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const rebater: Who = { user: 'rebater', password: 'rebater-password-1' };
const reader: Who = { user: 'reader', password: 'reader-password-1' };
const nobody: Who = { user: 'nobody', password: 'nobody-password-1' };
const approver: Who = { user: 'approver', password: 'approver-password-1' };

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

  const groupById = async (id: number) => okData(await call(`/fetch/RRG/${id}`))[0];
  const calculate = (g: { typedId: string }, fields?: Record<string, unknown>, who: Who = admin) =>
    call(
      `/rebaterecordgroup.calculate/${g.typedId}`,
      fields === undefined ? {} : { data: { rebateRecordGroup: fields } },
      who,
    );
  const calculatedGroup = async (extra: Record<string, unknown> = {}) =>
    okData(await calculate(await newGroup(extra)))[0];
  const result = (g: any, name: string) => g.calculationResults.find((r: any) => r.resultName === name);

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
    // A type in use is not deleted; an unused one goes with its attribute meta.
    okData(await call('/add/RBT', { data: { uniqueName: 'Temp' } }));
    okData(await call('/add/RBTAM', { data: { name: 'Temp', fieldName: 'attribute3', fieldType: 'DATE' } }));
    const [temp] = okData(await call('/fetch/RBT', { data: { uniqueName: 'Temp' } }));
    const [used] = okData(await call('/add/RRG', { data: { uniqueName: 'TEMP-1', rebateType: 'Temp' } }));
    expectError(await call('/delete/RBT', { data: { typedId: temp.typedId } }), 409, -1);
    okData(await call('/delete/RRG', { data: { typedId: used.typedId } }));
    okData(await call('/delete/RBT', { data: { typedId: temp.typedId } }));
    assert.equal(okData(await call('/fetch/RBTAM', { data: { name: 'Temp' } })).length, 0);
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
    // One end of the period changed by an update: the table's rule names endDate too.
    const [dated] = okData(
      await call('/add/RRG', {
        data: { uniqueName: 'DATED', rebateType: 'Volume', startDate: '2026-05-01', endDate: '2026-06-30' },
      }),
    );
    expectError(
      await call('/update/RRG', { data: { typedId: dated.typedId, endDate: '2026-04-30' } }),
      400,
      -4,
      'endDate',
    );
    // A batch add is all or nothing.
    expectError(
      await call('/add/RRG', [
        { data: { uniqueName: 'BATCH-1', rebateType: 'Volume' } },
        { data: { uniqueName: 'BATCH-2', rebateType: 'Volume', attribute1: 'x' } },
      ]),
      400,
      -4,
      '1.attribute1', // the element of the batch at fault
    );
    assert.equal(okData(await call('/fetch/RRG', { data: { uniqueName: 'BATCH-1' } })).length, 0);
  });

  test('rebateType given as a number or boolean is its text, checked as any rebate type name', async () => {
    const data = (rebateType: unknown, uniqueName = 'RT-TEXT') => ({
      data: { uniqueName, rebateType, startDate: '2026-01-01', endDate: '2026-12-31' },
    });
    const noType = (r: Awaited<ReturnType<typeof call>>, name: string) => {
      expectError(r, 400, -4, 'rebateType');
      assert.equal(r.body.response.errors.rebateType.errorMessage, `there is no rebate type ${name}`);
    };
    noType(await call('/add/RRG', data(12345)), '"12345"');
    noType(await call('/add/RRG', data('12345')), '"12345"');
    noType(await call('/add/RRG', data(-1)), '"-1"');
    noType(await call('/add/RRG', data(true)), '"true"');
    noType(await call('/add/RRG', data('')), '""');
    noType(await call('/integrate/RRG', data(12345)), '"12345"');
    assert.equal(okData(await call('/fetch/RRG', { data: { uniqueName: 'RT-TEXT' } })).length, 0);
    // A type named by digits is named by the number too, and stored as its text.
    okData(await call('/add/RBT', { data: { uniqueName: '12345', label: 'By number' } }));
    const [g] = okData(await call('/add/RRG', data(12345)));
    assert.equal(g.rebateType, '12345');
    noType(await call('/update/RRG', { data: { typedId: g.typedId, rebateType: 67890 } }), '"67890"');
    noType(await call('/update/RRG', { data: { typedId: g.typedId, rebateType: false } }), '"false"');
    // A value a text field refuses is refused as such; null clears the type.
    expectError(await call('/update/RRG', { data: { typedId: g.typedId, rebateType: { a: 1 } } }), 400, -4);
    const [cleared] = okData(await call('/update/RRG', { data: { typedId: g.typedId, rebateType: null } }));
    assert.equal(cleared.rebateType ?? null, null);
    okData(await call('/delete/RRG', { data: { typedId: g.typedId } }));
    okData(await call('/delete/RBT', { data: { uniqueName: '12345' } }));
  });

  test('calculate: the logic over the group (inputs, dates, typed attributes, targetDate), alerts stored', async () => {
    const g = await newGroup();
    const [c] = okData(await calculate(g, undefined, rebater));
    // By hand: Volume 60000 × Rate 0.02 (default) + Bonus 12.5 (attribute1, NUMERIC) = 1212.50;
    // Cap: above 1000 → CRITICAL "rebate above 1000", result 1000; Days 2026-01-01..2026-12-31 = 364;
    // LowVolume false (no warning); Target = the group's targetDate.
    assert.equal(Number(result(c, 'Rebate').result), 1212.5);
    assert.equal(result(c, 'Rebate').formatType, 'MONEY');
    assert.equal(Number(result(c, 'Days').result), 364);
    assert.equal(Number(result(c, 'Bonus').result), 12.5);
    assert.equal(Number(result(c, 'Cap').result), 1000);
    assert.equal(result(c, 'Cap').alertType, 'CRITICAL');
    assert.equal(result(c, 'Cap').alertMessage, 'rebate above 1000');
    assert.equal(result(c, 'LowVolume').result, false);
    assert.equal(result(c, 'Target').result, '2026-06-30');
    // Volume is hidden (displayOptions 0): only in allCalculationResults.
    assert.equal(result(c, 'Volume'), undefined);
    assert.equal(Number(c.allCalculationResults.find((r: any) => r.resultName === 'Volume').result), 60000);
    assert.equal(c.allCalculationResults.length, 7);
    assert.equal(c.calculationStatus, 3);
    assert.equal(c.calculatedMsg, null);
    assert.equal(c.calculatedWithErrorsMsg, 'CRITICAL');
    assert.equal(c.ongoingCalculationMsg, null);
    assert.equal(c.alerts, 'Cap: rebate above 1000');
    assert.equal(c.warnings, 'Cap: rebate above 1000');
    assert.deepEqual(c.serverMessagesExtended, [
      { level: 'CRITICAL', resultName: 'Cap', message: 'rebate above 1000' },
    ]);
    assert.ok(typeof c.calculationDate === 'string' && c.calculationDate !== '');
    assert.equal(c.version, g.version + 1);
    assert.equal(c.lastUpdateByName, rebater.user);
    // Fields given update the group first, in the same transaction (version checked when given):
    // Volume 400 at Rate 5 % → 400 × 0.05 + 12.5 = 32.50, a WARNING (volume below 500), no CRITICAL.
    const [w] = okData(
      await calculate(g, {
        version: c.version,
        label: 'small',
        inputs: [
          { name: 'Volume', value: 400 },
          { name: 'Rate', value: 0.05 },
        ],
      }),
    );
    assert.equal(w.label, 'small');
    assert.equal(Number(result(w, 'Rebate').result), 32.5);
    assert.equal(result(w, 'Cap').alertType, null);
    assert.equal(result(w, 'LowVolume').result, true);
    assert.equal(result(w, 'LowVolume').alertType, 'WARNING');
    assert.equal(w.calculationStatus, 2);
    assert.equal(w.calculatedWithErrorsMsg, 'WARNING');
    assert.equal(w.alerts, 'LowVolume: volume below 500');
    assert.equal(w.warnings, 'LowVolume: volume below 500');
    // No alert or warning: SUCCESS. The group's own formulaName wins over its type's.
    const [s] = okData(await calculate(g, { inputs: [{ name: 'Volume', value: 1000 }], attribute1: '0' }));
    assert.equal(Number(result(s, 'Rebate').result), 20);
    assert.equal(s.calculationStatus, 1);
    assert.equal(s.calculatedMsg, 'SUCCESS');
    assert.equal(s.calculatedWithErrorsMsg, null);
    assert.equal(s.alerts, null);
    assert.equal(s.warnings, null);
  });

  test('calculate: bad input is -4 naming the field and writes nothing', async () => {
    const g = await newGroup();
    const before = await groupById(g.id);
    const unchanged = async () => {
      const now = await groupById(g.id);
      assert.equal(now.version, before.version);
      assert.equal(now.label, before.label);
      assert.equal(now.calculationStatus, 0);
    };
    // A bad field value: the update part fails, naming the field where the body gave it.
    expectError(
      await calculate(g, { label: 'changed', attribute1: 'lots' }),
      400,
      -4,
      'data.rebateRecordGroup.attribute1',
    );
    await unchanged();
    // A bad input value: the update ran in the transaction, the calculation refuses → all rolled back.
    expectError(
      await calculate(g, { label: 'changed', inputs: [{ name: 'Volume', value: 'many' }] }),
      400,
      -4,
      'data.rebateRecordGroup.inputs.Volume',
    );
    await unchanged();
    expectError(
      await calculate(g, { label: 'changed', inputs: [{ name: 'Nope', value: 1 }] }),
      400,
      -4,
      'data.rebateRecordGroup.inputs.Nope',
    );
    await unchanged();
    expectError(
      await calculate(g, { label: 'changed', inputs: [] }),
      400,
      -4,
      'data.rebateRecordGroup.inputs.Volume',
    );
    await unchanged();
    // Stale version: 409, nothing written.
    expectError(await calculate(g, { label: 'changed', version: before.version + 5 }), 409, -1);
    await unchanged();
    // Body shapes.
    expectError(
      await call(`/rebaterecordgroup.calculate/${g.typedId}`, { data: { other: 1 } }),
      400,
      -4,
      'data.other',
    );
    expectError(
      await call(`/rebaterecordgroup.calculate/${g.typedId}`, { data: { rebateRecordGroup: [1] } }),
      400,
      -4,
      'data.rebateRecordGroup',
    );
    // A body naming another group is refused, not applied to the path's group.
    expectError(
      await calculate(g, { typedId: `${Number(g.id) + 1000}.RRG`, label: 'hijack' }),
      400,
      -4,
      'data.rebateRecordGroup.typedId',
    );
    await unchanged();
    // A text is a uniqueName (the business key), as /fetch/RRG/{key} reads it: none is a 404.
    expectError(await call('/rebaterecordgroup.calculate/abc', {}), 404, -1);
    expectError(await call('/rebaterecordgroup.calculate/12.P', {}), 404, -1);
    expectError(await call('/rebaterecordgroup.calculate/999999.RRG', {}), 404, -1);
    // No logic: the group's type has none and the group names none.
    const plain = await newGroup({ rebateType: 'Plain', attribute1: 'free text' });
    expectError(await calculate(plain), 400, -4, 'formulaName');
    // A logic that is not a REBATE logic, or none valid at the target date.
    okData(
      await call('/add/F', {
        data: {
          uniqueName: 'NotRebate',
          validAfter: '2026-01-01',
          elements: [{ elementName: 'A', expression: '1' }],
        },
      }),
    );
    // (Named where the body gave it.)
    expectError(
      await calculate(plain, { formulaName: 'NotRebate' }),
      400,
      -4,
      'data.rebateRecordGroup.formulaName',
    );
    expectError(await calculate(g, { targetDate: '2025-06-30' }), 400, -4, 'formulaName');
    await unchanged();
  });

  describe('submit and workflow', () => {
    const pendingFor = async (g: { id: number }) => {
      const active = okData(await call('/workflowsmanager.fetch/active', {}, approver));
      const wf = active.find((w) => w.approvableTypedId === `${g.id}.RRG`);
      assert.ok(wf, JSON.stringify(active));
      return wf;
    };
    const calculated = async (extra: Record<string, unknown> = {}) => {
      const g = await newGroup(extra);
      return okData(await calculate(g))[0];
    };

    test('without a workflow definition: approved at once; a group must be calculated first', async () => {
      const raw = await newGroup({ rebateType: 'Plain', formulaName: 'VolumeRebate', attribute1: '1' });
      expectError(await call(`/rebaterecordgroup.submit/${raw.typedId}`, {}, rebater), 409, -1);
      // Fields beside `data` (and any `data` of a submit) are unknown: -4 naming them, nothing runs.
      expectError(
        await call(`/rebaterecordgroup.calculate/${raw.typedId}`, { foo: 1 }, rebater),
        400,
        -4,
        'foo',
      );
      for (const path of [
        `/rebaterecordgroup.submit/${raw.typedId}`,
        `/rebaterecordgroup.submit/${raw.typedId}/async`,
      ]) {
        expectError(await call(path, { foo: 1 }, rebater), 400, -4, 'foo');
        expectError(await call(path, { data: { x: 1 } }, rebater), 400, -4);
      }
      assert.equal((await groupById(raw.id)).calculationStatus, 0);
      const [c] = okData(await calculate(raw));
      const [s] = okData(await call(`/rebaterecordgroup.submit/${c.typedId}`, {}, rebater));
      assert.equal(s.workflowStatus, 'APPROVED');
      assert.equal(s.status, 'APPROVED');
      assert.equal(s.approvalState, 'APPROVED');
      assert.equal(s.submittedByName, rebater.user);
      assert.equal(s.approvedByName, rebater.user);
      assert.equal(s.submittedMsg, 'SUCCESS');
      assert.equal(s.hasWorkflowHistory, true);
      assert.ok(typeof s.approvalDate === 'string');
      // Approved: no second submit, no recalculation, no change but comments and locked.
      expectError(await call(`/rebaterecordgroup.submit/${c.typedId}`, {}, rebater), 409, -1);
      expectError(await calculate(c), 409, -1);
      expectError(
        await call('/update/RRG', { data: { typedId: c.typedId, label: 'late' } }),
        409,
        -1,
        'label',
      );
      const [u] = okData(await call('/update/RRG', { data: { typedId: c.typedId, comments: 'paid' } }));
      assert.equal(u.comments, 'paid');
      // By its business key too, and with the record sent back as read (server fields, unchanged
      // values): only what changes counts.
      const [byKey] = okData(
        await call('/update/RRG', { data: { uniqueName: c.uniqueName, comments: 'paid twice' } }),
      );
      assert.equal(byKey.comments, 'paid twice');
      const asRead = { ...byKey };
      delete asRead.version;
      delete asRead.lastUpdateDate;
      const [roundTrip] = okData(
        await call('/update/RRG', {
          data: { ...asRead, comments: 'paid thrice' },
          oldValues: { version: byKey.version },
        }),
      );
      assert.equal(roundTrip.comments, 'paid thrice');
    });

    test('calculate and submit address a group by its uniqueName too (sixth audit)', async () => {
      const g = await newGroup({ rebateType: 'Plain', formulaName: 'VolumeRebate', attribute1: '1' });
      const [c] = okData(await calculate({ typedId: g.uniqueName }, undefined, rebater));
      assert.equal(c.typedId, g.typedId);
      assert.equal(c.calculationStatus > 0, true);
      const [s] = okData(await call(`/rebaterecordgroup.submit/${g.uniqueName}`, {}, rebater));
      assert.deepEqual([s.typedId, s.workflowStatus], [g.typedId, 'APPROVED']);
      for (const path of [
        '/rebaterecordgroup.calculate/NO-SUCH-GROUP',
        '/rebaterecordgroup.submit/NO-SUCH-GROUP',
        '/rebaterecordgroup.submit/NO-SUCH-GROUP/async',
      ])
        expectError(await call(path, {}, rebater), 404, -1);
    });

    test('through a workflow definition: SUBMITTED, then approved by the approver', async () => {
      okData(
        await call('/add/WFD', {
          data: {
            uniqueName: 'rrg-volume',
            approvableType: 'RRG',
            condition: 'rebateType == "Volume"',
            steps: [
              { name: 'Rebate managers', approverUsers: [approver.user], rule: 'ANY' },
              // Never true here (calculated groups only): decisions read the group's fields too.
              { name: 'Board', approverUsers: [ADMIN], condition: 'calculationStatus == 0' },
            ],
          },
        }),
      );
      const g = await calculated();
      const [s] = okData(await call(`/rebaterecordgroup.submit/${g.typedId}`, {}, rebater));
      assert.equal(s.workflowStatus, 'SUBMITTED');
      assert.equal(s.status, 'SUBMITTED');
      assert.equal(s.approvalState, 'NOT_APPROVED');
      assert.equal(s.submittedByName, rebater.user);
      assert.equal(s.approvedByName, null);
      assert.equal(s.hasWorkflowHistory, true);
      // In a running workflow: no change, no recalculation, no delete, no second submit.
      expectError(await call('/update/RRG', { data: { typedId: g.typedId, label: 'x' } }), 409, -1, 'label');
      expectError(await calculate(g), 409, -1);
      expectError(await call('/delete/RRG', { data: { typedId: g.typedId } }), 409, -1);
      expectError(await call(`/rebaterecordgroup.submit/${g.typedId}`, {}, rebater), 409, -1);
      const wf = await pendingFor(g);
      okData(
        await call(
          `/workflowsmanager.approve/${wf.id}`,
          { data: { comment: 'fine' }, oldValues: { version: wf.version } },
          approver,
        ),
      );
      const a = await groupById(g.id);
      assert.equal(a.workflowStatus, 'APPROVED');
      assert.equal(a.approvalState, 'APPROVED');
      assert.equal(a.approvedByName, approver.user);
      assert.ok(typeof a.approvalDate === 'string');
    });

    test('denied by the approver: DENIED, deniedByName, editable and submittable again', async () => {
      const g = await calculated();
      okData(await call(`/rebaterecordgroup.submit/${g.typedId}`, {}, rebater));
      const wf = await pendingFor(g);
      okData(
        await call(
          `/workflowsmanager.deny/${wf.id}`,
          { data: { reason: 'too much' }, oldValues: { version: wf.version } },
          approver,
        ),
      );
      const d = await groupById(g.id);
      assert.equal(d.workflowStatus, 'DENIED');
      assert.equal(d.status, 'DRAFT');
      assert.equal(d.approvalState, 'NOT_APPROVED');
      assert.equal(d.deniedByName, approver.user);
      assert.equal(d.approvedByName, null);
      okData(await calculate(d, { inputs: [{ name: 'Volume', value: 1000 }] }));
      const [again] = okData(await call(`/rebaterecordgroup.submit/${g.typedId}`, {}, rebater));
      assert.equal(again.workflowStatus, 'SUBMITTED');
      assert.equal(again.deniedByName, null);
      // Withdrawn by its submitter: back to DRAFT, editable.
      const wf2 = await pendingFor(g);
      okData(
        await call(
          `/workflowsmanager.withdraw/${wf2.id}`,
          { data: {}, oldValues: { version: wf2.version } },
          rebater,
        ),
      );
      const w = await groupById(g.id);
      assert.equal(w.workflowStatus, 'WITHDRAWN');
      assert.equal(w.status, 'DRAFT');
      okData(await call('/update/RRG', { data: { typedId: g.typedId, label: 'after withdrawal' } }, rebater));
    });

    test('record history of calculate, submit, withdraw, async submit and approve: UPDATEs naming the fields changed', async () => {
      const history = async (g: { id: number }) =>
        okData(await call(`/fetch/RRG/${g.id}/history`, { sortBy: 'id' })).map((e: any) => ({
          ...e,
          field: [...e.field].sort(),
        }));
      const g = await newGroup();
      await new Promise((r) => setTimeout(r, 20));
      const added = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 20));
      const [c] = okData(await calculate(g, undefined, rebater));
      okData(await call(`/rebaterecordgroup.submit/${g.typedId}`, {}, rebater));
      const wf = await pendingFor(g);
      okData(
        await call(
          `/workflowsmanager.withdraw/${wf.id}`,
          { data: {}, oldValues: { version: wf.version } },
          rebater,
        ),
      );
      const w = await groupById(g.id);
      assert.equal(w.version, g.version + 3);
      const [add, calc, submit, withdraw, ...rest] = await history(g);
      assert.deepEqual(rest, []);
      assert.equal(add.action, 'ADD');
      assert.deepEqual(
        [calc, submit, withdraw].map((e) => [e.action, e.operation, e.version, e.user]),
        [
          ['UPDATE', `rebaterecordgroup.calculate/${g.typedId}`, g.version + 1, rebater.user],
          ['UPDATE', `rebaterecordgroup.submit/${g.typedId}`, g.version + 2, rebater.user],
          ['UPDATE', `workflowsmanager.withdraw/${wf.id}`, g.version + 3, rebater.user],
        ],
      );
      for (const f of [
        'calculationStatus',
        'calculationResults',
        'calculatedWithErrorsMsg',
        'calculationDate',
      ])
        assert.ok(calc.field.includes(f), `${f} in ${calc.field}`);
      assert.deepEqual(calc.changes.calculationStatus, { old: 0, new: c.calculationStatus });
      assert.deepEqual(calc.changes.calculatedWithErrorsMsg, { old: null, new: 'CRITICAL' });
      for (const f of ['status', 'workflowStatus', 'submittedByName', 'submittedMsg', 'hasWorkflowHistory'])
        assert.ok(submit.field.includes(f), `${f} in ${submit.field}`);
      assert.deepEqual(submit.changes.workflowStatus, { old: 'DRAFT', new: 'SUBMITTED' });
      assert.deepEqual(submit.changes.submittedByName, { old: null, new: rebater.user });
      assert.deepEqual(withdraw.field, ['status', 'workflowStatus']);
      assert.deepEqual(withdraw.changes, {
        status: { old: 'SUBMITTED', new: 'DRAFT' },
        workflowStatus: { old: 'SUBMITTED', new: 'WITHDRAWN' },
      });
      // The group as it stood before its calculation, rebuilt from that history.
      const [before] = okData(await call(`/fetch/RRG/${g.id}?asOf=${encodeURIComponent(added)}`));
      assert.equal(before.calculationStatus, 0);
      assert.equal(before.workflowStatus, 'DRAFT');
      assert.equal(before.version, g.version);

      // An async submit marks the group with its job (an UPDATE of jstId), the job submits it (its
      // UPDATE names the job) and the approver's decision is his.
      const g2 = await calculated();
      const [jst] = okData(await call(`/rebaterecordgroup.submit/${g2.typedId}/async`, {}, rebater));
      assert.equal((await waitForJob(h, jst.jstId)).status, 'FINISHED');
      const wf2 = await pendingFor(g2);
      okData(
        await call(
          `/workflowsmanager.approve/${wf2.id}`,
          { data: {}, oldValues: { version: wf2.version } },
          approver,
        ),
      );
      const later = (await history(g2)).slice(2);
      assert.deepEqual(
        later.map((e) => [e.action, e.operation, e.jobId, e.user]),
        [
          ['UPDATE', `rebaterecordgroup.submit/${g2.typedId}/async`, null, rebater.user],
          ['UPDATE', null, jst.jstId, rebater.user],
          ['UPDATE', `workflowsmanager.approve/${wf2.id}`, null, approver.user],
        ],
      );
      assert.deepEqual(later[0].changes, { jstId: { old: null, new: jst.jstId } });
      assert.deepEqual(later[1].changes.workflowStatus, { old: 'DRAFT', new: 'SUBMITTED' });
      assert.deepEqual(later[2].changes.workflowStatus, { old: 'SUBMITTED', new: 'APPROVED' });
      assert.deepEqual(later[2].changes.approvedByName, { old: null, new: approver.user });
      assert.equal(later[2].version, (await groupById(g2.id)).version);
    });

    test('async submit: a REBATERECORD job answering the JST; the group is submitted when it ends', async () => {
      const g = await calculated();
      const [jst] = okData(await call(`/rebaterecordgroup.submit/${g.typedId}/async`, {}, rebater));
      assert.equal(typeof jst.jstId, 'number');
      assert.equal(jst.typedId, `${jst.jstId}.JST`);
      assert.equal(jst.trackerType, 'REBATERECORD');
      assert.equal(jst.targetObject, g.typedId);
      const job = await waitForJob(h, jst.jstId);
      assert.equal(job.status, 'FINISHED', JSON.stringify(job));
      assert.equal(job.calculationResults.workflowStatus, 'SUBMITTED');
      const s = await groupById(g.id);
      assert.equal(s.workflowStatus, 'SUBMITTED');
      assert.equal(s.submittedByName, rebater.user);
      assert.equal(s.jstId, jst.jstId);
      // Checked before queueing: an already submitted group is a 409, not a failed job.
      expectError(await call(`/rebaterecordgroup.submit/${g.typedId}/async`, {}, rebater), 409, -1);
      expectError(await call('/rebaterecordgroup.submit/999999.RRG/async', {}, rebater), 404, -1);
      // ... and so are the workflow's own refusals (here a condition failing at run time): the
      // error comes at once, as from the synchronous submit, and nothing is queued or changed.
      const [broken] = okData(
        await call('/add/WFD', {
          data: {
            uniqueName: 'rrg-broken',
            approvableType: 'RRG',
            priority: -1,
            condition: '1 / (calculationStatus - calculationStatus) > 0',
            steps: [{ name: 'Anyone', approverUsers: [approver.user] }],
          },
        }),
      );
      const g2 = await calculated();
      const jobsBefore = await h.db.query('SELECT count(*)::int AS n FROM jobs WHERE partition_id = $1', [
        h.partitionId,
      ]);
      const sync = await call(`/rebaterecordgroup.submit/${g2.typedId}`, {}, rebater);
      const queued = await call(`/rebaterecordgroup.submit/${g2.typedId}/async`, {}, rebater);
      expectError(sync, 400, -4, 'condition');
      expectError(queued, 400, -4, 'condition');
      const jobsAfter = await h.db.query('SELECT count(*)::int AS n FROM jobs WHERE partition_id = $1', [
        h.partitionId,
      ]);
      assert.equal(jobsAfter.rows[0]!.n, jobsBefore.rows[0]!.n);
      assert.equal((await groupById(g2.id)).workflowStatus, 'DRAFT');
      okData(await call('/delete/WFD', { data: { typedId: broken.typedId } }));

      // A second submit while the first one's job is queued is refused at once (409 naming the
      // job), async or not; the runner is stopped here so that the job waits.
      const g3 = await calculated();
      await runner.stop();
      let first: any;
      try {
        [first] = okData(await call(`/rebaterecordgroup.submit/${g3.typedId}/async`, {}, rebater));
        const again = await call(`/rebaterecordgroup.submit/${g3.typedId}/async`, {}, rebater);
        expectError(again, 409, -1);
        assert.match(again.body.response.data, new RegExp(`being submitted \\(job ${first.jstId}\\.JST\\)`));
        expectError(await call(`/rebaterecordgroup.submit/${g3.typedId}`, {}, rebater), 409, -1);
        // The generic submit keeps the same rule.
        const generic = await call(`/workflowsmanager.submit/${g3.typedId}`, {}, rebater);
        expectError(generic, 409, -1);
        assert.match(
          generic.body.response.data,
          new RegExp(`being submitted \\(job ${first.jstId}\\.JST\\)`),
        );
        // An async submit cancelled while queued leaves its group as it was, submittable.
        const g5 = await calculated();
        const [cancelled] = okData(await call(`/rebaterecordgroup.submit/${g5.typedId}/async`, {}, rebater));
        okData(await call(`/admin.canceljst/${cancelled.jstId}`, {}, rebater));
        assert.equal((await groupById(g5.id)).workflowStatus, 'DRAFT');
        okData(await call(`/rebaterecordgroup.submit/${g5.typedId}`, {}, rebater));
        assert.notEqual((await groupById(g5.id)).workflowStatus, 'DRAFT');
      } finally {
        runner = runnerFor(h).start();
      }
      const done = await waitForJob(h, first.jstId);
      assert.equal(done.status, 'FINISHED', JSON.stringify(done));
      assert.notEqual((await groupById(g3.id)).workflowStatus, 'DRAFT');
      // Two at the same time: one is queued, the other refused; the queued job does not fail.
      const g4 = await calculated();
      const both = await Promise.all(
        [1, 2].map(() => call(`/rebaterecordgroup.submit/${g4.typedId}/async`, {}, rebater)),
      );
      assert.deepEqual(both.map((r) => r.status).sort(), [200, 409], both.map((r) => r.text).join(' | '));
      const winner = both.find((r) => r.status === 200)!.body.response.data[0];
      assert.equal((await waitForJob(h, winner.jstId)).status, 'FINISHED');
    });
  });

  test('permissions: 401 without credentials, 403 without the permission', async () => {
    const g = await calculatedGroup();
    const anonymous = await h.call(`/rebaterecordgroup.calculate/${g.typedId}`, { body: {} });
    expectError(anonymous, 401, -7);
    expectError(await h.call('/fetch/RRG', { body: {} }), 401, -7);
    // USERAUDIT: no REBATERECORD_* at all.
    expectError(await call('/fetch/RRG', {}, nobody), 403, -3);
    expectError(await call(`/fetch/RRG/${g.id}`, undefined, nobody), 403, -3);
    expectError(await calculate(g, undefined, nobody), 403, -3);
    expectError(await call(`/rebaterecordgroup.submit/${g.typedId}`, {}, nobody), 403, -3);
    expectError(await call(`/rebaterecordgroup.submit/${g.typedId}/async`, {}, nobody), 403, -3);
    // Read-only: fetches, but neither writes, calculates nor submits.
    assert.equal(okData(await call('/fetch/RRG', { data: { uniqueName: g.uniqueName } }, reader)).length, 1);
    expectError(await call('/add/RRG', { data: { uniqueName: 'RO-1' } }, reader), 403, -3);
    expectError(await call('/update/RRG', { data: { typedId: g.typedId, label: 'ro' } }, reader), 403, -3);
    expectError(await call('/delete/RRG', { data: { typedId: g.typedId } }, reader), 403, -3);
    expectError(await calculate(g, undefined, reader), 403, -3);
    expectError(await call(`/rebaterecordgroup.submit/${g.typedId}`, {}, reader), 403, -3);
    expectError(await call(`/workflowsmanager.submit/${g.typedId}`, {}, reader), 403, -3);
    assert.equal((await groupById(g.id)).workflowStatus, 'DRAFT');
  });

  test('user groups: userGroupViewDetails hides the group, userGroupEdit keeps it read-only', async () => {
    okData(await call('/add/UG', { data: { uniqueName: 'rebates-eu' } }));
    const hidden = await calculatedGroup({ userGroupViewDetails: 'rebates-eu' });
    const readOnly = await calculatedGroup({ userGroupEdit: 'rebates-eu' });
    // rebater is in no group: the hidden one does not exist for him (404, not in lists).
    expectError(await call(`/fetch/RRG/${hidden.id}`, undefined, rebater), 404, -1);
    assert.equal(
      okData(await call('/fetch/RRG', { data: { uniqueName: hidden.uniqueName } }, rebater)).length,
      0,
    );
    expectError(await calculate(hidden, undefined, rebater), 404, -1);
    expectError(await call(`/rebaterecordgroup.submit/${hidden.typedId}`, {}, rebater), 404, -1);
    expectError(await call(`/workflowsmanager.submit/${hidden.typedId}`, {}, rebater), 404, -1);
    // The read-only one is seen, not changed.
    assert.equal(okData(await call(`/fetch/RRG/${readOnly.id}`, undefined, rebater))[0].id, readOnly.id);
    expectError(await calculate(readOnly, undefined, rebater), 403, -3);
    expectError(await calculate(readOnly, { label: 'mine' }, rebater), 403, -3);
    expectError(
      await call('/update/RRG', { data: { typedId: readOnly.typedId, label: 'mine' } }, rebater),
      403,
      -3,
    );
    expectError(await call(`/rebaterecordgroup.submit/${readOnly.typedId}`, {}, rebater), 403, -3);
    expectError(await call(`/rebaterecordgroup.submit/${readOnly.typedId}/async`, {}, rebater), 403, -3);
    expectError(await call(`/workflowsmanager.submit/${readOnly.typedId}`, {}, rebater), 403, -3);
    assert.equal((await groupById(readOnly.id)).label, readOnly.label);
    // integrate answers a hidden group as update does (404): its state or existence is not probed,
    // one record or a batch, locked or not; a group seen but not editable stays a 403.
    const hiddenLocked = await newGroup({ userGroupViewDetails: 'rebates-eu', locked: true });
    for (const name of [hidden.uniqueName, hiddenLocked.uniqueName]) {
      const change = { data: { uniqueName: name, label: 'probe' } };
      expectError(await call('/update/RRG', change, rebater), 404, -1);
      expectError(await call('/integrate/RRG', [change], rebater), 404, -1);
      expectError(await call('/integrate/RRG', [change, change], rebater), 404, -1);
    }
    const seen = { data: { uniqueName: readOnly.uniqueName, label: 'probe' } };
    expectError(await call('/integrate/RRG', [seen], rebater), 403, -3);
    expectError(await call('/integrate/RRG', [seen, seen], rebater), 403, -3);
    assert.equal((await groupById(hidden.id)).label, hidden.label);
    // A member of the group does both.
    const uid = okData(await call('/fetch/U', { data: { loginName: rebater.user } }))[0].id;
    okData(await call(`/accountmanager.assigngroup/${uid}`, { data: { groups: ['rebates-eu'] } }));
    okData(await calculate(hidden, undefined, rebater));
    const [s] = okData(await call(`/rebaterecordgroup.submit/${readOnly.typedId}`, {}, rebater));
    assert.notEqual(s.workflowStatus, 'DRAFT');
    okData(
      await call(`/accountmanager.assigngroup/${uid}`, { data: { groups: [], unassign: ['rebates-eu'] } }),
    );
  });

  test('locked: no change, calculation, submit or delete until unlocked', async () => {
    const g = await calculatedGroup();
    const [l] = okData(
      await call('/update/RRG', { data: { typedId: g.typedId, locked: true, attribute1: '12.50' } }, rebater),
    );
    assert.equal(l.locked, true);
    // The group sent back as it was read changes nothing: attribute1 (NUMERIC) stored as "12.50" and
    // read as 12.5 is the same number in any spelling, a date the same at midnight, a list of
    // inputs the same whatever its key order; by update and by integrate.
    const [read] = okData(await call(`/fetch/RRG/${g.id}`, undefined, rebater));
    assert.equal(read.attribute1, 12.5);
    okData(await call('/update/RRG', { data: read }, rebater));
    for (const v of ['12.5', '12.500', 12.5, '1.25e1'])
      okData(await call('/update/RRG', { data: { typedId: g.typedId, attribute1: v } }, rebater));
    const same = {
      uniqueName: g.uniqueName,
      label: read.label,
      attribute1: 12.5,
      startDate: '2026-01-01T00:00:00Z',
      inputs: read.inputs.map((x: any) => ({ value: x.value, name: x.name })),
      locked: true,
    };
    okData(await call('/update/RRG', { data: same }, rebater));
    okData(await call('/integrate/RRG', [{ data: same }], rebater));
    okData(await call('/integrate/RRG', [{ data: same }, { data: same }], rebater));
    const changed = await call('/update/RRG', { data: { typedId: g.typedId, attribute1: 12.51 } }, rebater);
    expectError(changed, 409, -1);
    assert.match(changed.body.response.data, /locked.*\(attribute1\)/);
    expectError(await call('/update/RRG', { data: { typedId: g.typedId, label: 'x' } }, rebater), 409, -1);
    expectError(await call('/integrate/RRG', [{ data: { uniqueName: g.uniqueName, label: 'x' } }]), 409, -1);
    // Locked refuses comments too (only an approved group takes them).
    expectError(await call('/update/RRG', { data: { typedId: g.typedId, comments: 'x' } }, rebater), 409, -1);
    expectError(await calculate(g, undefined, rebater), 409, -1);
    expectError(await calculate(g, { label: 'x' }, rebater), 409, -1);
    expectError(await call(`/rebaterecordgroup.submit/${g.typedId}`, {}, rebater), 409, -1);
    expectError(await call(`/workflowsmanager.submit/${g.typedId}`, {}, rebater), 409, -1);
    expectError(await call('/delete/RRG', { data: { typedId: g.typedId } }, rebater), 409, -1);
    // Bulk changes would pass the state rules by: refused for RRG.
    expectError(await call('/resetcolumn/RRG/label', {}), 400, -4, 'typeCode');
    expectError(
      await call('/massedit/RRG', {
        filterCriteria: { fieldName: 'id', operator: 'equals', value: g.id },
        massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'x' }],
      }),
      400,
      -4,
    );
    // A delete by filter is refused as a whole (each match's rules checked as one /delete checks
    // them; the database's guard stays behind them): the unlocked group survives too.
    const free = await newGroup();
    const r = await call('/delete/RRG/batch/forcefilter', {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'or',
        criteria: [
          { fieldName: 'id', operator: 'equals', value: g.id },
          { fieldName: 'id', operator: 'equals', value: free.id },
        ],
      },
    });
    expectError(r, 409, -1);
    assert.match(r.body.response.data, new RegExp(`${g.typedId} is locked: unlock it to delete it`));
    assert.equal((await groupById(free.id)).id, free.id);
    const after = await groupById(g.id);
    assert.equal(after.label, g.label);
    assert.equal(after.calculationStatus, g.calculationStatus);
    // Unlocking (with a change in the same update) opens it again.
    const [u] = okData(
      await call('/update/RRG', { data: { typedId: g.typedId, locked: false, label: 'open' } }, rebater),
    );
    assert.equal(u.label, 'open');
    okData(await calculate(g, undefined, rebater));
  });

  test('partition isolation: another partition never reaches the groups', async () => {
    const g = await calculatedGroup();
    const there = (path: string, body?: unknown) =>
      other.call(path, { basic: admin, ...(body === undefined ? {} : { body }) });
    expectError(await there(`/fetch/RRG/${g.id}`), 404, -1);
    assert.equal(okData(await there('/fetch/RRG', {})).length, 0);
    assert.equal(okData(await there('/fetch/RBT', {})).length, 0);
    assert.equal(okData(await there('/fetch/RBTAM', {})).length, 0);
    expectError(await there(`/rebaterecordgroup.calculate/${g.typedId}`, {}), 404, -1);
    expectError(await there(`/rebaterecordgroup.submit/${g.typedId}`, {}), 404, -1);
    expectError(await there(`/rebaterecordgroup.submit/${g.typedId}/async`, {}), 404, -1);
    expectError(await there('/update/RRG', { data: { typedId: g.typedId, label: 'x' } }), 404, -1);
    expectError(await there('/delete/RRG', { data: { typedId: g.typedId } }), 404, -1);
    // The same uniqueName is free there; a rebate type of this partition is unknown there.
    expectError(
      await there('/add/RRG', { data: { uniqueName: g.uniqueName, rebateType: 'Volume' } }),
      400,
      -4,
      'rebateType',
    );
    okData(await there('/add/RRG', { data: { uniqueName: g.uniqueName } }));
    assert.equal((await groupById(g.id)).label, g.label);
  });

  test('a logic stopped by its step limit is a -4 and nothing is written', async () => {
    // A partition of the same database served with LOGIC_MAX_STEPS=100: 150 elements exceed it.
    const small = await startHarness({ shareDbWith: h, env: { LOGIC_MAX_STEPS: '100' } });
    try {
      const at = (path: string, body?: unknown) =>
        small.call(path, { basic: admin, ...(body === undefined ? {} : { body }) });
      okData(
        await at('/add/F', {
          data: {
            uniqueName: 'Long',
            validAfter: '2026-01-01',
            nature: 'REBATE',
            elements: Array.from({ length: 150 }, (_, i) => ({
              elementName: `E${i}`,
              expression: `${i} + 1`,
            })),
          },
        }),
      );
      const [g] = okData(await at('/add/RRG', { data: { uniqueName: 'LONG-1', formulaName: 'Long' } }));
      const r = await at(`/rebaterecordgroup.calculate/${g.typedId}`, {
        data: { rebateRecordGroup: { label: 'changed' } },
      });
      expectError(r, 400, -4, 'logic');
      const [after] = okData(await at(`/fetch/RRG/${g.id}`));
      assert.equal(after.version, g.version);
      assert.equal(after.label, null);
      assert.equal(after.calculationStatus, 0);
    } finally {
      await small.close();
    }
  });

  test('record history of groups: client fields recorded, ?asOf answers attributes typed', async () => {
    const g = await newGroup({ attribute1: '7' });
    // An instant between the add and the update (the database keeps microseconds, answers milliseconds).
    await new Promise((r) => setTimeout(r, 50));
    const between = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 50));
    okData(await call('/update/RRG', { data: { typedId: g.typedId, attribute1: '8.25', label: 'later' } }));
    const hist = okData(await call(`/fetch/RRG/${g.id}/history`, {}));
    assert.deepEqual(hist.map((e: any) => e.action).sort(), ['ADD', 'UPDATE']);
    const upd = hist.find((e: any) => e.action === 'UPDATE');
    assert.deepEqual(upd.changes.attribute1, { old: '7', new: '8.25' });
    const before = okData(await call(`/fetch/RRG/${g.id}?asOf=${encodeURIComponent(between)}`))[0];
    assert.equal(before.attribute1, 7);
    assert.equal(before.label, g.label);
  });

  test('a token restricted to REBATERECORD_EDIT / _SUBMIT calculates and submits, and gets the group back', async () => {
    const g = await newGroup({ rebateType: 'Plain', formulaName: 'VolumeRebate', attribute1: '1' });
    const r = await call('/accountmanager.getjsonwebtoken', {
      data: { permissions: ['REBATERECORD_EDIT', 'REBATERECORD_SUBMIT'] },
    });
    const headers = { 'X-Ratecard-jwt': okData(r)[0].token };
    // Reading is not in the token: /fetch/RRG is refused, but the answers of its own writes are not.
    expectError(await h.call('/fetch/RRG', { headers, body: {} }), 403, -3);
    const c = okData(await h.call(`/rebaterecordgroup.calculate/${g.typedId}`, { headers, body: {} }))[0];
    assert.equal(c.calculationStatus, 3);
    const s = okData(await h.call(`/rebaterecordgroup.submit/${g.typedId}`, { headers, body: {} }))[0];
    assert.equal(s.workflowStatus, 'APPROVED');
  });
});
