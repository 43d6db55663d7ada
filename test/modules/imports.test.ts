// Imports over HTTP on both databases: an import created from an uploaded CSV (one staged change per
// cell), a submit refused because one row is bad (nothing written, the failing change named with
// its row), fixed by massedit and submitted; saving changes one by one (same identity: the value is
// replaced), massdelete (criteria required; massedit and massdelete select what fetch selects), a
// DELETE change, text the database cannot hold, permissions and partition isolation.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import ExcelJS from 'exceljs';
import { slotWith } from '../jobs/helpers.ts';
import { okData, expectError } from '../helpers/envelope.ts';

type Who = { user: string; password: string };
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const auditor: Who = { user: 'auditor', password: 'auditor-password-1' };

describe('imports', () => {
  let h: Harness;
  let other: Harness;
  const call = (path: string, body?: unknown, who: Who = admin) =>
    h.call(path, { basic: who, ...(body === undefined ? {} : { body }) });
  const product = async (sku: string) =>
    okData(await call('/fetch/P', { data: { sku }, textMatchStyle: 'exactCase' }))[0];

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    await h.newUser(auditor.user, auditor.password, ['USERAUDIT']);
    okData(
      await call('/add/PAM', { data: { fieldName: 'attribute1', label: 'Weight', fieldType: 'NUMERIC' } }),
    );
    for (const sku of ['I-1', 'I-2', 'I-3'])
      okData(await call('/add/P', { data: { sku, label: `old ${sku}` } }));
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('without credentials 401, without IMPORT_EDIT 403', async () => {
    expectError(await h.call('/importmanager.add', { body: { data: { targetType: 'P' } } }), 401, -7);
    expectError(await call('/importmanager.add', { data: { targetType: 'P' } }, auditor), 403, -3);
    expectError(await call('/importmanager.submit/1', {}, auditor), 403, -3);
  });

  test('a CSV with one bad row: nothing written, the row named; fixed by massedit, then submitted', async () => {
    const csv =
      'changeType,sku,label,attribute1\nUPDATE,I-1,new one,1.5\nUPDATE,I-2,new two,heavy\nADD,I-4,four,4\n';
    const slotId = await slotWith(h, csv, 'changes.csv');
    expectError(await call('/importmanager.add', { data: { targetType: 'ZZ' } }), 400, -4, 'targetType');
    expectError(await call('/importmanager.add', { data: { targetType: 'P', extra: 1 } }), 400, -4, 'extra');
    for (const delimiter of ['', ';;', '"', '\n']) {
      expectError(
        await call('/importmanager.add', { data: { targetType: 'P', slotId, delimiter } }),
        400,
        -4,
        'delimiter',
      );
    }
    const badSlot = await slotWith(h, 'sku,colour\nI-1,red\n', 'bad.csv');
    expectError(
      await call('/importmanager.add', { data: { targetType: 'P', slotId: badSlot } }),
      400,
      -4,
      'header.1',
    );
    // A column twice, a cell with NUL, an unknown change type: -4 naming where, and no import made.
    const imports = async () => okData(await call('/fetch/IM', {})).length;
    const before = await imports();
    for (const [csv, field] of [
      ['sku,label,label\nI-1,x,y\n', 'header.2'],
      ['sku,label\nI-1,a\u0000b\n', 'rows.1.1'],
      ['sku,changeType,label\nI-1,UPDATE,x\nI-2,FOO,x\n', 'rows.2.1'],
      // Windows-1252 "Café" (é = 0xE9): not UTF-8, so not staged as "Caf\uFFFD".
      [
        Buffer.concat([Buffer.from('sku,label\nI-1,Caf'), Buffer.from([0xe9]), Buffer.from('\n')]),
        'fileName',
      ],
    ] as const) {
      const slot = await slotWith(h, csv, 'bad.csv');
      const r = await call('/importmanager.add', { data: { targetType: 'P', slotId: slot } });
      expectError(r, 400, -4, field);
      assert.doesNotMatch(r.text, /database/);
    }
    assert.equal(await imports(), before);
    // Two rows of one record and column: one change, the later value.
    const twice = await slotWith(h, 'sku,label\nI-9,first\nI-9,second\n', 'twice.csv');
    const [im2] = okData(await call('/importmanager.add', { data: { targetType: 'P', slotId: twice } }));
    assert.deepEqual(
      okData(await call(`/importmanager.fetch/${im2.id}`, {})).map((c: any) => [c.value, c.rowNumber]),
      [['second', 2]],
    );
    okData(await call('/delete/IM', { data: { typedId: im2.typedId } }));
    const [im] = okData(
      await call('/importmanager.add', { data: { targetType: 'P', slotId, label: 'from file' } }),
    );
    assert.match(im.uniqueName, /^IM-\d+$/);
    assert.equal(im.fileName, 'changes.csv');
    const staged = await call(`/importmanager.fetch/${im.typedId}`, { sortBy: 'id' });
    assert.equal(staged.body.response.totalRows, 6);
    const bad = okData(staged).find((c) => c.key1 === 'I-2' && c.targetColumn === 'attribute1');
    assert.equal(bad.value, 'heavy');
    assert.equal(bad.rowNumber, 2);

    const refused = await call(`/importmanager.submit/${im.typedId}`);
    expectError(refused, 400, -4, bad.typedId);
    assert.equal(Object.keys(refused.body.response.errors).length, 1);
    assert.match(refused.body.response.errors[bad.typedId].errorMessage, /^row 2: attribute1: /);
    assert.equal((await product('I-1')).label, 'old I-1');
    assert.equal(await product('I-4'), undefined);
    const invalid = okData(
      await call(`/importmanager.fetch/${im.id}`, { data: { validationState: 'INVALID' } }),
    );
    assert.deepEqual(
      invalid.map((c) => c.typedId),
      [bad.typedId],
    );

    const [edited] = okData(
      await call(`/importmanager.massedit/${im.id}`, {
        filterCriteria: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [{ fieldName: 'validationState', operator: 'equals', value: 'INVALID' }],
        },
        massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: '2' }],
      }),
    );
    assert.equal(edited.updated, 1);
    expectError(
      await call(`/importmanager.massedit/${im.id}`, {
        massEditRecords: [{ fieldName: 'validationState', massEditOperator: '=', fieldValue: 'VALID' }],
      }),
      400,
      -4,
      'massEditRecords.0.fieldName',
    );
    // What a change requires is only set, to what save takes (NULL was a 500); keys past the target
    // type's do not exist. Nothing edited.
    const refusedEdits: [object, string][] = [
      [{ fieldName: 'key1', massEditOperator: 'null' }, 'massEditRecords.0.massEditOperator'],
      [{ fieldName: 'key1', massEditOperator: '=', fieldValue: null }, 'massEditRecords.0.fieldValue'],
      [{ fieldName: 'key1', massEditOperator: '=', fieldValue: '' }, 'massEditRecords.0.fieldValue'],
      [{ fieldName: 'changeType', massEditOperator: 'null' }, 'massEditRecords.0.massEditOperator'],
      [
        { fieldName: 'changeType', massEditOperator: '=', fieldValue: 'MERGE' },
        'massEditRecords.0.fieldValue',
      ],
      [{ fieldName: 'targetColumn', massEditOperator: 'null' }, 'massEditRecords.0.massEditOperator'],
      [
        { fieldName: 'targetColumn', massEditOperator: '=', fieldValue: 'nope' },
        'massEditRecords.0.fieldValue',
      ],
      [
        { fieldName: 'targetColumn', massEditOperator: '=', fieldValue: 'sku' },
        'massEditRecords.0.fieldValue',
      ],
      [{ fieldName: 'key2', massEditOperator: '=', fieldValue: 'x' }, 'massEditRecords.0.fieldName'],
    ];
    const unedited = okData(await call(`/importmanager.fetch/${im.id}`, {}));
    for (const [op, field] of refusedEdits) {
      expectError(
        await call(`/importmanager.massedit/${im.id}`, { filterCriteria: {}, massEditRecords: [op] }),
        400,
        -4,
        field,
      );
    }
    assert.deepEqual(okData(await call(`/importmanager.fetch/${im.id}`, {})), unedited);
    // Criteria are required, as by /massedit ({} edits every change): nothing edited without them.
    for (const filterCriteria of [undefined, null]) {
      expectError(
        await call(`/importmanager.massedit/${im.id}`, {
          filterCriteria,
          massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: '9' }],
        }),
        400,
        -4,
        'filterCriteria',
      );
    }
    // Unknown fields are refused, naming them, and change nothing.
    expectError(
      await call(`/importmanager.massedit/${im.id}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: '9' }],
        foo: 1,
      }),
      400,
      -4,
      'foo',
    );
    expectError(await call(`/importmanager.submit/${im.id}`, { foo: 1 }), 400, -4, 'foo');
    assert.equal((await product('I-1')).label, 'old I-1');
    const [done] = okData(await call(`/importmanager.submit/${im.id}`, {}));
    assert.equal(done.status, 'APPLIED');
    assert.equal((await product('I-1')).label, 'new one');
    assert.equal((await product('I-1')).attribute1, 1.5);
    assert.equal((await product('I-2')).attribute1, 2);
    assert.equal((await product('I-4')).label, 'four');
    assert.equal(
      okData(await call(`/importmanager.fetch/${im.id}`, { data: { validationState: 'VALID' } })).length,
      6,
    );
    expectError(await call(`/importmanager.submit/${im.id}`), 409, -1);
    expectError(
      await call(`/importmanager.save/${im.id}`, { data: { sku: 'I-1', targetColumn: 'label', value: 'x' } }),
      409,
      -1,
    );
  });

  test('changes saved one by one, massdelete, a DELETE change', async () => {
    const [im] = okData(await call('/importmanager.add', { data: { targetType: 'P' } }));
    const save = (data: unknown) => call(`/importmanager.save/${im.id}`, { data });
    expectError(await save({ targetColumn: 'colour', sku: 'I-1', value: 'x' }), 400, -4, 'targetColumn');
    expectError(await save({ targetColumn: 'label', value: 'x' }), 400, -4, 'sku');
    expectError(await save({ changeType: 'MOVE', sku: 'I-1' }), 400, -4, 'changeType');
    expectError(await save({ targetColumn: 'label', sku: 'I-1', valeu: 'x' }), 400, -4, 'valeu');
    expectError(await save({ targetColumn: 'label', sku: 'I-1', key1: 'I-2', value: 'x' }), 400, -4, 'key1');
    expectError(
      await save([
        { targetColumn: 'label', sku: 'I-1', value: 'x' },
        { targetColumn: 'label', sku: 'I-1', value: 'x', note: 'y' },
      ]),
      400,
      -4,
      '1.note',
    );
    // The same change twice in one call: saved (and answered) once, with the later value.
    const pair = okData(
      await save([
        { targetColumn: 'label', sku: 'I-1', value: 'one' },
        { targetColumn: 'label', sku: 'I-1', value: 'two' },
      ]),
    );
    assert.deepEqual(
      pair.map((c: any) => c.value),
      ['two'],
    );
    const [first] = okData(await save({ targetColumn: 'label', sku: 'I-1', value: 'saved' }));
    const [again] = okData(await save({ targetColumn: 'label', sku: 'I-1', value: 'saved again' }));
    assert.equal(again.id, first.id);
    assert.equal(again.value, 'saved again');
    okData(
      await save([
        { targetColumn: 'attribute1', sku: 'I-1', value: '9' },
        { changeType: 'DELETE', sku: 'I-3' },
      ]),
    );
    const [gone] = okData(
      await call(`/importmanager.massdelete/${im.id}`, { data: { targetColumn: 'attribute1' } }),
    );
    assert.equal(gone.deleted, 1);
    assert.equal(okData(await call(`/importmanager.fetch/${im.id}`, {})).length, 2);
    assert.equal(okData(await call(`/importmanager.submit/${im.id}`))[0].status, 'APPLIED');
    assert.equal((await product('I-1')).label, 'saved again');
    assert.equal((await product('I-1')).attribute1, 1.5);
    assert.equal(await product('I-3'), undefined);
    // A change of a record that does not exist fails validation; nothing of the import is written.
    const [im2] = okData(await call('/importmanager.add', { data: { targetType: 'P' } }));
    const [ok1] = okData(
      await call(`/importmanager.save/${im2.id}`, {
        data: { targetColumn: 'label', sku: 'I-1', value: 'never' },
      }),
    );
    const [missing] = okData(
      await call(`/importmanager.save/${im2.id}`, {
        data: { targetColumn: 'label', sku: 'NOPE', value: 'x' },
      }),
    );
    const r = await call(`/importmanager.submit/${im2.id}`);
    expectError(r, 400, -4, missing.typedId);
    assert.equal(r.body.response.errors[ok1.typedId], undefined);
    assert.equal((await product('I-1')).label, 'saved again');
  });

  /** An import of three staged changes: `stage` stages them (again), `values` lists their values. */
  const threeChanges = async () => {
    const [im] = okData(await call('/importmanager.add', { data: { targetType: 'P', label: 'criteria' } }));
    const stage = async () =>
      okData(
        await call(`/importmanager.save/${im.id}`, {
          data: [
            { targetColumn: 'label', sku: 'I-1', value: 'Heavy' },
            { targetColumn: 'label', sku: 'I-2', value: 'light' },
            { targetColumn: 'attribute1', sku: 'I-1', value: '3' },
          ],
        }),
      );
    await stage();
    const values = async () =>
      okData(await call(`/importmanager.fetch/${im.id}`, { sortBy: 'value' })).map((c: any) => c.value);
    return { im, stage, values };
  };

  test('massdelete without criteria is refused, deleting nothing', async () => {
    const { im, values } = await threeChanges();
    // No criteria is no request to delete everything: a -4 naming data, and nothing deleted.
    for (const raw of [undefined, 'null', '{}', '{"data":null}', '{"data":[]}', '{"data":"x"}']) {
      expectError(
        await h.call(`/importmanager.massdelete/${im.id}`, {
          basic: admin,
          ...(raw === undefined ? {} : { raw }),
        }),
        400,
        -4,
        'data',
      );
    }
    assert.deepEqual(await values(), ['3', 'Heavy', 'light']);
  });

  test('massdelete and massedit select the changes fetch selects (simple criteria, textMatchStyle)', async () => {
    const { im, stage, values } = await threeChanges();
    const [other] = okData(await call('/importmanager.add', { data: { targetType: 'P' } }));
    // Each filter selects for massedit and massdelete what it selects for fetch.
    const cases: [unknown, string | undefined, string[]][] = [
      [{ value: 'HEAVY' }, undefined, ['Heavy']],
      [{ value: 'HEAVY' }, 'exact', ['Heavy']],
      [{ value: 'HEAVY' }, 'exactCase', []],
      [{ value: 'eav' }, 'substring', ['Heavy']],
      [{ value: 'LIG' }, 'startsWith', ['light']],
      [{ value: ['x', 'LIGHT'], targetColumn: 'LABEL' }, undefined, ['light']],
      [{ importId: im.id, targetColumn: 'attribute1' }, undefined, ['3']],
      [{ importId: other.id }, undefined, []],
      [{ fieldName: 'value', operator: 'iEquals', value: 'HEAVY' }, 'exactCase', ['Heavy']],
      [{}, undefined, ['3', 'Heavy', 'light']],
    ];
    for (const [data, textMatchStyle, selected] of cases) {
      const style = textMatchStyle === undefined ? {} : { textMatchStyle };
      const what = JSON.stringify({ data, ...style });
      const fetched = okData(
        await call(`/importmanager.fetch/${im.id}`, { data, ...style, sortBy: 'value' }),
      );
      assert.deepEqual(
        fetched.map((c: any) => c.value),
        selected,
        what,
      );
      // (massedit takes no textMatchStyle, as /massedit: its simple criteria compare as `exact`.)
      if (textMatchStyle === undefined || textMatchStyle === 'exact') {
        const [edited] = okData(
          await call(`/importmanager.massedit/${im.id}`, {
            filterCriteria: data,
            massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: 'edited' }],
          }),
        );
        assert.equal(edited.updated, selected.length, what);
        assert.equal((await values()).filter((v) => v === 'edited').length, selected.length, what);
        await stage();
      }
      const [gone] = okData(await call(`/importmanager.massdelete/${im.id}`, { data, ...style }));
      assert.equal(gone.deleted, selected.length, what);
      const left = await values();
      assert.equal(left.length, 3 - selected.length, what);
      for (const v of selected) assert.ok(!left.includes(v), what);
      await stage();
    }
    // An importId that is no id is refused as fetch refuses it.
    for (const path of ['fetch', 'massdelete'])
      expectError(
        await call(`/importmanager.${path}/${im.id}`, { data: { importId: 'abc' } }),
        400,
        -4,
        'importId',
      );
    assert.equal((await values()).length, 3);
  });

  test('import text with an unpaired surrogate is refused', async () => {
    const imports = async () => okData(await call('/fetch/IM', {})).length;
    const before = await imports();
    for (const [data, field] of [
      [{ targetType: 'P', label: 'a\ud800b' }, 'label'],
      [{ targetType: 'P', delimiter: '\udc00' }, 'delimiter'],
    ] as const) {
      const r = await call('/importmanager.add', { data });
      expectError(r, 400, -4, field);
      assert.equal(r.body.response.errors[field].errorMessage, 'must not contain unpaired surrogates');
    }
    assert.equal(await imports(), before);
  });

  test('an XLSX file into a lookup table: bad value refused, fixed by save, then written', async () => {
    const [table] = okData(
      await call('/lookuptablemanager.add', {
        data: { uniqueName: 'imp-rates', label: 'Rates', type: 'SIMPLE', valueType: 'REAL' },
      }),
    );
    okData(await call(`/lookuptablemanager.add/${table.id}`, { data: { name: 'a', value: 1 } }));
    const wb = new ExcelJS.Workbook();
    const sheet = wb.addWorksheet('values');
    sheet.addRow(['changeType', 'name', 'value']);
    sheet.addRow(['UPDATE', 'a', 1.5]);
    sheet.addRow(['ADD', 'b', 'lots']);
    const slotId = await slotWith(h, Buffer.from(await wb.xlsx.writeBuffer()), 'rates.xlsx');
    const [im] = okData(
      await call('/importmanager.add', { data: { targetType: 'LTV', lookupTable: 'imp-rates', slotId } }),
    );
    const r = await call(`/importmanager.submit/${im.id}`);
    expectError(r, 400, -4);
    assert.match(JSON.stringify(r.body.response.errors), /row 2: value: /);
    okData(
      await call(`/importmanager.save/${im.id}`, {
        data: { changeType: 'ADD', name: 'b', targetColumn: 'value', value: '2.5' },
      }),
    );
    assert.equal(okData(await call(`/importmanager.submit/${im.id}`))[0].status, 'APPLIED');
    const values = okData(await call(`/lookuptablemanager.fetch/${table.id}`, { sortBy: 'name' }));
    assert.deepEqual(
      values.map((v) => [v.name, Number(v.value)]),
      [
        ['a', 1.5],
        ['b', 2.5],
      ],
    );
  });

  test('partition isolation', async () => {
    const [im] = okData(await call('/importmanager.add', { data: { targetType: 'P' } }));
    const there = (path: string, body?: unknown) =>
      other.call(path, { basic: admin, ...(body === undefined ? {} : { body }) });
    expectError(await there(`/importmanager.fetch/${im.id}`, {}), 404, -1);
    expectError(await there(`/importmanager.submit/${im.id}`), 404, -1);
    expectError(
      await there(`/importmanager.save/${im.id}`, {
        data: { sku: 'I-1', targetColumn: 'label', value: 'x' },
      }),
      404,
      -1,
    );
    assert.equal(okData(await there('/fetch/IM', {})).length, 0);
  });
});
