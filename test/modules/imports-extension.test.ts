// Imports of extension rows (PX) over HTTP on both databases: a submit validates each change's value
// by the attribute meta of the table its key names (`name`), so a value that is no number for a
// NUMERIC attribute of `Costs` is INVALID at validation (not VALID, then refused when written),
// while the same text for an untyped table's attribute is VALID; fixed, the import applies.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { okData, expectError } from '../helpers/envelope.ts';

type Obj = Record<string, any>;
const admin = { user: ADMIN, password: ADMIN_PASSWORD };

describe('imports: extension rows typed by their table meta', () => {
  let h: Harness;
  const call = (path: string, body?: unknown) =>
    h.call(path, { basic: admin, ...(body === undefined ? {} : { body }) });
  const pxRow = async (name: string, sku: string) =>
    okData(await call('/fetch/PX', { data: { name, sku }, textMatchStyle: 'exactCase' }))[0];

  before(async () => {
    h = await startHarness();
    okData(
      await call('/add/PXAM', { data: { name: 'Costs', fieldName: 'attribute1', fieldType: 'NUMERIC' } }),
    );
    okData(await call('/add/PXAM', { data: { name: 'Costs', fieldName: 'attribute2', fieldType: 'DATE' } }));
    okData(await call('/add/P', { data: { sku: 'A-1', label: 'one' } }));
    okData(await call('/add/PX', { data: { name: 'Costs', sku: 'A-1', attribute1: '2.25' } }));
    okData(await call('/add/PX', { data: { name: 'Other', sku: 'A-1', attribute1: 'text' } }));
  });
  after(() => h.close());

  test('a value refused by the table meta is INVALID at validation; fixed, applied', async () => {
    const [im] = okData(await call('/importmanager.add', { data: { targetType: 'PX' } }));
    okData(
      await call(`/importmanager.save/${im.id}`, {
        data: [
          { targetColumn: 'attribute1', name: 'Costs', sku: 'A-1', value: 'abc' },
          { targetColumn: 'attribute2', name: 'Costs', sku: 'A-1', value: '2024-02-30' },
          { targetColumn: 'attribute1', name: 'Costs', sku: 'NOPE', value: '1' },
          { targetColumn: 'attribute1', name: 'Other', sku: 'A-1', value: 'abc' },
        ],
      }),
    );
    const r = await call(`/importmanager.submit/${im.id}`);
    expectError(r, 400, -4);
    assert.match(r.body.response.data, /^3 of 4 changes failed validation/);
    const changes = okData(await call(`/importmanager.fetch/${im.id}`, { sortBy: 'id' }));
    assert.deepEqual(
      changes.map((c: Obj) => [c.key1, c.key2, c.targetColumn, c.validationState]),
      [
        ['Costs', 'A-1', 'attribute1', 'INVALID'],
        ['Costs', 'A-1', 'attribute2', 'INVALID'],
        ['Costs', 'NOPE', 'attribute1', 'INVALID'],
        ['Other', 'A-1', 'attribute1', 'VALID'],
      ],
    );
    assert.match(changes[0].message, /attribute1: "abc" is not a number/);
    assert.match(changes[1].message, /^attribute2: /);
    assert.match(r.body.response.errors[`${changes[0].id}.IMC`].errorMessage, /is not a number/);
    assert.equal((await pxRow('Costs', 'A-1')).attribute1, 2.25);

    okData(
      await call(`/importmanager.save/${im.id}`, {
        data: [
          { targetColumn: 'attribute1', name: 'Costs', sku: 'A-1', value: '3.5' },
          { targetColumn: 'attribute2', name: 'Costs', sku: 'A-1', value: '2024-02-29' },
        ],
      }),
    );
    okData(await call(`/importmanager.massdelete/${im.id}`, { data: { key2: 'NOPE' } }));
    const [applied] = okData(await call(`/importmanager.submit/${im.id}`));
    assert.equal(applied.status, 'APPLIED');
    const costs = await pxRow('Costs', 'A-1');
    assert.deepEqual([costs.attribute1, costs.attribute2], [3.5, '2024-02-29']);
    assert.equal((await pxRow('Other', 'A-1')).attribute1, 'abc');
  });
});
