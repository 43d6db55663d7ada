// Audit defects of the general operations, over real HTTP on both databases:
// - `/metadata.describe` flags agree with the writes: `required` is what an add must give (a field
//   with a default is not), `updatable` what `/update` writes (formatType, SX's sellerId), for every
//   type the type list names;
// - `/resetcolumn` is refused where `/massedit` is (a type that is not mass-editable);
// - JSON `/loaddata/PX?name=` honours the table of the call as the file load does, and a file load
//   whose form `name` differs from `?name=` is a -4.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { assertError, assertOk, form, send } from '../jobs/helpers.ts';
import { allTypes } from '../../src/engine/registry.ts';

describe('describe flags, resetcolumn of types not mass-editable, loaddata ?name=', () => {
  let h: Harness;
  const call = (path: string, body?: unknown) =>
    h.call(path, {
      basic: { user: ADMIN, password: ADMIN_PASSWORD },
      ...(body === undefined ? {} : { body }),
    });
  /** The fields of a describe's answer by name. */
  const described = async (code: string): Promise<Map<string, any>> => {
    const [d] = okData(await call(`/metadata.describe/${code}`));
    return new Map((d.fields as any[]).map((f) => [f.name, f]));
  };

  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  test('required and updatable agree with the write rules, for every type code', async () => {
    const codes: string[] = [];
    for (let start = 0; ; start += 100) {
      const page = okData(await call('/fetch', { startRow: start, endRow: start + 100 }));
      codes.push(...page.map((t) => t.typeCode as string));
      if (page.length < 100) break;
    }
    assert.ok(codes.length > 20);
    const defs = new Map(allTypes().map((t) => [t.code, t]));
    const wrong: string[] = [];
    for (const code of codes) {
      const r = await call(`/metadata.describe/${code}`);
      if (r.status !== 200) continue; // (a type the admin may not read)
      const type = defs.get(code)!;
      const general =
        type.writtenBy === undefined && type.managerOnly === undefined && type.updatedBy === undefined;
      for (const f of r.body.response.data[0].fields as any[]) {
        const def = type.fields.find((d) => d.name === f.name);
        if (f.name === 'typedId' || def === undefined) {
          if (f.required || (f.updatable && f.name === 'typedId')) wrong.push(`${code}.${f.name}`);
          continue;
        }
        // Required means an add must give it: a default or a stored value for null makes it optional.
        if (f.required && (def.defaultOnAdd || def.nullAs !== undefined || def.system))
          wrong.push(`${code}.${f.name} required with a default`);
        if (def.required && !def.system && !def.defaultOnAdd && def.nullAs === undefined && !f.required)
          wrong.push(`${code}.${f.name} needed on add but not required`);
        // Updatable means /update writes it: server fields and keys are ignored there, unless the
        // type moves the key or the field is another name of an updatable one.
        const target = def.aliasOf === undefined ? def : type.fields.find((d) => d.name === def.aliasOf)!;
        const writes =
          general && !target.system && (!target.key || type.movableKeys?.includes(target.name) === true);
        if (f.updatable !== writes) wrong.push(`${code}.${f.name} updatable: ${String(f.updatable)}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  test('the flags the audit named, against the writes themselves', async () => {
    // TODO: status has a default (OPEN), so an add may leave it out.
    const todo = await described('TODO');
    assert.equal(todo.get('status').required, false);
    assert.equal(todo.get('uniqueName').required, true);
    const [item] = okData(await call('/add/TODO', { data: { uniqueName: uniqueName('td'), label: 'x' } }));
    assert.equal(item.status, 'OPEN');
    // The add refuses exactly what describe calls required (label, uniqueName).
    const refused = await call('/add/TODO', { data: {} });
    expectError(refused, 400, -4);
    const demanded = Object.keys(refused.body.response.errors).sort();
    const required = [...todo.values()].filter((f) => f.required).map((f) => f.name as string);
    assert.deepEqual(demanded, required.sort());

    // PXAM: flags with defaults are optional; formatType is written as fieldType.
    const pxam = await described('PXAM');
    for (const f of ['requiredField', 'readOnly', 'indexed', 'fieldType'])
      assert.equal(pxam.get(f).required, false, f);
    assert.deepEqual([pxam.get('name').required, pxam.get('fieldName').required], [true, true]);
    assert.equal(pxam.get('formatType').updatable, true);
    assert.equal(pxam.get('fieldType').updatable, true);
    assert.equal(pxam.get('fieldName').updatable, false);
    const t = uniqueName('px');
    const [meta] = okData(await call('/add/PXAM', { data: { name: t, fieldName: 'attribute4' } }));
    const [changed] = okData(
      await call('/update/PXAM', { data: { typedId: meta.typedId, formatType: 'INTEGER' } }),
    );
    assert.equal(changed.fieldType, 'INTEGER');

    // SX: an update moves a row to another seller.
    const sx = await described('SX');
    assert.equal(sx.get('sellerId').updatable, true);
    assert.equal(sx.get('name').updatable, false);
    const [row] = okData(await call('/add/SX', { data: { name: t, sellerId: 'S-1' } }));
    const [moved] = okData(
      await call('/update/SX', {
        data: { typedId: row.typedId, sellerId: 'S-2' },
        oldValues: { version: row.version },
      }),
    );
    assert.equal(moved.sellerId, 'S-2');

    // LT: valueType and status default (STRING, ACTIVE): an add may leave them out.
    const lt = await described('LT');
    assert.deepEqual([lt.get('valueType').required, lt.get('status').required], [false, false]);
    const [table] = okData(
      await call('/lookuptablemanager.add', { data: { uniqueName: uniqueName('lt'), type: 'SIMPLE' } }),
    );
    assert.deepEqual([table.valueType, table.status], ['STRING', 'ACTIVE']);
    // CRCS: the general /update is refused (/conditionrecordset.update): no field is updatable.
    const crcs = await described('CRCS');
    assert.deepEqual(
      [...crcs.values()].filter((f) => f.updatable).map((f) => f.name),
      [],
    );
    const [set] = okData(await call('/add/CRCS', { data: { uniqueName: uniqueName('set'), keySize: 1 } }));
    expectError(
      await call('/update/CRCS', { data: { typedId: set.typedId, label: 'x' } }),
      400,
      -4,
      'typeCode',
    );
  });

  test('/resetcolumn of a type that is not mass-editable is refused as /massedit is', async () => {
    okData(await call('/add/UG', { data: { uniqueName: uniqueName('ug'), label: 'Keep me' } }));
    const massedit = await call('/massedit/UG', {
      filterCriteria: {},
      massEditRecords: [{ fieldName: 'label', massEditOperator: 'null' }],
    });
    expectError(massedit, 400, -4, 'typeCode');
    const reset = await call('/resetcolumn/UG/label', {});
    expectError(reset, 400, -4, 'typeCode');
    assert.equal(reset.body.response.errors.typeCode.errorMessage, 'UG is not mass-editable');
    const labels = okData(await call('/fetch/UG', {})).map((g) => g.label);
    assert.ok(labels.includes('Keep me'));
    // A mass-editable type's column is still emptied; a type's column refusals stay first.
    okData(await call('/add/P', { data: { sku: uniqueName('rc'), label: 'gone' } }));
    assert.ok(okData(await call('/resetcolumn/P/label', {}))[0].updatedRecords >= 1);
    expectError(await call('/resetcolumn/PAM/fieldType', {}), 400, -4, 'columnName');
    // A type whose records have state rules (rebate record groups) is refused naming the type too.
    expectError(await call('/resetcolumn/RRG/comments', {}), 400, -4, 'typeCode');
  });

  test('JSON /loaddata/PX?name= loads into the table of the call, as the file load does', async () => {
    const costs = uniqueName('Costs');
    const other = uniqueName('Tbl');
    const rowsOf = async (name: string) =>
      (
        await h.db.query<{ sku: string; attribute1: string }>(
          `SELECT sku, attribute1 FROM product_extensions WHERE partition_id = $1 AND name = $2 ORDER BY sku`,
          [h.partitionId, name],
        )
      ).rows.map((r) => [r.sku, r.attribute1]);

    // A row of another table is a row error, not a row of that table.
    const [mixed] = okData(
      await call(`/loaddata/PX?name=${costs}`, {
        data: {
          header: ['name', 'sku', 'attribute1'],
          data: [
            [other, 'L6', '5'],
            [costs, 'L7', '6'],
          ],
        },
      }),
    );
    assert.deepEqual([mixed.inserted, mixed.invalid, mixed.total], [1, 1, 2]);
    assert.deepEqual(mixed.errors, [
      {
        row: 0,
        field: 'name',
        message: `belongs to table ${JSON.stringify(other)}, not to ${costs} (the name of the call)`,
      },
    ]);
    assert.deepEqual(await rowsOf(other), []);
    assert.deepEqual(await rowsOf(costs), [['L7', '6']]);

    // Without a name column every row is of the call's table; a row of another width is refused.
    const [plain] = okData(
      await call(`/loaddata/PX?name=${costs}`, {
        data: { header: ['sku', 'attribute1'], data: [['L8', '7'], ['L9']] },
      }),
    );
    assert.deepEqual([plain.inserted, plain.invalid], [1, 1]);
    assert.equal(plain.errors[0].row, 1);
    assert.equal(plain.errors[0].field, 'attribute1');
    assert.deepEqual(await rowsOf(costs), [
      ['L7', '6'],
      ['L8', '7'],
    ]);

    // Without ?name= a header without name is refused as before; ?name= of a type without tables is a -4.
    expectError(
      await call('/loaddata/PX', { data: { header: ['sku'], data: [['L10']] } }),
      400,
      -4,
      'header',
    );
    expectError(
      await call(`/loaddata/P?name=${costs}`, { data: { header: ['sku'], data: [['L11']] } }),
      400,
      -4,
      'name',
    );
  });

  test('a file load whose form name differs from ?name= is a -4 naming name', async () => {
    const t = uniqueName('px');
    const admin = { user: ADMIN, password: ADMIN_PASSWORD };
    const csv = 'sku,attribute1\nF1,x\n';
    const file = { field: 'fileName', name: 'data.csv', data: csv };
    const r = await send(h, `/loaddata.file/PX?name=${t}`, {
      who: admin,
      body: form({ name: 'Tbl' }, file),
    });
    assertError(r, 400, -4);
    assert.ok(r.body.response.errors.name, JSON.stringify(r.body));
    // The same name in both places is one name.
    const [ok] = assertOk(
      await send(h, `/loaddata.file/PX?name=${t}`, { who: admin, body: form({ name: t }, file) }),
    );
    assert.equal(ok.loadedRecords, 1);
  });
});
