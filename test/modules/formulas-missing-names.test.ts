// Names that find nothing, over real HTTP on both databases: each error names the field the name came
// from — a filter logic the request names (`formulaName`, a 404), a logic an advanced configuration
// option names (`recommendationLogic`, `quoteProductFilterLogic`: the configuration is at fault, a -4),
// and a customer to recommend for that does not exist or is hidden by its user group (`customerId`).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, uniqueName, type Client, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

describe('logic and customer names that find nothing', () => {
  let h: Harness;
  let api: Client;
  let member: Client;
  const group = uniqueName('grp');

  before(async () => {
    h = await startHarness();
    api = await clientOf(h);
    // Without ADMIN: record-level user groups apply to this user.
    await h.newUser('outsider', 'outsider-password-1', ['ADMIN_WO_USER_MGMT']);
    member = await clientOf(h, 'outsider', 'outsider-password-1');
    okData(await api('/add/UG', { data: { uniqueName: group, label: 'hidden' } }));
    okData(await api('/add/P', { data: { sku: 'R-1', label: 'one' } }));
    okData(await api('/add/P', { data: { sku: 'R-2', label: 'two' } }));
    okData(await api('/add/C', { data: { customerId: 'C-OPEN', name: 'open' } }));
    okData(
      await api('/add/C', {
        data: { customerId: 'C-HID', name: 'hidden', userGroupViewDetails: group, userGroupEdit: group },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Rec',
          validAfter: '2026-01-01',
          nature: 'RECOMMENDATION',
          elements: [{ elementName: 'Score', expression: '1' }],
        },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'OnlyR1',
          validAfter: '2026-01-01',
          nature: 'FILTER',
          elements: [{ elementName: 'Items', expression: 'filter("sku", "equals", "R-1")' }],
        },
      }),
    );
  });
  after(() => h.close());

  test('a recommendationLogic naming no logic is a -4 on recommendationLogic', async () => {
    okData(await api('/add/ACO', { data: { uniqueName: 'recommendationLogic', value: 'Nope' } }));
    const r = await api('/recommendations.recommend', { data: { segment: 'VIP', limit: 3 } });
    expectError(r, 400, -4, 'recommendationLogic');
    assert.match(r.body.response.data, /logic Nope valid at \d{4}-\d\d-\d\d not found/, r.text);
    assert.equal(r.body.response.errors.uniqueName, undefined, r.text);
    okData(await api('/update/ACO', { data: { uniqueName: 'recommendationLogic', value: 'Rec' } }));
    assert.deepEqual(
      okData(await api('/recommendations.recommend', { data: { segment: 'VIP' } })).map((x: any) => x.sku),
      ['R-1', 'R-2'],
    );
  });

  test('a quoteProductFilterLogic naming no logic is a -4 on quoteProductFilterLogic', async () => {
    okData(await api('/integrate/ACO', { data: { uniqueName: 'recommendationLogic', value: 'Rec' } }));
    okData(await api('/add/ACO', { data: { uniqueName: 'quoteProductFilterLogic', value: 'Nope' } }));
    const body = { data: { segment: 'VIP', typedId: '7.Q' } };
    const r = await api('/recommendations.recommend', body);
    expectError(r, 400, -4, 'quoteProductFilterLogic');
    assert.equal(r.body.response.errors.uniqueName, undefined, r.text);
    okData(await api('/update/ACO', { data: { uniqueName: 'quoteProductFilterLogic', value: 'OnlyR1' } }));
    assert.deepEqual(
      okData(await api('/recommendations.recommend', body)).map((x: any) => x.sku),
      ['R-1'],
    );
  });

  test('recommend for a customer not found or hidden: a 404 naming customerId', async () => {
    okData(await api('/integrate/ACO', { data: { uniqueName: 'recommendationLogic', value: 'Rec' } }));
    const missing = await api('/recommendations.recommend', { data: { customerId: 'NOPE' } });
    expectError(missing, 404, -1, 'customerId');
    assert.match(missing.body.response.data, /customer NOPE not found/);
    // No candidates: the unknown customer is said all the same.
    expectError(
      await api('/recommendations.recommend', { data: { customerId: 'NOPE', filter: { sku: 'none' } } }),
      404,
      -1,
      'customerId',
    );
    // Hidden by its user group: as one that does not exist, for the user outside the group.
    const hidden = await member('/recommendations.recommend', { data: { customerId: 'C-HID' } });
    expectError(hidden, 404, -1, 'customerId');
    assert.match(hidden.body.response.data, /customer C-HID not found/);
    assert.equal(
      okData(await member('/recommendations.recommend', { data: { customerId: 'C-OPEN' } })).length,
      2,
    );
    assert.equal(
      okData(await api('/recommendations.recommend', { data: { customerId: 'C-HID' } })).length,
      2,
    );
  });

  test('fetchformulafiltered… with a formulaName naming no logic: a 404 naming formulaName', async () => {
    const products = await api('/productmanager.fetchformulafilteredproducts', { formulaName: 'Nope' });
    expectError(products, 404, -1, 'formulaName');
    assert.match(products.body.response.data, /Logic Nope valid at \d{4}-\d\d-\d\d not found/);
    assert.equal(products.body.response.errors.uniqueName, undefined, products.text);
    const customers = await api('/customermanager.fetchformulafilteredcustomers', {
      formulaName: 'Nope',
      formulaParameters: { N: 'a' },
    });
    expectError(customers, 404, -1, 'formulaName');
    assert.equal(customers.body.response.errors.uniqueName, undefined, customers.text);
    assert.deepEqual(
      okData(await api('/productmanager.fetchformulafilteredproducts', { formulaName: 'OnlyR1' })).map(
        (x: any) => x.sku,
      ),
      ['R-1'],
    );
  });
});
