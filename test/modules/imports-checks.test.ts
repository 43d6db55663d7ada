// Imports over HTTP, the checks of staging, submit and massedit: a file row of another width than
// its header is refused (as the file load refuses it), a record's changes either delete or change
// it, an ADD of a key taken by a record hidden from the importer fails validation, a massedit that
// would give two changes one identity names them, and a staged value is only set or emptied.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { slotWith } from '../jobs/helpers.ts';
import { okData, expectError } from '../helpers/envelope.ts';

type Who = { user: string; password: string };
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const importer: Who = { user: 'importer', password: 'importer-password-1' };

describe('imports: checks', () => {
  let h: Harness;
  const group = uniqueName('grp');
  const call = (path: string, body?: unknown, who: Who = admin) =>
    h.call(path, { basic: who, ...(body === undefined ? {} : { body }) });
  const product = async (sku: string) =>
    okData(await call('/fetch/P', { data: { sku }, textMatchStyle: 'exactCase' }))[0];
  const newImport = async (who: Who = admin) =>
    okData(await call('/importmanager.add', { data: { targetType: 'P' } }, who))[0];
  const changes = async (id: number, who: Who = admin) =>
    okData(await call(`/importmanager.fetch/${id}`, { sortBy: 'id' }, who));

  before(async () => {
    h = await startHarness();
    await h.newUser(importer.user, importer.password, ['ADMIN_WO_USER_MGMT']);
    okData(
      await call('/add/PAM', { data: { fieldName: 'attribute1', label: 'Weight', fieldType: 'NUMERIC' } }),
    );
    okData(await call('/add/UG', { data: { uniqueName: group, label: 'hidden' } }));
    for (const sku of ['K-1', 'K-2', 'K-3'])
      okData(await call('/add/P', { data: { sku, label: `old ${sku}`, attribute1: 7 } }));
    okData(
      await call('/add/P', {
        data: { sku: 'K-HIDDEN', label: 'secret', userGroupViewDetails: group, userGroupEdit: group },
      }),
    );
  });
  after(() => h.close());

  test('a file row of another width than the header is refused, naming it; no import made', async () => {
    const imports = async () => okData(await call('/fetch/IM', {})).length;
    const before = await imports();
    for (const [csv, field, message] of [
      // Short: its missing cells were staged as nulls, which the submit wrote (clearing the fields).
      [
        'sku,label,attribute1\nK-1,a,1\nK-1\n',
        'rows.2.1',
        'has 1 values; the header has 3 (no value for label)',
      ],
      [
        'sku,label,attribute1\nK-1,a\n',
        'rows.1.2',
        'has 2 values; the header has 3 (no value for attribute1)',
      ],
      // Long: its extra cells were dropped.
      ['sku,label\nK-1,x,extra\n', 'rows.1', 'has 3 values; the header has 2'],
    ] as const) {
      const slotId = await slotWith(h, csv, 'width.csv');
      const r = await call('/importmanager.add', { data: { targetType: 'P', slotId } });
      expectError(r, 400, -4, field);
      assert.equal(r.body.response.errors[field].errorMessage, message);
    }
    assert.equal(await imports(), before);
    // Empty lines (a trailing one too) are no rows; an empty cell is the value null.
    const slotId = await slotWith(h, 'sku,label,attribute1\nK-1,,2\n\nK-2,b,\n\n', 'fine.csv');
    const [im] = okData(await call('/importmanager.add', { data: { targetType: 'P', slotId } }));
    assert.deepEqual(
      (await changes(im.id)).map((c: any) => [c.key1, c.targetColumn, c.value, c.rowNumber]),
      [
        ['K-1', 'label', null, 1],
        ['K-1', 'attribute1', '2', 1],
        ['K-2', 'label', 'b', 2],
        ['K-2', 'attribute1', null, 2],
      ],
    );
    okData(await call('/delete/IM', { data: { typedId: im.typedId } }));
    assert.equal((await product('K-1')).label, 'old K-1');
  });

  test('a DELETE and an UPDATE of one record fail validation; nothing written', async () => {
    const im = await newImport();
    const [update, del, other] = okData(
      await call(`/importmanager.save/${im.id}`, {
        data: [
          { targetColumn: 'label', sku: 'K-3', value: 'updated' },
          { changeType: 'DELETE', sku: 'K-3' },
          { targetColumn: 'label', sku: 'K-2', value: 'fine' },
        ],
      }),
    );
    const r = await call(`/importmanager.submit/${im.id}`);
    expectError(r, 400, -4, update.typedId);
    expectError(r, 400, -4, del.typedId);
    assert.equal(r.body.response.errors[other.typedId], undefined);
    assert.match(
      r.body.response.errors[update.typedId].errorMessage,
      new RegExp(`deleted by ${del.typedId}`),
    );
    assert.match(
      r.body.response.errors[del.typedId].errorMessage,
      new RegExp(`changed by ${update.typedId}`),
    );
    assert.deepEqual(
      (await changes(im.id)).map((c: any) => c.validationState),
      ['INVALID', 'INVALID', 'VALID'],
    );
    assert.equal((await product('K-3')).label, 'old K-3');
    assert.equal((await product('K-2')).label, 'old K-2');
    // Without the update, the delete applies.
    okData(await call(`/importmanager.massdelete/${im.id}`, { data: { targetColumn: 'label' } }));
    assert.equal(okData(await call(`/importmanager.submit/${im.id}`))[0].status, 'APPLIED');
    assert.equal(await product('K-3'), undefined);
  });

  test('a change the engine refuses when written: the import is FAILED, its change INVALID, named by its typedId', async () => {
    const table = uniqueName('ranges');
    const [lt] = okData(
      await call('/lookuptablemanager.add', {
        data: { uniqueName: table, type: 'RANGE', valueType: 'REAL' },
      }),
    );
    okData(
      await call(`/lookuptablemanager.add/${lt.id}`, [
        { data: { name: 'small', upperBound: 100, value: 0 } },
        { data: { name: 'big', lowerBound: 100, value: 0.05 } },
      ]),
    );
    const [im] = okData(
      await call('/importmanager.add', { data: { targetType: 'LTV', lookupTable: table } }),
    );
    const [overlap] = okData(
      await call(`/importmanager.save/${im.id}`, {
        data: { targetColumn: 'upperBound', name: 'small', value: '150' },
      }),
    );
    const r = await call(`/importmanager.submit/${im.id}`);
    expectError(r, 400, -4, overlap.typedId);
    assert.deepEqual(Object.keys(r.body.response.errors), [overlap.typedId], r.text);
    assert.match(r.body.response.errors[overlap.typedId].errorMessage, /^The range .* overlaps/);
    const [stored] = okData(await call('/fetch/IM', { data: { id: im.id } }));
    assert.equal(stored.status, 'FAILED');
    const marked = (await changes(im.id)).map((c: any) => [c.typedId, c.validationState, c.message !== null]);
    assert.deepEqual(marked, [[overlap.typedId, 'INVALID', true]]);
    const values = okData(await call(`/lookuptablemanager.fetch/${lt.id}`, { sortBy: 'name' }));
    assert.deepEqual(
      values.map((v: any) => [v.name, Number(v.value)]),
      [
        ['big', 0.05],
        ['small', 0],
      ],
      'nothing written',
    );
    // Fixed, the import applies; the marks are those of the last submit.
    okData(
      await call(`/importmanager.save/${im.id}`, {
        data: { targetColumn: 'upperBound', name: 'small', value: '90' },
      }),
    );
    assert.equal(okData(await call(`/importmanager.submit/${im.id}`))[0].status, 'APPLIED');
  });

  test('an ADD of a key taken by a record hidden from the importer fails validation', async () => {
    const im = await newImport(importer);
    const [add, update] = okData(
      await call(
        `/importmanager.save/${im.id}`,
        {
          data: [
            { changeType: 'ADD', targetColumn: 'label', sku: 'K-HIDDEN', value: 'mine' },
            { targetColumn: 'label', sku: 'K-1', value: 'by importer' },
          ],
        },
        importer,
      ),
    );
    const r = await call(`/importmanager.submit/${im.id}`, {}, importer);
    expectError(r, 400, -4, add.typedId);
    assert.deepEqual(Object.keys(r.body.response.errors), [add.typedId]);
    assert.match(r.body.response.errors[add.typedId].errorMessage, /K-HIDDEN already exists/);
    const [a, u] = await changes(im.id, importer);
    assert.equal(a.id, add.id);
    assert.equal(a.validationState, 'INVALID');
    assert.equal(u.id, update.id);
    assert.equal(u.validationState, 'VALID');
    const [state] = okData(await call('/fetch/IM', { data: { id: im.id } }));
    assert.equal(state.status, 'FAILED');
    assert.equal(state.messages[0].text, '1 of 2 changes failed validation');
    assert.equal((await product('K-HIDDEN')).label, 'secret');
    assert.equal((await product('K-1')).label, 'old K-1');
  });

  test('a massedit giving two changes one identity is a 409 naming them; nothing edited', async () => {
    const im = await newImport();
    const [one, two] = okData(
      await call(`/importmanager.save/${im.id}`, {
        data: [
          { targetColumn: 'label', sku: 'K-1', value: 'one' },
          { targetColumn: 'label', sku: 'K-2', value: 'two' },
          { targetColumn: 'attribute1', sku: 'K-2', value: '2' },
        ],
      }),
    );
    const before = await changes(im.id);
    const r = await call(`/importmanager.massedit/${im.id}`, {
      filterCriteria: { key1: 'K-2' },
      massEditRecords: [{ fieldName: 'key1', massEditOperator: '=', fieldValue: 'K-1' }],
    });
    expectError(r, 409, -1, 'key1');
    expectError(r, 409, -1, one.typedId);
    expectError(r, 409, -1, two.typedId);
    assert.match(r.body.response.data, new RegExp(`${one.typedId} and ${two.typedId}`));
    assert.match(r.body.response.data, /UPDATE label of \["K-1"\]/);
    assert.deepEqual(await changes(im.id), before);
  });

  test("a massedit of changeType gives the change save's shape: a DELETE names no column, an UPDATE needs one", async () => {
    const im = await newImport();
    okData(
      await call(`/importmanager.save/${im.id}`, { data: { targetColumn: 'label', sku: 'K-1', value: 'x' } }),
    );
    const toDelete = (extra: object[] = []) =>
      call(`/importmanager.massedit/${im.id}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'changeType', massEditOperator: '=', fieldValue: 'DELETE' }, ...extra],
      });
    expectError(
      await toDelete([{ fieldName: 'targetColumn', massEditOperator: '=', fieldValue: 'label' }]),
      400,
      -4,
      'massEditRecords.1.fieldName',
    );
    okData(await toDelete());
    const [del] = await changes(im.id);
    assert.deepEqual([del.changeType, del.targetColumn, del.value], ['DELETE', '', null]);
    // A DELETE saved again for the record is the same change, not a second one.
    okData(await call(`/importmanager.save/${im.id}`, { data: { changeType: 'DELETE', sku: 'K-1' } }));
    assert.equal((await changes(im.id)).length, 1);
    // Back to UPDATE: it needs its column.
    const toUpdate = (extra: object[] = []) =>
      call(`/importmanager.massedit/${im.id}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'changeType', massEditOperator: '=', fieldValue: 'UPDATE' }, ...extra],
      });
    expectError(await toUpdate(), 400, -4, 'massEditRecords.0.fieldValue');
    assert.equal((await changes(im.id))[0].changeType, 'DELETE', 'nothing edited');
    okData(await toUpdate([{ fieldName: 'targetColumn', massEditOperator: '=', fieldValue: 'label' }]));
    const [upd] = await changes(im.id);
    assert.deepEqual([upd.changeType, upd.targetColumn], ['UPDATE', 'label']);
  });

  test('a staged value is only set or emptied: arithmetic is refused, naming the operator', async () => {
    const im = await newImport();
    okData(
      await call(`/importmanager.save/${im.id}`, {
        data: { targetColumn: 'attribute1', sku: 'K-1', value: '3' },
      }),
    );
    for (const op of ['+', '-', '*', '/']) {
      const r = await call(`/importmanager.massedit/${im.id}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'value', massEditOperator: op, fieldValue: 5 }],
      });
      expectError(r, 400, -4, 'massEditRecords.0.massEditOperator');
      assert.match(r.body.response.data, /only set \(=\) or emptied \(null\)/);
    }
    const [edited] = okData(
      await call(`/importmanager.massedit/${im.id}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'value', massEditOperator: 'null' }],
      }),
    );
    assert.equal(edited.updated, 1);
    assert.equal((await changes(im.id))[0].value, null);
  });
});
