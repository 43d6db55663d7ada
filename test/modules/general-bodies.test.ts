// Bodies of the general operations and their neighbours as clients send them (audit "dropin"): a
// delete by filter without a filter is refused, not a truncation (general and lookup table values);
// the fetch body's fields, and null for them (issue 19), on a one-record fetch, massedit and
// accountmanager.audit; formulamanager.execute without a body; /fetch/LT through the general fetch
// (writes of LT stay refused); findref answers the paging fields of a list.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { CLIENT_READ_BODY, NULL_FETCH_BODY } from '../helpers/criteria.ts';

const M = '/lookuptablemanager';

describe('general bodies', () => {
  let h: Harness;
  let api: Client;
  let token: string;
  before(async () => {
    h = await startHarness();
    token = (await h.login()).token;
    api = (path, body, headers = {}) =>
      h.call(path, {
        headers: { 'X-Ratecard-jwt': token, ...headers },
        ...(body === undefined ? {} : { body }),
      });
  });
  after(() => h.close());

  const count = async (tc: string, data: object): Promise<number> =>
    (await api(`/fetch/${tc}`, { data })).body.response.totalRows as number;

  test('a delete by filter without a filter is a -4 naming data; {data: {}} deletes every record', async () => {
    okData(await api('/add/P', [{ data: { sku: 'DEL-A' } }, { data: { sku: 'DEL-B' } }]));
    const bodies: [string, unknown][] = [
      ['none', undefined],
      ['{}', {}],
      ['data null', { data: null }],
      [
        'fetch fields only',
        { operationType: 'fetch', textMatchStyle: 'exact', startRow: null, oldValues: null },
      ],
    ];
    for (const path of ['/delete/P/batch/forcefilter', '/delete/P/batch']) {
      for (const [what, body] of bodies) {
        const r = await api(path, body);
        expectError(r, 400, -4, 'data');
        assert.match(r.body.response.data, /filter is required/, `${path} ${what}`);
      }
      // Also with a JSON content type and no body at all.
      const raw = await h.call(path, {
        headers: { 'X-Ratecard-jwt': token, 'content-type': 'application/json' },
        raw: '',
      });
      expectError(raw, 400, -4);
      assert.equal(await count('P', { sku: ['DEL-A', 'DEL-B'] }), 2, `${path}: nothing deleted`);
    }
    // A filter deletes its matches; an explicit empty criteria object is the request to delete all.
    assert.equal(
      okData(await api('/delete/P/batch/forcefilter', { data: { sku: 'DEL-A' } }))[0].deletedRecords,
      1,
    );
    assert.ok(okData(await api('/delete/P/batch/forcefilter', { data: {} }))[0].deletedRecords >= 1);
    assert.equal(await count('P', {}), 0);
  });

  test("a lookup table's delete by filter without a filter is a -4 naming data; {data: {}} empties it", async () => {
    const [t] = okData(
      await api(`${M}.add`, { data: { uniqueName: 'DelT', label: 'DelT', type: 'SIMPLE' } }),
    );
    okData(
      await api(`${M}.add/${t.id}`, [
        { data: { name: 'a', value: '1' } },
        { data: { name: 'b', value: '2' } },
      ]),
    );
    for (const body of [undefined, {}, { data: null }]) {
      expectError(await api(`${M}.delete/${t.id}/batch`, body), 400, -4, 'data');
    }
    assert.equal(okData(await api(`${M}.fetch/${t.id}`)).length, 2);
    assert.equal(okData(await api(`${M}.delete/${t.id}/batch`, { data: {} }))[0].deletedRecords, 2);
    assert.equal(okData(await api(`${M}.fetch/${t.id}`)).length, 0);
  });

  test('fetch by id takes the fetch body a client sends everywhere, with nulls or its first page; another page, a value or unknown field is a -4', async () => {
    const [p] = okData(await api('/add/P', { data: { sku: 'ONE-1', label: 'one' } }));
    const nulls = { ...NULL_FETCH_BODY, operationType: 'fetch' };
    for (const body of [
      nulls,
      { ...nulls, textMatchStyle: 'exact', oldValues: {}, data: {} },
      { oldValues: null },
      { startRow: 0, endRow: 300 },
      { operationType: 'fetch', startRow: 0, endRow: 75, textMatchStyle: 'exact', data: {}, oldValues: null },
      { startRow: 0 },
    ]) {
      const [got] = okData(await api(`/fetch/P/${p.id}`, body));
      assert.equal(got.sku, 'ONE-1', JSON.stringify(body));
    }
    expectError(await api(`/fetch/P/${p.id}`, { startRow: 5 }), 400, -4, 'startRow');
    expectError(await api(`/fetch/P/${p.id}`, { startRow: 0, endRow: 0 }), 400, -4, 'endRow');
    expectError(await api(`/fetch/P/${p.id}`, { sortBy: 'sku' }), 400, -4, 'sortBy');
    expectError(await api(`/fetch/P/${p.id}`, { data: { sku: 'x' } }), 400, -4, 'data');
    expectError(await api(`/fetch/P/${p.id}`, { bogus: 1 }), 400, -4, 'bogus');
    // oldValues is an object or null on every read too (interface.md "Filter and paging body").
    for (const oldValues of ['x', 5, [1], true]) {
      expectError(await api('/fetch/P', { oldValues }), 400, -4, 'oldValues');
      expectError(await api('/fetch', { oldValues }), 400, -4, 'oldValues');
    }
    assert.ok(okData(await api('/fetch/P', { oldValues: { version: 1 } })).length > 0);
  });

  test("a write's oldValues is an object (or null) and its operation fields text: else a -4 naming them", async () => {
    const [p] = okData(await api('/add/P', { data: { sku: 'WRAP-1' } }));
    const cases: [string, unknown, string][] = [
      ['/add/P', { data: { sku: 'WRAP-2' }, oldValues: 5 }, 'oldValues'],
      ['/integrate/P', { data: { sku: 'WRAP-2' }, oldValues: 'x' }, 'oldValues'],
      ['/add/P', { data: { sku: 'WRAP-2' }, operationType: { x: 1 } }, 'operationType'],
      [
        '/add/P',
        [{ data: { sku: 'WRAP-2' } }, { data: { sku: 'WRAP-3' }, operation: [1, 2] }],
        '1.operation',
      ],
      ['/update/P', { data: { typedId: p.typedId, label: 'x' }, operation: { x: 1 } }, 'operation'],
      ['/delete/P', { data: { typedId: p.typedId }, operation: { a: 1 } }, 'operation'],
    ];
    for (const [path, body, field] of cases) expectError(await api(path, body), 400, -4, field);
    assert.equal(okData(await api('/fetch/P', { data: { sku: 'WRAP-2' } })).length, 0);
    okData(
      await api('/add/P', {
        data: { sku: 'WRAP-2' },
        oldValues: null,
        operation: 'add',
        operationType: null,
      }),
    );
  });

  test('fetch by path: an id, a typedId, or the business key of a type keyed by one text field', async () => {
    const [p] = okData(await api('/add/P', { data: { sku: 'KEY A/1', label: 'by key' } }));
    for (const named of [String(p.id), p.typedId, encodeURIComponent('KEY A/1')]) {
      const [got] = okData(await api(`/fetch/P/${named}`));
      assert.deepEqual([got.id, got.sku], [p.id, 'KEY A/1'], named);
    }
    const [c] = okData(await api('/add/C', { data: { customerId: 'CUST-K', name: 'k' } }));
    assert.equal(okData(await api('/fetch/C/CUST-K'))[0].id, c.id);
    expectError(await api('/fetch/P/NO-SUCH-SKU'), 404, -1);
    // Digits are an id; what looks like a typedId of another type is a key where the type has a
    // text key (`1.C` may be a sku), else refused; a type of two keys takes ids only.
    expectError(await api('/fetch/P/999999999'), 404, -1);
    expectError(await api('/fetch/P/1.C'), 404, -1, 'id');
    expectError(await api('/fetch/F/1.C'), 400, -4, 'id');
    expectError(await api('/fetch/F/abc'), 400, -4, 'id');
    // asOf reads one record as it stood; on a list it is refused, not ignored.
    expectError(await api('/fetch/P?asOf=2026-01-01T00:00:00Z', {}), 400, -4, 'asOf');
  });

  test('criteria that are no object are a -4 naming the field that holds them', async () => {
    for (const data of [[], 'x', 5]) {
      expectError(await api('/fetch/P', { data }), 400, -4, 'data');
      expectError(await api('/delete/P/batch/forcefilter', { data }), 400, -4, 'data');
    }
    const edit = [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'Z' }];
    expectError(
      await api('/massedit/P', { filterCriteria: 'x', massEditRecords: edit }),
      400,
      -4,
      'filterCriteria',
    );
  });

  test('massedit takes operationType, textMatchStyle, oldValues and nulls; an unknown field is a -4 naming it', async () => {
    okData(await api('/add/P', [{ data: { sku: 'ME-Apple' } }, { data: { sku: 'ME-Pear' } }]));
    const edit = (label: string) => [{ fieldName: 'label', massEditOperator: '=', fieldValue: label }];
    const [r1] = okData(
      await api('/massedit/P', {
        operationType: 'massedit',
        textMatchStyle: 'startsWith',
        filterCriteria: { sku: 'me-a' },
        massEditRecords: edit('apple'),
        oldValues: null,
        data: null,
        startRow: null,
        endRow: null,
        sortBy: null,
      }),
    );
    // textMatchStyle applies to the simple criteria as in a fetch: startsWith, case-insensitive.
    assert.equal(r1.updatedRecords, 1);
    const [r2] = okData(
      await api('/massedit/P', {
        operationType: 'update',
        textMatchStyle: null,
        filterCriteria: { sku: 'ME-Pear' },
        massEditRecords: edit('pear'),
        oldValues: {},
      }),
    );
    assert.equal(r2.updatedRecords, 1);
    const labels = okData(await api('/fetch/P', { data: { sku: ['ME-Apple', 'ME-Pear'] }, sortBy: 'sku' }));
    assert.deepEqual(
      labels.map((x: any) => x.label),
      ['apple', 'pear'],
    );
    const base = { filterCriteria: {}, massEditRecords: edit('x') };
    expectError(await api('/massedit/P', { ...base, bogus: 1 }), 400, -4, 'bogus');
    expectError(await api('/massedit/P', { ...base, startRow: 3 }), 400, -4, 'startRow');
    expectError(await api('/massedit/P', { ...base, filterCriteria: null }), 400, -4, 'filterCriteria');
    // A lookup table's massedit takes the same body.
    const [t] = okData(await api(`${M}.add`, { data: { uniqueName: 'MeT', label: 'MeT', type: 'SIMPLE' } }));
    okData(await api(`${M}.add/${t.id}`, { data: { name: 'k', value: '1' } }));
    const [lt] = okData(
      await api(`${M}.massedit/${t.id}`, {
        operationType: 'massedit',
        textMatchStyle: 'exact',
        oldValues: null,
        data: null,
        filterCriteria: { name: 'K' },
        massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: '2' }],
      }),
    );
    assert.equal(lt.updatedRecords, 1);
  });

  test('accountmanager.audit takes the fetch body fields; an unknown field is a -4 naming it', async () => {
    // The admin's id in this partition (other suites' users share the database's id sequence).
    const { rows } = await h.db.query<{ id: string }>(
      `SELECT id FROM users WHERE partition_id = $1 AND login_name = 'admin'`,
      [h.partitionId],
    );
    const audit = `/accountmanager.audit/U/${rows[0]!.id}`;
    const [report] = okData(await api(audit, CLIENT_READ_BODY));
    assert.equal(report.user.loginName, 'admin');
    okData(await api(audit));
    expectError(await api(audit, { bogus: 1 }), 400, -4, 'bogus');
    expectError(await api(audit, { data: { x: 1 } }), 400, -4, 'data');
  });

  test('formulamanager.execute without a body, or with null, runs as with {}', async () => {
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Two',
          validAfter: '2026-01-01',
          elements: [{ elementName: 'Two', expression: '1 + 1' }],
        },
      }),
    );
    okData(await api('/add/P', { data: { sku: 'EXE-1', formulaName: 'Two' } }));
    const expected = okData(await api('/formulamanager.execute/EXE-1', {}));
    assert.equal(expected.length, 1);
    const bare = await h.call('/formulamanager.execute/EXE-1', { headers: { 'X-Ratecard-jwt': token } });
    assert.deepEqual(okData(bare), expected);
    const json = await h.call('/formulamanager.execute/EXE-1', {
      headers: { 'X-Ratecard-jwt': token, 'content-type': 'application/json' },
      raw: '',
    });
    assert.deepEqual(okData(json), expected);
    assert.deepEqual(okData(await api('/formulamanager.execute/EXE-1', null)), expected);
    assert.deepEqual(okData(await api('/formulamanager.execute/EXE-1/Two', null)), expected);
  });

  test('/fetch/LT lists and reads tables as /lookuptablemanager.fetch does; writes of LT stay refused', async () => {
    const [t] = okData(
      await api(`${M}.add`, { data: { uniqueName: 'GenLT', label: 'Gen', type: 'SIMPLE' } }),
    );
    const r = await api('/fetch/LT', { data: { uniqueName: 'GenLT' }, startRow: 0, endRow: 10 });
    const rows = okData(r);
    assert.equal(r.body.response.totalRows, 1);
    assert.deepEqual(rows, okData(await api(`${M}.fetch`, { data: { uniqueName: 'GenLT' } })));
    const [one] = okData(await api(`/fetch/LT/${t.id}`));
    assert.equal(one.uniqueName, 'GenLT');
    assert.equal(okData(await api(`/fetch/LT/${t.typedId}`))[0].id, t.id);
    // Any authenticated user reads tables, as through the manager.
    await h.newUser('lt-reader', 'pw-123456789', []);
    const reader = await clientOf(h, 'lt-reader', 'pw-123456789');
    assert.equal(okData(await reader('/fetch/LT', { data: { uniqueName: 'GenLT' } })).length, 1);
    for (const [path, body] of [
      ['/add/LT', { data: { uniqueName: 'x', type: 'SIMPLE' } }],
      ['/update/LT', { data: { typedId: t.typedId, label: 'y' }, oldValues: { version: t.version } }],
      ['/delete/LT', { data: { typedId: t.typedId } }],
      ['/delete/LT/batch/forcefilter', { data: {} }],
      [
        '/massedit/LT',
        { filterCriteria: {}, massEditRecords: [{ fieldName: 'label', massEditOperator: 'null' }] },
      ],
      ['/fetch/LTV', {}],
    ] as const) {
      const refused = await api(path, body);
      expectError(refused, 400, -4, 'typeCode');
      assert.match(refused.body.response.data, /lookuptablemanager/, path);
    }
    assert.equal(okData(await api(`/fetch/LT/${t.id}`))[0].label, 'Gen');
  });

  test('findref answers a list with startRow, endRow and totalRows, paged by the body', async () => {
    const [t] = okData(
      await api(`${M}.add`, { data: { uniqueName: 'RefT', label: 'RefT', type: 'SIMPLE' } }),
    );
    for (const name of ['RefA', 'RefB']) {
      okData(
        await api('/add/F', {
          data: {
            uniqueName: name,
            validAfter: '2026-01-01',
            elements: [{ elementName: 'V', expression: 'lookup("RefT", "x")' }],
          },
        }),
      );
    }
    const all = await api(`${M}.findref/${t.id}`);
    const rows = okData(all);
    assert.equal(rows.length, 2);
    assert.deepEqual(
      [all.body.response.startRow, all.body.response.endRow, all.body.response.totalRows],
      [0, 2, 2],
    );
    const second = await api(`${M}.findref/${t.id}`, { startRow: 1, endRow: 2 });
    assert.deepEqual(okData(second), [rows[1]]);
    assert.deepEqual(
      [second.body.response.startRow, second.body.response.endRow, second.body.response.totalRows],
      [1, 2, 2],
    );
    assert.equal(okData(await api(`${M}.findref/${t.id}`, { startRow: null, endRow: null })).length, 2);
  });
});
