// Extension rows of several tables (CX without a table named) are typed by their own table's meta on
// every form of the answer: whole records, `resultFields` and `valueFields` that leave out `name`
// (the table is read beside them, and not answered).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';

describe('extension rows typed by their own table', () => {
  let h: Harness;
  const call = (path: string, body: unknown) =>
    h.call(path, { basic: { user: ADMIN, password: ADMIN_PASSWORD }, body });

  before(async () => {
    h = await startHarness();
    okData(await call('/add/C', [{ data: { customerId: 'XT-1' } }, { data: { customerId: 'XT-2' } }]));
    okData(
      await call('/add/CXAM', { data: { name: 'Terms', fieldName: 'attribute1', fieldType: 'INTEGER' } }),
    );
    okData(
      await call('/add/CX', [
        { data: { name: 'Terms', customerId: 'XT-1', attribute1: 10, attribute2: 'a' } },
        { data: { name: 'Notes', customerId: 'XT-2', attribute1: '10', attribute2: 'b' } },
      ]),
    );
  });
  after(() => h.close());

  test('whole records, resultFields and valueFields answer the same typed values', async () => {
    const sort = { sortBy: 'customerId' };
    const whole = okData(await call('/fetch/CX', sort));
    assert.deepEqual(
      whole.map((r) => [r.name, r.attribute1]),
      [
        ['Terms', 10],
        ['Notes', '10'],
      ],
    );
    const named = okData(await call('/fetch/CX', { ...sort, resultFields: ['customerId', 'attribute1'] }));
    assert.deepEqual(named, [
      { customerId: 'XT-1', attribute1: 10 },
      { customerId: 'XT-2', attribute1: '10' },
    ]);
    const arrays = okData(await call('/fetch/CX', { ...sort, valueFields: ['attribute1', 'attribute2'] }));
    assert.deepEqual(arrays, [
      [10, 'a'],
      ['10', 'b'],
    ]);
    // Naming the table types by it, as before; naming `name` answers it.
    const terms = okData(await call('/fetch/CX', { data: { name: 'Terms' }, valueFields: ['attribute1'] }));
    assert.deepEqual(terms, [[10]]);
    const withName = okData(await call('/fetch/CX', { ...sort, resultFields: ['name', 'attribute1'] }));
    assert.deepEqual(withName, [
      { name: 'Terms', attribute1: 10 },
      { name: 'Notes', attribute1: '10' },
    ]);
  });
});
