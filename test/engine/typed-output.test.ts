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
    // The filters agree: those answered as text are NULL to them, none of them equals 0.
    const nulls = okData(
      await call('/fetch/P', {
        sortBy: 'sku',
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [{ fieldName: 'attribute4', operator: 'isNull' }],
        },
      }),
    );
    assert.deepEqual(
      nulls.map((r) => r.attribute4),
      STORED.filter((v) => !(v in AS_NUMBER)),
    );
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
});
