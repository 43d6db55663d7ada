// Values the database cannot take, over real HTTP on both databases: each is a -4 naming the field
// (a row error in a bulk load, the other rows written), never a 500 — date-times given as numbers
// outside the years 1..9999, texts too large for the btree entry of a search index, nulls for
// attribute-meta columns that have defaults, custom attributes edited by massedit without the table
// that types them, page numbers past what OFFSET takes, decimals of too many digits, a tiny divisor;
// and an index the data does not allow does not keep the others from being built.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { okData, expectError } from '../helpers/envelope.ts';
import { syncIndexes } from '../../src/engine/indexes.ts';
import { allTypes } from '../../src/engine/registry.ts';

describe('bad values: a -4 naming the field, never a 500', () => {
  let h: Harness;
  let H: Record<string, string>;
  const call = (path: string, body: unknown) => h.call(path, { headers: H, body });

  before(async () => {
    h = await startHarness();
    H = { 'X-Ratecard-jwt': (await h.login()).token };
    okData(
      await call('/integrate/PAM', [
        { data: { fieldName: 'attribute6', fieldType: 'DATETIME' } },
        { data: { fieldName: 'attribute7', fieldType: 'NUMERIC' } },
        { data: { fieldName: 'attribute8', fieldType: 'INTEGER' } },
      ]),
    );
  });
  after(async () => {
    await h.close();
  });

  test('date-times as numbers: within years 1..9999 stored, beyond a -4 (fetch, add, massedit, load)', async () => {
    const sku = uniqueName('dt');
    const [p] = okData(await call('/add/P', { data: { sku, attribute6: 0 } }));
    assert.equal(p.attribute6, '1970-01-01T00:00:00.000Z');
    for (const v of [1e20, -1e15, 253402300800000]) {
      expectError(
        await call('/add/P', { data: { sku: uniqueName('dt'), attribute6: v } }),
        400,
        -4,
        'attribute6',
      );
      expectError(
        await call('/fetch/P', { data: { fieldName: 'lastUpdateDate', operator: 'greaterThan', value: v } }),
        400,
        -4,
      );
    }
    expectError(
      await call('/massedit/P', {
        filterCriteria: { sku },
        massEditRecords: [{ fieldName: 'attribute6', massEditOperator: '=', fieldValue: 1e20 }],
      }),
      400,
      -4,
      'massEditRecords.0.fieldValue',
    );
    const [r] = okData(
      await call('/loaddata/P', {
        data: {
          header: ['sku', 'attribute6'],
          data: [
            [uniqueName('dt'), '2024-01-01'],
            [uniqueName('dt'), 1e20],
            [uniqueName('dt'), null],
          ],
        },
      }),
    );
    assert.equal(r.inserted, 2);
    assert.deepEqual(
      r.errors.map((e: any) => [e.row, e.field]),
      [[1, 'attribute6']],
    );
  });

  test('a label too large for its index is a -4 on label; in a load a row error, the rest written', async () => {
    // The product's label index holds the text and its lower case in one entry (migration 052):
    // together at most 2,600 bytes. 434 of these characters are 1,302 bytes, twice 2,604.
    const cjk = '\u4e00'.repeat(434);
    const r = await call('/add/P', { data: { sku: uniqueName('lb'), label: cjk } });
    expectError(r, 400, -4, 'label');
    assert.match(r.body.response.data, /2600 bytes of UTF-8 for the text and its lower case together/);
    okData(await call('/add/P', { data: { sku: uniqueName('lb'), label: '\u4e00'.repeat(433) } }));
    // ASCII labels of the field's whole length (1,000 characters) fit.
    okData(await call('/add/P', { data: { sku: uniqueName('lb'), label: 'x'.repeat(1000) } }));
    const [l] = okData(
      await call('/loaddata/P', {
        data: {
          header: ['sku', 'label'],
          data: [
            [uniqueName('lb'), 'ok'],
            [uniqueName('lb'), cjk],
            [uniqueName('lb'), 'ok'],
          ],
        },
      }),
    );
    assert.equal(l.inserted, 2);
    assert.deepEqual(
      l.errors.map((e: any) => [e.row, e.field]),
      [[1, 'label']],
    );
    expectError(await call('/add/C', { data: { customerId: uniqueName('c'), name: cjk } }), 400, -4, 'name');
  });

  test('an index the data does not allow is reported, the others are built; writes then get a -4', async () => {
    // Sellers: a table no other suite indexes (indexes are shared by every partition on it).
    // Random letters: a btree entry is compressed, so a repeated letter would fit.
    const long = randomBytes(3000).toString('base64');
    const [seller] = okData(
      await call('/add/SL', { data: { sellerId: uniqueName('sl'), attribute8: long } }),
    );
    try {
      okData(
        await call('/integrate/SLAM', [
          { data: { fieldName: 'attribute8', fieldType: 'TEXT', indexed: true } },
          { data: { fieldName: 'attribute9', fieldType: 'INTEGER', indexed: true } },
        ]),
      );
      // (The harness runs no job runner: the queued INDEX_SYNC job waits; this is its work.)
      const result = await syncIndexes(h.db, 'sellers');
      const failed = result.failed.map((f) => f.name);
      assert.ok(failed.includes('rcx_sellers_attribute8_eq'), JSON.stringify(result));
      assert.ok(
        failed.every((n) => n.startsWith('rcx_sellers_attribute8_')),
        JSON.stringify(result),
      );
      const names = okData(await call('/admin.indexes/SL', {})).map((i: any) => i.name);
      assert.ok(names.includes('rcx_sellers_attribute9_num'), names.join(' '));
      assert.ok(!names.includes('rcx_sellers_attribute8_eq'), names.join(' '));
      // With attribute8 indexed by the meta, its values are checked against the index's limit.
      expectError(
        await call('/add/SL', { data: { sellerId: uniqueName('sl'), attribute8: long } }),
        400,
        -4,
        'attribute8',
      );
    } finally {
      okData(
        await call('/integrate/SLAM', [
          { data: { fieldName: 'attribute8', indexed: false } },
          { data: { fieldName: 'attribute9', indexed: false } },
        ]),
      );
      okData(await call('/delete/SL', { data: { typedId: seller.typedId } }));
    }
    // Not indexed any more: neither index is wanted, none fails.
    const after = await syncIndexes(h.db, 'sellers');
    assert.deepEqual(after.failed, []);
    assert.ok(after.dropped.includes('rcx_sellers_attribute9_num'), JSON.stringify(after));
  });

  test('attribute meta: null for a column with a default is a -4; so is resetcolumn of it', async () => {
    for (const field of ['fieldType', 'requiredField', 'readOnly', 'indexed']) {
      expectError(
        await call('/add/PAM', { data: { fieldName: 'attribute10', [field]: null } }),
        400,
        -4,
        field,
      );
      expectError(
        await call('/integrate/PAM', [{ data: { fieldName: 'attribute7', [field]: null } }]),
        400,
        -4,
        field,
      );
      expectError(await call(`/resetcolumn/PAM/${field}`, {}), 400, -4, 'columnName');
    }
    // Left out, they take their defaults.
    const [m] = okData(await call('/add/PAM', { data: { fieldName: 'attribute10' } }));
    assert.deepEqual([m.fieldType, m.requiredField, m.readOnly, m.indexed], ['TEXT', false, false, false]);
    for (const name of ['attribute08', 'attribute0', 'attribute31']) {
      expectError(await call('/add/PAM', { data: { fieldName: name } }), 400, -4, 'fieldName');
    }
  });

  test('other columns with a default (flags, statuses, a step): null or blank is a -4 naming it', async () => {
    const rebateType = uniqueName('rbt');
    okData(await call('/add/RBT', { data: { uniqueName: rebateType } }));
    const cases: [string, Record<string, unknown>, string[]][] = [
      ['F', { validAfter: '2026-01-01', elements: [] }, ['nature', 'status', 'inputs']],
      ['RP', { currency: 'EUR' }, ['step', 'mode', 'endingRule']],
      ['CRCS', { keySize: 2 }, ['wildcardKeys']],
      [
        'RBTAM',
        { name: rebateType, fieldName: 'attribute1' },
        ['fieldType', 'requiredField', 'readOnly', 'indexed'],
      ],
      ['RRG', { rebateType }, ['agreementStatus', 'locked']],
    ];
    for (const [code, base, fields] of cases) {
      const unique = (): Record<string, unknown> =>
        code === 'RBTAM'
          ? { ...base, fieldName: `attribute${2 + fields.length}` }
          : { ...base, uniqueName: uniqueName(code) };
      // Left out, they take their defaults.
      const [rec] = okData(await call(`/add/${code}`, { data: code === 'RBTAM' ? base : unique() }));
      for (const field of fields) {
        for (const v of [null, '']) {
          expectError(await call(`/add/${code}`, { data: { ...unique(), [field]: v } }), 400, -4, field);
          // A set is changed by /conditionrecordset.update (its label and user groups) only.
          if (code === 'CRCS') continue;
          expectError(
            await call(`/update/${code}`, { data: { typedId: rec.typedId, [field]: v } }),
            400,
            -4,
            field,
          );
        }
      }
      // Nothing was changed by the refused updates.
      const [again] = okData(await call(`/fetch/${code}/${rec.id}`, {}));
      for (const field of fields) assert.deepEqual(again[field], rec[field], `${code}.${field}`);
    }
  });

  test('every field the general writes take over a NOT NULL column refuses null itself', async () => {
    const r = await h.db.query<{ t: string; c: string }>(
      `SELECT table_name AS t, column_name AS c FROM information_schema.columns
        WHERE table_schema = current_schema() AND is_nullable = 'NO'`,
    );
    const notNull = new Set(r.rows.map((x) => `${x.t}.${x.c}`));
    const loose: string[] = [];
    for (const type of allTypes()) {
      // Types the general writes refuse (jobs, imports, notifications, staged import changes), and users,
      // whose account rules check `activated`.
      if (type.code === 'U' || type.managerOnly !== undefined || type.validate?.({})?.typeCode) continue;
      for (const f of type.fields) {
        if (!f.system && !f.required && notNull.has(`${type.table}.${f.column}`))
          loose.push(`${type.code}.${f.name}`);
      }
    }
    assert.deepEqual(loose, []);
  });

  test('massedit of custom attributes of extension rows needs the table that types them', async () => {
    const table = uniqueName('T');
    okData(await call('/add/PXAM', { data: { name: table, fieldName: 'attribute1', fieldType: 'NUMERIC' } }));
    const [x] = okData(
      await call('/add/PX', { data: { name: table, sku: uniqueName('px'), attribute1: '5' } }),
    );
    const edit = (filterCriteria: unknown, fieldValue: unknown) =>
      call('/massedit/PX', {
        filterCriteria,
        massEditRecords: [{ fieldName: 'attribute1', massEditOperator: '=', fieldValue }],
      });
    expectError(await edit({ id: x.id }, 'abc'), 400, -4, 'filterCriteria');
    expectError(await edit({ name: table, id: x.id }, 'abc'), 400, -4, 'massEditRecords.0.fieldValue');
    okData(await edit({ name: table, id: x.id }, '7'));
    const [after] = okData(await call('/fetch/PX', { data: { name: table, id: x.id } }));
    assert.equal(Number(after.attribute1), 7);
  });

  test('a filter naming the table case-insensitively or in part types by the one table with meta it matches, else by none', async () => {
    // Two tables whose names differ in case only: each its own types.
    const base = uniqueName('Costs');
    const [numeric, text] = [base, base.toUpperCase()];
    const sku = uniqueName('px');
    okData(
      await call('/add/PXAM', { data: { name: numeric, fieldName: 'attribute1', fieldType: 'NUMERIC' } }),
    );
    okData(await call('/add/PXAM', { data: { name: text, fieldName: 'attribute1', fieldType: 'TEXT' } }));
    okData(await call('/add/PX', { data: { name: numeric, sku, attribute1: '5' } }));
    okData(await call('/add/PX', { data: { name: text, sku, attribute1: 'hello' } }));
    const edit = (filterCriteria: unknown, fieldValue: string, textMatchStyle?: string) =>
      call('/massedit/PX', {
        filterCriteria,
        ...(textMatchStyle === undefined ? {} : { textMatchStyle }),
        massEditRecords: [{ fieldName: 'attribute1', massEditOperator: '=', fieldValue }],
      });
    // Case-insensitive (the default style) or in part, the filter matches both tables: refused,
    // nothing written (the text would have gone into the NUMERIC table's row).
    expectError(await edit({ name: text, sku }, 'abc'), 400, -4, 'filterCriteria');
    expectError(await edit({ name: base.slice(1), sku }, 'abc', 'substring'), 400, -4, 'filterCriteria');
    expectError(await edit({ name: base.slice(0, 4), sku }, 'abc', 'startsWith'), 400, -4, 'filterCriteria');
    const values = async (body: object) =>
      okData(await call('/fetch/PX', { ...body, valueFields: ['name', 'attribute1'], sortBy: 'name' }));
    assert.deepEqual(await values({ data: { sku } }), [
      [text, 'hello'],
      [numeric, 5],
    ]);
    // Named exactly, each table's meta checks and types its own rows.
    okData(await edit({ name: text, sku }, 'abc', 'exactCase'));
    expectError(
      await edit({ name: numeric, sku }, 'abc', 'exactCase'),
      400,
      -4,
      'massEditRecords.0.fieldValue',
    );
    // Whatever the spelling, rows come back typed by their own table.
    for (const body of [
      { data: { name: numeric.toLowerCase(), sku } },
      { data: { name: base.slice(0, 4), sku }, textMatchStyle: 'startsWith' },
      { data: { name: numeric, sku }, textMatchStyle: 'substring' },
    ]) {
      assert.deepEqual(await values(body), [
        [text, 'abc'],
        [numeric, 5],
      ]);
    }
    // One table with meta matched (the other has none): its meta types the edit, in any spelling.
    const only = uniqueName('Rates');
    okData(await call('/add/PXAM', { data: { name: only, fieldName: 'attribute1', fieldType: 'NUMERIC' } }));
    okData(await call('/add/PX', { data: { name: only, sku, attribute1: '1' } }));
    expectError(
      await edit({ name: only.toLowerCase(), sku }, 'abc'),
      400,
      -4,
      'massEditRecords.0.fieldValue',
    );
    okData(await edit({ name: only.toLowerCase(), sku }, '2'));
    assert.deepEqual(await values({ data: { name: only.toUpperCase(), sku } }), [[only, 2]]);
  });

  test('page numbers, decimals and divisors beyond what the database takes are -4s naming them', async () => {
    expectError(await call('/fetch/P', { startRow: 1e20 }), 400, -4, 'startRow');
    expectError(await call('/fetch/P', { startRow: 0, endRow: 2 ** 63 }), 400, -4, 'endRow');
    const sku = uniqueName('n');
    okData(await call('/add/P', { data: { sku, attribute7: '10' } }));
    const edit = (op: string, fieldValue: string) =>
      call('/massedit/P', {
        filterCriteria: { sku },
        massEditRecords: [{ fieldName: 'attribute7', massEditOperator: op, fieldValue }],
      });
    expectError(await edit('*', '9'.repeat(200_000)), 400, -4, 'massEditRecords.0.fieldValue');
    // An INTEGER attribute times 1e30 is past int64: refused, nothing written.
    okData(await call('/integrate/PAM', [{ data: { fieldName: 'attribute11', fieldType: 'INTEGER' } }]));
    okData(await call('/update/P', { data: { sku, attribute11: '2' } }));
    const big = await call('/massedit/P', {
      filterCriteria: { sku },
      massEditRecords: [{ fieldName: 'attribute11', massEditOperator: '*', fieldValue: '1e30' }],
    });
    expectError(big, 400, -4);
    okData(
      await call('/massedit/P', {
        filterCriteria: { sku },
        massEditRecords: [{ fieldName: 'attribute11', massEditOperator: '*', fieldValue: '1.6' }],
      }),
    );
    const [p] = okData(await call('/fetch/P', { data: { sku } }));
    assert.equal(Number(p.attribute11), 3);
    expectError(await edit('/', '0.000e5'), 400, -4, 'massEditRecords.0.fieldValue');
    okData(await edit('/', '1e-400'));
    // Repeated products grow a decimal past what a write takes (10,000 characters): refused there,
    // the value kept.
    okData(await call('/update/P', { data: { sku, attribute7: '1' } }));
    for (let i = 0; i < 10; i++) okData(await edit('*', '1e999'));
    const [before] = okData(await call('/fetch/P', { data: { sku } }));
    assert.equal(String(before.attribute7).length, 1 + 10 * 999);
    expectError(await edit('*', '1e999'), 400, -4, 'attribute7');
    const [kept] = okData(await call('/fetch/P', { data: { sku } }));
    assert.equal(kept.attribute7, before.attribute7);
  });

  test('a record of thousands of unknown names: a -4 naming the first 100, the others counted', async () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 1]));
    const r = await call('/add/P', { data: { sku: uniqueName('many'), ...many(5000) } });
    expectError(r, 400, -4, 'k0');
    assert.equal(Object.keys(r.body.response.errors).length, 100);
    assert.match(r.body.response.data, /^k0: unknown field \(and 4900 more errors left out\)$/);
    // The same bound on answers built elsewhere (each unknown name of a workflow step is an error).
    const steps = [{ approverUsers: ['admin'], ...many(300) }];
    const wf = await call('/add/WFD', {
      data: { uniqueName: uniqueName('wf'), approvableType: 'TDOC', steps },
    });
    assert.equal(wf.status, 400, wf.text);
    assert.equal(Object.keys(wf.body.response.errors).length, 100);
    assert.equal(wf.body.response.errors['steps[0].k0'].errorMessage, 'unknown field');
  });

  test('ids past 2^53 name no set or grid; a body nested thousands of levels deep', async () => {
    expectError(
      await call('/add/CRCI1', {
        data: { conditionRecordSetId: '9007199254740993', key1: 'A', validFrom: '2026-01-01' },
      }),
      400,
      -4,
      'conditionRecordSetId',
    );
    expectError(
      await call('/add/CGI1', { data: { calculationGridId: '9007199254740993', key1: 'A' } }),
      400,
      -4,
      'calculationGridId',
    );
    // 5,000 levels: JSON.parse takes it; a walk of it by recursion (a stringify) did not.
    const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
    const r = await h.call('/notification.send', {
      headers: H,
      raw: `{"data":{"notification":{"title":"deep","payload":${deep}}}}`,
    });
    assert.equal(r.status, 400, r.text.slice(0, 300));
    assert.equal(r.body.response.status, -4);
  });

  test('an unpaired surrogate is refused, not stored as U+FFFD; a number out of range is named as such', async () => {
    const sku = uniqueName('sur');
    const e = await call('/add/P', { data: { sku, label: 'half \ud800 pair' } });
    expectError(e, 400, -4, 'label');
    // One wording wherever text is refused (a write, a filter, DCRs, imports, attachments): why.
    assert.equal(e.body.response.errors.label.errorMessage, 'must not contain unpaired surrogates');
    const nul = await call('/add/P', { data: { sku, label: 'a\u0000b' } });
    expectError(nul, 400, -4, 'label');
    assert.equal(nul.body.response.errors.label.errorMessage, 'must not contain NUL characters');
    const filter = await call('/fetch/P', { data: { label: '\udc00' } });
    expectError(filter, 400, -4, 'label');
    assert.match(filter.body.response.errors.label.errorMessage, /must not contain unpaired surrogates$/);
    const [p] = okData(await call('/add/P', { data: { sku, label: 'pair \ud83d\ude00' } }));
    assert.equal(p.label, 'pair \u{1F600}');
    const r = await h.call('/update/P', {
      headers: H,
      raw: `{"data":{"typedId":"${p.typedId as string}","attribute7":1e400}}`,
    });
    expectError(r, 400, -4, 'attribute7');
    assert.match(r.body.response.errors.attribute7.errorMessage, /^is a number beyond the range of a double/);
  });

  test('a number that overflowed (1e999) is no text; a key of blanks is no key', async () => {
    const raw = (path: string, text: string) => h.call(path, { headers: H, raw: text });
    expectError(await raw('/add/P', '{"data":{"sku":1e999}}'), 400, -4, 'sku');
    expectError(
      await raw('/add/P', `{"data":{"sku":"${uniqueName('inf')}","label":-1e999}}`),
      400,
      -4,
      'label',
    );
    expectError(await call('/add/P', { data: { sku: '   ' } }), 400, -4, 'sku');
    expectError(await call('/add/C', { data: { customerId: '\t ' } }), 400, -4, 'customerId');
    const load = okData(
      await call('/loaddata/P', { data: { header: ['sku', 'label'], data: [['  ', 'x']] } }),
    )[0];
    assert.deepEqual([load.inserted, load.errors[0]?.field], [0, 'sku']);
    // Blanks inside or around a key stay its own.
    const sku = ` ${uniqueName('pad')} `;
    assert.equal(okData(await call('/add/P', { data: { sku, label: 12 } }))[0].sku, sku);
  });

  test('a JSON number a double cannot hold keeps its exact text: a numeric sku, a decimal, a load', async () => {
    const raw = (path: string, text: string) => h.call(path, { headers: H, raw: text });
    const sku = `${Date.now()}1234567891`; // 23 digits, sent as a JSON number
    const [p] = okData(
      await raw('/add/P', `{"data":{"sku":${sku},"label":0.1,"attribute7":9007199254740993}}`),
    );
    assert.deepEqual([p.sku, p.label, p.attribute7], [sku, '0.1', '9007199254740993']);
    assert.equal(okData(await raw('/fetch/P', `{"data":{"sku":${sku}}}`)).length, 1);
    const [tiny] = okData(await raw('/update/P', `{"data":{"sku":"${sku}","attribute7":1e-400}}`));
    assert.equal(tiny.attribute7, '1e-400');
    // a large load's rows are parsed piece by piece (json-rows.ts): the same rule there
    const rows = Array.from({ length: 5_000 }, (_, i) => `["${uniqueName('lz')}-${i}","${'x'.repeat(40)}"]`);
    rows.push(`[${sku}9,12345678901234567.5]`);
    const body = `{"data":{"header":["sku","label"],"data":[${rows.join(',')}]}}`;
    assert.ok(body.length > 256 * 1024);
    const [load] = okData(await raw('/loaddata/P', body));
    assert.equal(load.inserted, 5_001, JSON.stringify(load));
    const [big] = okData(await call('/fetch/P', { data: { sku: `${sku}9` } }));
    assert.equal(big.label, '12345678901234567.5');
  });

  test('an INTEGER attribute past 2^53 comes back as its exact text, a safe one as a number', async () => {
    const [big] = okData(
      await call('/add/P', { data: { sku: uniqueName('int'), attribute8: '9007199254740993' } }),
    );
    assert.equal(big.attribute8, '9007199254740993');
    assert.equal(okData(await call(`/fetch/P/${big.id}`, undefined))[0].attribute8, '9007199254740993');
    const [safe] = okData(await call('/add/P', { data: { sku: uniqueName('int'), attribute8: '-42' } }));
    assert.equal(safe.attribute8, -42);
  });

  test('a regular expression only PostgreSQL refuses: a -4 with its reason', async () => {
    const r = await call('/fetch/P', { data: { fieldName: 'label', operator: 'regexp', value: 'a\\q' } });
    expectError(r, 400, -4, 'label');
    assert.match(r.body.response.errors.label.errorMessage, /invalid regular expression/);
  });

  test('an error of one element of a batch names the element; nothing of the batch is written', async () => {
    const skus = [uniqueName('b'), uniqueName('b'), uniqueName('b')];
    const batch = skus.map((sku, i) => ({ data: { sku, attribute7: i === 2 ? 'lots' : '1' } }));
    for (const path of ['/integrate/P', '/add/P']) {
      expectError(await call(path, batch), 400, -4, '2.attribute7');
    }
    const [first] = okData(await call('/add/P', { data: { sku: skus[0] } }));
    expectError(
      await call('/update/P', [
        { data: { typedId: first.typedId, label: 'ok' } },
        { data: { typedId: first.typedId, attribute7: 'lots' } },
      ]),
      400,
      -4,
      '1.attribute7',
    );
    // A stale version names its element too; a missing record is named as asked for.
    expectError(
      await call('/update/P', [
        { data: { typedId: first.typedId, label: 'a' }, oldValues: { version: first.version } },
        { data: { typedId: first.typedId, label: 'b' }, oldValues: { version: first.version } },
      ]),
      409,
      -1,
      '1.oldValues.version',
    );
    const missing = await call('/delete/P', { data: { id: 999_999_999 } });
    expectError(missing, 404, -1);
    assert.match(missing.body.response.data, /999999999\.P not found/);
    assert.equal(
      okData(await call('/fetch/P', { data: { sku: skus.slice(1) } })).length,
      0,
      'nothing written',
    );
  });

  test("a table rule a write breaks names its field (the database's CHECK, not 'data')", async () => {
    expectError(
      await call('/add/RP', { data: { uniqueName: uniqueName('rp'), currency: 'EUR', step: 0 } }),
      400,
      -4,
      'step',
    );
    const [rp] = okData(
      await call('/add/RP', { data: { uniqueName: uniqueName('rp'), currency: 'EUR', step: 0.05 } }),
    );
    expectError(
      await call('/update/RP', {
        data: { typedId: rp.typedId, step: -1 },
        oldValues: { version: rp.version },
      }),
      400,
      -4,
      'step',
    );
  });
});
