// A typed custom attribute whose stored text is no value of its type (written before its meta typed
// it) comes back as that text, on every read path: what the filters read as NULL is not answered as
// a number. Number() alone took '' and blanks for 0 and '0x1F', '0b11', '0o7' for numbers.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';

const STORED = ['', '  ', '0x1F', '0b11', '0o7', '\u00a012', ' 7 ', '1e3', '-0'];
const AS_NUMBER: Record<string, number> = { ' 7 ': 7, '1e3': 1000, '-0': 0 };

describe('typed attributes with stored text that is no number', () => {
  let h: Harness;
  const call = (path: string, body?: unknown) =>
    h.call(path, { basic: { user: 'admin', password: 'admin-password-1' }, ...(body ? { body } : {}) });

  before(async () => {
    h = await startHarness();
    // Written while the attributes were text, then typed NUMERIC and INTEGER.
    okData(
      await call(
        '/add/P',
        STORED.map((v, i) => ({ data: { sku: `TO-${i}`, attribute4: v, attribute5: v } })),
      ),
    );
    okData(
      await call('/add/PAM', [
        { data: { fieldName: 'attribute4', fieldType: 'NUMERIC' } },
        { data: { fieldName: 'attribute5', fieldType: 'INTEGER' } },
      ]),
    );
  });
  after(() => h.close());

  test('/fetch and /fetch/{id} answer the text, a number only where the filters see one', async () => {
    const rows = okData(await call('/fetch/P', { data: {}, sortBy: 'sku' }));
    assert.equal(rows.length, STORED.length);
    for (const [i, v] of STORED.entries()) {
      const want = v in AS_NUMBER ? AS_NUMBER[v] : v;
      assert.deepEqual([rows[i].attribute4, rows[i].attribute5], [want, want], JSON.stringify(v));
      const one = okData(await call(`/fetch/P/${rows[i].id}`))[0];
      assert.deepEqual([one.attribute4, one.attribute5], [want, want], JSON.stringify(v));
    }
    const fields = okData(await call('/fetch/P', { data: {}, sortBy: 'sku', valueFields: ['attribute4'] }));
    assert.deepEqual(
      fields.map((r) => r[0]),
      STORED.map((v) => (v in AS_NUMBER ? AS_NUMBER[v] : v)),
    );
    // The filters agree: none of them is NULL (each holds text: a delete by `isNull` must not take
    // it), only the empty one is blank, none of those answered as text equals 0.
    const matching = async (operator: string, value?: unknown) =>
      okData(
        await call('/fetch/P', {
          sortBy: 'sku',
          data: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [{ fieldName: 'attribute4', operator, ...(value === undefined ? {} : { value }) }],
          },
        }),
      ).map((r) => r.attribute4);
    assert.deepEqual(await matching('isNull'), []);
    assert.deepEqual(
      await matching('notNull'),
      STORED.map((v) => (v in AS_NUMBER ? AS_NUMBER[v] : v)),
    );
    assert.deepEqual(await matching('isBlank'), ['']);
    assert.deepEqual((await matching('notBlank')).length, STORED.length - 1);
    // Compared, they sort with the NULLs (lowest): lessThan finds them as it finds NULLs.
    assert.deepEqual(
      await matching('lessThan', 5),
      STORED.filter((v) => !(v in AS_NUMBER) || AS_NUMBER[v]! < 5).map((v) =>
        v in AS_NUMBER ? AS_NUMBER[v] : v,
      ),
    );
    assert.deepEqual(await matching('inSet', [null, 7]), [7]);
    assert.deepEqual(
      await matching('notEqual', 7),
      STORED.filter((v) => v !== ' 7 ').map((v) => (v in AS_NUMBER ? AS_NUMBER[v] : v)),
    );
    const simple = okData(await call('/fetch/P', { data: { attribute4: null } }));
    assert.deepEqual(simple, []);
    const zero = okData(
      await call('/fetch/P', {
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [{ fieldName: 'attribute5', operator: 'equals', value: 0 }],
        },
      }),
    );
    assert.deepEqual(
      zero.map((r) => r.attribute5),
      [0],
    );
  });

  test('a decimal a double does not hold (below its least normal value) answers its text', async () => {
    const values = { 'UF-1': '1e-400', 'UF-2': '2e-320', 'UF-3': '0.000', 'UF-4': '2.5e-300' };
    okData(
      await call(
        '/integrate/P',
        Object.entries(values).map(([sku, v]) => ({ data: { sku, attribute4: v } })),
      ),
    );
    const page = { data: { sku: Object.keys(values) }, sortBy: 'sku', valueFields: ['sku', 'attribute4'] };
    assert.deepEqual(okData(await call('/fetch/P', page)), [
      ['UF-1', '1e-400'],
      ['UF-2', '2e-320'],
      ['UF-3', 0],
      ['UF-4', 2.5e-300],
    ]);
    // What is answered reads back as the same value: the text filters equal, and above 0.
    const positive = okData(
      await call('/fetch/P', {
        ...page,
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [
            { fieldName: 'sku', operator: 'startsWith', value: 'UF-' },
            { fieldName: 'attribute4', operator: 'greaterThan', value: 0 },
          ],
        },
      }),
    );
    assert.deepEqual(
      positive.map((r) => r[0]),
      ['UF-1', 'UF-2', 'UF-4'],
    );
    const tiny = okData(await call('/fetch/P', { ...page, data: { attribute4: '1e-400' } }));
    assert.deepEqual(tiny, [['UF-1', '1e-400']]);
  });

  test('a BOOLEAN attribute answers the value the filters see: yes is true, maybe stays text', async () => {
    const stored = ['yes', ' TRUE ', 'on', '1', 'off', 'n', '0', 'false', 'maybe', 'o'];
    const want = [true, true, true, true, false, false, false, false, 'maybe', 'o'];
    okData(
      await call(
        '/add/P',
        stored.map((v, i) => ({ data: { sku: `TB-${i}`, attribute7: v } })),
      ),
    );
    okData(await call('/add/PAM', { data: { fieldName: 'attribute7', fieldType: 'BOOLEAN' } }));
    const ours = { fieldName: 'sku', operator: 'startsWith', value: 'TB-' };
    const where = (...criteria: unknown[]) => ({
      _constructor: 'AdvancedCriteria',
      operator: 'and',
      criteria: [ours, ...criteria],
    });
    const rows = okData(await call('/fetch/P', { data: where(), sortBy: 'sku' }));
    assert.deepEqual(
      rows.map((r) => r.attribute7),
      want,
    );
    const one = okData(await call(`/fetch/P/${rows[0].id}`))[0];
    assert.equal(one.attribute7, true);
    // The filters read the same values.
    for (const value of [true, false]) {
      const found = okData(
        await call('/fetch/P', {
          data: where({ fieldName: 'attribute7', operator: 'equals', value }),
          sortBy: 'sku',
        }),
      );
      assert.deepEqual(
        found.map((r) => r.attribute7),
        want.filter((w) => w === value),
      );
    }
    // Distinct values are the values, not one of their spellings.
    const distinct = okData(
      await call('/fetch/P', { data: where(), valueFields: ['attribute7'], distinctResults: true }),
    );
    const values = distinct.map((r) => r[0]);
    assert.ok(values.includes(true) && values.includes(false), JSON.stringify(values));
    assert.equal(values.filter((v) => v === true).length, 1);
  });

  test('distinctResults compares a typed number by its value: 10.50 and 10.5 are one row', async () => {
    okData(
      await call(
        '/integrate/P',
        ['10.50', '10.5', '7', '7.000', '1e1'].map((v, i) => ({
          data: { sku: `DV-${i}`, attribute4: v },
        })),
      ),
    );
    const r = await call('/fetch/P', {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'sku', operator: 'startsWith', value: 'DV-' }],
      },
      valueFields: ['attribute4'],
      distinctResults: true,
      sortBy: 'attribute4',
    });
    assert.deepEqual(okData(r), [[7], [10], [10.5]]);
    assert.equal(r.body.response.totalRows, 3);
  });
});
