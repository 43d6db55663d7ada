// The manager operations of master data over HTTP: product quick search, formula-filtered fetches,
// customer assignments, seller extensions by category (and /update, /delete on SX), bills of
// materials and product competition — each with its happy path, bad input, permission refusal,
// missing credentials and partition isolation.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADMIN,
  ADMIN_PASSWORD,
  startHarness,
  uniqueName,
  type CallOptions,
  type Harness,
  type Reply,
} from '../helpers/app.ts';
import { createPartition } from '../../src/modules/admin/partitions.ts';
import { expectError } from '../helpers/envelope.ts';

interface Who {
  readonly user: string;
  readonly password: string;
}

const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const plain: Who = { user: 'plain', password: 'plain-password-1' };
const integrator: Who = { user: 'integrator', password: 'integrator-password-1' };
const shopReader: Who = { user: 'shopreader', password: 'shopreader-password-1' };
const member: Who = { user: 'member', password: 'member-password-1' };

/** What the tests call: a harness's own partition, or a second partition on the same server. */
interface Tenant {
  call(path: string, opts?: CallOptions): Promise<Reply>;
}

/**
 * A second partition in the same database and server as `h`: ids come from the same sequences, so a
 * typedId of one partition is a real, existing id when sent to the other — isolation is then the
 * partition scope at work, not separate databases (PGlite gives every harness its own).
 */
async function secondPartition(h: Harness): Promise<Tenant & { close(): Promise<void> }> {
  const name = uniqueName('other');
  const created = await createPartition(
    h.db,
    name,
    { login: ADMIN, password: ADMIN_PASSWORD },
    h.config.scryptCost,
  );
  return {
    call: (path, opts = {}) =>
      h.call(`/${h.config.basePath}/${name}${path}`, {
        ...opts,
        ...(opts.basic ? { basic: { ...opts.basic, partition: name } } : {}),
      }),
    close: async () => {
      await h.db.query('DELETE FROM partitions WHERE id = $1', [created.id]);
    },
  };
}

function call(h: Tenant, path: string, body?: unknown, who: Who | null = admin): Promise<Reply> {
  return h.call(path, { ...(who ? { basic: who } : {}), ...(body === undefined ? {} : { body }) });
}

function okData(r: Reply): any[] {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.response.status, 0);
  return r.body.response.data;
}

const adv = (operator: string, ...criteria: object[]) => ({
  _constructor: 'AdvancedCriteria',
  operator,
  criteria,
});

/** Upserts records of a type as the admin and answers them. */
async function seed(h: Tenant, code: string, records: object[]): Promise<any[]> {
  return okData(
    await call(
      h,
      `/integrate/${code}`,
      records.map((data) => ({ data })),
    ),
  );
}

async function seedUsers(h: Harness): Promise<void> {
  await h.newUser(plain.user, plain.password);
  await h.newUser(integrator.user, integrator.password, ['DATAINTEGRATION']);
  await h.newUser(shopReader.user, shopReader.password, ['PRICESHOP_RO']);
  await h.newUser(member.user, member.password, [], ['SECRET']);
}

describe('master-data manager operations', () => {
  let h: Harness;
  let other: Tenant & { close(): Promise<void> };
  before(async () => {
    h = await startHarness();
    other = await secondPartition(h);
    await seedUsers(h);
    await seed(h, 'P', [
      { sku: 'QS-100', label: 'Red bike' },
      { sku: 'QS-200', label: 'Blue BIKE' },
      { sku: 'QS-300', label: '100% cotton' },
      { sku: 'QS_X', label: 'under_score' },
      { sku: 'QSAX', label: 'plain' },
      { sku: 'QS-SECRET', label: 'Secret bike', userGroupViewDetails: 'SECRET' },
    ]);
    await seed(other, 'P', [{ sku: 'QS-OTHER', label: 'Other partition bike' }]);
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  describe('productmanager.quicksearch', () => {
    const skus = (r: Reply) => okData(r).map((p: any) => p.sku);

    test('case-insensitive substring over sku and label, sorted by sku', async () => {
      assert.deepEqual(skus(await call(h, '/productmanager.quicksearch', { q: 'bike' })), [
        'QS-100',
        'QS-200',
        'QS-SECRET',
      ]);
      assert.deepEqual(skus(await call(h, '/productmanager.quicksearch', { q: 'qs-1' })), ['QS-100']);
      const path = `/productmanager.quicksearch/${encodeURIComponent('RED BIKE')}`;
      assert.deepEqual(skus(await call(h, path)), ['QS-100']);
    });

    test('% and _ match literally, in the body and in the path', async () => {
      assert.deepEqual(skus(await call(h, '/productmanager.quicksearch', { q: '%' })), ['QS-300']);
      assert.deepEqual(skus(await call(h, '/productmanager.quicksearch', { q: 'qs_' })), ['QS_X']);
      assert.deepEqual(skus(await call(h, `/productmanager.quicksearch/${encodeURIComponent('0%')}`)), [
        'QS-300',
      ]);
    });

    test('pages like fetch', async () => {
      const r = await call(h, '/productmanager.quicksearch', { q: 'QS', startRow: 1, endRow: 3 });
      assert.deepEqual(skus(r), ['QS-200', 'QS-300']);
      assert.equal(r.body.response.startRow, 1);
      assert.equal(r.body.response.endRow, 3);
      assert.equal(r.body.response.totalRows, 6);
      // (Where QS_X and QSAX fall depends on the database's collation: only the count is fixed.)
      const p = await call(h, '/productmanager.quicksearch/qs', { startRow: 4, endRow: 10 });
      assert.equal(skus(p).length, 2);
      assert.equal(p.body.response.totalRows, 6);
    });

    test('an empty or missing term is a -4 naming q', async () => {
      expectError(await call(h, '/productmanager.quicksearch', {}), 400, -4, 'q');
      expectError(await call(h, '/productmanager.quicksearch'), 400, -4, 'q');
      expectError(await call(h, '/productmanager.quicksearch', null), 400, -4, 'q');
      expectError(await call(h, '/productmanager.quicksearch', { q: '' }), 400, -4, 'q');
      expectError(await call(h, '/productmanager.quicksearch', { q: '   ' }), 400, -4, 'q');
      expectError(await call(h, '/productmanager.quicksearch', { q: 7 }), 400, -4, 'q');
      expectError(await call(h, '/productmanager.quicksearch/%20'), 400, -4, 'q');
      const nul = await call(h, '/productmanager.quicksearch', { q: 'a\u0000' });
      expectError(nul, 400, -4, 'q');
      assert.deepEqual(Object.keys(nul.body.response.errors), ['q']);
      expectError(await call(h, '/productmanager.quicksearch/a%00b'), 400, -4, 'q');
      expectError(await call(h, '/productmanager.quicksearch', { q: 'x', bogus: 1 }), 400, -4, 'bogus');
    });

    test('needs credentials; any user may search, and sees only the products of their groups', async () => {
      expectError(await call(h, '/productmanager.quicksearch', { q: 'bike' }, null), 401, -7);
      expectError(await call(h, '/productmanager.quicksearch/bike', undefined, null), 401, -7);
      assert.deepEqual(skus(await call(h, '/productmanager.quicksearch', { q: 'bike' }, plain)), [
        'QS-100',
        'QS-200',
      ]);
      assert.deepEqual(skus(await call(h, '/productmanager.quicksearch/secret', undefined, plain)), []);
      assert.deepEqual(skus(await call(h, '/productmanager.quicksearch/secret', undefined, member)), [
        'QS-SECRET',
      ]);
    });

    test("another partition's products never show up", async () => {
      assert.deepEqual(skus(await call(h, '/productmanager.quicksearch', { q: 'other' })), []);
      assert.deepEqual(skus(await call(other, '/productmanager.quicksearch', { q: 'bike' })), ['QS-OTHER']);
    });
  });

  describe('formula-filtered fetches', () => {
    before(async () => {
      await seed(h, 'C', [
        { customerId: 'FF-1', name: 'Alpha' },
        { customerId: 'FF-2', name: 'Beta' },
      ]);
      await seed(other, 'C', [{ customerId: 'FF-1', name: 'Other alpha' }]);
    });

    test('answer as /fetch/P and /fetch/C, with resultFields or valueFields', async () => {
      const body = { data: adv('or', { fieldName: 'sku', operator: 'startsWith', value: 'QS-' }) };
      const viaManager = await call(h, '/productmanager.fetchformulafilteredproducts', body);
      assert.deepEqual(okData(viaManager), okData(await call(h, '/fetch/P', body)));
      assert.equal(viaManager.body.response.totalRows, 4);
      const rows = okData(
        await call(h, '/productmanager.fetchformulafilteredproducts', {
          data: { sku: 'QS-100' },
          resultFields: ['sku', 'label'],
        }),
      );
      assert.deepEqual(rows, [{ sku: 'QS-100', label: 'Red bike' }]);
      const values = okData(
        await call(h, '/customermanager.fetchformulafilteredcustomers', {
          data: { customerId: ['FF-1', 'FF-2'] },
          valueFields: ['customerId', 'name'],
          sortBy: '-customerId',
        }),
      );
      assert.deepEqual(values, [
        ['FF-2', 'Beta'],
        ['FF-1', 'Alpha'],
      ]);
    });

    test('an unknown filter logic is a 404, not ignored; a bad filter names the field', async () => {
      for (const path of [
        '/productmanager.fetchformulafilteredproducts',
        '/customermanager.fetchformulafilteredcustomers',
      ]) {
        const r = await call(h, path, { formulaName: 'MyFilter', data: {} });
        expectError(r, 404, -1);
        assert.match(r.body.response.data, /Logic MyFilter/);
        expectError(await call(h, path, { data: { colour: 'red' } }), 400, -4, 'colour');
        expectError(await call(h, path, { resultFields: ['nope'] }), 400, -4, 'resultFields');
        expectError(await call(h, path, { data: {} }, null), 401, -7);
      }
    });

    test('open to every user (products and customers are), within their groups and partition', async () => {
      const mine = okData(
        await call(
          h,
          '/productmanager.fetchformulafilteredproducts',
          { data: { label: 'secret bike' } },
          plain,
        ),
      );
      assert.deepEqual(mine, []);
      const customers = okData(
        await call(other, '/customermanager.fetchformulafilteredcustomers', { valueFields: ['name'] }),
      );
      assert.deepEqual(customers, [['Other alpha']]);
    });
  });

  describe('customermanager.assign and fetchassignments', () => {
    let owner: string;
    let c3: string;
    let hidden: string;
    before(async () => {
      const customers = await seed(h, 'C', [
        { customerId: 'AS-1', name: 'One' },
        { customerId: 'AS-2', name: 'Two' },
        { customerId: 'AS-3', name: 'Three' },
        { customerId: 'AS-HIDDEN', name: 'Hidden', userGroupViewDetails: 'SECRET' },
      ]);
      c3 = customers[2].typedId;
      hidden = customers[3].typedId;
      owner = (await seed(h, 'P', [{ sku: 'AS-OWNER' }]))[0].typedId;
      await seed(other, 'C', [{ customerId: 'AS-1', name: 'Other one' }]);
    });

    const assign = (data: object, who: Who | null = admin, harness: Tenant = h) =>
      call(harness, '/customermanager.assign', { data }, who);
    const names = (r: Reply) => okData(r).map((c: any) => c.name);

    test('assigns by customerId and typedId, idempotently; fetchassignments answers the customers', async () => {
      const first = okData(await assign({ typedId: owner, customerIds: ['AS-1', 'AS-2'] }));
      assert.deepEqual(first, [{ typedId: owner, assignedCustomers: 2, newAssignments: 2 }]);
      const again = okData(await assign({ typedId: owner, customerIds: ['AS-2', 'AS-1', 'AS-1'] }));
      assert.deepEqual(again, [{ typedId: owner, assignedCustomers: 2, newAssignments: 0 }]);
      const byTypedId = okData(
        await assign({ typedId: owner, customerTypedIds: [c3], customerIds: ['AS-1'] }),
      );
      assert.deepEqual(byTypedId, [{ typedId: owner, assignedCustomers: 2, newAssignments: 1 }]);

      const all = await call(h, `/customermanager.fetchassignments/${owner}`, { sortBy: 'customerId' });
      assert.deepEqual(names(all), ['One', 'Two', 'Three']);
      assert.equal(all.body.response.totalRows, 3);
      assert.equal(okData(all)[0].customerId, 'AS-1', 'full customer records');
    });

    test('fetchassignments filters and pages through the engine', async () => {
      const simple = await call(h, `/customermanager.fetchassignments/${owner}`, {
        data: { name: 'two' },
      });
      assert.deepEqual(names(simple), ['Two']);
      const substring = await call(h, `/customermanager.fetchassignments/${owner}`, {
        data: { name: ['o', 'x'] },
        textMatchStyle: 'substring',
        sortBy: 'name',
      });
      assert.deepEqual(names(substring), ['One', 'Two']);
      const advanced = await call(h, `/customermanager.fetchassignments/${owner}`, {
        data: adv(
          'or',
          { fieldName: 'customerId', operator: 'equals', value: 'AS-3' },
          { fieldName: 'name', operator: 'equals', value: 'Hidden' },
        ),
      });
      assert.deepEqual(names(advanced), ['Three']);
      const page = await call(h, `/customermanager.fetchassignments/${owner}`, {
        sortBy: '-customerId',
        startRow: 1,
        endRow: 2,
        resultFields: ['customerId'],
      });
      assert.deepEqual(okData(page), [{ customerId: 'AS-2' }]);
      assert.equal(page.body.response.totalRows, 3);
      const idOf = (typedId: string) => Number(typedId.split('.')[0]);
      const byId = await call(h, `/customermanager.fetchassignments/${owner}`, {
        data: { id: [idOf(c3), idOf(hidden)] },
      });
      assert.deepEqual(names(byId), ['Three'], 'a client id filter narrows, it never widens the set');
      expectError(
        await call(h, `/customermanager.fetchassignments/${owner}`, { data: { colour: 'red' } }),
        400,
        -4,
        'colour',
      );
    });

    test('an owner of a type not registered yet is taken as named', async () => {
      okData(await assign({ typedId: '42.PL', customerIds: ['AS-3'] }));
      assert.deepEqual(names(await call(h, '/customermanager.fetchassignments/42.PL')), ['Three']);
      assert.deepEqual(okData(await call(h, '/customermanager.fetchassignments/43.PL')), []);
    });

    test('an owner of a type code that does not exist is a 404, and nothing is written', async () => {
      const refused = await assign({ typedId: '1.ZZZ', customerIds: ['AS-1'] });
      expectError(refused, 404, -1);
      assert.match(refused.body.response.data, /ZZZ/);
      expectError(await call(h, '/customermanager.fetchassignments/1.ZZZ'), 404, -1);
      const stored = await h.db.query(
        `SELECT 1 FROM customer_assignments WHERE partition_id = $1 AND owner_typed_id = '1.ZZZ'`,
        [h.partitionId],
      );
      assert.equal(stored.rows.length, 0);
    });

    test('bad input: unknown customers are named, a bad or unknown owner refused', async () => {
      const unknown = await assign({ typedId: owner, customerIds: ['AS-1', 'NOPE-9'] });
      expectError(unknown, 400, -4, 'customerIds');
      assert.match(unknown.body.response.errors.customerIds.errorMessage, /NOPE-9/);
      const unknownTyped = await assign({ typedId: owner, customerTypedIds: ['999999999.C'] });
      expectError(unknownTyped, 400, -4, 'customerTypedIds');
      assert.match(unknownTyped.body.response.data, /999999999\.C/);
      expectError(await assign({ typedId: owner, customerTypedIds: ['1.P'] }), 400, -4, 'customerTypedIds');
      expectError(await assign({ typedId: owner }), 400, -4, 'customerIds');
      expectError(await assign({ typedId: owner, customerIds: [] }), 400, -4, 'customerIds');
      expectError(await assign({ customerIds: ['AS-1'] }), 400, -4, 'data.typedId');
      expectError(await assign({ typedId: 'abc', customerIds: ['AS-1'] }), 400, -4, 'typedId');
      expectError(await assign({ typedId: owner, customerIds: ['AS-1'], extra: 1 }), 400, -4, 'data.extra');
      expectError(await assign({ typedId: '999999999.P', customerIds: ['AS-1'] }), 404, -1);
      expectError(await call(h, '/customermanager.fetchassignments/999999999.P'), 404, -1);
      expectError(await call(h, '/customermanager.fetchassignments/nonsense'), 400, -4, 'typedId');
      // Nothing of a refused request was written.
      assert.equal(okData(await call(h, `/customermanager.fetchassignments/${owner}`)).length, 3);
    });

    test('CUSTOMER_EDIT to assign; the owner type and user groups decide what may be seen', async () => {
      expectError(await assign({ typedId: owner, customerIds: ['AS-1'] }, null), 401, -7);
      expectError(await call(h, `/customermanager.fetchassignments/${owner}`, undefined, null), 401, -7);
      const refused = await assign({ typedId: owner, customerIds: ['AS-1'] }, plain);
      expectError(refused, 403, -3);
      assert.match(refused.body.response.data, /CUSTOMER_EDIT/);
      okData(await assign({ typedId: owner, customerIds: ['AS-1'] }, integrator));
      // A customer the user may not see cannot be assigned by them: it is unknown to them.
      expectError(await assign({ typedId: owner, customerTypedIds: [hidden] }, integrator), 400, -4);
      okData(await assign({ typedId: owner, customerTypedIds: [hidden] }));
      assert.equal(okData(await call(h, `/customermanager.fetchassignments/${owner}`)).length, 4);
      assert.equal(okData(await call(h, `/customermanager.fetchassignments/${owner}`, {}, plain)).length, 3);
      // The owner's own fetch permission applies: seller extensions need SELLER_FETCH.
      const sx = (await seed(h, 'SX', [{ name: 'AssignOwner', sellerId: 'S-1' }]))[0].typedId;
      okData(await assign({ typedId: sx, customerIds: ['AS-2'] }));
      expectError(await call(h, `/customermanager.fetchassignments/${sx}`, {}, plain), 403, -3);
      assert.deepEqual(names(await call(h, `/customermanager.fetchassignments/${sx}`, {}, integrator)), [
        'Two',
      ]);
    });

    test("another partition's owners and customers can be neither assigned nor seen", async () => {
      // h's owner does not exist in the other partition; h's customers are unknown there.
      expectError(await assign({ typedId: owner, customerIds: ['AS-1'] }, admin, other), 404, -1);
      const otherOwner = (await seed(other, 'P', [{ sku: 'AS-OWNER' }]))[0].typedId;
      expectError(await assign({ typedId: otherOwner, customerTypedIds: [c3] }, admin, other), 400, -4);
      // The same business key names the other partition's own customer.
      okData(await assign({ typedId: otherOwner, customerIds: ['AS-1'] }, admin, other));
      assert.deepEqual(names(await call(other, `/customermanager.fetchassignments/${otherOwner}`)), [
        'Other one',
      ]);
      expectError(await call(h, `/customermanager.fetchassignments/${otherOwner}`), 404, -1);
      expectError(await assign({ typedId: otherOwner, customerIds: ['AS-1'] }), 404, -1);
      // An owner of an unregistered type is per partition too.
      assert.deepEqual(okData(await call(other, '/customermanager.fetchassignments/42.PL')), []);
    });
  });

  describe('sellermanager.fetch and SX update/delete', () => {
    before(async () => {
      okData(
        await call(h, '/add/SXAM', {
          data: { name: 'Regions', fieldName: 'attribute1', fieldType: 'NUMERIC' },
        }),
      );
      await seed(h, 'SX', [
        { name: 'Regions', sellerId: 'S-1', attribute1: '10', attribute2: 'north' },
        { name: 'Regions', sellerId: 'S-2', attribute1: '9', attribute2: 'south' },
        { name: 'Regions', sellerId: 'S-3', attribute1: '100', attribute2: 'north' },
        { name: 'Targets', sellerId: 'S-1', attribute1: '5' },
        { name: 'regions', sellerId: 'S-9' },
      ]);
      await seed(other, 'SX', [
        { name: 'Regions', sellerId: 'S-OTHER' },
        { name: 'Elsewhere', sellerId: 'S-OTHER' },
      ]);
    });

    const sellers = (r: Reply) => okData(r).map((x: any) => x.sellerId);

    test('lists the rows of one category, whatever stands for the wildcard', async () => {
      const all = await call(h, '/sellermanager.fetch/*/SX/Regions', { sortBy: 'sellerId' });
      assert.deepEqual(sellers(all), ['S-1', 'S-2', 'S-3']);
      assert.equal(all.body.response.totalRows, 3);
      assert.deepEqual(sellers(await call(h, '/sellermanager.fetch/anything/SX/regions')), ['S-9']);
      // An unknown table is a 404 naming the category (a table of another partition is unknown here);
      // a table with meta but no rows is an empty list.
      for (const unknown of ['Nope', 'Elsewhere']) {
        expectError(await call(h, `/sellermanager.fetch/*/SX/${unknown}`), 404, -1, 'SXCategory');
      }
      okData(
        await call(h, '/add/SXAM', { data: { name: 'Empty', fieldName: 'attribute1', fieldType: 'TEXT' } }),
      );
      assert.deepEqual(sellers(await call(h, '/sellermanager.fetch/*/SX/Empty')), []);
      // A table whose only row is deleted (soft) is unknown again.
      const [gone] = okData(await call(h, '/add/SX', { data: { name: 'Gone', sellerId: 'S-1' } }));
      assert.deepEqual(sellers(await call(h, '/sellermanager.fetch/*/SX/Gone')), ['S-1']);
      okData(await call(h, '/delete/SX', { data: { typedId: gone.typedId } }));
      expectError(await call(h, '/sellermanager.fetch/*/SX/Gone'), 404, -1, 'SXCategory');
      const values = okData(
        await call(h, `/sellermanager.fetch/${encodeURIComponent('*')}/SX/Targets`, {
          valueFields: ['sellerId', 'attribute1'],
        }),
      );
      assert.deepEqual(values, [['S-1', '5']]);
    });

    test("filters (typed by the category's attribute meta) and pages within the category", async () => {
      const numeric = await call(h, '/sellermanager.fetch/*/SX/Regions', {
        data: adv('and', { fieldName: 'attribute1', operator: 'greaterThan', value: 9 }),
        sortBy: 'sellerId',
        resultFields: ['sellerId', 'attribute1'],
      });
      assert.deepEqual(okData(numeric), [
        { sellerId: 'S-1', attribute1: 10 },
        { sellerId: 'S-3', attribute1: 100 },
      ]);
      const simple = await call(h, '/sellermanager.fetch/*/SX/Regions', {
        data: { attribute2: 'NORTH', attribute1: 100 },
      });
      assert.deepEqual(sellers(simple), ['S-3']);
      const otherName = await call(h, '/sellermanager.fetch/*/SX/Regions', {
        data: { fieldName: 'name', operator: 'equals', value: 'Targets' },
      });
      assert.deepEqual(sellers(otherName), [], 'the category is ANDed, never replaced');
      const page = await call(h, '/sellermanager.fetch/*/SX/Regions', {
        sortBy: '-sellerId',
        startRow: 2,
        endRow: 5,
      });
      assert.deepEqual(sellers(page), ['S-1']);
      assert.equal(page.body.response.totalRows, 3);
    });

    test('bad input, permission, credentials and partitions', async () => {
      expectError(
        await call(h, '/sellermanager.fetch/*/SX/Regions', { data: { colour: 1 } }),
        400,
        -4,
        'colour',
      );
      expectError(
        await call(h, '/sellermanager.fetch/*/SX/Regions', {
          data: adv('and', { fieldName: 'attribute1', operator: 'greaterThan', value: 'many' }),
        }),
        400,
        -4,
        'attribute1',
      );
      expectError(await call(h, '/sellermanager.fetch/*/SX/Regions', { bogus: 1 }), 400, -4, 'bogus');
      expectError(await call(h, '/sellermanager.fetch/*/SX/Regions', {}, null), 401, -7);
      const refused = await call(h, '/sellermanager.fetch/*/SX/Regions', {}, plain);
      expectError(refused, 403, -3);
      assert.match(refused.body.response.data, /SELLER_FETCH/);
      assert.equal(okData(await call(h, '/sellermanager.fetch/*/SX/Regions', {}, shopReader)).length, 3);
      assert.deepEqual(sellers(await call(other, '/sellermanager.fetch/*/SX/Regions')), ['S-OTHER']);
    });

    test('/update/SX needs oldValues.version and refuses a stale one; /delete/SX removes the row', async () => {
      const [row] = okData(await call(h, '/sellermanager.fetch/*/SX/Targets'));
      const change = { typedId: row.typedId, attribute2: 'changed' };
      expectError(await call(h, '/update/SX', { data: change }), 400, -4, 'oldValues.version');
      expectError(
        await call(h, '/update/SX', { data: change, oldValues: { version: row.version + 1 } }),
        409,
        -1,
      );
      expectError(
        await call(h, '/update/SX', { data: change, oldValues: { version: row.version } }, plain),
        403,
        -3,
      );
      expectError(
        await call(h, '/update/SX', { data: change, oldValues: { version: row.version } }, null),
        401,
        -7,
      );
      const [updated] = okData(
        await call(h, '/update/SX', { data: change, oldValues: { version: row.version } }),
      );
      assert.equal(updated.version, row.version + 1);
      assert.equal(updated.attribute2, 'changed');
      // It updates sellerId (the interface), addressed by typedId; the table's name stays.
      const [moved] = okData(
        await call(h, '/update/SX', {
          data: { typedId: row.typedId, sellerId: 'S-MOVED', name: row.name },
          oldValues: { version: updated.version },
        }),
      );
      assert.equal(moved.sellerId, 'S-MOVED');
      // Moved onto a key that exists: a 409 naming the moved key.
      okData(await call(h, '/add/SX', { data: { name: row.name, sellerId: 'S-TAKEN' } }));
      expectError(
        await call(h, '/update/SX', {
          data: { typedId: row.typedId, sellerId: 'S-TAKEN' },
          oldValues: { version: moved.version },
        }),
        409,
        -1,
        'sellerId',
      );
      okData(await call(h, '/delete/SX', { data: { name: row.name, sellerId: 'S-TAKEN' } }));
      // Deleted, that key is free: moved onto it, the row replaces the deleted one (as an add does).
      const [onDeleted] = okData(
        await call(h, '/update/SX', {
          data: { typedId: row.typedId, sellerId: 'S-TAKEN' },
          oldValues: { version: moved.version },
        }),
      );
      assert.deepEqual([onDeleted.id, onDeleted.sellerId], [row.id, 'S-TAKEN']);
      const [movedBack] = okData(
        await call(h, '/update/SX', {
          data: { typedId: row.typedId, sellerId: 'S-MOVED' },
          oldValues: { version: onDeleted.version },
        }),
      );
      moved.version = movedBack.version;
      expectError(
        await call(h, '/update/SX', {
          data: { typedId: row.typedId, name: 'Regions' },
          oldValues: { version: moved.version },
        }),
        400,
        -4,
        'name',
      );
      expectError(
        await call(h, '/update/SX', {
          data: { typedId: row.typedId, sellerId: '' },
          oldValues: { version: moved.version },
        }),
        400,
        -4,
        'sellerId',
      );
      const [back] = okData(
        await call(h, '/update/SX', {
          data: { typedId: row.typedId, sellerId: row.sellerId },
          oldValues: { version: moved.version },
        }),
      );
      assert.equal(back.version, updated.version + 4);
      expectError(
        await call(h, '/update/SX', { data: change, oldValues: { version: row.version } }),
        409,
        -1,
      );
      // Another partition cannot address the row.
      expectError(
        await call(other, '/update/SX', { data: change, oldValues: { version: back.version } }),
        404,
        -1,
      );
      expectError(await call(other, '/delete/SX', { data: { typedId: row.typedId } }), 404, -1);

      expectError(await call(h, '/delete/SX', { data: { typedId: row.typedId } }, shopReader), 403, -3);
      const [deleted] = okData(await call(h, '/delete/SX', { data: { typedId: row.typedId } }));
      assert.equal(deleted.typedId, row.typedId);
      // Its table had no other row and no meta: unknown again.
      expectError(await call(h, '/sellermanager.fetch/*/SX/Targets'), 404, -1, 'SXCategory');
      expectError(await call(h, '/delete/SX', { data: { typedId: row.typedId } }), 404, -1);
    });
  });

  describe('extension rows typed by their own table', () => {
    before(async () => {
      for (const [code, name, fieldType] of [
        ['PXAM', 'TypedCosts', 'NUMERIC'],
        ['CXAM', 'TypedTerms', 'INTEGER'],
        ['SXAM', 'TypedGoals', 'INTEGER'],
      ] as const) {
        okData(await call(h, `/add/${code}`, { data: { name, fieldName: 'attribute1', fieldType } }));
      }
      await seed(h, 'PX', [
        { name: 'TypedCosts', sku: 'TY-1', attribute1: '4.5' },
        { name: 'PlainCosts', sku: 'TY-1', attribute1: '4.5' },
        { name: 'TypedCosts', sku: 'TY-2', attribute1: '7' },
      ]);
      await seed(h, 'CX', [{ name: 'TypedTerms', customerId: 'TY-C', attribute1: '30' }]);
      await seed(h, 'SX', [
        { name: 'TypedGoals', sellerId: 'TY-S', attribute1: '42' },
        { name: 'PlainGoals', sellerId: 'TY-S', attribute1: '42' },
      ]);
    });

    const byName = (r: Reply) =>
      Object.fromEntries(
        okData(r).map((x: any) => [`${x.name}/${x.sku ?? x.sellerId ?? x.customerId}`, x.attribute1]),
      );

    test('fetch without a name filter types each row by its table, in every answer form', async () => {
      assert.deepEqual(byName(await call(h, '/fetch/PX', { data: { sku: ['TY-1', 'TY-2'] } })), {
        'TypedCosts/TY-1': 4.5,
        'PlainCosts/TY-1': '4.5',
        'TypedCosts/TY-2': 7,
      });
      const all = byName(await call(h, '/fetch/PX', {}));
      assert.equal(all['TypedCosts/TY-1'], 4.5);
      assert.equal(all['PlainCosts/TY-1'], '4.5');
      assert.deepEqual(byName(await call(h, '/fetch/SX', { data: { sellerId: 'TY-S' } })), {
        'TypedGoals/TY-S': 42,
        'PlainGoals/TY-S': '42',
      });
      assert.deepEqual(byName(await call(h, '/fetch/CX', { data: { customerId: 'TY-C' } })), {
        'TypedTerms/TY-C': 30,
      });
      const values = okData(
        await call(h, '/fetch/PX', {
          data: { sku: 'TY-1' },
          valueFields: ['name', 'attribute1'],
          sortBy: 'name',
        }),
      );
      assert.deepEqual(values, [
        ['PlainCosts', '4.5'],
        ['TypedCosts', 4.5],
      ]);
      // With the name in the filter, as before.
      assert.deepEqual(byName(await call(h, '/fetch/PX', { data: { name: 'TypedCosts', sku: 'TY-1' } })), {
        'TypedCosts/TY-1': 4.5,
      });
    });

    test('delete answers the row typed by its table', async () => {
      const px = okData(await call(h, '/delete/PX', { data: { name: 'TypedCosts', sku: 'TY-2' } }));
      assert.equal(px[0].attribute1, 7);
      const sx = okData(await call(h, '/delete/SX', { data: { name: 'TypedGoals', sellerId: 'TY-S' } }));
      assert.equal(sx[0].attribute1, 42);
      const plain = okData(await call(h, '/delete/SX', { data: { name: 'PlainGoals', sellerId: 'TY-S' } }));
      assert.equal(plain[0].attribute1, '42');
      const cx = okData(await call(h, '/delete/CX', { data: { name: 'TypedTerms', customerId: 'TY-C' } }));
      assert.equal(cx[0].attribute1, 30);
    });
  });

  describe('productmanager.bomtree', () => {
    before(async () => {
      await seed(h, 'P', [
        { sku: 'BIKE', label: 'Bike' },
        { sku: 'WHEEL', label: 'Wheel' },
        { sku: 'LONELY', label: 'No parts' },
        { sku: 'HUB', label: 'Hidden hub', userGroupViewDetails: 'SECRET' },
      ]);
      await seed(h, 'PBOME', [
        { sku: 'BIKE', componentSku: 'WHEEL', quantity: 2 },
        { sku: 'BIKE', componentSku: 'FRAME', quantity: '1' },
        { sku: 'WHEEL', componentSku: 'SPOKE', quantity: 32 },
        { sku: 'WHEEL', componentSku: 'HUB', quantity: 1 },
        { sku: 'HUB', componentSku: 'BEARING', quantity: 2.5 },
        // a cycle A → B → C → A, and a part made of itself
        { sku: 'CYC-A', componentSku: 'CYC-B', quantity: 1 },
        { sku: 'CYC-B', componentSku: 'CYC-C', quantity: 1 },
        { sku: 'CYC-C', componentSku: 'CYC-A', quantity: 1 },
        { sku: 'SELF', componentSku: 'SELF', quantity: 1 },
        // a chain deeper than the limit
        ...Array.from({ length: 55 }, (_, i) => ({
          sku: `DEEP-${i}`,
          componentSku: `DEEP-${i + 1}`,
          quantity: 1,
        })),
      ]);
      await seed(other, 'PBOME', [
        { sku: 'BIKE', componentSku: 'OTHER-PART', quantity: 1 },
        { sku: 'OTHER-ONLY', componentSku: 'X', quantity: 1 },
      ]);
    });

    const tree = async (sku: string, who: Who = admin, harness: Tenant = h) => {
      const data = okData(
        await call(harness, `/productmanager.bomtree/${encodeURIComponent(sku)}`, undefined, who),
      );
      assert.equal(data.length, 1);
      return data[0];
    };
    /** The tree with quantities as numbers, for comparison. */
    const shape = (n: any): any => ({
      ...n,
      quantity: n.quantity === null ? null : Number(n.quantity),
      components: n.components.map(shape),
    });

    test('a multi-level tree with labels from the products, components by sku', async () => {
      assert.deepEqual(shape(await tree('BIKE')), {
        sku: 'BIKE',
        label: 'Bike',
        quantity: 1,
        components: [
          { sku: 'FRAME', quantity: 1, components: [] },
          {
            sku: 'WHEEL',
            label: 'Wheel',
            quantity: 2,
            components: [
              {
                sku: 'HUB',
                label: 'Hidden hub',
                quantity: 1,
                components: [{ sku: 'BEARING', quantity: 2.5, components: [] }],
              },
              { sku: 'SPOKE', quantity: 32, components: [] },
            ],
          },
        ],
      });
      // A sub-assembly is a tree of its own.
      assert.deepEqual(
        (await tree('WHEEL')).components.map((c: any) => c.sku),
        ['HUB', 'SPOKE'],
      );
    });

    test('a cycle is reported where it closes and not expanded again', async () => {
      assert.deepEqual(shape(await tree('CYC-A')), {
        sku: 'CYC-A',
        quantity: 1,
        components: [
          {
            sku: 'CYC-B',
            quantity: 1,
            components: [
              {
                sku: 'CYC-C',
                quantity: 1,
                components: [{ sku: 'CYC-A', quantity: 1, cycle: true, components: [] }],
              },
            ],
          },
        ],
      });
      assert.deepEqual(shape(await tree('SELF')), {
        sku: 'SELF',
        quantity: 1,
        components: [{ sku: 'SELF', quantity: 1, cycle: true, components: [] }],
      });
    });

    test('the walk stops at depth 50 and marks where it was cut', async () => {
      let node = await tree('DEEP-0');
      let depth = 0;
      while (node.components.length > 0) {
        node = node.components[0];
        depth++;
      }
      assert.equal(depth, 50);
      assert.equal(node.sku, 'DEEP-50');
      assert.equal(node.truncated, true);
      const end = await tree('DEEP-40');
      let last = end;
      while (last.components.length > 0) last = last.components[0];
      assert.equal(last.sku, 'DEEP-55');
      assert.equal(last.truncated, undefined);
    });

    test('a product without a BOM is a leaf; an unknown sku is a 404', async () => {
      assert.deepEqual(await tree('LONELY'), {
        sku: 'LONELY',
        label: 'No parts',
        quantity: '1',
        components: [],
      });
      expectError(await call(h, '/productmanager.bomtree/NO-SUCH-SKU'), 404, -1);
      // The path names all it needs: a body holds operationType and an empty data at most.
      okData(await call(h, '/productmanager.bomtree/LONELY', { operationType: 'fetch', data: {} }));
      expectError(await call(h, '/productmanager.bomtree/LONELY', { bogus: true }), 400, -4, 'bogus');
      expectError(await call(h, '/productmanager.bomtree/LONELY', [1, 2]), 400, -4);
    });

    test('open to every user, with labels of their groups only; writing the BOM needs PRODUCT_EDIT', async () => {
      expectError(await call(h, '/productmanager.bomtree/BIKE', undefined, null), 401, -7);
      const seen = await tree('WHEEL', plain);
      assert.deepEqual(
        seen.components.map((c: any) => [c.sku, c.label]),
        [
          ['HUB', undefined],
          ['SPOKE', undefined],
        ],
      );
      assert.equal((await tree('WHEEL', member)).components[0].label, 'Hidden hub');
      // The lines of a hidden product are its own (PBOME rows describe their sku): not read, not
      // expanded, and its tree is a 404 as for any product that does not exist.
      assert.deepEqual(seen.components[0].components, []);
      assert.deepEqual(
        (await tree('WHEEL', member)).components[0].components.map((c: any) => c.sku),
        ['BEARING'],
      );
      expectError(await call(h, '/productmanager.bomtree/HUB', undefined, plain), 404, -1);
      assert.equal((await tree('HUB', member)).components.length, 1);
      const refused = await call(
        h,
        '/integrate/PBOME',
        [{ data: { sku: 'BIKE', componentSku: 'BELL', quantity: 1 } }],
        plain,
      );
      expectError(refused, 403, -3);
      assert.match(refused.body.response.data, /PRODUCT_EDIT/);
      expectError(
        await call(h, '/integrate/PBOME', [
          { data: { sku: 'BIKE', componentSku: 'BELL', quantity: 'lots' } },
        ]),
        400,
        -4,
        'quantity',
      );
      const noComponent = await call(h, '/integrate/PBOME', [{ data: { sku: 'BIKE', quantity: 1 } }]);
      expectError(noComponent, 400, -4);
      assert.match(noComponent.body.response.data, /componentSku/, 'the whole business key is asked for');
    });

    test("another partition's BOM lines never show up", async () => {
      assert.deepEqual(
        (await tree('BIKE', admin, other)).components.map((c: any) => c.sku),
        ['OTHER-PART'],
      );
      expectError(await call(h, '/productmanager.bomtree/OTHER-ONLY'), 404, -1);
      expectError(await call(other, '/productmanager.bomtree/WHEEL'), 404, -1);
    });
  });

  describe('product competition', () => {
    before(async () => {
      await seed(h, 'P', [
        { sku: 'CP-1', label: 'Set A' },
        { sku: 'CP-2', label: 'Set A' },
        { sku: 'CP-3', label: 'Set B' },
        { sku: 'CP-4', label: 'Set A', userGroupViewDetails: 'SECRET' },
      ]);
      await seed(other, 'P', [{ sku: 'CP-9', label: 'Set A' }]);
      okData(
        await call(other, '/productmanager.importproductcompetition', {
          data: [{ sku: 'CP-9', competitor: 'ACME', competitionDate: '2024-01-01', price: 1 }],
        }),
      );
    });

    const importRows = (body: unknown, who: Who | null = admin) =>
      call(h, '/productmanager.importproductcompetition', body, who);
    const fetchAll = (body: unknown = { sortBy: ['sku', 'competitor'] }, who: Who | null = admin) =>
      call(h, '/productmanager.fetchproductcompetition', body, who);
    const counts = (inserted: number, updated: number, errors: object[] = []) => ({
      insertedRecords: inserted,
      updatedRecords: updated,
      failedRecords: new Set(errors.map((e: any) => e.row)).size,
      errors,
      errorsTruncated: false,
    });

    test('import upserts by sku + competitor + competitionDate and counts inserts and updates', async () => {
      const first = await importRows({
        data: [
          { sku: 'CP-1', competitor: 'ACME', competitionDate: '2024-01-01', price: '10.50', currency: 'EUR' },
          { sku: 'CP-2', competitor: 'ACME', competitionDate: '2024-01-01', price: 20, currency: 'EUR' },
          { sku: 'CP-3', competitor: 'Globex', competitionDate: '2024-01-01', price: 5 },
        ],
      });
      assert.deepEqual(okData(first), [counts(3, 0)]);
      const second = await importRows([
        { data: { sku: 'CP-1', competitor: 'ACME', competitionDate: '2024-01-01', price: 11 } },
        { data: { sku: 'CP-1', competitor: 'ACME', competitionDate: '2024-02-01', price: 12 } },
        { data: { sku: 'CP-4', competitor: 'ACME', competitionDate: '2024-01-01', price: 40 } },
      ]);
      assert.deepEqual(okData(second), [counts(2, 1)]);
      // A row naming a record that is not there names the field that named it.
      const missing = okData(await importRows([{ data: { typedId: '999999.PCOMP', price: 2 } }]))[0];
      assert.deepEqual(
        missing.errors.map((e: any) => [e.row, e.field]),
        [[0, 'typedId']],
      );
      const rows = okData(
        await fetchAll({
          sortBy: ['sku', 'competitionDate'],
          valueFields: ['sku', 'competitionDate', 'price', 'currency'],
        }),
      );
      assert.deepEqual(
        rows.map(([sku, date, price, currency]: any[]) => [sku, date, Number(price), currency]),
        [
          ['CP-1', '2024-01-01', 11, 'EUR'],
          ['CP-1', '2024-02-01', 12, null],
          ['CP-2', '2024-01-01', 20, 'EUR'],
          ['CP-3', '2024-01-01', 5, null],
          ['CP-4', '2024-01-01', 40, null],
        ],
      );
    });

    test('fetchproductcompetition filters by typed fields and pages', async () => {
      const dear = await fetchAll({
        data: adv(
          'and',
          { fieldName: 'price', operator: 'greaterThan', value: 11.5 },
          { fieldName: 'competitionDate', operator: 'lessThan', value: '2024-02-01' },
        ),
        sortBy: 'sku',
        resultFields: ['sku'],
      });
      assert.deepEqual(okData(dear), [{ sku: 'CP-2' }, { sku: 'CP-4' }]);
      const page = await fetchAll({ sortBy: '-price', startRow: 0, endRow: 2, valueFields: ['sku'] });
      assert.deepEqual(okData(page), [['CP-4'], ['CP-2']]);
      assert.equal(page.body.response.totalRows, 5);
    });

    test('fetchproductsetcompetition answers the rows of the visible products with that label', async () => {
      const setA = await call(
        h,
        `/productmanager.fetchproductsetcompetition/${encodeURIComponent('Set A')}`,
        {
          sortBy: ['sku', 'competitionDate'],
          valueFields: ['sku', 'competitionDate'],
        },
      );
      assert.deepEqual(okData(setA), [
        ['CP-1', '2024-01-01'],
        ['CP-1', '2024-02-01'],
        ['CP-2', '2024-01-01'],
        ['CP-4', '2024-01-01'],
      ]);
      const filtered = await call(h, '/productmanager.fetchproductsetcompetition/Set%20A', {
        data: { competitionDate: '2024-02-01' },
        resultFields: ['sku', 'price'],
      });
      assert.deepEqual(
        okData(filtered).map((r: any) => [r.sku, Number(r.price)]),
        [['CP-1', 12]],
      );
      // A user outside the group does not get the hidden product's rows through the set.
      const forReader = await call(
        h,
        '/productmanager.fetchproductsetcompetition/Set%20A',
        { valueFields: ['sku'], sortBy: 'sku' },
        shopReader,
      );
      assert.deepEqual(okData(forReader), [['CP-1'], ['CP-1'], ['CP-2']]);
      // A label no visible product has names no set (case-sensitive): a 404 naming it.
      for (const unknown of ['set%20a', 'Set%20C'])
        expectError(await call(h, `/productmanager.fetchproductsetcompetition/${unknown}`), 404, -1, 'label');
    });

    test('/fetch/PCOMPCO lists the product sets: the labels of the visible products, paged and filtered', async () => {
      const sets = (body: object, who: Who = admin) =>
        call(
          h,
          '/fetch/PCOMPCO',
          {
            data: {
              _constructor: 'AdvancedCriteria',
              operator: 'and',
              criteria: [{ fieldName: 'label', operator: 'startsWith', value: 'Set ' }],
            },
            ...body,
          },
          who,
        );
      const all = await sets({});
      assert.deepEqual(okData(all), [{ label: 'Set A' }, { label: 'Set B' }]);
      assert.equal(all.body.response.totalRows, 2);
      assert.deepEqual(okData(await sets({ valueFields: ['label'], sortBy: '-label', startRow: 1 })), [
        ['Set A'],
      ]);
      // Each label names a set that fetchproductsetcompetition answers.
      for (const { label } of okData(all))
        okData(await call(h, `/productmanager.fetchproductsetcompetition/${encodeURIComponent(label)}`));
      expectError(await sets({ resultFields: ['sku'] }), 400, -4, 'resultFields');
      expectError(await sets({ sortBy: 'sku' }), 400, -4, 'sortBy');
      expectError(await sets({}, plain), 403, -3);
    });

    test('a bad row is counted as failed with its error, the good rows of the call are written', async () => {
      const noDate = okData(await importRows({ data: [{ sku: 'CP-1', competitor: 'ACME', price: 1 }] }))[0];
      assert.equal(noDate.failedRecords, 1);
      assert.equal(noDate.errors[0].row, 0);
      assert.match(noDate.errors[0].message, /competitionDate/, 'the whole business key is asked for');
      assert.deepEqual(
        okData(
          await importRows({ data: [{ sku: 'CP-1', competitor: 'ACME', competitionDate: '2024-13-01' }] }),
        ),
        [
          counts(0, 0, [
            { row: 0, field: 'competitionDate', message: '"2024-13-01" is not a date (YYYY-MM-DD)' },
          ]),
        ],
      );
      const mixed = okData(
        await importRows([
          { data: { sku: 'CP-3', competitor: 'NEW', competitionDate: '2024-01-01', price: 1 } },
          { data: { sku: 'CP-1', competitor: 'ACME', competitionDate: '2024-01-01', price: 'cheap' } },
          { data: { sku: 'CP-1', competitor: 'NEW', competitionDate: 'bad' } },
          { data: { sku: 'CP-4', competitor: 'NEW', competitionDate: '2024-01-01', colour: 'red' } },
          { data: { sku: 'CP-2', competitor: 'NEW', competitionDate: '2024-01-01', price: 2 } },
        ]),
      )[0];
      assert.deepEqual(
        {
          ...mixed,
          errors: mixed.errors.map((e: any) => [e.row, e.field]),
        },
        {
          ...counts(2, 0, [{ row: 1 }, { row: 2 }, { row: 3 }]),
          errors: [
            [1, 'price'],
            [2, 'competitionDate'],
            [3, 'colour'],
          ],
        },
      );
      assert.deepEqual(
        okData(await fetchAll({ data: { competitor: 'NEW' }, valueFields: ['sku'], sortBy: 'sku' })),
        [['CP-2'], ['CP-3']],
        'the good rows are written, the bad ones not',
      );
      const price = okData(
        await fetchAll({ data: { sku: 'CP-1', competitor: 'ACME', competitionDate: '2024-01-01' } }),
      );
      assert.equal(Number(price[0].price), 11, 'the refused row changed nothing');
      // Gone again, for the tests that count the rows.
      for (const r of okData(await fetchAll({ data: { competitor: 'NEW' } })))
        okData(await call(h, '/delete/PCOMP', { data: { typedId: r.typedId } }));
      // A body that is not a list of records is refused whole.
      expectError(await importRows({}), 400, -4, 'data');
      expectError(await importRows([1, 2]), 400, -4);
      expectError(await importRows({ data: 'x' }), 400, -4, 'data');
      expectError(await fetchAll({ data: { colour: 'red' } }), 400, -4, 'colour');
      expectError(
        await call(h, '/productmanager.fetchproductsetcompetition/Set%20A', {
          data: adv('and', { fieldName: 'price', operator: 'iContains', value: '1' }),
        }),
        400,
        -4,
        'price',
      );
    });

    test('PRODUCTCOMPETITION_FETCH to read, PRODUCTCOMPETITION_EDIT to import, credentials always', async () => {
      const row = { data: [{ sku: 'CP-1', competitor: 'ACME', competitionDate: '2024-03-01', price: 1 }] };
      expectError(await importRows(row, null), 401, -7);
      expectError(await fetchAll({}, null), 401, -7);
      expectError(await call(h, '/productmanager.fetchproductsetcompetition/Set%20A', {}, null), 401, -7);
      for (const r of [
        await importRows(row, plain),
        await fetchAll({}, plain),
        await call(h, '/productmanager.fetchproductsetcompetition/Set%20A', {}, plain),
      ]) {
        expectError(r, 403, -3);
        assert.match(r.body.response.data, /PRODUCTCOMPETITION_FETCH|PRODUCTCOMPETITION_EDIT/);
      }
      expectError(await importRows(row, shopReader), 403, -3);
      // CP-4's row follows its product, hidden from the reader by its user group.
      assert.equal(okData(await fetchAll({}, shopReader)).length, 4);
      assert.deepEqual(okData(await importRows(row, integrator)), [counts(1, 0)]);
      // A row of a product hidden from the importer is his row's error, naming the field (sku).
      const hidden = okData(
        await importRows(
          [{ data: { sku: 'CP-4', competitor: 'HIDDEN', competitionDate: '2024-01-01', price: 1 } }],
          integrator,
        ),
      )[0];
      assert.deepEqual(
        hidden.errors.map((e: any) => [e.row, e.field]),
        [[0, 'sku']],
      );
    });

    test('imports racing on one new key all succeed, and write it once', async () => {
      for (let round = 0; round < 4; round++) {
        const competitor = `RACE-${round}`;
        const replies = await Promise.all(
          [1, 2, 3, 4, 5, 6].map((price) =>
            importRows([{ data: { sku: 'CP-3', competitor, competitionDate: '2024-05-01', price } }]),
          ),
        );
        for (const r of replies) assert.equal(okData(r)[0].failedRecords, 0);
        const rows = okData(await fetchAll({ data: { competitor }, valueFields: ['sku', 'version'] }));
        assert.equal(rows.length, 1);
        assert.equal(rows[0][1], 5, 'six writes of one record: versions 0..5');
      }
      for (const r of okData(
        await fetchAll({ data: { competitor: ['RACE-0', 'RACE-1', 'RACE-2', 'RACE-3'] } }),
      ))
        okData(await call(h, '/delete/PCOMP', { data: { typedId: r.typedId } }));
    });

    test("another partition's competition rows and products never show up", async () => {
      const skus = okData(await fetchAll({ valueFields: ['sku'] })).map(([s]: string[]) => s);
      assert.ok(!skus.includes('CP-9'), skus.join());
      const set = okData(
        await call(h, '/productmanager.fetchproductsetcompetition/Set%20A', { valueFields: ['sku'] }),
      );
      assert.ok(!set.some(([s]: string[]) => s === 'CP-9'));
      assert.deepEqual(
        okData(
          await call(other, '/productmanager.fetchproductsetcompetition/Set%20A', { valueFields: ['sku'] }),
        ),
        [['CP-9']],
      );
    });
  });
});

describe('productmanager.bomtree size limit', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { MAX_PAGE_SIZE: '5' } });
  });
  after(() => h.close());

  test('a tree of more lines than the page maximum is refused with a -4, not walked whole', async () => {
    await seed(
      h,
      'PBOME',
      Array.from({ length: 6 }, (_, i) => ({ sku: 'BIG', componentSku: `PART-${i}`, quantity: 1 })),
    );
    const r = await call(h, '/productmanager.bomtree/BIG');
    expectError(r, 400, -4, 'sku');
    assert.match(r.body.response.data, /more than 5 lines/);
    await call(h, '/delete/PBOME', { data: { sku: 'BIG', componentSku: 'PART-5' } });
    assert.equal(okData(await call(h, '/productmanager.bomtree/BIG'))[0].components.length, 5);
  });
});
