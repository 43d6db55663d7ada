// The generic operations over HTTP on the master-data types: every operation, the error paths,
// paging, typed attributes, user groups, partition isolation and SQL-looking input.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type CallOptions, type Harness, type Reply } from '../helpers/app.ts';
import { expectError } from '../helpers/envelope.ts';
import { adv } from '../helpers/criteria.ts';
import { lockBatch } from '../../src/engine/addressing.ts';
import { findType } from '../../src/engine/registry.ts';

interface Client {
  (path: string, body?: unknown): Promise<Reply>;
}

function clientOf(h: Harness, token: string): Client {
  return (path, body) => {
    const opts: CallOptions = {
      headers: { 'X-Ratecard-jwt': token },
      ...(body === undefined ? {} : { body }),
    };
    return h.call(path, opts);
  };
}

function okData(r: Reply): any[] {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.response.status, 0);
  return r.body.response.data;
}

describe('generic operations on products', () => {
  let h: Harness;
  let api: Client;
  before(async () => {
    h = await startHarness({ env: { MAX_PAGE_SIZE: '50' } });
    api = clientOf(h, (await h.login()).token);
  });
  after(() => h.close());

  test('the list of type codes is a list (paging fields); bodies of path-only operations take no fields', async () => {
    const r = await api('/fetch', {});
    const total = r.body.response.totalRows as number;
    const rest = okData(await api('/fetch', { startRow: okData(r).length, endRow: total }));
    const types = [...okData(r), ...rest];
    assert.ok(types.some((t) => t.typeCode === 'P'));
    assert.deepEqual(
      [r.body.response.startRow, r.body.response.endRow, types.length],
      [0, okData(r).length, total],
    );
    assert.equal(okData(await api('/metadata.describe/P', {}))[0].typeCode, 'P');
    assert.equal(okData(await api('/metadata.describe', { data: { typeCode: 'P' } }))[0].typeCode, 'P');
    expectError(await api('/metadata.describe/P', { bogus: 1 }), 400, -4, 'bogus');
    expectError(await api('/metadata.describe', { typeCode: 'P', bogus: 1 }), 400, -4, 'bogus');
    expectError(await api('/admin.fetchjst/1', { bogus: 1 }), 400, -4, 'bogus');
    expectError(await api('/admin.canceljst/1', { bogus: 1 }), 400, -4, 'bogus');
    // Record history's `field` is answered as a list of field names: described as one.
    const rh = okData(await api('/metadata.describe/RH', {}))[0];
    const field = rh.fields.find((f: any) => f.name === 'field');
    assert.deepEqual([field.type, field.list], ['string', true]);
    assert.equal(rh.fields.find((f: any) => f.name === 'typeCode').list, undefined);
  });

  test('add answers the record with server fields; fetch by id and typedId', async () => {
    const [p] = okData(
      await api('/add/P', { data: { sku: 'ADD-1', label: 'Added', currency: 'EUR' }, operation: 'add' }),
    );
    assert.match(p.typedId, /^\d+\.P$/);
    assert.equal(p.version, 0);
    assert.equal(p.sku, 'ADD-1');
    assert.equal(p.attribute1, null);
    assert.match(p.createDate, /^\d{4}-\d{2}-\d{2}T.*Z$/);
    const [byId] = okData(await api(`/fetch/P/${p.id}`));
    assert.deepEqual(byId, p);
    assert.deepEqual(okData(await api(`/fetch/P/${p.typedId}`))[0], p);
    expectError(await api('/fetch/P/999999999'), 404, -1);
    // Not a typedId of P: a sku that looks like one of another type (none here, then one).
    expectError(await api(`/fetch/P/${p.id}.C`), 404, -1, 'id');
    const [odd] = okData(await api('/add/P', { data: { sku: `${p.id}.C`, label: 'odd sku' } }));
    assert.equal(okData(await api(`/fetch/P/${p.id}.C`))[0].id, odd.id);
    const [decimalLike] = okData(await api('/add/P', { data: { sku: '2.5', label: 'odd sku' } }));
    assert.equal(okData(await api('/fetch/P/2.5'))[0].id, decimalLike.id);
    // A typedId of P stays one.
    assert.equal(okData(await api(`/fetch/P/${odd.id}.P`))[0].sku, `${p.id}.C`);
    okData(
      await api('/delete/P', [
        { data: { typedId: odd.typedId } },
        { data: { typedId: decimalLike.typedId } },
      ]),
    );
    // Server fields in a written record are not written (an echo of the fetched record works), but
    // one of the wrong type is a -4 naming it, as for any field.
    const echo = { ...byId };
    delete echo.typedId;
    const [again] = okData(await api('/update/P', { data: { ...echo, label: 'Echoed' } }));
    assert.deepEqual([again.label, again.version, again.createDate], ['Echoed', 1, p.createDate]);
    okData(await api('/integrate/P', [{ data: { ...echo, label: 'Integrated' } }]));
    for (const [field, value] of [
      ['createDate', { x: 1 }],
      ['version', 'abc'],
      ['lastUpdateDate', 'garbage'],
      ['createdBy', true],
    ] as const) {
      expectError(await api('/add/P', { data: { sku: 'ADD-RO', [field]: value } }), 400, -4, field);
      expectError(await api('/integrate/P', [{ data: { sku: 'ADD-1', [field]: value } }]), 400, -4, field);
      expectError(await api('/update/P', { data: { sku: 'ADD-1', [field]: value } }), 400, -4, field);
    }
    assert.equal(okData(await api(`/fetch/P/${p.id}`))[0].label, 'Integrated');
  });

  test('add refuses bad input with the field at fault, and nothing of a failed batch is written', async () => {
    expectError(await api('/add/P', { data: { label: 'no sku' } }), 400, -4, 'sku');
    expectError(await api('/add/P', { data: { sku: 'X', colour: 'red' } }), 400, -4, 'colour');
    expectError(await api('/add/P', { data: { sku: 'X', label: 'y'.repeat(1001) } }), 400, -4, 'label');
    expectError(await api('/add/P', { data: 'not an object' }), 400, -4, 'data');
    okData(await api('/add/P', { data: { sku: 'DUP-1' } }));
    expectError(await api('/add/P', { data: { sku: 'DUP-1' } }), 409, -1, 'sku');
    const batch = await api('/add/P', [{ data: { sku: 'BATCH-1' } }, { data: { sku: 'DUP-1' } }]);
    expectError(batch, 409, -1);
    assert.equal(okData(await api('/fetch/P', { data: { sku: 'BATCH-1' } })).length, 0, 'batch rolled back');
  });

  test('custom attributes compare and validate by the type in the attribute meta', async () => {
    okData(
      await api('/add/PAM', { data: { fieldName: 'attribute3', label: 'Weight', fieldType: 'NUMERIC' } }),
    );
    expectError(
      await api('/add/PAM', { data: { fieldName: 'attribute31', fieldType: 'NUMERIC' } }),
      400,
      -4,
      'fieldName',
    );
    expectError(
      await api('/add/PAM', { data: { fieldName: 'attribute4', fieldType: 'COLOUR' } }),
      400,
      -4,
      'fieldType',
    );
    okData(
      await api('/add/P', [
        { data: { sku: 'NUM-9', attribute3: '9' } },
        { data: { sku: 'NUM-10', attribute3: 10 } },
      ]),
    );
    expectError(await api('/add/P', { data: { sku: 'NUM-X', attribute3: 'heavy' } }), 400, -4, 'attribute3');
    const rows = okData(
      await api('/fetch/P', {
        data: adv(
          { fieldName: 'attribute3', operator: 'lessThan', value: 10 },
          { fieldName: 'sku', operator: 'startsWith', value: 'NUM' },
        ),
      }),
    );
    assert.deepEqual(
      rows.map((r) => [r.sku, r.attribute3]),
      [['NUM-9', 9]],
    );
    const sorted = okData(
      await api('/fetch/P', { data: { sku: 'NUM' }, textMatchStyle: 'startsWith', sortBy: '-attribute3' }),
    );
    assert.deepEqual(
      sorted.map((r) => r.sku),
      ['NUM-10', 'NUM-9'],
    );
    // A JSON number while a double keeps it exactly; beyond, the exact text (read back, written back,
    // found by its value).
    for (const [sku, given, answered] of [
      ['NUM-X1', '12345678901234567890.123456789', '12345678901234567890.123456789'],
      ['NUM-X2', '0.000123456789012345', 0.000123456789012345],
      ['NUM-X3', '-1e400', '-1e400'],
    ] as const) {
      const [added] = okData(await api('/add/P', { data: { sku, attribute3: given } }));
      assert.deepEqual(added.attribute3, answered);
      assert.deepEqual(okData(await api(`/fetch/P/${added.id}`))[0].attribute3, answered);
      const found = okData(
        await api('/fetch/P', {
          data: { fieldName: 'attribute3', operator: 'equals', value: answered },
          resultFields: ['sku'],
        }),
      );
      assert.deepEqual(
        found.map((r) => r.sku),
        [sku],
      );
      okData(await api('/delete/P', { data: { typedId: added.typedId } }));
    }
    const [meta] = okData(await api('/metadata.describe/P'));
    assert.equal(meta.fields.find((f: any) => f.name === 'attribute3').type, 'decimal');
    assert.equal(meta.fields.find((f: any) => f.name === 'attribute4').type, 'string');
    assert.deepEqual(meta.businessKey, ['sku']);
    assert.deepEqual(okData(await api('/metadata.describe', { typeCode: 'P' })), [meta]);
    expectError(await api('/metadata.describe/NOPE'), 404, -1);
    expectError(await api('/metadata.describe', {}), 400, -4, 'typeCode');
    const am = okData(await api('/fetch/PAM'));
    assert.deepEqual(
      am.map((r) => [r.fieldName, r.fieldType]),
      [['attribute3', 'NUMERIC']],
    );
  });

  test('a change of the attribute meta applies to the very next request', async () => {
    const typeOf = async () =>
      okData(await api('/metadata.describe/P'))[0].fields.find((f: any) => f.name === 'attribute9').type;
    assert.equal(await typeOf(), 'string');
    const [meta] = okData(await api('/add/PAM', { data: { fieldName: 'attribute9', fieldType: 'INTEGER' } }));
    assert.equal(await typeOf(), 'integer');
    okData(await api('/update/PAM', { data: { typedId: meta.typedId, fieldType: 'DATE' } }));
    assert.equal(await typeOf(), 'date');
    expectError(await api('/add/P', { data: { sku: 'META-1', attribute9: '12' } }), 400, -4, 'attribute9');
    okData(await api('/delete/PAM', { data: { typedId: meta.typedId } }));
    assert.equal(await typeOf(), 'string');
  });

  test('update: version check, 404, returnolddata, keys unchanged', async () => {
    const [p] = okData(await api('/add/P', { data: { sku: 'UPD-1', label: 'one', currency: 'EUR' } }));
    const [u] = okData(
      await api('/update/P', { data: { typedId: p.typedId, label: 'two' }, oldValues: { version: 0 } }),
    );
    assert.equal(u.label, 'two');
    assert.equal(u.currency, 'EUR', 'unspecified fields keep their values');
    assert.equal(u.version, 1);
    expectError(
      await api('/update/P', { data: { typedId: p.typedId, label: 'three' }, oldValues: { version: 0 } }),
      409,
      -1,
    );
    expectError(await api('/update/P', { data: { typedId: '999999999.P', label: 'x' } }), 404, -1);
    expectError(await api('/update/P', { data: { label: 'no address' } }), 400, -4, 'typedId');
    const [r] = okData(
      await api('/update/P/returnolddata', {
        data: { sku: 'UPD-1', label: 'three' },
        oldValues: { version: 1 },
      }),
    );
    assert.equal(r.label, 'three');
    assert.equal(r.oldValues.label, 'two');
    assert.equal(r.oldValues.version, 1);
    expectError(await api('/update/P', { data: { typedId: p.typedId, sku: 'OTHER' } }), 400, -4, 'sku');
  });

  test('integrate: upsert by business key or typedId, partial update, no version check', async () => {
    const [created] = okData(
      await api('/integrate/P', [{ data: { sku: 'INT-1', label: 'first', currency: 'USD' } }]),
    );
    assert.equal(created.version, 0);
    const [updated] = okData(await api('/integrate/P', [{ data: { sku: 'INT-1', label: 'second' } }]));
    assert.equal(updated.typedId, created.typedId);
    assert.equal(updated.label, 'second');
    assert.equal(updated.currency, 'USD');
    assert.equal(updated.version, 1);
    const [viaId] = okData(
      await api('/integrate/P/returnolddata', [{ data: { typedId: created.typedId, unitOfMeasure: 'KG' } }]),
    );
    assert.equal(viaId.unitOfMeasure, 'KG');
    assert.equal(viaId.oldValues.label, 'second');
    expectError(await api('/integrate/P', [{ data: { label: 'no key' } }]), 400, -4, 'sku');
    // A type with required fields (to-do items: label): an existing record needs only its key, alone
    // or in a batch; a new one still needs them.
    okData(await api('/add/TODO', { data: { uniqueName: 'int-todo-1', label: 'Call', priority: 2 } }));
    const [todo] = okData(await api('/integrate/TODO', { data: { uniqueName: 'int-todo-1', priority: 1 } }));
    assert.deepEqual([todo.label, todo.priority], ['Call', 1]);
    const both = okData(
      await api('/integrate/TODO', [
        { data: { uniqueName: 'int-todo-1', priority: 3 } },
        { data: { uniqueName: 'int-todo-2', label: 'Write' } },
      ]),
    );
    assert.deepEqual(
      both.map((t: any) => [t.label, t.priority]),
      [
        ['Call', 3],
        ['Write', null],
      ],
    );
    expectError(
      await api('/integrate/TODO', { data: { uniqueName: 'int-todo-3', priority: 1 } }),
      400,
      -4,
      'label',
    );
    expectError(await api('/integrate/P', [{ data: { typedId: '999999999.P', label: 'x' } }]), 404, -1);
  });

  test('delete: one, batch all-or-nothing, by business key', async () => {
    const made = okData(
      await api('/add/P', [
        { data: { sku: 'DEL-1' } },
        { data: { sku: 'DEL-2' } },
        { data: { sku: 'DEL-3' } },
      ]),
    );
    const [gone] = okData(await api('/delete/P', { data: { typedId: made[0].typedId } }));
    assert.equal(gone.sku, 'DEL-1');
    expectError(await api(`/fetch/P/${made[0].id}`), 404, -1);
    expectError(
      await api('/delete/P', [{ data: { typedId: made[1].typedId } }, { data: { typedId: '999999999.P' } }]),
      404,
      -1,
      '1.typedId',
    );
    // The same record twice: the second element is named, not a 404 of a record that exists.
    expectError(
      await api('/delete/P', [{ data: { typedId: made[1].typedId } }, { data: { sku: 'DEL-2' } }]),
      400,
      -4,
      '1.sku',
    );
    // Unknown fields, in the record or beside it, are refused (nothing deleted).
    expectError(await api('/delete/P', { data: { typedId: made[1].typedId, foo: 1 } }), 400, -4, 'foo');
    expectError(await api('/delete/P', { data: { typedId: made[1].typedId }, bogus: 1 }), 400, -4, 'bogus');
    assert.equal(okData(await api(`/fetch/P/${made[1].id}`)).length, 1, 'the batch was rolled back');
    // oldValues.version, when given, must be the stored one (409 naming it; nothing deleted)
    const v = made[1].version as number;
    expectError(
      await api('/delete/P', { data: { typedId: made[1].typedId }, oldValues: { version: v + 1 } }),
      409,
      -1,
      'oldValues.version',
    );
    expectError(
      await api('/delete/P', [
        { data: { typedId: made[1].typedId }, oldValues: { version: v } },
        { data: { sku: 'DEL-3' }, oldValues: { version: 99 } },
      ]),
      409,
      -1,
      '1.oldValues.version',
    );
    expectError(
      await api('/delete/P', { data: { typedId: made[1].typedId }, oldValues: 3 }),
      400,
      -4,
      'oldValues',
    );
    expectError(
      await api('/delete/P', { data: [{ typedId: made[1].typedId }], oldValues: { version: v } }),
      400,
      -4,
      'oldValues',
    );
    assert.equal(okData(await api(`/fetch/P/${made[1].id}`)).length, 1, 'nothing deleted');
    assert.equal(
      okData(
        await api('/delete/P', [
          { data: { typedId: made[1].typedId }, oldValues: { version: v } },
          { data: { sku: 'DEL-3' } },
        ]),
      ).length,
      2,
    );
  });

  test('unknown top-level fields are refused; an unknown type code is a 404 before the body is checked', async () => {
    expectError(await api('/add/P', { data: { sku: 'TOP-1' }, bogus: 1 }), 400, -4, 'bogus');
    expectError(
      await api('/add/P', [{ data: { sku: 'TOP-1' } }, { data: { sku: 'TOP-2' }, x: 1 }]),
      400,
      -4,
      '1.x',
    );
    expectError(await api('/integrate/P', { data: { sku: 'TOP-1' }, olvValues: {} }), 400, -4, 'olvValues');
    expectError(await api('/update/P', { data: { sku: 'TOP-1' }, bogus: 1 }), 400, -4, 'bogus');
    assert.equal(okData(await api('/fetch/P', { data: { sku: 'TOP-1' } })).length, 0);
    okData(await api('/add/P', { data: { sku: 'TOP-1' }, operationType: 'add' }));
    const [u] = okData(
      await api('/update/P', { data: { sku: 'TOP-1', label: 'x' }, oldValues: { version: 0 } }),
    );
    assert.equal(u.label, 'x');
    // A record not there: a 404 naming the field that named it (with the element's index in a batch).
    expectError(
      await api('/update/P', [{ data: { sku: 'TOP-1' } }, { data: { sku: 'NOPE-9' } }]),
      404,
      -1,
      '1.sku',
    );
    expectError(await api('/update/P', { data: { sku: 'NOPE-9', label: 'x' } }), 404, -1, 'sku');
    expectError(await api('/delete/P', { data: { typedId: '99999.P' } }), 404, -1, 'typedId');
    expectError(await api('/delete/P', { data: { id: 99999 } }), 404, -1, 'id');
    expectError(
      await api('/integrate/P', [{ data: { typedId: '99999.P', label: 'x' } }]),
      404,
      -1,
      'typedId',
    );
    expectError(await api('/fetch/P/99999', {}), 404, -1, 'id');
    for (const path of ['/massedit/XYZ', '/loaddata/XYZ', '/add/XYZ', '/delete/XYZ/batch']) {
      expectError(await api(path, {}), 404, -1);
    }
    // massedit needs its filter (`{}` for every record, said on purpose).
    expectError(
      await api('/massedit/P', {
        massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'y' }],
      }),
      400,
      -4,
      'filterCriteria',
    );
  });

  test('delete by filter: forcefilter enforces; legacy batch ignores bad clauses but never deletes everything', async () => {
    okData(
      await api('/add/P', [
        { data: { sku: 'BF-1', label: 'bf' } },
        { data: { sku: 'BF-2', label: 'bf' } },
        { data: { sku: 'BF-3' } },
      ]),
    );
    const bad = adv(
      { fieldName: 'label', operator: 'equals', value: 'bf' },
      { fieldName: 'nosuch', operator: 'equals', value: 1 },
    );
    expectError(await api('/delete/P/batch/forcefilter', { data: bad }), 400, -4, 'nosuch');
    expectError(
      await api('/delete/P/batch', { data: adv({ fieldName: 'nosuch', operator: 'equals', value: 1 }) }),
      400,
      -4,
      'nosuch',
    );
    // An unknown operator is an invalid clause too: refused by forcefilter, left out (and listed)
    // by the legacy variant, refused there when it is the only clause.
    const badOperator = adv(
      { fieldName: 'label', operator: 'equals', value: 'bf' },
      { fieldName: 'sku', operator: 'bogusOp', value: 'x' },
    );
    expectError(await api('/delete/P/batch/forcefilter', { data: badOperator }), 400, -4, 'sku');
    expectError(
      await api('/delete/P/batch', { data: adv({ fieldName: 'sku', operator: 'bogusOp', value: 'x' }) }),
      400,
      -4,
      'sku',
    );
    const [r] = okData(await api('/delete/P/batch', { data: bad }));
    assert.equal(r.deletedRecords, 2);
    assert.equal(r.ignoredCriteria[0].field, 'nosuch');
    okData(await api('/add/P', [{ data: { sku: 'BF-1', label: 'bf' } }]));
    const [o] = okData(await api('/delete/P/batch', { data: badOperator }));
    assert.equal(o.deletedRecords, 1);
    assert.deepEqual(o.ignoredCriteria, [{ field: 'sku', message: 'unknown operator "bogusOp"' }]);
    assert.equal(okData(await api('/fetch/P', { data: { sku: 'BF-3' } })).length, 1);
    // A range given `value` (it takes start and end) had no bound and deleted every product.
    const stray = adv({ fieldName: 'sku', operator: 'between', value: 'BF-3' });
    expectError(await api('/delete/P/batch/forcefilter', { data: stray }), 400, -4, 'sku');
    assert.equal(okData(await api('/fetch/P', { data: { sku: 'BF-3' } })).length, 1);
    const [f] = okData(await api('/delete/P/batch/forcefilter', { data: { sku: 'BF-3' } }));
    assert.equal(f.deletedRecords, 1);
  });

  test('massedit: set, arithmetic on numeric attributes, null; refusals', async () => {
    okData(await api('/add/PAM', { data: { fieldName: 'attribute5', fieldType: 'MONEY' } }));
    okData(
      await api('/add/P', [
        { data: { sku: 'ME-1', attribute5: '10' } },
        { data: { sku: 'ME-2', attribute5: '20.5' } },
      ]),
    );
    const filter = adv({ fieldName: 'sku', operator: 'startsWith', value: 'ME-' });
    const [r] = okData(
      await api('/massedit/P', {
        filterCriteria: filter,
        massEditRecords: [
          { fieldName: 'attribute5', massEditOperator: '*', fieldValue: 2 },
          { fieldName: 'label', massEditOperator: '=', fieldValue: 'edited' },
          { fieldName: 'currency', massEditOperator: 'null' },
        ],
      }),
    );
    assert.equal(r.updatedRecords, 2);
    const rows = okData(await api('/fetch/P', { data: filter, sortBy: 'sku' }));
    assert.deepEqual(
      rows.map((p) => [p.attribute5, p.label, p.currency, p.version]),
      [
        [20, 'edited', null, 1],
        [41, 'edited', null, 1],
      ],
    );
    const edit = (e: object) => api('/massedit/P', { filterCriteria: filter, massEditRecords: [e] });
    expectError(
      await edit({ fieldName: 'attribute5', massEditOperator: '/', fieldValue: 0 }),
      400,
      -4,
      'massEditRecords.0.fieldValue',
    );
    expectError(
      await edit({ fieldName: 'label', massEditOperator: '+', fieldValue: 1 }),
      400,
      -4,
      'massEditRecords.0.massEditOperator',
    );
    expectError(
      await edit({ fieldName: 'sku', massEditOperator: '=', fieldValue: 'x' }),
      400,
      -4,
      'massEditRecords.0.fieldName',
    );
    expectError(
      await edit({ fieldName: 'label', massEditOperator: '^', fieldValue: 1 }),
      400,
      -4,
      'massEditRecords.0.massEditOperator',
    );
    expectError(
      await api('/massedit/PAM', {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'label', massEditOperator: 'null' }],
      }),
      400,
      -4,
    );
  });

  test('resetcolumn clears a custom column; keys and unknown columns are refused', async () => {
    okData(await api('/add/P', { data: { sku: 'RC-1', attribute7: 'x' } }));
    const [r] = okData(await api('/resetcolumn/P/attribute7'));
    assert.ok(r.updatedRecords >= 1);
    assert.equal(okData(await api('/fetch/P', { data: { sku: 'RC-1' } }))[0].attribute7, null);
    expectError(await api('/resetcolumn/P/sku'), 400, -4, 'columnName');
    expectError(await api('/resetcolumn/P/nosuch'), 400, -4, 'columnName');
  });

  test('paging: rows, totals, edges and stable order without overlap', async () => {
    const rows = Array.from({ length: 23 }, (_, i) => ({
      data: { sku: `PG-${String(i).padStart(2, '0')}`, label: 'page' },
    }));
    okData(await api('/add/P', rows));
    const filter = { label: 'page' };
    const seen: string[] = [];
    for (let start = 0; start < 30; start += 10) {
      const r = await api('/fetch/P', { data: filter, startRow: start, endRow: start + 10 });
      okData(r);
      assert.equal(r.body.response.startRow, start);
      assert.equal(r.body.response.totalRows, 23);
      assert.equal(r.body.response.endRow, start + r.body.response.data.length);
      seen.push(...r.body.response.data.map((p: any) => p.sku));
    }
    assert.equal(seen.length, 23);
    assert.equal(new Set(seen).size, 23, 'no overlap, nothing skipped');
    const past = await api('/fetch/P', { data: filter, startRow: 100, endRow: 110 });
    assert.deepEqual(okData(past), []);
    assert.equal(past.body.response.totalRows, 23);
    assert.equal(past.body.response.endRow, 100);
    // An empty page asked for (endRow = startRow) answers the count alone.
    for (const start of [0, 5]) {
      const count = await api('/fetch/P', { data: filter, startRow: start, endRow: start });
      assert.deepEqual(okData(count), []);
      assert.equal(count.body.response.totalRows, 23);
    }
    expectError(await api('/fetch/P', { startRow: 10, endRow: 5 }), 400, -4, 'endRow');
    expectError(await api('/fetch/P', { startRow: 0, endRow: 51 }), 400, -4, 'endRow');
    expectError(await api('/fetch/P', { startRow: -1 }), 400, -4);
    const desc = okData(await api('/fetch/P', { data: filter, sortBy: ['-sku'], endRow: 2 }));
    assert.deepEqual(
      desc.map((p) => p.sku),
      ['PG-22', 'PG-21'],
    );
  });

  test('resultFields, valueFields and distinctResults', async () => {
    okData(
      await api('/add/P', [
        { data: { sku: 'RF-1', currency: 'EUR' } },
        { data: { sku: 'RF-2', currency: 'EUR' } },
        { data: { sku: 'RF-3', currency: 'CHF' } },
      ]),
    );
    const filter = adv({ fieldName: 'sku', operator: 'startsWith', value: 'RF-' });
    const objects = okData(
      await api('/fetch/P', { data: filter, resultFields: ['sku', 'typedId'], sortBy: 'sku' }),
    );
    assert.deepEqual(Object.keys(objects[0]).sort(), ['sku', 'typedId']);
    const arrays = okData(
      await api('/fetch/P', { data: filter, valueFields: ['sku', 'currency'], sortBy: 'sku' }),
    );
    assert.deepEqual(arrays, [
      ['RF-1', 'EUR'],
      ['RF-2', 'EUR'],
      ['RF-3', 'CHF'],
    ]);
    const distinct = await api('/fetch/P', {
      data: filter,
      valueFields: ['currency'],
      distinctResults: true,
    });
    assert.deepEqual(okData(distinct), [['CHF'], ['EUR']]);
    assert.equal(distinct.body.response.totalRows, 2);
    expectError(await api('/fetch/P', { resultFields: ['nosuch'] }), 400, -4, 'resultFields');
    expectError(await api('/fetch/P', { distinctResults: true }), 400, -4, 'distinctResults');
  });

  test('distinctResults: typed values compared as values; pages sorted by some fields never overlap', async () => {
    okData(await api('/add/PAM', { data: { fieldName: 'attribute27', label: 'at', fieldType: 'DATETIME' } }));
    okData(
      await api('/add/PAM', { data: { fieldName: 'attribute28', label: 'flag', fieldType: 'BOOLEAN' } }),
    );
    const rows = Array.from({ length: 60 }, (_, i) => ({
      data: {
        sku: `DR-${i}`,
        currency: `K${(i * 7) % 23}`,
        attribute28: i % 2 === 0,
        attribute27: ['2024-01-15T10:00:00Z', '2024-01-15T11:00:00+01:00', '2024-01-15T10:00:00.000Z'][i % 3],
      },
    }));
    okData(await api('/add/P', rows));
    const filter = adv({ fieldName: 'sku', operator: 'startsWith', value: 'DR-' });
    const instants = await api('/fetch/P', {
      data: filter,
      valueFields: ['attribute27'],
      distinctResults: true,
    });
    assert.equal(instants.body.response.totalRows, 1, instants.text);
    // A number compared by its value, answered as one of its stored texts (not 401 digits for 1e400).
    okData(await api('/add/PAM', { data: { fieldName: 'attribute26', label: 'n', fieldType: 'NUMERIC' } }));
    const texts = ['1e400', '1E+400', '10', '10.0', '1e-400'];
    okData(
      await api(
        '/add/P',
        texts.map((t, i) => ({ data: { sku: `DN-${i}`, attribute26: t } })),
      ),
    );
    const numbers = await api('/fetch/P', {
      data: adv({ fieldName: 'sku', operator: 'startsWith', value: 'DN-' }),
      valueFields: ['attribute26'],
      distinctResults: true,
      sortBy: 'attribute26',
    });
    assert.equal(numbers.body.response.totalRows, 3, numbers.text);
    const [tiny, ten, huge] = okData(numbers).map((r: any) => r.attribute26 ?? r[0]);
    assert.equal(tiny, '1e-400');
    assert.ok(['10', '10.0'].includes(String(ten)), numbers.text);
    assert.ok(['1e400', '1E+400'].includes(huge), numbers.text);
    // 46 distinct (flag, currency) pairs, sorted by the flag alone, read 7 a page.
    const all = okData(
      await api('/fetch/P', {
        data: filter,
        valueFields: ['attribute28', 'currency'],
        distinctResults: true,
      }),
    );
    const paged: unknown[] = [];
    for (let start = 0; start < all.length + 7; start += 7) {
      paged.push(
        ...okData(
          await api('/fetch/P', {
            data: filter,
            valueFields: ['attribute28', 'currency'],
            distinctResults: true,
            sortBy: 'attribute28',
            startRow: start,
            endRow: start + 7,
          }),
        ),
      );
    }
    assert.equal(paged.length, all.length);
    assert.equal(
      new Set(paged.map((r) => JSON.stringify(r))).size,
      all.length,
      'no row twice, none left out',
    );
  });

  test('a simple criteria list is one criterion however long; the default style ignores case', async () => {
    const many = Array.from({ length: 1_500 }, (_, i) => `rf-${i}`); // RF-1..RF-3 among them, lower case
    const body = { data: { sku: many }, valueFields: ['sku'], sortBy: 'sku' };
    assert.deepEqual(okData(await api('/fetch/P', body)), [['RF-1'], ['RF-2'], ['RF-3']]);
    assert.deepEqual(okData(await api('/fetch/P', { ...body, textMatchStyle: 'exactCase' })), []);
    // substring and prefix lists have no set form: each value is a criterion of the filter
    expectError(await api('/fetch/P', { ...body, textMatchStyle: 'startsWith' }), 400, -4, 'criteria');
  });

  test('SQL-looking input is data or a -4, never SQL', async () => {
    const evil = "x'); DROP TABLE products; --";
    const [p] = okData(await api('/add/P', { data: { sku: evil, label: '%_\\' } }));
    assert.equal(p.sku, evil);
    assert.deepEqual(
      okData(
        await api('/fetch/P', { data: adv({ fieldName: 'label', operator: 'contains', value: '%_' }) }),
      ).map((r) => r.sku),
      [evil],
    );
    expectError(await api('/fetch/P', { data: { 'sku" OR 1=1 --': 'x' } }), 400, -4);
    expectError(await api('/fetch/P', { sortBy: 'sku; DROP TABLE products' }), 400, -4, 'sortBy');
    expectError(await api('/fetch/P', { resultFields: ['sku FROM users --'] }), 400, -4, 'resultFields');
    expectError(await api('/add/P', { data: { sku: 'Y', 'label = 1 --': 'x' } }), 400, -4);
    expectError(await api("/fetch/P'--"), 404, -1);
    assert.ok(okData(await api('/fetch/P', { endRow: 1 })).length === 1, 'table still there');
  });

  test('every list of types and a wrong type code', async () => {
    const types = okData(await api('/fetch')).map((t) => t.typeCode);
    for (const code of ['P', 'C', 'PX', 'CX', 'SX', 'SL', 'PAM', 'CAM', 'PXAM', 'CXAM', 'SXAM'])
      assert.ok(types.includes(code), code);
    expectError(await api('/fetch/NOPE'), 404, -1);
    expectError(await api('/add/NOPE', { data: {} }), 404, -1);
  });
});

describe('extension tables, permissions, user groups and partitions', () => {
  let h: Harness;
  let other: Harness;
  let admin: Client;
  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    admin = clientOf(h, (await h.login()).token);
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('PX rows are soft-deleted and revived by a new add; meta per extension table', async () => {
    okData(
      await admin('/add/PXAM', { data: { name: 'Costs', fieldName: 'attribute1', fieldType: 'NUMERIC' } }),
    );
    const [px] = okData(
      await admin('/add/PX', { data: { name: 'Costs', sku: 'S1', attribute1: '12.5', attribute2: 'keep?' } }),
    );
    assert.equal(px.attribute1, 12.5);
    expectError(
      await admin('/add/PX', { data: { name: 'Costs', sku: 'S2', attribute1: 'n/a' } }),
      400,
      -4,
      'attribute1',
    );
    okData(await admin('/add/PX', { data: { name: 'Other', sku: 'S2', attribute1: 'n/a' } }));
    okData(await admin('/delete/PX', { data: { typedId: px.typedId } }));
    assert.equal(okData(await admin('/fetch/PX', { data: { name: 'Costs' } })).length, 0);
    const [again] = okData(await admin('/add/PX', { data: { name: 'Costs', sku: 'S1', attribute1: '1' } }));
    assert.equal(again.typedId, px.typedId, 'the soft-deleted row is replaced');
    assert.equal(again.attribute2, null, 'a re-add replaces the whole record');
    expectError(await admin('/add/PX', { data: { name: 'Costs', sku: 'S1' } }), 409, -1);
    const lt = okData(
      await admin('/fetch/PX', {
        data: adv(
          { fieldName: 'name', operator: 'equals', value: 'Costs' },
          { fieldName: 'attribute1', operator: 'lessThan', value: 2 },
        ),
      }),
    );
    assert.equal(lt.length, 1);
  });

  test('SX update needs oldValues.version', async () => {
    const [sx] = okData(await admin('/add/SX', { data: { name: 'Region', sellerId: 'SELL-1' } }));
    expectError(
      await admin('/update/SX', { data: { typedId: sx.typedId, attribute1: 'a' } }),
      400,
      -4,
      'oldValues.version',
    );
    assert.equal(
      okData(
        await admin('/update/SX', {
          data: { typedId: sx.typedId, attribute1: 'a' },
          oldValues: { version: 0 },
        }),
      )[0].version,
      1,
    );
  });

  test('permissions: open fetch of P and C, refusals elsewhere, 401 without credentials', async () => {
    await h.newUser('reader', 'reader-password');
    const reader = clientOf(h, (await h.login('reader', 'reader-password')).token);
    okData(await reader('/fetch/P'));
    okData(await reader('/fetch/C'));
    okData(await reader('/fetch/PAM'));
    expectError(await reader('/fetch/PX'), 403, -3);
    expectError(await reader('/add/P', { data: { sku: 'R1' } }), 403, -3);
    expectError(await reader('/delete/P/batch/forcefilter', { data: { sku: 'x' } }), 403, -3);
    expectError(
      await reader('/massedit/P', {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'label', massEditOperator: 'null' }],
      }),
      403,
      -3,
    );
    expectError(await reader('/add/PAM', { data: { fieldName: 'attribute1' } }), 403, -3);
    expectError(await h.call('/fetch/P', { body: {} }), 401, -7);
    await h.newUser('editor', 'editor-password', ['PRICESHOP_EDIT']);
    const editor = clientOf(h, (await h.login('editor', 'editor-password')).token);
    okData(await editor('/add/P', { data: { sku: 'ED-1' } }));
  });

  test('user groups restrict what non-admins see and change', async () => {
    const g = await h.db.query<{ id: number }>(
      `INSERT INTO user_groups (partition_id, unique_name) VALUES ($1, 'sales'), ($1, 'finance') RETURNING id`,
      [h.partitionId],
    );
    const member = await h.newUser('member', 'member-password', ['PRICESHOP_EDIT']);
    await h.newUser('outsider', 'outsider-password', ['PRICESHOP_EDIT']);
    await h.db.query('INSERT INTO user_group_members (partition_id, user_id, group_id) VALUES ($1, $2, $3)', [
      h.partitionId,
      member,
      g.rows[0]!.id,
    ]);
    okData(
      await admin('/add/P', [
        { data: { sku: 'UG-VIEW', userGroupViewDetails: 'sales' } },
        { data: { sku: 'UG-EDIT', userGroupEdit: 'sales' } },
        { data: { sku: 'UG-OPEN' } },
      ]),
    );
    const m = clientOf(h, (await h.login('member', 'member-password')).token);
    const o = clientOf(h, (await h.login('outsider', 'outsider-password')).token);
    const skus = async (c: Client) =>
      okData(await c('/fetch/P', { data: { sku: 'UG-' }, textMatchStyle: 'startsWith', sortBy: 'sku' })).map(
        (p) => p.sku,
      );
    assert.deepEqual(await skus(m), ['UG-EDIT', 'UG-OPEN', 'UG-VIEW']);
    assert.deepEqual(await skus(o), ['UG-EDIT', 'UG-OPEN']);
    expectError(await o('/update/P', { data: { sku: 'UG-EDIT', label: 'x' } }), 403, -3, 'sku');
    expectError(await o('/update/P', { data: { sku: 'UG-VIEW', label: 'x' } }), 404, -1);
    expectError(await o('/delete/P', { data: { sku: 'UG-EDIT' } }), 403, -3, 'sku');
    expectError(await o('/integrate/P', [{ data: { sku: 'UG-EDIT', label: 'x' } }]), 403, -3, 'sku');
    // In a batch, the refused element is named (nothing of the batch written).
    const both = (extra: Record<string, unknown>) => [
      { data: { sku: 'UG-OPEN', ...extra } },
      { data: { sku: 'UG-EDIT', ...extra } },
    ];
    expectError(await o('/update/P', both({ label: 'x' })), 403, -3, '1.sku');
    expectError(await o('/integrate/P', both({ label: 'x' })), 403, -3, '1.sku');
    expectError(await o('/delete/P', both({})), 403, -3, '1.sku');
    const [editId] = okData(await admin('/fetch/P', { data: { sku: 'UG-EDIT' } })).map((p) => p.typedId);
    expectError(await o('/update/P', { data: { typedId: editId, label: 'x' } }), 403, -3, 'typedId');
    assert.equal(
      okData(await admin('/fetch/P', { data: { sku: 'UG-OPEN' } }))[0].version,
      0,
      'nothing written',
    );
    // By filter: a match he sees but may not change refuses the whole change (nothing deleted,
    // edited or reset); what he may not see is no match.
    const startsWith = { data: { sku: 'UG-' }, textMatchStyle: 'startsWith' };
    expectError(await o('/delete/P/batch/forcefilter', startsWith), 403, -3);
    expectError(await o('/delete/P/batch', startsWith), 403, -3);
    expectError(
      await o('/massedit/P', {
        filterCriteria: { sku: 'UG-' },
        textMatchStyle: 'startsWith',
        massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'x' }],
      }),
      403,
      -3,
    );
    okData(await admin('/update/P', { data: { sku: 'UG-EDIT', label: 'set' } }));
    const reset = await o('/resetcolumn/P/label');
    expectError(reset, 403, -3);
    assert.match(reset.body.response.data, /^Not allowed to change \d+\.P \(user group\)/);
    const labels = okData(await admin('/fetch/P', { data: { sku: ['UG-EDIT', 'UG-OPEN'] }, sortBy: 'sku' }));
    assert.equal(labels[0].label, 'set', 'nothing reset');
    assert.deepEqual(await skus(o), ['UG-EDIT', 'UG-OPEN']);
    const [d] = okData(await m('/delete/P/batch/forcefilter', { data: { sku: ['UG-OPEN', 'UG-VIEW'] } }));
    assert.equal(d.deletedRecords, 2, 'a member changes both');
    const [e] = okData(await o('/delete/P/batch/forcefilter', { data: { sku: ['UG-OPEN', 'UG-VIEW'] } }));
    assert.equal(e.deletedRecords, 0);
    okData(await m('/update/P', { data: { sku: 'UG-EDIT', label: 'ok' } }));
  });

  test('a delete by typedId with a business key of another record is a -4 naming the key; nothing deleted', async () => {
    const [a, b] = okData(await admin('/add/P', [{ data: { sku: 'DK-A' } }, { data: { sku: 'DK-B' } }]));
    expectError(await admin('/delete/P', { data: { typedId: a.typedId, sku: 'DK-B' } }), 400, -4, 'sku');
    const batch = [{ data: { typedId: b.typedId } }, { data: { typedId: a.typedId, sku: 'DK-B' } }];
    expectError(await admin('/delete/P', batch), 400, -4, '1.sku');
    const left = okData(await admin('/fetch/P', { data: { sku: ['DK-A', 'DK-B'] }, sortBy: 'sku' }));
    assert.deepEqual(
      left.map((p) => p.sku),
      ['DK-A', 'DK-B'],
    );
    okData(await admin('/delete/P', { data: { typedId: a.typedId, sku: 'DK-A' } }));
  });

  test('batches that write the same records in other orders at once all succeed (no deadlock answered)', async () => {
    const skus = ['DL-1', 'DL-2', 'DL-3', 'DL-4'];
    okData(
      await admin(
        '/add/P',
        skus.map((sku) => ({ data: { sku } })),
      ),
    );
    const reversed = [...skus].reverse();
    for (let round = 0; round < 4; round++) {
      const replies = await Promise.all([
        admin(
          '/update/P',
          skus.map((sku) => ({ data: { sku, label: `a${round}` } })),
        ),
        admin(
          '/update/P',
          reversed.map((sku) => ({ data: { sku, label: `b${round}` } })),
        ),
        admin(
          '/integrate/P',
          skus.map((sku) => ({ data: { sku, attribute1: `a${round}` } })),
        ),
        admin(
          '/integrate/P',
          reversed.map((sku) => ({ data: { sku, attribute1: `b${round}` } })),
        ),
        // new keys, inserted in other orders by the two batches
        admin(
          '/integrate/P',
          [0, 1, 2].map((k) => ({ data: { sku: `DLN-${round}-${k}` } })),
        ),
        admin(
          '/integrate/P',
          [2, 1, 0].map((k) => ({ data: { sku: `DLN-${round}-${k}` } })),
        ),
      ]);
      for (const r of replies) assert.equal(r.status, 200, r.text);
    }
    const rows = okData(await admin('/fetch/P', { data: { sku: skus }, sortBy: 'sku' }));
    assert.deepEqual(
      rows.map((r) => r.version),
      [16, 16, 16, 16],
    );
  });

  test('a batch takes a bounded number of locks: one per record up to 128, its table alone past that', async () => {
    // PostgreSQL keeps advisory locks in a shared table of a few thousand entries: a batch of 30,000
    // records locking each one ran it out ("out of shared memory") for every transaction.
    if (h.db.kind !== 'postgres') return;
    const P = findType('P')!;
    const held = async (n: number) =>
      h.db.transaction(async (tx) => {
        const items = Array.from({ length: n }, (_, i) => ({ sku: `LOCK-${i}` }));
        await lockBatch(tx, true, P, h.partitionId, items);
        const r = await tx.query<{ n: number; exclusive: number }>(
          `SELECT count(*)::int AS n, count(*) FILTER (WHERE mode = 'ExclusiveLock')::int AS exclusive
             FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`,
        );
        return r.rows[0]!;
      });
    assert.deepEqual(await held(1), { n: 0, exclusive: 0 });
    assert.deepEqual(await held(3), { n: 4, exclusive: 3 }, 'the table shared, each record exclusive');
    assert.deepEqual(await held(128), { n: 129, exclusive: 128 });
    assert.deepEqual(await held(20_000), { n: 1, exclusive: 1 }, 'the table alone');
  });

  test('a record of another partition cannot be read, changed or deleted, even by typedId', async () => {
    const otherApi = clientOf(other, (await other.login()).token);
    const [foreign] = okData(await otherApi('/add/P', { data: { sku: 'SECRET', label: 'theirs' } }));
    expectError(await admin(`/fetch/P/${foreign.typedId}`), 404, -1);
    expectError(await admin('/update/P', { data: { typedId: foreign.typedId, label: 'mine' } }), 404, -1);
    expectError(await admin('/delete/P', { data: { typedId: foreign.typedId } }), 404, -1);
    expectError(
      await admin('/integrate/P', [{ data: { typedId: foreign.typedId, label: 'mine' } }]),
      404,
      -1,
    );
    assert.equal(okData(await admin('/fetch/P', { data: { sku: 'SECRET' } })).length, 0);
    const [mine] = okData(await admin('/integrate/P', [{ data: { sku: 'SECRET', label: 'mine' } }]));
    assert.notEqual(mine.typedId, foreign.typedId);
    okData(
      await admin('/massedit/P', {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'all mine' }],
      }),
    );
    okData(await admin('/delete/P/batch/forcefilter', { data: {} }));
    const [still] = okData(await otherApi(`/fetch/P/${foreign.id}`));
    assert.equal(still.label, 'theirs');
    // A session of one partition is no key to another.
    const s = await h.login();
    expectError(await other.call('/fetch/P', { headers: { 'X-Ratecard-jwt': s.token }, body: {} }), 401, -7);
  });
});
