// What a real client of the interface sends, with the names it expects (BASE_PATH=/pricefx,
// PRODUCT_TOKEN=PriceFx), over HTTP on both databases: `null` paging and optional fields in
// fetch-style bodies, `POST /login`, api tokens as the jwt cookie without CSRF (sessions still need
// it), the upload slot's `id`, JSON2 lookup tables, and the interface release clients gate features by.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pkg from '../../package.json' with { type: 'json' };
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { ConfigError } from '../../src/config.ts';
import { testConfig } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';
import { NULL_FETCH_BODY } from '../helpers/criteria.ts';

const ENV = { BASE_PATH: '/pricefx', PRODUCT_TOKEN: 'PriceFx' };
const admin = { user: ADMIN, password: ADMIN_PASSWORD };

/** The counts of a load result. */
const pick = (r: Record<string, unknown>) => ({
  inserted: r.inserted,
  updated: r.updated,
  invalid: r.invalid,
});

/** The fetch body the client builds when its caller gives a filter but no page size. */
function clientFetchBody(criteria: object[]): object {
  return {
    endRow: null,
    oldValues: null,
    operationType: 'fetch',
    startRow: null,
    textMatchStyle: 'exact',
    data: { _constructor: 'AdvancedCriteria', operator: 'and', criteria },
  };
}

describe('drop-in for existing clients (BASE_PATH=/pricefx PRODUCT_TOKEN=PriceFx)', () => {
  let h: Harness;
  let jwt: Record<string, string>;
  before(async () => {
    h = await startHarness({ env: ENV });
    jwt = { 'X-PriceFx-jwt': (await h.login()).token };
  });
  after(() => h.close());

  test('the harness speaks the client’s paths', () => {
    assert.equal(h.config.basePath, '/pricefx');
    assert.equal(h.config.productToken, 'PriceFx');
  });

  test('endRow/startRow null (and every optional field null) mean absent on every fetch-style operation', async () => {
    okData(
      await h.call('/add/P', {
        headers: jwt,
        body: [{ data: { sku: 'NULL-1', label: 'one' } }, { data: { sku: 'NULL-2', label: 'two' } }],
      }),
    );
    okData(await h.call('/add/C', { headers: jwt, body: { data: { customerId: 'CUST-1', name: 'c' } } }));
    const products = [{ fieldName: 'sku', operator: 'startsWith', value: 'NULL-' }];
    for (const [path, criteria, expected] of [
      ['/fetch/P', products, 2],
      ['/productmanager.fetchformulafilteredproducts', products, 2],
      ['/fetch/C', [{ fieldName: 'customerId', operator: 'equals', value: 'CUST-1' }], 1],
      ['/customermanager.fetchformulafilteredcustomers', [], 1],
      ['/fetch/PAM', [], 0],
      ['/fetch/CAM', [{ fieldName: 'fieldName', operator: 'equals', value: 'attribute1' }], 0],
      ['/lookuptablemanager.fetch', [], 0],
      ['/accountmanager.fetchusers', [{ fieldName: 'loginName', operator: 'equals', value: ADMIN }], 1],
    ] as const) {
      const r = await h.call(path, { headers: jwt, body: clientFetchBody([...criteria]) });
      assert.equal(okData(r).length, expected, `${path}: ${r.text}`);
      assert.equal(r.body.response.startRow, 0, path);
      assert.equal(r.body.response.endRow, expected, path);
    }
    // Every optional field of the fetch body as null.
    const all = await h.call('/fetch/P', {
      headers: jwt,
      body: NULL_FETCH_BODY,
    });
    assert.ok(okData(all).length >= 2);
    // null is "absent", not a way around validation: a real value is still checked.
    const bad = await h.call('/fetch/P', { headers: jwt, body: { startRow: null, endRow: 'ten' } });
    assert.equal(bad.status, 400, bad.text);
    assert.ok(bad.body.response.errors.endRow, bad.text);
    // A page given beside nulls is honoured.
    const page = await h.call('/fetch/P', {
      headers: jwt,
      body: { ...clientFetchBody(products), endRow: 1, sortBy: null },
    });
    assert.deepEqual(
      okData(page).map((p) => p.sku),
      ['NULL-1'],
    );
    assert.equal(page.body.response.totalRows, 2);
  });

  test('null means absent inside nested objects the schema declares: loaddata options, query paging, meta pipeline', async () => {
    const load = (options: unknown, rows: unknown[][]) =>
      h.call('/loaddata/P', {
        headers: jwt,
        body: { data: { header: ['sku', 'label'], data: rows, options } },
      });
    assert.deepEqual(pick(okData(await load(null, [['NEST-1', 'first']]))[0]), {
      inserted: 1,
      updated: 0,
      invalid: 0,
    });
    // detectJoinFields null is absent, so the given join fields apply: an update, not a duplicate.
    assert.deepEqual(
      pick(okData(await load({ detectJoinFields: null, joinFields: ['sku'] }, [['NEST-1', 'second']]))[0]),
      { inserted: 0, updated: 1, invalid: 0 },
    );
    assert.deepEqual(
      pick(
        okData(
          await load({ detectJoinFields: true, joinFields: null, conditionRecords: null }, [
            ['NEST-1', 'third'],
          ]),
        )[0],
      ),
      { inserted: 0, updated: 1, invalid: 0 },
    );
    // A real value is still checked, and named with its path.
    const bad = await load({ detectJoinFields: 'yes' }, [['NEST-1', 'x']]);
    assert.equal(bad.status, 400, bad.text);
    assert.ok(bad.body.response.errors['data.options.detectJoinFields'], bad.text);

    const q = await h.call('/queryapi.execute', {
      headers: jwt,
      body: {
        data: {
          source: 'P',
          filter: { sku: 'NEST-1' },
          select: null,
          sortBy: null,
          startRow: null,
          endRow: null,
          valueFields: null,
        },
      },
    });
    assert.deepEqual(
      okData(q).map((r) => [r.sku, r.label]),
      [['NEST-1', 'third']],
    );
    assert.deepEqual([q.body.response.startRow, q.body.response.endRow], [0, 1]);
    const paged = await h.call('/queryapi.execute', {
      headers: jwt,
      body: { data: { source: 'P', startRow: null, endRow: null, sortBy: 'sku' } },
    });
    assert.ok(okData(paged).length >= 3, paged.text);
    // The source is required: null there is not absent, it is refused naming the field.
    const noSource = await h.call('/queryapi.execute', { headers: jwt, body: { data: { source: null } } });
    assert.equal(noSource.status, 400, noSource.text);
    assert.ok(noSource.body.response.errors.source, noSource.text);

    // meta: pipeline null is the call without a pipeline (the source kinds); a pipeline nested two
    // levels down with null paging and sort is described like the same pipeline without them.
    const kinds = okData(await h.call('/queryapi.meta', { headers: jwt, body: {} }));
    assert.deepEqual(
      okData(await h.call('/queryapi.meta', { headers: jwt, body: { data: { pipeline: null } } })),
      kinds,
    );
    const columns = okData(
      await h.call('/queryapi.meta', { headers: jwt, body: { data: { pipeline: { source: 'P' } } } }),
    );
    assert.ok(columns.some((c) => c.name === 'sku'));
    assert.deepEqual(
      okData(
        await h.call('/queryapi.meta', {
          headers: jwt,
          body: {
            data: { pipeline: { source: 'P', startRow: null, endRow: null, sortBy: null, filter: null } },
          },
        }),
      ),
      columns,
    );
  });

  test('a null the body means stays: a criterion on null, a record value cleared by an update', async () => {
    const [p] = okData(
      await h.call('/add/P', {
        headers: jwt,
        body: { data: { sku: 'KEEP-NULL', label: 'l', attribute1: 'a' } },
      }),
    );
    // In a fetch body's criteria, null is a value to compare with, not an absent field.
    const criteria = {
      _constructor: 'AdvancedCriteria',
      operator: 'and',
      criteria: [
        { fieldName: 'sku', operator: 'startsWith', value: 'KEEP-' },
        { fieldName: 'attribute1', operator: 'equals', value: null },
      ],
    };
    const fetchNull = () =>
      h.call('/fetch/P', { headers: jwt, body: { ...clientFetchBody([]), data: criteria } });
    assert.deepEqual(okData(await fetchNull()), []);
    // In the record of an update, null clears the field.
    const [updated] = okData(
      await h.call('/update/P', {
        headers: jwt,
        body: { data: { typedId: p.typedId, attribute1: null }, oldValues: { version: p.version } },
      }),
    );
    assert.equal(updated.attribute1, null);
    assert.deepEqual(
      okData(await fetchNull()).map((r) => r.sku),
      ['KEEP-NULL'],
    );
  });

  test('POST /login with Basic answers like /login/extended: cookie, header, csrfToken, user', async () => {
    const r = await h.call('/login', { basic: admin });
    const [user] = okData(r);
    assert.equal(user.loginName, ADMIN);
    assert.equal(typeof user.id, 'number');
    assert.equal(user.typedId, `${user.id}.U`);
    assert.equal(typeof r.body.response.csrfToken, 'string');
    const token = r.headers.get('x-pricefx-jwt');
    assert.ok(token);
    const cookies = r.headers.getSetCookie();
    assert.ok(
      cookies.some((c) => c.startsWith(`X-PriceFx-jwt=${token}`)),
      cookies.join('\n'),
    );
    assert.ok(
      cookies.some((c) => c.startsWith('X-PriceFx-Csrf-Token=')),
      cookies.join('\n'),
    );
    const extended = okData(await h.call('/login/extended', { basic: admin }))[0];
    assert.deepEqual(Object.keys(user).sort(), Object.keys(extended).sort());
    assert.deepEqual(user.extendedData, extended.extendedData);
    // Wrong credentials: 401, like every Basic call.
    const wrong = await h.call('/login', { basic: { user: ADMIN, password: 'nope-nope' } });
    assert.deepEqual([wrong.status, wrong.body.response.status], [401, -5]);
  });

  test('an api token sent as the jwt cookie can POST without CSRF; a session cookie still needs it', async () => {
    const t = await h.call('/accountmanager.getjsonwebtoken', { basic: admin });
    const apiToken = okData(t)[0].token as string;
    const asCookie = { cookie: `X-PriceFx-jwt=${apiToken}` };
    const body = { data: { sku: 'CSRF-API', label: 'api' } };
    okData(await h.call('/add/P', { headers: asCookie, body }));
    okData(await h.call('/fetch/P', { headers: asCookie, body: clientFetchBody([]) }));

    const session = await h.login();
    const sessionCookie = { cookie: `X-PriceFx-jwt=${session.token}` };
    const refused = await h.call('/fetch/P', { headers: sessionCookie, body: {} });
    assert.deepEqual([refused.status, refused.body.response.status], [403, -3]);
    const wrongCsrf = await h.call('/fetch/P', {
      headers: { ...sessionCookie, 'X-PriceFx-Csrf-Token': 'forged' },
      body: {},
    });
    assert.equal(wrongCsrf.status, 403);
    okData(
      await h.call('/fetch/P', {
        headers: { ...sessionCookie, 'X-PriceFx-Csrf-Token': session.csrf },
        body: {},
      }),
    );
    // The same session token as a header is not browser-held: no CSRF.
    okData(await h.call('/fetch/P', { headers: { 'X-PriceFx-jwt': session.token }, body: {} }));
  });

  test('/uploadmanager.newuploadslot answers the slot as data[0].id (and slotId, the same value)', async () => {
    for (const method of ['POST', 'GET']) {
      const [slot] = okData(await h.call('/uploadmanager.newuploadslot', { method, headers: jwt }));
      assert.equal(typeof slot.id, 'string', method);
      assert.equal(slot.id, slot.slotId);
      const progress = okData(await h.call(`/uploadmanager.progress/${slot.id}`, { headers: jwt }))[0];
      assert.equal(progress.id, slot.id);
      okData(await h.call(`/uploadmanager.deleteslot/${slot.id}`, { headers: jwt }));
    }
  });

  test('JSON2 lookup tables: created, filled and read as the client does', async () => {
    const M = '/lookuptablemanager';
    const [table] = okData(
      await h.call(`${M}.add`, {
        headers: jwt,
        body: { data: { uniqueName: 'client-json2', label: 'JSON2', type: 'JSON2' } },
      }),
    );
    assert.equal(table.numberOfKeyFields, 2);
    okData(
      await h.call(`${M}.integrate/${table.id}`, {
        headers: jwt,
        body: { data: { key1: 'EU', key2: 'gold', value: { discount: 0.1 } } },
      }),
    );
    const rows = okData(
      await h.call(`${M}.fetch/${table.id}`, {
        headers: jwt,
        body: clientFetchBody([{ fieldName: 'key1', operator: 'equals', value: 'EU' }]),
      }),
    );
    assert.deepEqual(
      rows.map((r) => [r.key1, r.key2, r.value, r.typedId]),
      [['EU', 'gold', { discount: 0.1 }, `${rows[0].id}.JLTV2`]],
    );
    // Changed through a data change request like the values of every other lookup table.
    okData(
      await h.call('/add/DCRT', {
        headers: jwt,
        body: { data: { uniqueName: 'json2-changes', targetType: 'JLTV2', lookupTable: 'client-json2' } },
      }),
    );
    const [dcr] = okData(
      await h.call('/dcrmanager.add', {
        headers: jwt,
        body: { data: { dcrType: 'json2-changes', label: 'c' } },
      }),
    );
    okData(
      await h.call(`/dcrmanager.add/${dcr.id}`, {
        headers: jwt,
        body: { data: [{ changeType: 'ADD', key1: 'US', key2: 'gold', value: [1, 2] }] },
      }),
    );
    assert.equal(okData(await h.call(`/dcrmanager.submit/${dcr.id}`, { headers: jwt }))[0].status, 'APPLIED');
    const us = okData(
      await h.call(`${M}.fetch/${table.id}`, { headers: jwt, body: { data: { key1: 'US' } } }),
    );
    assert.deepEqual(
      us.map((r) => [r.key1, r.key2, r.value, r.typedId]),
      [['US', 'gold', [1, 2], `${us[0].id}.JLTV2`]],
    );
  });

  test('extendedData.Release is the interface release (default 15.2); our own version apart', async () => {
    const [user] = okData(await h.call('/login', { basic: admin }));
    assert.equal(user.extendedData.Release, '15.2');
    assert.equal(user.extendedData.ratecardVersion, pkg.version);
    assert.equal(user.extendedData.partition, h.partition);
    assert.ok(Array.isArray(user.extendedData.permissions));
  });
});

describe('INTERFACE_RELEASE', () => {
  test('is reported as extendedData.Release', async () => {
    const h = await startHarness({ env: { ...ENV, INTERFACE_RELEASE: '16.1' } });
    try {
      const [user] = okData(await h.call('/login', { basic: admin }));
      assert.equal(user.extendedData.Release, '16.1');
      assert.equal(user.extendedData.ratecardVersion, pkg.version);
    } finally {
      await h.close();
    }
  });

  test('a value that is not a release number stops start-up with a message naming it', () => {
    assert.throws(() => testConfig({ INTERFACE_RELEASE: 'latest' }), ConfigError);
    assert.throws(() => testConfig({ INTERFACE_RELEASE: 'latest' }), /INTERFACE_RELEASE/);
  });
});
