// Attribute meta rows answer and take `formatType`, the other name conventions.md gives `fieldType`
// ("`fieldType`/`formatType`"): one column under two names. Written alone it sets the field type;
// written with `fieldType` (a fetched row sent back) `fieldType` wins; it is checked like it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

describe('attribute meta: formatType is fieldType', () => {
  let h: Harness;
  const call = (path: string, body?: unknown) =>
    h.call(path, { basic: { user: 'admin', password: 'admin-password-1' }, ...(body ? { body } : {}) });

  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  test('a row added with formatType has that field type, answered under both names', async () => {
    const [row] = okData(
      await call('/add/PAM', { data: { fieldName: 'attribute7', formatType: 'NUMERIC' } }),
    );
    assert.equal(row.fieldType, 'NUMERIC');
    assert.equal(row.formatType, 'NUMERIC');
    const [one] = okData(await call(`/fetch/PAM/${row.id}`));
    assert.deepEqual([one.fieldType, one.formatType], ['NUMERIC', 'NUMERIC']);
    // The attribute is typed: a product's attribute7 must be a number now.
    expectError(await call('/add/P', { data: { sku: 'FT-1', attribute7: 'heavy' } }), 400, -4, 'attribute7');
    // Filtered and sorted by either name.
    const byAlias = okData(
      await call('/fetch/PAM', {
        sortBy: 'formatType',
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [{ fieldName: 'formatType', operator: 'equals', value: 'NUMERIC' }],
        },
      }),
    );
    assert.deepEqual(
      byAlias.map((r) => r.fieldName),
      ['attribute7'],
    );
  });

  test('an update of formatType changes the field type; fieldType wins when both are sent', async () => {
    const [row] = okData(await call('/add/PAM', { data: { fieldName: 'attribute8', fieldType: 'TEXT' } }));
    const [upd] = okData(
      await call('/update/PAM', {
        data: { typedId: row.typedId, formatType: 'INTEGER' },
        oldValues: { version: row.version },
      }),
    );
    assert.deepEqual([upd.fieldType, upd.formatType], ['INTEGER', 'INTEGER']);
    // A fetched row sent back with only fieldType changed: its stale formatType is no conflict.
    const [back] = okData(
      await call('/update/PAM', {
        data: { ...upd, fieldType: 'DATE' },
        oldValues: { version: upd.version },
      }),
    );
    assert.deepEqual([back.fieldType, back.formatType], ['DATE', 'DATE']);
  });

  test('formatType is checked as fieldType is, and named in the error', async () => {
    const res = await call('/add/PAM', { data: { fieldName: 'attribute9', formatType: 'COLOUR' } });
    expectError(res, 400, -4, 'formatType');
    assert.match(res.body.response.errors.formatType.errorMessage, /NUMERIC/);
    const wrong = await call('/add/PAM', {
      data: { fieldName: 'attribute9', fieldType: 'TEXT', formatType: 7 },
    });
    expectError(wrong, 400, -4, 'formatType');
    // Nothing was written by either.
    assert.deepEqual(
      okData(
        await call('/fetch/PAM', {
          data: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [{ fieldName: 'fieldName', operator: 'equals', value: 'attribute9' }],
          },
        }),
      ),
      [],
    );
  });

  test('rebate attribute meta (RBTAM) takes formatType too', async () => {
    okData(await call('/add/RBT', { data: { uniqueName: 'FT', label: 'Format type' } }));
    const [row] = okData(
      await call('/add/RBTAM', { data: { name: 'FT', fieldName: 'attribute1', formatType: 'NUMERIC' } }),
    );
    assert.deepEqual([row.fieldType, row.formatType], ['NUMERIC', 'NUMERIC']);
    expectError(
      await call('/add/RBTAM', { data: { name: 'FT', fieldName: 'attribute2', formatType: 'COLOUR' } }),
      400,
      -4,
      'formatType',
    );
  });
});
