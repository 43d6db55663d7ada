// Data change requests over HTTP on both databases: DCR types (DCRT), DCRs on products and on lookup
// values with ADD/UPDATE/DELETE items and a mass change, changesOnly, item validation (-4 naming the
// field), submit synchronous, asynchronous above asyncSubmitDCRThreshold, forced asynchronous and
// always synchronous without the option, a conflict with a concurrent direct edit (nothing applied,
// the item listed), permissions and user groups, and partition isolation.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { runnerFor } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';
import { okData, expectError } from '../helpers/envelope.ts';

type Who = { user: string; password: string };
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const editor: Who = { user: 'editor', password: 'editor-password-1' };
const nobody: Who = { user: 'nobody', password: 'nobody-password-1' };
const approver: Who = { user: 'approver', password: 'approver-password-1' };

describe('data change requests', () => {
  let h: Harness;
  let other: Harness;
  let runner: JobRunner;
  const call = (path: string, body?: unknown, who: Who = admin) =>
    h.call(path, { basic: who, ...(body === undefined ? {} : { body }) });

  const product = async (sku: string, extra: Record<string, unknown> = {}) =>
    okData(await call('/add/P', { data: { sku, label: `label ${sku}`, ...extra } }))[0];
  const productBySku = async (sku: string) =>
    okData(await call('/fetch/P', { data: { sku }, textMatchStyle: 'exactCase' }))[0];
  const newDcr = async (dcrType = 'products', who: Who = admin) =>
    okData(await call('/dcrmanager.add', { data: { dcrType, label: 'change' } }, who))[0];
  /** A SIMPLE REAL lookup table with these values, and a DCR type on its values. */
  const simpleTableWithDcrType = async (uniqueName: string, values: Record<string, number>) => {
    const [table] = okData(
      await call('/lookuptablemanager.add', {
        data: { uniqueName, label: uniqueName, type: 'SIMPLE', valueType: 'REAL' },
      }),
    );
    okData(
      await call(
        `/lookuptablemanager.add/${table.id}`,
        Object.entries(values).map(([name, value]) => ({ data: { name, value } })),
      ),
    );
    okData(await call('/add/DCRT', { data: { uniqueName, targetType: 'LTV', lookupTable: uniqueName } }));
    return table;
  };

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    runner = runnerFor(h).start();
    await h.newUser(editor.user, editor.password, ['ADMIN_WO_USER_MGMT']);
    await h.newUser(nobody.user, nobody.password, ['USERAUDIT']);
    await h.newUser(approver.user, approver.password, ['WF_ADMIN']);
    okData(
      await call('/add/PAM', { data: { fieldName: 'attribute1', label: 'Weight', fieldType: 'NUMERIC' } }),
    );
    okData(
      await call('/add/DCRT', {
        data: {
          uniqueName: 'products',
          label: 'Products',
          targetType: 'P',
          fields: 'label,currency,attribute1',
        },
      }),
    );
  });
  after(async () => {
    await runner.stop();
    await other.close();
    await h.close();
  });

  test('without credentials 401, without DCR_EDIT 403', async () => {
    expectError(await h.call('/dcrmanager.add', { body: { data: { dcrType: 'products' } } }), 401, -7);
    expectError(await call('/dcrmanager.add', { data: { dcrType: 'products' } }, nobody), 403, -3);
    expectError(await call('/dcrmanager.fetch/1', {}, nobody), 403, -3);
    expectError(await call('/add/DCRT', { data: { uniqueName: 'x', targetType: 'P' } }, nobody), 403, -3);
  });

  test('DCR types: a known target type; lookup values name their table', async () => {
    expectError(
      await call('/add/DCRT', { data: { uniqueName: 'bad', targetType: 'ZZ' } }),
      400,
      -4,
      'targetType',
    );
    expectError(
      await call('/add/DCRT', { data: { uniqueName: 'bad', targetType: 'LTV' } }),
      400,
      -4,
      'lookupTable',
    );
    // The table exists and holds values of the target type, when the type is written (not only
    // when a DCR of it gets its first item).
    const lookupType = { uniqueName: 'badtable', targetType: 'LTV', lookupTable: 'NoSuchTable' };
    expectError(await call('/add/DCRT', { data: lookupType }), 400, -4, 'lookupTable');
    const table = 'DcrTypeTable';
    okData(
      await call('/lookuptablemanager.add', {
        data: { uniqueName: table, label: table, type: 'SIMPLE', valueType: 'REAL' },
      }),
    );
    expectError(
      await call('/add/DCRT', { data: { ...lookupType, targetType: 'MLTV2', lookupTable: table } }),
      400,
      -4,
      'lookupTable',
    );
    const [made] = okData(await call('/add/DCRT', { data: { ...lookupType, lookupTable: table } }));
    expectError(
      await call('/update/DCRT', { data: { typedId: made.typedId, lookupTable: 'NoSuchTable' } }),
      400,
      -4,
      'lookupTable',
    );
    okData(await call('/delete/DCRT', { data: { typedId: made.typedId } }));
    expectError(await call('/dcrmanager.add', { data: { dcrType: 'nope' } }), 400, -4, 'dcrType');
    expectError(await call('/dcrmanager.add', { data: { dcrType: 5 } }), 400, -4, 'dcrType');
    expectError(await call('/dcrmanager.add', { data: {} }), 400, -4, 'dcrType');
    expectError(await call('/dcrmanager.add', { data: { dcrType: 'products', foo: 1 } }), 400, -4, 'foo');
    // A field its target cannot write is refused when the DCR type is saved (a typo, a key, a server
    // field); a DCR of a type whose fields no longer fit (a table changed since) still says so.
    for (const fields of ['label,colour', 'sku', 'createDate']) {
      expectError(
        await call('/add/DCRT', { data: { uniqueName: 'wrongfield', targetType: 'P', fields } }),
        400,
        -4,
        'fields',
      );
    }
    okData(
      await call('/add/DCRT', {
        data: { uniqueName: 'rightfields', targetType: 'P', fields: 'label, attribute1' },
      }),
    );
    // An update or upsert that sends only one of the two is checked against the stored other one.
    expectError(
      await call('/update/DCRT', { data: { uniqueName: 'rightfields', fields: 'label,colour' } }),
      400,
      -4,
      'fields',
    );
    expectError(
      await call('/integrate/DCRT', { data: { uniqueName: 'rightfields', fields: 'sku' } }),
      400,
      -4,
      'fields',
    );
    expectError(
      await call('/update/DCRT', { data: { uniqueName: 'rightfields', targetType: 'C' } }),
      400,
      -4,
      'fields',
    );
    okData(await call('/update/DCRT', { data: { uniqueName: 'rightfields', fields: 'label' } }));
    await h.db.query(
      `UPDATE dcr_types SET fields = 'colour' WHERE partition_id = $1 AND unique_name = 'rightfields'`,
      [h.partitionId],
    );
    expectError(await call('/dcrmanager.add', { data: { dcrType: 'rightfields' } }), 400, -4, 'dcrType');
    // A type in use by a DCR not yet applied stays; a DRAFT DCR can be deleted, and then the type.
    const [temp] = okData(await call('/add/DCRT', { data: { uniqueName: 'temp', targetType: 'P' } }));
    const draft = await newDcr('temp');
    expectError(await call('/delete/DCRT', { data: { typedId: temp.typedId } }), 409, -1);
    // Nor is it retargeted while in use (its DCR's items were proposed for P); a label may change.
    expectError(
      await call('/update/DCRT', { data: { typedId: temp.typedId, targetType: 'C' } }),
      409,
      -1,
      'targetType',
    );
    expectError(
      await call('/integrate/DCRT', { data: { uniqueName: 'temp', targetType: 'LTV', lookupTable: 'x' } }),
      409,
      -1,
    );
    okData(await call('/update/DCRT', { data: { typedId: temp.typedId, targetType: 'P', label: 'T' } }));
    okData(await call('/delete/DCR', { data: { typedId: `${draft.id}.DCR` } }));
    okData(await call('/delete/DCRT', { data: { typedId: temp.typedId } }));
  });

  test('products: ADD, UPDATE, DELETE items and a mass change, changesOnly, synchronous submit', async () => {
    await product('A-1', { currency: 'EUR', attribute1: '1' });
    await product('A-2', { currency: 'EUR', attribute1: '2' });
    await product('A-3', { currency: 'USD' });
    await product('A-5', { attribute1: '2' });
    await product('M-1', { attribute1: '10' });
    await product('M-2', { attribute1: '20' });
    const dcr = await newDcr();
    assert.match(dcr.uniqueName, /^DCR-\d+$/);
    assert.equal(dcr.status, 'DRAFT');
    const items = okData(
      await call(`/dcrmanager.add/${dcr.typedId}`, {
        data: [
          { changeType: 'UPDATE', sku: 'A-1', label: 'new label', attribute1: '1.5' },
          // The same value as stored (2 is 2.00); A-5's differs past a double's digits.
          { changeType: 'UPDATE', sku: 'A-2', currency: 'EUR', attribute1: '2.00' },
          { changeType: 'UPDATE', sku: 'A-5', attribute1: '2.0000000000000000001' },
          { changeType: 'DELETE', sku: 'A-3' },
          { changeType: 'ADD', sku: 'A-4', label: 'added', attribute1: 4 },
        ],
      }),
    );
    assert.equal(items.length, 5);
    assert.equal(items[0].targetVersion, 0);
    assert.equal(items[0].originalValues.label, 'label A-1');
    assert.deepEqual(items[4].targetKey, ['A-4']);
    // Values typed as the product's own fields are answered (attribute1 is NUMERIC): numbers, and the
    // exact text where a double would not keep the value.
    assert.deepEqual([items[0].values.attribute1, items[0].originalValues.attribute1], [1.5, 1]);
    assert.equal(items[2].values.attribute1, '2.0000000000000000001');
    okData(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: {
          filterCriteria: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [{ fieldName: 'sku', operator: 'startsWith', value: 'M-' }],
          },
          massEditRecords: [{ fieldName: 'attribute1', massEditOperator: '*', fieldValue: 2 }],
        },
      }),
    );
    assert.equal(okData(await call(`/dcrmanager.fetchmassop/${dcr.id}`, {})).length, 1);

    const fetched = await call(`/dcrmanager.fetch/${dcr.id}`, { data: { changeType: 'UPDATE' } });
    assert.equal(fetched.body.response.totalRows, 3);
    // changesOnly: A-2 proposes its current values only, so it is left out.
    const changes = okData(await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, {}));
    assert.deepEqual(changes.map((c) => c.targetKey[0]).sort(), ['A-1', 'A-3', 'A-4', 'A-5']);
    const a1 = changes.find((c) => c.targetKey[0] === 'A-1');
    assert.deepEqual(Object.keys(a1.changes).sort(), ['attribute1', 'label']);
    assert.equal(a1.changes.label.old, 'label A-1');
    assert.deepEqual(a1.changes.attribute1, { old: 1, new: 1.5 });
    const asArrays = okData(
      await call(`/dcrmanager.fetch/${dcr.id}`, {
        data: { changeType: 'UPDATE' },
        sortBy: 'id',
        valueFields: ['id', 'values'],
      }),
    );
    assert.deepEqual(asArrays[0][1], { label: 'new label', attribute1: 1.5 });
    // Named fields: the same items (the comparison reads what it needs), only those fields answered.
    const named = await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, {
      resultFields: ['targetKey', 'changes'],
    });
    assert.equal(named.body.response.totalRows, 4, named.text);
    assert.deepEqual(
      okData(named).map((c) => Object.keys(c).join()),
      ['targetKey,changes', 'targetKey,changes', 'targetKey,changes', 'targetKey,changes'],
    );
    assert.deepEqual(okData(named).find((c) => c.targetKey[0] === 'A-1').changes, a1.changes);
    const arrays = await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, {
      valueFields: ['targetKey', 'changeType'],
    });
    assert.equal(arrays.body.response.totalRows, 4);
    assert.deepEqual(
      okData(arrays)
        .map((row) => row.join())
        .sort(),
      ['A-1,UPDATE', 'A-3,DELETE', 'A-4,ADD', 'A-5,UPDATE'],
    );
    expectError(
      await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, { resultFields: ['targetKey', 'nope'] }),
      400,
      -4,
    );
    // distinctResults over the answered fields (two UPDATE items answer one row), sorted by them.
    const kinds = await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, {
      resultFields: ['changeType'],
      distinctResults: true,
    });
    assert.equal(kinds.body.response.totalRows, 3, kinds.text);
    assert.deepEqual(
      okData(kinds).map((r) => r.changeType),
      ['ADD', 'DELETE', 'UPDATE'],
    );
    expectError(
      await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, {
        resultFields: ['changeType'],
        distinctResults: true,
        sortBy: '-targetId',
      }),
      400,
      -4,
      'sortBy',
    );

    const [applied] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
    assert.equal(applied.status, 'APPLIED');
    assert.equal(applied.workflowStatus, 'APPROVED');
    assert.equal((await productBySku('A-1')).label, 'new label');
    assert.equal((await productBySku('A-1')).attribute1, 1.5);
    assert.equal(await productBySku('A-3'), undefined);
    assert.equal((await productBySku('A-4')).label, 'added');
    assert.equal((await productBySku('M-2')).attribute1, 40);
    // Record history names the DCR as the operation of each change it wrote.
    const hist = await h.db.query<{ action: string; n: string }>(
      `SELECT action, count(*) AS n FROM record_history
        WHERE partition_id = $1 AND type_code = 'P' AND operation = $2 GROUP BY action ORDER BY action`,
      [h.partitionId, `DCR ${dcr.id}.DCR`],
    );
    assert.deepEqual(
      hist.rows.map((r) => [r.action, Number(r.n)]),
      [
        ['ADD', 1],
        ['DELETE', 1],
        // A-1, A-2 (its attribute1 stored as written, "2.00"), A-5, M-1, M-2
        ['UPDATE', 5],
      ],
    );
    // An applied DCR is closed.
    expectError(await call(`/dcrmanager.add/${dcr.id}`, { data: { sku: 'A-1', label: 'x' } }), 409, -1);
    expectError(await call(`/dcrmanager.submit/${dcr.id}`), 409, -1);
    const [listed] = okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }));
    assert.equal(listed.status, 'APPLIED');
  });

  test('items are checked when proposed: a -4 naming the field', async () => {
    await product('V-1');
    const dcr = await newDcr();
    const add = (data: unknown) => call(`/dcrmanager.add/${dcr.id}`, { data });
    expectError(await add({ sku: 'V-1', colour: 'red' }), 400, -4, 'colour');
    expectError(await add({ sku: 'V-1', unitOfMeasure: 'kg' }), 400, -4, 'unitOfMeasure');
    expectError(await add({ sku: 'V-1', attribute1: 'heavy' }), 400, -4, 'attribute1');
    expectError(await add({ sku: 'V-1', label: 'x'.repeat(1001) }), 400, -4, 'label');
    expectError(await add({ changeType: 'ADD', label: 'no key' }), 400, -4, 'sku');
    // A duplicate business key is a conflict, as /add answers it: stored already, or twice in the batch.
    expectError(await add({ changeType: 'ADD', sku: 'V-1' }), 409, -1, 'sku');
    expectError(
      await add([
        { changeType: 'ADD', sku: 'V-8' },
        { changeType: 'ADD', sku: 'V-8' },
      ]),
      409,
      -1,
      '1.sku',
    );
    expectError(await add({ changeType: 'MOVE', sku: 'V-1' }), 400, -4, 'changeType');
    // A record not found names the proposal's key; a record the DCR already has an item for names
    // that item (409), in a batch at its index.
    expectError(
      await add([
        { sku: 'V-1', label: 'a' },
        { sku: 'V-404', label: 'b' },
      ]),
      404,
      -1,
      '1.sku',
    );
    const [first] = okData(await add({ sku: 'V-1', label: 'a' }));
    const again = await add([
      { changeType: 'ADD', sku: 'V-2', label: 'new' },
      { sku: 'V-1', label: 'b' },
    ]);
    // Named by the field the proposal named the record with (its sku here).
    expectError(again, 409, -1, '1.sku');
    assert.match(again.body.response.data, new RegExp(`\\(${first.typedId.replace('.', '\\.')}\\)`));
    // A field an item has not is refused, naming it (in a batch with its position); nothing is removed.
    expectError(
      await call(`/dcrmanager.delete/${dcr.id}`, { data: { typedId: first.typedId, foo: 1 } }),
      400,
      -4,
      'foo',
    );
    expectError(
      await call(`/dcrmanager.delete/${dcr.id}`, {
        data: [{ typedId: first.typedId }, { typedId: first.typedId, foo: 1 }],
      }),
      400,
      -4,
      '1.foo',
    );
    assert.equal(okData(await call(`/dcrmanager.fetch/${dcr.id}`, {})).length, 1);
    // A submit takes nothing but its path.
    expectError(await call(`/dcrmanager.submit/${dcr.id}`, { foo: 1 }), 400, -4, 'foo');
    expectError(
      await call(`/dcrmanager.submit/${dcr.id}/async`, { data: { typedId: first.typedId } }),
      400,
      -4,
    );
    assert.equal(okData(await call('/fetch/DCR', { data: { id: dcr.id } }))[0].status, 'DRAFT');
    okData(await call(`/dcrmanager.delete/${dcr.id}`, { data: first }));
    expectError(
      await add([
        { sku: 'V-1', label: 'v' },
        { changeType: 'ADD', sku: 'V-9', attribute1: 'x' },
      ]),
      400,
      -4,
      '1.attribute1',
    );
    expectError(await add({ sku: 'NOPE' }), 404, -1);
    // A record has one item per DCR; the item is changed with update, removed with delete.
    const [item] = okData(await add({ sku: 'V-1', label: 'first' }));
    expectError(await add({ sku: 'V-1', label: 'second' }), 409, -1);
    const [changed] = okData(
      await call(`/dcrmanager.update/${dcr.id}`, {
        data: { typedId: item.typedId, label: 'second' },
        oldValues: { version: 0 },
      }),
    );
    assert.equal(changed.values.label, 'second');
    expectError(
      await call(`/dcrmanager.update/${dcr.id}`, {
        data: { typedId: item.typedId, label: 'third' },
        oldValues: { version: 0 },
      }),
      409,
      -1,
    );
    expectError(
      await call(`/dcrmanager.update/${dcr.id}`, { data: { typedId: item.typedId, attribute1: 'x' } }),
      400,
      -4,
      'attribute1',
    );
    // Naming no value to change is no update (the version stays).
    expectError(
      await call(`/dcrmanager.update/${dcr.id}`, { data: { typedId: item.typedId } }),
      400,
      -4,
      'data',
    );
    expectError(
      await call(`/dcrmanager.update/${dcr.id}`, { data: { typedId: item.typedId, sku: 'V-1' } }),
      400,
      -4,
      'data',
    );
    // Which record and what change are fixed when the item is added: other values are refused,
    // the same ones may be repeated.
    for (const [field, value] of [
      ['sku', 'V-2'],
      ['changeType', 'DELETE'],
      ['oldValues.version', 'x'],
    ] as const) {
      const body =
        field === 'oldValues.version'
          ? { data: { typedId: item.typedId, label: 'x' }, oldValues: { version: value } }
          : { data: { typedId: item.typedId, [field]: value } };
      expectError(await call(`/dcrmanager.update/${dcr.id}`, body), 400, -4, field);
    }
    const [same] = okData(
      await call(`/dcrmanager.update/${dcr.id}`, {
        data: { typedId: item.typedId, sku: 'V-1', changeType: 'UPDATE', label: 'fourth' },
      }),
    );
    assert.equal(same.values.label, 'fourth');
    okData(await call(`/dcrmanager.delete/${dcr.id}`, { data: { typedId: item.typedId } }));
    assert.equal(okData(await call(`/dcrmanager.fetch/${dcr.id}`, {})).length, 0);
    expectError(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: {
          filterCriteria: {},
          massEditRecords: [{ fieldName: 'formulaName', massEditOperator: '=', fieldValue: 'f' }],
        },
      }),
      400,
      -4,
      'massEditRecords.0.fieldName',
    );
    // The filter is required, as by /massedit ({} names every record); unknown fields are refused.
    const labelOp = [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'f' }];
    // Labels: storable text of at most 1,000 characters, as a DCR's own (an unpaired surrogate was
    // stored as U+FFFD, a 1 MB label taken).
    for (const label of ['a\ud800b', 'x'.repeat(1001)]) {
      expectError(
        await call(`/dcrmanager.addmassop/${dcr.id}`, {
          data: { label, filterCriteria: {}, massEditRecords: labelOp },
        }),
        400,
        -4,
        'label',
      );
      expectError(await call('/dcrmanager.add', { data: { dcrType: 'products', label } }), 400, -4, 'label');
    }
    expectError(
      await call(`/dcrmanager.addmassop/${dcr.id}`, { data: { massEditRecords: labelOp } }),
      400,
      -4,
      'filterCriteria',
    );
    expectError(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: { filterCriteria: {}, massEditRecords: labelOp, extra: 1 },
      }),
      400,
      -4,
      'extra',
    );
    expectError(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: { filterCriteria: {}, massEditRecords: [{ ...labelOp[0], extra: 2 }] },
      }),
      400,
      -4,
      'massEditRecords.0.extra',
    );
    expectError(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: {
          filterCriteria: { fieldName: 'nope', operator: 'equals', value: 1 },
          massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'f' }],
        },
      }),
      400,
      -4,
    );
    // The checks of /massedit, when the mass change is written (not at submit).
    for (const [op, fieldName, fieldValue, field] of [
      ['+', 'label', 1, 'massEditRecords.0.massEditOperator'],
      ['/', 'attribute1', 0, 'massEditRecords.0.fieldValue'],
    ] as const) {
      expectError(
        await call(`/dcrmanager.addmassop/${dcr.id}`, {
          data: { filterCriteria: {}, massEditRecords: [{ fieldName, massEditOperator: op, fieldValue }] },
        }),
        400,
        -4,
        field,
      );
    }
  });

  test('items of records hidden from a user (userGroupViewDetails) do not exist for him', async () => {
    await product('HID-1', { userGroupViewDetails: 'secret-group', attribute1: '99' });
    await product('SEEN-1', { attribute1: '1' });
    const dcr = await newDcr();
    const [hidden, seen] = okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: [
          { changeType: 'UPDATE', sku: 'HID-1', attribute1: '100' },
          { changeType: 'UPDATE', sku: 'SEEN-1', attribute1: '2' },
        ],
      }),
    );
    assert.equal(okData(await call('/fetch/P', { data: { sku: 'HID-1' } }, editor)).length, 0);
    const listed = (body: unknown, path = '') =>
      call(`/dcrmanager.fetch/${dcr.id}${path}`, body, editor).then((r) => okData(r).map((i: any) => i.id));
    assert.deepEqual(await listed({}), [seen.id]);
    assert.deepEqual(await listed({}, '/changesOnly'), [seen.id]);
    expectError(
      await call(
        `/dcrmanager.update/${dcr.id}`,
        { data: { typedId: hidden.typedId, attribute1: '1000' } },
        editor,
      ),
      404,
      -1,
    );
    expectError(
      await call(`/dcrmanager.delete/${dcr.id}`, { data: { typedId: hidden.typedId } }, editor),
      404,
      -1,
    );
    const [still] = okData(await call(`/dcrmanager.fetch/${dcr.id}`, { data: { id: hidden.id } }));
    assert.deepEqual([still.values.attribute1, still.version], [100, hidden.version]);
    okData(
      await call(
        `/dcrmanager.update/${dcr.id}`,
        { data: { typedId: seen.typedId, attribute1: '3' } },
        editor,
      ),
    );
    // An ADD of a key a hidden record holds is a duplicate, as /add answers it (it was taken, and
    // refused only when applied).
    expectError(
      await call(
        `/dcrmanager.add/${dcr.id}`,
        { data: { changeType: 'ADD', sku: 'HID-1', label: 'x' } },
        editor,
      ),
      409,
      -1,
      'sku',
    );
    // He may not apply a DCR that changes a record hidden from him: 403 naming none of them (he was
    // told the record "was deleted since it was proposed", with its id); nothing applied.
    const refused = await call(`/dcrmanager.submit/${dcr.id}`, {}, editor);
    expectError(refused, 403, -3);
    assert.match(
      refused.body.response.data,
      /1 item\(s\) of this DCR change records hidden from the submitter/,
    );
    assert.doesNotMatch(refused.text, new RegExp(`HID-1|${hidden.id}\\.DCRI|deleted`));
    const [kept] = okData(await call('/fetch/P', { data: { sku: 'SEEN-1' } }));
    assert.equal(kept.attribute1, 1, 'nothing applied');
    // changesOnly pages as /dcrmanager.fetch does: the largest page and the order of the bounds.
    expectError(await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, { endRow: 20_000 }), 400, -4, 'endRow');
    expectError(
      await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, { startRow: 3, endRow: 1 }),
      400,
      -4,
      'endRow',
    );
    okData(await call('/delete/DCR', { data: { typedId: dcr.typedId } }));
  });

  test('concurrent changes of one item or mass change with one version: one wins, the others 409', async () => {
    await product('RACE-1', { attribute1: '1' });
    const dcr = await newDcr();
    const [item] = okData(await call(`/dcrmanager.add/${dcr.id}`, { data: { sku: 'RACE-1', label: 'l0' } }));
    const [op] = okData(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: {
          filterCriteria: {},
          massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'm' }],
        },
      }),
    );
    for (const [path, typedId, version] of [
      ['update', item.typedId, item.version],
      ['updatemassop', op.typedId, op.version],
    ]) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, n) =>
          call(`/dcrmanager.${path}/${dcr.id}`, {
            data: { typedId, label: `l${n}` },
            oldValues: { version },
          }),
        ),
      );
      assert.deepEqual(
        answers.map((r) => r.status).sort(),
        [200, 409, 409, 409, 409, 409, 409, 409],
        answers.map((r) => r.text).join('\n'),
      );
    }
    const [now] = okData(await call(`/dcrmanager.fetch/${dcr.id}`, {}));
    assert.equal(now.version, item.version + 1);
    okData(await call('/delete/DCR', { data: { typedId: dcr.typedId } }));
  });

  test('a target changed since proposed: nothing applied, the conflicting item listed', async () => {
    await product('C-1', { label: 'one' });
    await product('C-2', { label: 'two' });
    const dcr = await newDcr();
    const items = okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: [
          { sku: 'C-1', label: 'dcr one' },
          { sku: 'C-2', label: 'dcr two' },
          { changeType: 'ADD', sku: 'C-3', label: 'three' },
        ],
      }),
    );
    const c2 = await productBySku('C-2');
    okData(
      await call('/update/P', {
        data: { typedId: c2.typedId, label: 'direct' },
        oldValues: { version: c2.version },
      }),
    );
    const r = await call(`/dcrmanager.submit/${dcr.id}`);
    expectError(r, 409, -1, items[1].typedId);
    assert.equal(Object.keys(r.body.response.errors).length, 1);
    assert.equal((await productBySku('C-1')).label, 'one');
    assert.equal((await productBySku('C-2')).label, 'direct');
    assert.equal(await productBySku('C-3'), undefined);
    const [failed] = okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }));
    assert.equal(failed.status, 'FAILED');
    assert.ok(JSON.stringify(failed.messages).includes(items[1].typedId));
    // Fixed by updating the stale item (its proposal now stands on the record as it is: version and
    // original values), the DCR is submitted again. A DRAFT's update keeps the proposed-on version.
    const [fixed] = okData(
      await call(`/dcrmanager.update/${dcr.id}`, { data: { typedId: items[1].typedId, label: 'dcr two' } }),
    );
    assert.equal(fixed.targetVersion, c2.version + 1);
    assert.equal(fixed.originalValues.label, 'direct');
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
    assert.equal((await productBySku('C-2')).label, 'dcr two');
    assert.equal((await productBySku('C-3')).label, 'three');
  });

  test('on a FAILED DCR, an ADD item whose key was taken since cannot be proposed again (409 naming the key)', async () => {
    const dcr = await newDcr();
    const [item] = okData(
      await call(`/dcrmanager.add/${dcr.id}`, { data: { changeType: 'ADD', sku: 'WF-1', label: 'w1' } }),
    );
    await product('WF-1', { label: 'direct' });
    expectError(await call(`/dcrmanager.submit/${dcr.id}`), 409, -1);
    const [failed] = okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }));
    assert.equal(failed.status, 'FAILED');
    for (const data of [{ typedId: item.typedId, label: 'again' }, { typedId: item.typedId }]) {
      expectError(await call(`/dcrmanager.update/${dcr.id}`, { data }), 409, -1, 'sku');
    }
    const [kept] = okData(await call(`/dcrmanager.fetch/${dcr.id}`, {}));
    assert.deepEqual([kept.values.label, kept.version], ['w1', item.version]);
    // Its key free again, the item is proposed again.
    const w1 = await productBySku('WF-1');
    okData(await call('/delete/P', { data: { typedId: w1.typedId } }));
    okData(await call(`/dcrmanager.update/${dcr.id}`, { data: { typedId: item.typedId, label: 'again' } }));
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
    assert.equal((await productBySku('WF-1')).label, 'again');
  });

  test('an update of a DRAFT item keeps the version it was proposed on', async () => {
    await product('K-1', { label: 'one' });
    const dcr = await newDcr();
    const [item] = okData(await call(`/dcrmanager.add/${dcr.id}`, { data: { sku: 'K-1', label: 'dcr' } }));
    const k1 = await productBySku('K-1');
    okData(
      await call('/update/P', {
        data: { typedId: k1.typedId, label: 'direct' },
        oldValues: { version: k1.version },
      }),
    );
    const [updated] = okData(
      await call(`/dcrmanager.update/${dcr.id}`, { data: { typedId: item.typedId, label: 'dcr 2' } }),
    );
    assert.equal(updated.targetVersion, k1.version);
    expectError(await call(`/dcrmanager.submit/${dcr.id}`), 409, -1, item.typedId);
    assert.equal((await productBySku('K-1')).label, 'direct');
  });

  test('the engine validates again when applying: a failing write leaves nothing behind', async () => {
    await product('E-1', { label: 'one' });
    const dcr = await newDcr();
    okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: [
          { sku: 'E-1', label: 'changed' },
          { changeType: 'ADD', sku: 'E-2', label: 'new' },
        ],
      }),
    );
    // A product E-2 appears directly after the proposal: the ADD now conflicts.
    await product('E-2');
    expectError(await call(`/dcrmanager.submit/${dcr.id}`), 409, -1);
    assert.equal((await productBySku('E-1')).label, 'one');
  });

  test("lookup values: ADD, UPDATE and DELETE of a table's values", async () => {
    const table = await simpleTableWithDcrType('rates', { a: 1, b: 2 });
    // A type naming a table of other values is refused when written.
    expectError(
      await call('/add/DCRT', { data: { uniqueName: 'm', targetType: 'MLTV', lookupTable: 'rates' } }),
      400,
      -4,
      'lookupTable',
    );
    const dcr = await newDcr('rates');
    expectError(
      await call(`/dcrmanager.add/${dcr.id}`, { data: { name: 'a', value: 'high' } }),
      400,
      -4,
      'value',
    );
    okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: [
          { name: 'a', value: 1.25 },
          { changeType: 'DELETE', name: 'b' },
          { changeType: 'ADD', name: 'c', value: 3 },
        ],
      }),
    );
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
    const values = okData(await call(`/lookuptablemanager.fetch/${table.id}`, { sortBy: 'name' }));
    assert.deepEqual(
      values.map((v) => [v.name, Number(v.value)]),
      [
        ['a', 1.25],
        ['c', 3],
      ],
    );
  });

  test('RANGE lookup values: an overlap met when applied names both ranges, without database codes', async () => {
    const [table] = okData(
      await call('/lookuptablemanager.add', {
        data: { uniqueName: 'bands', label: 'Bands', type: 'RANGE', valueType: 'REAL' },
      }),
    );
    okData(
      await call(`/lookuptablemanager.add/${table.id}`, [
        { data: { name: 'small', upperBound: 100, value: 1 } },
        { data: { name: 'big', lowerBound: 100, value: 2 } },
      ]),
    );
    okData(
      await call('/add/DCRT', { data: { uniqueName: 'bands', targetType: 'LTV', lookupTable: 'bands' } }),
    );
    const dcr = await newDcr('bands');
    okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: { changeType: 'ADD', name: 'huge', lowerBound: 1000, upperBound: 2000, value: 0.1 },
      }),
    );
    const r = await call(`/dcrmanager.submit/${dcr.id}`);
    expectError(r, 400, -4);
    const text = JSON.stringify(r.body.response.errors);
    assert.match(text, /The range \[1000, 2000\) of huge overlaps the range \[100, inf\) of big/);
    assert.doesNotMatch(text, /database error|23P01/);
    assert.equal(okData(await call(`/lookuptablemanager.fetch/${table.id}`)).length, 2);
  });

  test('JSON lookup values stay JSON through propose, fetch and apply (JSON and JSON2 tables)', async () => {
    const [json] = okData(
      await call('/lookuptablemanager.add', { data: { uniqueName: 'cfg', label: 'Cfg', type: 'JSON' } }),
    );
    const [json2] = okData(
      await call('/lookuptablemanager.add', { data: { uniqueName: 'cfg2', label: 'Cfg2', type: 'JSON2' } }),
    );
    okData(await call(`/lookuptablemanager.add/${json.id}`, { data: { name: 'old', value: { a: 1 } } }));
    okData(
      await call(`/lookuptablemanager.add/${json2.id}`, { data: { key1: 'EU', key2: 'x', value: 'v' } }),
    );
    okData(await call('/add/DCRT', { data: { uniqueName: 'cfg', targetType: 'JLTV', lookupTable: 'cfg' } }));
    okData(
      await call('/add/DCRT', { data: { uniqueName: 'cfg2', targetType: 'JLTV2', lookupTable: 'cfg2' } }),
    );
    const obj = { tiers: [1, 2], label: 'x', nested: { ok: true } };

    const dcr = await newDcr('cfg');
    okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: [
          { changeType: 'ADD', name: 'arr', value: [1, 2] },
          { name: 'old', value: obj },
          { changeType: 'ADD', name: 'text', value: '[3]' },
        ],
      }),
    );
    const items = okData(await call(`/dcrmanager.fetch/${dcr.id}`, { sortBy: 'id' }));
    assert.deepEqual(
      items.map((i) => i.values.value),
      [[1, 2], obj, '[3]'],
    );
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
    const values = okData(await call(`/lookuptablemanager.fetch/${json.id}`, { sortBy: 'name' }));
    assert.deepEqual(
      values.map((v) => [v.name, v.value]),
      [
        ['arr', [1, 2]],
        ['old', obj],
        ['text', '[3]'],
      ],
    );

    const dcr2 = await newDcr('cfg2');
    okData(
      await call(`/dcrmanager.add/${dcr2.id}`, {
        data: [
          { key1: 'EU', key2: 'x', value: [obj] },
          { changeType: 'ADD', key1: 'US', key2: 'y', value: { n: 2 } },
        ],
      }),
    );
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr2.id}`))[0].status, 'APPLIED');
    const values2 = okData(await call(`/lookuptablemanager.fetch/${json2.id}`, { sortBy: 'key1' }));
    assert.deepEqual(
      values2.map((v) => [v.key1, v.key2, v.value]),
      [
        ['EU', 'x', [obj]],
        ['US', 'y', { n: 2 }],
      ],
    );
  });

  test('asynchronous: forced, above the threshold; always synchronous without the option', async () => {
    for (let i = 0; i < 3; i++) await product(`S-${i}`);
    const threeItems = async () => {
      const dcr = await newDcr();
      okData(
        await call(`/dcrmanager.add/${dcr.id}`, {
          data: [0, 1, 2].map((i) => ({ sku: `S-${i}`, label: `v${dcr.id}` })),
        }),
      );
      return dcr;
    };
    // No option: synchronous whatever the size.
    let dcr = await threeItems();
    let [r] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
    assert.equal(r.status, 'APPLIED');
    assert.equal(r.jstId, null);
    // Forced: the answer is the job (JST) as /admin.fetchjst answers it, with jstId.
    dcr = await threeItems();
    [r] = okData(await call(`/dcrmanager.submit/${dcr.id}/async`));
    assert.equal(typeof r.jstId, 'number');
    assert.equal(r.id, r.jstId);
    assert.equal(r.typedId, `${r.jstId}.JST`);
    assert.equal(r.trackerType, 'DCR_SUBMIT');
    assert.equal(r.targetObject, `${dcr.id}.DCR`);
    assert.equal(r.uniqueName, undefined);
    const [fetched] = okData(await call(`/admin.fetchjst/${r.jstId}`));
    assert.deepEqual(Object.keys(r).sort(), [...Object.keys(fetched), 'jstId'].sort());
    let job = await waitJob(r.jstId);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    assert.equal(job.trackerType, 'DCR_SUBMIT');
    assert.equal(job.calculationResults.updated, 3);
    assert.equal(job.calculationResults.status, 'APPLIED');
    assert.equal((await productBySku('S-1')).label, `v${dcr.id}`);
    assert.equal(
      okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }))[0].jstId,
      r.jstId,
    );
    // An applied DCR cannot be submitted again, asynchronously neither (checked before any job).
    expectError(await call(`/dcrmanager.submit/${dcr.id}/async`), 409, -1);
    // While an async submit's job is queued, another submit (async or not) is 409 naming the job;
    // the runner is stopped here so that the job waits.
    dcr = await threeItems();
    await runner.stop();
    try {
      [r] = okData(await call(`/dcrmanager.submit/${dcr.id}/async`));
      for (const path of [`/dcrmanager.submit/${dcr.id}/async`, `/dcrmanager.submit/${dcr.id}`]) {
        const again = await call(path);
        expectError(again, 409, -1);
        assert.match(again.body.response.data, new RegExp(`being submitted \\(job ${r.jstId}\\.JST\\)`));
      }
    } finally {
      runner = runnerFor(h).start();
    }
    assert.equal((await waitJob(r.jstId)).status, 'FINISHED');
    assert.equal(
      okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }))[0].jstId,
      r.jstId,
    );
    // Above the threshold (2 < 3 items) a plain submit runs as a job; at or below it, synchronously.
    okData(await call('/add/ACO', { data: { uniqueName: 'asyncSubmitDCRThreshold', value: '2' } }));
    dcr = await threeItems();
    [r] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
    assert.equal(r.status, 'APPROVED');
    job = await waitJob(r.jstId);
    assert.equal(job.status, 'FINISHED');
    assert.equal(
      okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }))[0].status,
      'APPLIED',
    );
    const small = await newDcr();
    okData(await call(`/dcrmanager.add/${small.id}`, { data: { sku: 'S-0', label: 'small' } }));
    assert.equal(okData(await call(`/dcrmanager.submit/${small.id}`))[0].status, 'APPLIED');
    // A conflict in a job: the job fails, the DCR is FAILED, nothing written.
    dcr = await threeItems();
    const s2 = await productBySku('S-2');
    okData(
      await call('/update/P', {
        data: { typedId: s2.typedId, label: 'direct' },
        oldValues: { version: s2.version },
      }),
    );
    [r] = okData(await call(`/dcrmanager.submit/${dcr.id}/async`));
    job = await waitJob(r.jstId);
    assert.equal(job.status, 'FAILED');
    assert.equal((await productBySku('S-0')).label, 'small');
    assert.equal(
      okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }))[0].status,
      'FAILED',
    );
    await h.db.query(
      `DELETE FROM advanced_config WHERE partition_id = $1 AND unique_name = 'asyncSubmitDCRThreshold'`,
      [h.partitionId],
    );
  });

  test('a cancelled apply or async submit leaves the DCR submittable; the generic submit waits for the job too', async () => {
    for (let i = 0; i < 2; i++) await product(`QC-${i}`);
    const twoItems = async () => {
      const dcr = await newDcr();
      okData(
        await call(`/dcrmanager.add/${dcr.id}`, {
          data: [0, 1].map((i) => ({ sku: `QC-${i}`, label: `v${dcr.id}` })),
        }),
      );
      return dcr;
    };
    const dcrNow = async (dcr: any) =>
      okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }))[0];
    okData(await call('/add/ACO', { data: { uniqueName: 'asyncSubmitDCRThreshold', value: '1' } }));
    const dcr = await twoItems();
    // The runner is stopped here so that the jobs wait.
    await runner.stop();
    try {
      // The apply job (above the threshold) cancelled while queued: FAILED as after a failed apply.
      const [approved] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
      assert.equal(approved.status, 'APPROVED');
      okData(await call(`/admin.canceljst/${approved.jstId}`));
      let now = await dcrNow(dcr);
      assert.equal(now.status, 'FAILED');
      assert.match(now.messages[0].text, new RegExp(`apply was cancelled \\(job ${approved.jstId}\\.JST\\)`));
      assert.equal((await productBySku('QC-0')).label, 'label QC-0');
      // An async submit cancelled while queued: the DCR stays as it was, and submittable.
      const [queued] = okData(await call(`/dcrmanager.submit/${dcr.id}/async`));
      // While it is queued, /workflowsmanager.submit is the same 409 naming the job.
      const generic = await call(`/workflowsmanager.submit/${dcr.id}.DCR`);
      expectError(generic, 409, -1);
      assert.match(generic.body.response.data, new RegExp(`being submitted \\(job ${queued.jstId}\\.JST\\)`));
      okData(await call(`/admin.canceljst/${queued.jstId}`));
      now = await dcrNow(dcr);
      assert.equal(now.status, 'FAILED');
      // Submitted again (generic submit, approved at once): its apply job is queued.
      okData(await call(`/workflowsmanager.submit/${dcr.id}.DCR`));
      now = await dcrNow(dcr);
      assert.equal(now.status, 'APPROVED');
      assert.notEqual(now.jstId, queued.jstId);
    } finally {
      runner = runnerFor(h).start();
    }
    assert.equal((await waitJob(Number((await dcrNow(dcr)).jstId))).status, 'FINISHED');
    assert.equal((await dcrNow(dcr)).status, 'APPLIED');
    assert.equal((await productBySku('QC-1')).label, `v${dcr.id}`);
    await h.db.query(
      `DELETE FROM advanced_config WHERE partition_id = $1 AND unique_name = 'asyncSubmitDCRThreshold'`,
      [h.partitionId],
    );
  });

  test('asyncSubmitDCRThreshold: absent, 101 items apply synchronously; present without a value, 100', async () => {
    const skus = Array.from({ length: 101 }, (_, i) => `B-${String(i).padStart(3, '0')}`);
    okData(
      await call('/loaddata/P', { data: { header: ['sku', 'label'], data: skus.map((k) => [k, 'before']) } }),
    );
    const bigDcr = async (label: string) => {
      const dcr = await newDcr();
      okData(await call(`/dcrmanager.add/${dcr.id}`, { data: skus.map((sku) => ({ sku, label })) }));
      return dcr;
    };
    const jobsOf = async (dcr: { id: number }) =>
      okData(await call('/fetch/JST', { data: { targetObject: `${dcr.id}.DCR` } })).length;
    // No option: 101 items (above the default of 100) are applied by the submit itself, no job.
    let dcr = await bigDcr('sync');
    const [applied] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
    assert.equal(applied.status, 'APPLIED');
    assert.equal(applied.jstId, null);
    assert.equal(await jobsOf(dcr), 0);
    assert.equal((await productBySku('B-100')).label, 'sync');
    // The option present without a value: its default, 100, sends the same DCR to a job.
    okData(await call('/add/ACO', { data: { uniqueName: 'asyncSubmitDCRThreshold' } }));
    try {
      dcr = await bigDcr('async');
      const [queued] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
      assert.equal(queued.status, 'APPROVED');
      assert.equal(typeof queued.jstId, 'number');
      const job = await waitJob(queued.jstId);
      assert.equal(job.status, 'FINISHED', JSON.stringify(job));
      assert.equal(job.calculationResults.updated, 101);
      assert.equal(await jobsOf(dcr), 1);
      assert.equal((await productBySku('B-100')).label, 'async');
    } finally {
      await h.db.query(
        `DELETE FROM advanced_config WHERE partition_id = $1 AND unique_name = 'asyncSubmitDCRThreshold'`,
        [h.partitionId],
      );
    }
  });

  test('mass changes: updatemassop and deletemassop over HTTP', async () => {
    await product('MU-1', { attribute1: '1' });
    await product('MU-2', { attribute1: '2' });
    await product('MU-3', { attribute1: '3' });
    const dcr = await newDcr();
    const startsWith = (value: string) => ({
      _constructor: 'AdvancedCriteria',
      operator: 'and',
      criteria: [{ fieldName: 'sku', operator: 'startsWith', value }],
    });
    const [m1, m2] = okData(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: [
          {
            label: 'labels',
            filterCriteria: startsWith('MU-'),
            massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'mass one' }],
          },
          {
            filterCriteria: startsWith('MU-3'),
            massEditRecords: [{ fieldName: 'attribute1', massEditOperator: '=', fieldValue: 9 }],
          },
        ],
      }),
    );
    assert.equal(m1.version, 0);
    const update = (data: Record<string, unknown>, version: unknown) =>
      call(`/dcrmanager.updatemassop/${dcr.id}`, {
        data: { typedId: m1.typedId, ...data },
        oldValues: { version },
      });
    const [changed] = okData(
      await update(
        { massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'mass two' }] },
        0,
      ),
    );
    assert.equal(changed.version, 1);
    assert.equal(changed.label, 'labels');
    assert.equal(changed.massEditRecords[0].fieldValue, 'mass two');
    assert.deepEqual(changed.filterCriteria, startsWith('MU-'));
    expectError(await update({ label: 'stale' }, 0), 409, -1);
    expectError(
      await update({ massEditRecords: [{ fieldName: 'sku', massEditOperator: '=', fieldValue: 'x' }] }, 1),
      400,
      -4,
      'massEditRecords.0.fieldName',
    );
    expectError(await update({ foo: 1 }, 1), 400, -4, 'foo');
    expectError(
      await call(`/dcrmanager.updatemassop/${dcr.id}`, { data: { typedId: '999999.DCRM', label: 'x' } }),
      404,
      -1,
    );
    expectError(
      await call(`/dcrmanager.updatemassop/${dcr.id}`, { data: { label: 'x' } }),
      400,
      -4,
      'typedId',
    );
    expectError(
      await call(`/dcrmanager.deletemassop/${dcr.id}`, { data: { typedId: m2.typedId, foo: 1 } }),
      400,
      -4,
      'foo',
    );
    const [gone] = okData(
      await call(`/dcrmanager.deletemassop/${dcr.id}`, { data: { typedId: m2.typedId } }),
    );
    assert.equal(gone.typedId, m2.typedId);
    expectError(await call(`/dcrmanager.deletemassop/${dcr.id}`, { data: { typedId: m2.typedId } }), 404, -1);
    const left = okData(await call(`/dcrmanager.fetchmassop/${dcr.id}`, {}));
    assert.deepEqual(
      left.map((m) => m.typedId),
      [m1.typedId],
    );
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
    for (const sku of ['MU-1', 'MU-2', 'MU-3']) assert.equal((await productBySku(sku)).label, 'mass two');
    assert.equal((await productBySku('MU-3')).attribute1, 3);
    // A submitted DCR's mass changes are closed.
    expectError(await update({ label: 'late' }, 1), 409, -1);
    expectError(await call(`/dcrmanager.deletemassop/${dcr.id}`, { data: { typedId: m1.typedId } }), 409, -1);
  });

  test('a mass change on lookup values: a value set on a name filter, applied at submit', async () => {
    const table = await simpleTableWithDcrType('tiers', { 'x-1': 1, 'x-2': 2, 'y-1': 3 });
    const dcr = await newDcr('tiers');
    okData(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: {
          filterCriteria: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [{ fieldName: 'name', operator: 'startsWith', value: 'x-' }],
          },
          massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: 7.5 }],
        },
      }),
    );
    const values = async () =>
      okData(await call(`/lookuptablemanager.fetch/${table.id}`, { sortBy: 'name' })).map((v) => [
        v.name,
        Number(v.value),
      ]);
    assert.deepEqual(await values(), [
      ['x-1', 1],
      ['x-2', 2],
      ['y-1', 3],
    ]);
    const [applied] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
    assert.equal(applied.status, 'APPLIED');
    assert.equal(applied.messages[0].massEdited, 2);
    assert.deepEqual(await values(), [
      ['x-1', 7.5],
      ['x-2', 7.5],
      ['y-1', 3],
    ]);
  });

  test('a mass change is evaluated at submit: records matching by then are changed', async () => {
    await product('T-1', { label: 'one', attribute1: '5' });
    await product('T-2', { label: 'two', attribute1: '1' });
    const dcr = await newDcr();
    okData(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: {
          filterCriteria: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [
              { fieldName: 'sku', operator: 'startsWith', value: 'T-' },
              { fieldName: 'attribute1', operator: 'equals', value: 5 },
            ],
          },
          massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'matched' }],
        },
      }),
    );
    // After the mass change was added: T-2 comes to match its filter, T-1 stops matching.
    for (const [sku, attribute1] of [
      ['T-2', 5],
      ['T-1', 6],
    ] as const) {
      const p = await productBySku(sku);
      okData(
        await call('/update/P', {
          data: { typedId: p.typedId, attribute1 },
          oldValues: { version: p.version },
        }),
      );
    }
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
    assert.equal((await productBySku('T-2')).label, 'matched');
    assert.equal((await productBySku('T-1')).label, 'one');
  });

  async function waitJob(id: number): Promise<any> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [job] = okData(await call(`/admin.fetchjst/${id}`));
      if (['FINISHED', 'FAILED', 'CANCELLED'].includes(job.status)) return job;
      if (Date.now() > deadline) assert.fail(`job ${id} still ${job.status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  test('approval through a workflow: applied in the approval transaction, nothing when denied', async () => {
    for (let i = 0; i < 7; i++) await product(`W-${i}`, { label: 'before' });
    const [wfd] = okData(
      await call('/add/WFD', {
        data: {
          uniqueName: 'dcr-approval',
          approvableType: 'DCR',
          condition: 'items >= 7',
          steps: [{ name: 'Managers', approverUsers: ['approver'], rule: 'ANY' }],
        },
      }),
    );
    const sevenItems = async (label: string) => {
      const dcr = await newDcr();
      okData(
        await call(`/dcrmanager.add/${dcr.id}`, {
          data: [0, 1, 2, 3, 4, 5, 6].map((i) => ({ sku: `W-${i}`, label })),
        }),
      );
      return dcr;
    };
    const pendingFor = async (dcr: { id: number }) => {
      const active = okData(await call('/workflowsmanager.fetch/active', {}, approver));
      const wf = active.find((w) => w.approvableTypedId === `${dcr.id}.DCR`);
      assert.ok(wf, JSON.stringify(active));
      return wf;
    };
    const approve = async (dcr: { id: number }) => {
      const wf = await pendingFor(dcr);
      const [done] = okData(
        await call(
          `/workflowsmanager.approve/${wf.id}`,
          { data: { comment: 'ok' }, oldValues: { version: wf.version } },
          approver,
        ),
      );
      assert.equal(done.workflowStatus, 'APPROVED');
    };
    const state = async (dcr: { uniqueName: string }) =>
      okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }))[0];

    const dcr = await sevenItems('approved');
    const [submitted] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
    assert.equal(submitted.status, 'SUBMITTED');
    assert.equal(submitted.workflowStatus, 'SUBMITTED');
    assert.equal((await productBySku('W-0')).label, 'before');
    expectError(await call(`/dcrmanager.add/${dcr.id}`, { data: { sku: 'A-1', label: 'late' } }), 409, -1);
    // Neither the waiting DCR nor its DCR type can be deleted, on any delete path: the workflow
    // would point at nothing, the DCR lose its field rules.
    const refusedDelete = await call('/delete/DCR', { data: { typedId: `${dcr.id}.DCR` } });
    expectError(refusedDelete, 409, -1);
    assert.match(refusedDelete.body.response.data, /SUBMITTED: withdraw its workflow/);
    const byFilter = { data: { uniqueName: dcr.uniqueName } };
    expectError(await call('/delete/DCR/batch/forcefilter', byFilter), 409, -1);
    const [dcrType] = okData(await call('/fetch/DCRT', { data: { uniqueName: 'products' } }));
    const typeDelete = await call('/delete/DCRT', { data: { typedId: dcrType.typedId } });
    expectError(typeDelete, 409, -1);
    assert.match(typeDelete.body.response.data, /DCR type products is used by DCR-/);
    assert.equal((await state(dcr)).status, 'SUBMITTED');
    await approve(dcr);
    // Applied by the approval itself: no job, the records changed when the approval answers.
    const applied = await state(dcr);
    assert.equal(applied.status, 'APPLIED');
    assert.equal(applied.workflowStatus, 'APPROVED');
    assert.equal(applied.jstId, null);
    assert.equal((await productBySku('W-6')).label, 'approved');
    const history = await h.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM record_history
        WHERE partition_id = $1 AND type_code = 'P' AND operation = $2`,
      [h.partitionId, `DCR ${dcr.id}.DCR`],
    );
    assert.equal(Number(history.rows[0]!.n), 7);

    // A direct edit between submit and approval: the approval stands, nothing of the DCR is
    // written, the DCR is FAILED with the conflicting item listed.
    const conflicting = await sevenItems('conflict');
    okData(await call(`/dcrmanager.submit/${conflicting.id}`));
    const w3 = await productBySku('W-3');
    okData(
      await call('/update/P', {
        data: { typedId: w3.typedId, label: 'direct' },
        oldValues: { version: w3.version },
      }),
    );
    await approve(conflicting);
    const failed = await state(conflicting);
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.workflowStatus, 'APPROVED');
    const [stale] = okData(
      await call(`/dcrmanager.fetch/${conflicting.id}`, {
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [{ fieldName: 'targetId', operator: 'equals', value: w3.id }],
        },
      }),
    );
    assert.ok(JSON.stringify(failed.messages).includes(stale.typedId), JSON.stringify(failed.messages));
    assert.equal(failed.messages.filter((m: { item?: string }) => m.item !== undefined).length, 1);
    assert.equal((await productBySku('W-0')).label, 'approved');
    assert.equal((await productBySku('W-3')).label, 'direct');
    const wfDone = okData(await call('/workflowsmanager.fetch', { data: { code: 'DCR' } }, approver)).find(
      (w) => w.approvableTypedId === `${conflicting.id}.DCR`,
    );
    assert.equal(wfDone?.workflowStatus, 'APPROVED');

    // Above the threshold, the approval queues a DCR_SUBMIT job that applies it.
    okData(await call('/add/ACO', { data: { uniqueName: 'asyncSubmitDCRThreshold', value: '5' } }));
    const big = await sevenItems('by job');
    okData(await call(`/dcrmanager.submit/${big.id}`));
    await approve(big);
    const queued = await state(big);
    assert.equal(typeof queued.jstId, 'number');
    let job = await waitJob(queued.jstId);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    assert.equal(job.trackerType, 'DCR_SUBMIT');
    assert.equal((await state(big)).status, 'APPLIED');
    assert.equal((await productBySku('W-6')).label, 'by job');
    await h.db.query(
      `DELETE FROM advanced_config WHERE partition_id = $1 AND unique_name = 'asyncSubmitDCRThreshold'`,
      [h.partitionId],
    );

    // An /async submit into a workflow: its job submits (the DCR waits SUBMITTED), and the
    // approval queues a second job that applies it.
    const later = await sevenItems('async approved');
    const [submitJob] = okData(await call(`/dcrmanager.submit/${later.id}/async`));
    job = await waitJob(submitJob.jstId);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    assert.equal(job.calculationResults.status, 'SUBMITTED');
    assert.equal((await state(later)).status, 'SUBMITTED');
    await approve(later);
    const applyJob = (await state(later)).jstId;
    assert.notEqual(applyJob, submitJob.jstId);
    job = await waitJob(applyJob);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    assert.equal((await state(later)).status, 'APPLIED');
    assert.equal((await productBySku('W-6')).label, 'async approved');

    const denied = await sevenItems('denied');
    okData(await call(`/dcrmanager.submit/${denied.id}`));
    const wf2 = await pendingFor(denied);
    okData(
      await call(
        `/workflowsmanager.deny/${wf2.id}`,
        { data: { reason: 'no' }, oldValues: { version: wf2.version } },
        approver,
      ),
    );
    assert.equal((await state(denied)).status, 'DENIED');
    assert.equal((await productBySku('W-0')).label, 'async approved');
    // A denied DCR can be changed and submitted again (here without a workflow: applied at once).
    const [first] = okData(await call(`/dcrmanager.fetch/${denied.id}`, {}));
    okData(await call(`/dcrmanager.delete/${denied.id}`, { data: { typedId: first.typedId } }));
    okData(await call('/delete/WFD', { data: { typedId: wfd.typedId } }));
    assert.equal(okData(await call(`/dcrmanager.submit/${denied.id}`))[0].status, 'APPLIED');
    assert.equal((await productBySku('W-6')).label, 'denied');
  });

  test('product descriptions, references and cross-references as targets', async () => {
    okData(await call('/add/PDESC', { data: { sku: 'D-1', language: 'de', label: 'alt' } }));
    okData(await call('/add/PR', { data: { sku: 'D-1', relationType: 'SUCCESSOR', targetSku: 'D-2' } }));
    okData(await call('/add/PXREF', { data: { sku: 'D-1', referenceType: 'EAN', externalId: '400' } }));
    for (const targetType of ['PDESC', 'PR', 'PXREF']) {
      okData(await call('/add/DCRT', { data: { uniqueName: `t-${targetType}`, targetType } }));
    }
    const propose = async (targetType: string, items: object[]) => {
      const dcr = await newDcr(`t-${targetType}`);
      okData(await call(`/dcrmanager.add/${dcr.id}`, { data: items }));
      return okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status;
    };
    assert.equal(
      await propose('PDESC', [
        { changeType: 'UPDATE', sku: 'D-1', language: 'de', label: 'neu' },
        { changeType: 'ADD', sku: 'D-1', language: 'fr', label: 'nouveau' },
      ]),
      'APPLIED',
    );
    assert.equal(
      await propose('PR', [
        { changeType: 'DELETE', sku: 'D-1', relationType: 'SUCCESSOR', targetSku: 'D-2' },
      ]),
      'APPLIED',
    );
    assert.equal(
      await propose('PXREF', [
        { changeType: 'UPDATE', sku: 'D-1', referenceType: 'EAN', externalId: '400', partner: 'GS1' },
      ]),
      'APPLIED',
    );
    const labels = okData(await call('/fetch/PDESC', { data: { sku: 'D-1' }, sortBy: 'language' }));
    assert.deepEqual(
      labels.map((d) => [d.language, d.label]),
      [
        ['de', 'neu'],
        ['fr', 'nouveau'],
      ],
    );
    assert.equal(okData(await call('/fetch/PR', { data: { sku: 'D-1' } })).length, 0);
    assert.equal(okData(await call('/fetch/PXREF', { data: { sku: 'D-1' } }))[0].partner, 'GS1');
    // A proposal is checked as the type's own writes are: a product does not refer to itself.
    const dcr = await newDcr('t-PR');
    expectError(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: { changeType: 'ADD', sku: 'D-1', relationType: 'SUBSTITUTE', targetSku: 'D-1' },
      }),
      400,
      -4,
    );
  });

  test("user groups: an item for a record outside the user's edit groups is refused", async () => {
    await product('G-1', { userGroupEdit: 'buyers' });
    await product('G-2');
    const dcr = await newDcr('products', editor);
    expectError(
      await call(`/dcrmanager.add/${dcr.id}`, { data: { sku: 'G-1', label: 'x' } }, editor),
      403,
      -3,
    );
    okData(await call(`/dcrmanager.add/${dcr.id}`, { data: { sku: 'G-2', label: 'by editor' } }, editor));
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`, undefined, editor))[0].status, 'APPLIED');
    assert.equal((await productBySku('G-2')).label, 'by editor');
    // The user without DCR_EDIT cannot read the DCR's items either.
    expectError(await call(`/dcrmanager.fetch/${dcr.id}`, {}, nobody), 403, -3);
  });

  test('partition isolation: another partition cannot see or submit these DCRs', async () => {
    const dcr = await newDcr();
    const there = (path: string, body?: unknown) =>
      other.call(path, { basic: admin, ...(body === undefined ? {} : { body }) });
    expectError(await there(`/dcrmanager.fetch/${dcr.id}`, {}), 404, -1);
    expectError(await there(`/dcrmanager.submit/${dcr.id}`), 404, -1);
    expectError(await there(`/dcrmanager.add/${dcr.id}`, { data: { sku: 'A-1' } }), 404, -1);
    assert.equal(okData(await there('/fetch/DCR', {})).length, 0);
    expectError(await there('/dcrmanager.add', { data: { dcrType: 'products' } }), 400, -4, 'dcrType');
  });
});
