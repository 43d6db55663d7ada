// `/fetch/{TC}` answers rows written as JSON text from the database's text (src/engine/fetch-json.ts). These tests hold
// that answer, value by value, to what the JavaScript path (`fetchRecords`: driver values, `toRecord`,
// JSON.stringify) makes of the same request: typed custom attributes (including stored texts their
// type cannot read), numeric and timestamp columns, jsonb, text arrays, valueFields, paging past the
// end. (User groups in the answer: test/engine/crud.test.ts.)

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminPrincipal, clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { fetchOne, fetchRecords, type FetchBody } from '../../src/engine/fetch.ts';
import { fetchForAnswer, fetchOneJson } from '../../src/engine/fetch-json.ts';
import { findType } from '../../src/engine/registry.ts';
import { JsonBytes } from '../../src/engine/record-json.ts';
import { preparedName } from '../../src/db/prepared.ts';

let h: Harness;
let api: Client;
before(async () => {
  h = await startHarness();
  api = await clientOf(h);
});
after(() => h.close());

const ok = (r: { status: number; body: any }) => {
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.response.status, 0, JSON.stringify(r.body));
  return r.body.response;
};

/** What a writer of the JSON answer writes, as text. */
function written(write: (out: JsonBytes) => void): string {
  const out = new JsonBytes(16);
  write(out);
  return out.bytes().toString('utf8');
}

/** The JavaScript path's answer to the same request, as a client parses it. */
async function viaJavaScript(code: string, body: FetchBody) {
  const r = await fetchRecords(h.db, adminPrincipal(h), findType(code)!, body, 1000);
  return JSON.parse(JSON.stringify(r)) as {
    rows: unknown[];
    totalRows: number;
    startRow: number;
    endRow: number;
  };
}

async function sameAnswer(code: string, body: FetchBody, call: Client = api) {
  // The rows were written from text (not the JavaScript path taken as a fallback).
  const direct = await fetchForAnswer(h.db, adminPrincipal(h), findType(code)!, body, 1000);
  assert.ok('writeData' in direct, `${code}: answered through the JavaScript path`);
  const http = ok(await call(`/fetch/${code}`, body));
  const js = await viaJavaScript(code, body);
  assert.deepEqual(JSON.parse(written(direct.writeData)), js.rows);
  assert.deepEqual(http.data, js.rows);
  assert.equal(http.totalRows, js.totalRows);
  assert.equal(http.startRow, js.startRow);
  assert.equal(http.endRow, js.endRow);
  return http;
}

test('products with typed attributes: the same values as the JavaScript path', async () => {
  // Texts written while the attributes were untyped, then typed: some cannot be read as their type.
  const odd = [
    {
      sku: 'FJ-1',
      label: 'plain',
      attribute2: '12.50',
      attribute3: '7',
      attribute4: 'true',
      attribute5: '2026-03-01',
    },
    {
      sku: 'FJ-2',
      label: 'odd',
      attribute2: 'abc',
      attribute3: ' 5 ',
      attribute4: 'maybe',
      attribute5: 'someday',
    },
    {
      sku: 'FJ-3',
      label: 'quote " and \\ and \u00e9',
      attribute2: '-0.001',
      attribute3: '1e3',
      attribute4: 'false',
    },
    { sku: 'FJ-4', label: null, attribute2: '1e400', attribute3: '99999999999999999999', attribute4: '' },
    { sku: 'FJ-5', label: 'nulls' },
  ];
  ok(
    await api(
      '/add/P',
      odd.map((data) => ({ data })),
    ),
  );
  const filter = {
    data: { operator: 'and', criteria: [{ fieldName: 'sku', operator: 'startsWith', value: 'FJ-' }] },
  };
  // Untyped first: the select list kept for this answer must not serve the typed ones below.
  const untyped = await sameAnswer('P', { ...filter, sortBy: ['sku'] });
  assert.equal(untyped.data[0].attribute2, '12.50');
  for (const [fieldName, fieldType] of [
    ['attribute2', 'NUMERIC'],
    ['attribute3', 'INTEGER'],
    ['attribute4', 'BOOLEAN'],
    ['attribute5', 'DATE'],
  ]) {
    ok(await api('/add/PAM', { data: { fieldName, fieldType } }));
  }
  const page = await sameAnswer('P', { ...filter, sortBy: ['sku'] });
  assert.equal(page.data.length, 5);
  const [plain, odd2, , big] = page.data;
  // The values a client sees, spelled out once.
  assert.equal(plain.attribute2, 12.5);
  assert.equal(plain.attribute3, 7);
  assert.equal(plain.attribute4, true);
  assert.equal(plain.attribute5, '2026-03-01');
  assert.equal(odd2.attribute2, 'abc');
  assert.equal(odd2.attribute3, 5);
  assert.equal(odd2.attribute4, 'maybe');
  assert.equal(big.attribute2, '1e400');
  assert.match(plain.createDate, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(typeof plain.id, 'number');
  assert.equal(plain.typedId, `${plain.id}.P`);

  await sameAnswer('P', { ...filter, sortBy: ['-attribute2'], startRow: 1, endRow: 3 });
  await sameAnswer('P', { ...filter, valueFields: ['sku', 'attribute2', 'attribute4', 'lastUpdateDate'] });
  await sameAnswer('P', { ...filter, resultFields: ['typedId', 'attribute3'] });
  const past = await sameAnswer('P', { ...filter, startRow: 50, endRow: 60 });
  assert.deepEqual(past.data, []);
  assert.equal(past.totalRows, 5);

  // A bigint past 2^53 is answered as its text, as the driver's parseInt8 makes it.
  await h.db.query(
    `UPDATE products SET last_update_by = 9007199254740993 WHERE partition_id = $1 AND sku = 'FJ-2'`,
    [h.partitionId],
  );
  const wide = await sameAnswer('P', { ...filter, resultFields: ['sku', 'lastUpdateBy'] });
  const fj2 = wide.data.find((r: { sku: string }) => r.sku === 'FJ-2');
  assert.equal(fj2.lastUpdateBy, '9007199254740993');
});

test('other types: numeric, date, bigint and boolean columns, condition record items, texts to escape', async () => {
  // Texts the server quotes itself: quotes, backslashes, control characters, non-ASCII.
  const odd = 'say "hi" \\ back\\slash\nnew line\ttab \u0001 é 𝄞 </script>';
  ok(await api('/add/C', [{ data: { customerId: 'FJ-C1', name: 'Customer 1', attribute1: 'x' } }]));
  ok(await api('/add/C', [{ data: { customerId: 'FJ-C2', name: odd, attribute1: odd } }]));
  // One thing to escape per row, each in a text the database writes unquoted, or quoted for a space.
  const single = [
    ['FJ-C3', 'a\u0001b', 'plain'],
    ['FJ-C4', 'say "hi"', 'no"space'],
    ['FJ-C5', 'back\\slash', 'x\u001fy'],
    ['FJ-C6', 'tab\there', 'new\nline'],
  ];
  ok(
    await api(
      '/add/C',
      single.map(([customerId, name, attribute1]) => ({ data: { customerId, name, attribute1 } })),
    ),
  );
  ok(await api('/update/P', [{ data: { sku: 'FJ-1', label: 'changed' } }]));
  const [set] = ok(await api('/add/CRCS', { data: { uniqueName: 'FJ-SET', label: 'set', keySize: 1 } })).data;
  const [wild] = ok(
    await api('/add/CRCS', { data: { uniqueName: 'FJ-WILD', label: odd, keySize: 2, wildcardKeys: true } }),
  ).data;
  assert.equal(wild.wildcardKeys, true);
  ok(
    await api('/add/CRCI1', [
      {
        data: {
          conditionRecordSetId: set.id,
          key1: 'K',
          validFrom: '2026-01-01',
          validTo: '2026-06-30',
          conditionValue: '12.3400',
        },
      },
    ]),
  );
  for (const code of ['C', 'PAM', 'CRCS', 'CRCI1']) await sameAnswer(code, {});
  const sets = (await sameAnswer('CRCS', { sortBy: ['uniqueName'] })).data;
  assert.deepEqual(
    sets.map((x: { label: string; wildcardKeys: boolean }) => [x.label, x.wildcardKeys]),
    [
      ['set', false],
      [odd, true],
    ],
  );
  const customers = await sameAnswer('C', { sortBy: ['customerId'], valueFields: ['name', 'attribute1'] });
  assert.deepEqual(customers.data, [
    ['Customer 1', 'x'],
    [odd, odd],
    ...single.map(([, name, attribute1]) => [name, attribute1]),
  ]);
  const [item] = ok(await api('/fetch/CRCI1', {})).data;
  assert.equal(item.conditionValue, '12.3400');
  assert.equal(item.validTo, '2026-06-30');
});

test('one filter shape with other values, past the runs a prepared page plans for its values', async () => {
  // On PostgreSQL the page statement is prepared: after five runs it may run a generic plan, which
  // must answer every value as a plan made for it does (most rows, one row, none, a range, a prefix).
  ok(
    await api(
      '/add/P',
      Array.from({ length: 30 }, (_, i) => ({
        data: {
          sku: `GP-${String(i).padStart(2, '0')}`,
          label: `gp ${i}`,
          attribute9: i < 25 ? 'many' : `one${i}`,
        },
      })),
    ),
  );
  const leaf = (fieldName: string, operator: string, more: object) => ({
    data: { _constructor: 'AdvancedCriteria', operator: 'and', criteria: [{ fieldName, operator, ...more }] },
    startRow: 0,
    endRow: 10,
  });
  const totals: number[] = [];
  for (const value of ['many', 'one27', 'none', 'many', 'one25', 'many', 'one29', 'none', 'many']) {
    totals.push((await sameAnswer('P', leaf('attribute9', 'equals', { value }))).totalRows);
  }
  assert.deepEqual(totals, [25, 1, 0, 25, 1, 25, 1, 0, 25]);
  for (const [start, end] of [
    ['GP-00', 'GP-29'],
    ['GP-05', 'GP-06'],
    ['GP-40', 'GP-50'],
    ['GP-00', 'GP-29'],
  ]) {
    for (let i = 0; i < 2; i++) await sameAnswer('P', leaf('sku', 'betweenInclusive', { start, end }));
  }
  for (const value of ['gp 1', 'gp', 'gp 2', 'x', 'gp 1', 'gp', 'gp 29']) {
    await sameAnswer('P', leaf('label', 'iStartsWith', { value }));
  }
});

test('one record by id: the same values as the JavaScript path; unknown ids and extension rows', async () => {
  const filter = {
    data: { operator: 'and', criteria: [{ fieldName: 'sku', operator: 'startsWith', value: 'FJ-' }] },
  };
  const page = ok(await api('/fetch/P', filter));
  assert.ok(page.data.length >= 5);
  for (const p of page.data) {
    for (const id of [String(p.id), p.typedId]) {
      const direct = await fetchOneJson(h.db, adminPrincipal(h), findType('P')!, id);
      assert.ok(direct !== undefined, 'answered without the JavaScript path');
      const js = JSON.parse(
        JSON.stringify(await fetchOne(h.db, adminPrincipal(h), findType('P')!, id)),
      ) as unknown;
      assert.deepEqual(JSON.parse(written(direct)), [js]);
      const http = ok(await api(`/fetch/P/${id}`));
      assert.deepEqual(http.data, [js]);
      assert.equal(http.totalRows, undefined);
    }
  }
  const missing = await api('/fetch/P/999999999');
  assert.equal(missing.status, 404);
  assert.equal(missing.body.response.status, -1);
  // Not an id: a product's sku (none such: 404; `1.C` is no typedId of P, so a sku too); of a type
  // keyed otherwise, a -4.
  assert.equal((await api('/fetch/P/not-a-sku')).status, 404);
  assert.equal((await api('/fetch/P/1.C')).status, 404);
  assert.equal((await api('/fetch/F/1.C')).status, 400);
  assert.equal((await api('/fetch/F/not-an-id')).status, 400);
  // Extension rows are typed by their own table's meta: the JavaScript path answers them.
  ok(await api('/add/PX', { data: { name: 'fj_ext', sku: 'FJ-1', attribute1: 'x' } }));
  const [row] = ok(await api('/fetch/PX', { data: { name: 'fj_ext' } })).data;
  assert.equal(await fetchOneJson(h.db, adminPrincipal(h), findType('PX')!, String(row.id)), undefined);
  assert.deepEqual(ok(await api(`/fetch/PX/${row.id}`)).data, [row]);
});

test('a page filtered by a prefix compiled as a range alone is prepared; a LIKE anchored at the start, or the range beside other conditions, is planned per run', async () => {
  const pages: string[] = [];
  const recording = {
    query: (sql: string, params?: readonly unknown[]) => {
      if (/ORDER BY/.test(sql)) pages.push(sql);
      return h.db.query(sql, params);
    },
  } as typeof h.db;
  const leaf = (fieldName: string, operator: string, value: string) => ({
    data: { _constructor: 'AdvancedCriteria', operator: 'and', criteria: [{ fieldName, operator, value }] },
  });
  const cases: [object, boolean][] = [
    // The prefix index takes a range's bounds from parameters: a generic plan keeps it.
    [leaf('label', 'iStartsWith', 'prefix-one'), true],
    [leaf('sku', 'startsWith', 'prefix-two'), true],
    // A LIKE anchored at the start: only a plan for its value can use that index.
    [leaf('label', 'iStartsWithPattern', 'prefix*three'), false],
    [leaf('attribute9', 'startsWith', 'prefix-four'), false],
    [leaf('label', 'iStartsWith', ''), false],
    // Beside another condition the range's guessed estimate could choose its index over the other's.
    [
      {
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [
            { fieldName: 'label', operator: 'iStartsWith', value: 'prefix-five' },
            { fieldName: 'attribute9', operator: 'equals', value: 'many' },
          ],
        },
      },
      false,
    ],
    [leaf('label', 'iContains', 'inside'), true],
    [leaf('sku', 'equals', 'exact'), true],
  ];
  for (const [body, preparedToo] of cases) {
    pages.length = 0;
    await fetchForAnswer(recording, adminPrincipal(h), findType('P')!, body, 100);
    assert.equal(pages.length, 1, JSON.stringify(body));
    assert.equal(preparedName(pages[0]!) !== undefined, preparedToo, JSON.stringify(body));
  }
});
