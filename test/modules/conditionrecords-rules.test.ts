// Condition records over real HTTP on both databases: the rules every path must keep, whichever
// operation a client picks — a set with items deleted only with force (also by /delete/CRCS/batch and
// /batch/forcefilter), sets changed only by /conditionrecordset.update (not /resetcolumn/CRCS), an
// item never ending before it starts against its stored validFrom (a -4, not a 500), keys and
// validFrom never changed through /update/CRCI, CRCIH read-only (also for admins), values a column
// cannot hold refused per row, the later of two overlapping rows of one load the error, lengths in
// characters as the database counts them, NUL in look-up keys and set names refused per field or row.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { okData, expectError } from '../helpers/envelope.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

describe('condition records: rules on every path', () => {
  let h: Harness;
  const call = (path: string, body?: unknown, who = admin) => h.call(path, { basic: who, body: body ?? {} });

  async function newSet(keySize = 1): Promise<{ id: number; name: string }> {
    const name = uniqueName('rule');
    const [s] = okData(await call('/add/CRCS', { data: { uniqueName: name, label: name, keySize } }));
    return { id: s.id, name };
  }
  /** A new item of a set of key size 1, with its `typedId` as a CRCI. */
  async function addItem(setId: number, key1: string, validFrom: string, validTo: string): Promise<any> {
    const [item] = okData(
      await call('/add/CRCI1', { data: { conditionRecordSetId: setId, key1, validFrom, validTo } }),
    );
    return { ...item, typedId: `${item.id}.CRCI` };
  }
  const setCount = async (name: string) =>
    okData(await call('/fetch/CRCS', { data: { uniqueName: name } })).length;

  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h.close();
  });

  test('a set that holds items is deleted by no batch or filter delete; with force by /delete/CRCS', async () => {
    const full = await newSet();
    await addItem(full.id, 'K', '2026-01-01', '2026-01-31');
    const empty = await newSet();
    for (const path of ['/delete/CRCS/batch', '/delete/CRCS/batch/forcefilter']) {
      const r = await call(path, { data: { uniqueName: full.name } });
      expectError(r, 400, -4, 'force');
      assert.match(r.body.response.data, new RegExp(`set ${full.name} holds 1 items`));
      assert.equal(await setCount(full.name), 1);
    }
    // A batch that names both: the one with items refuses the whole request, nothing is deleted.
    expectError(
      await call('/delete/CRCS', [{ data: { uniqueName: empty.name } }, { data: { uniqueName: full.name } }]),
      400,
      -4,
      'force',
    );
    assert.equal(await setCount(empty.name), 1);
    // Forced for the full one only: both go, the items with their set.
    okData(
      await call('/delete/CRCS', [
        { data: { uniqueName: empty.name } },
        { data: { uniqueName: full.name }, force: true },
      ]),
    );
    assert.equal(await setCount(full.name), 0);
    assert.equal(await setCount(empty.name), 0);
    assert.equal(okData(await call('/fetch/CRCI', { data: { conditionRecordSetId: full.id } })).length, 0);
    // An empty set is deleted by filter.
    const other = await newSet();
    okData(await call('/delete/CRCS/batch/forcefilter', { data: { uniqueName: other.name } }));
    assert.equal(await setCount(other.name), 0);
  });

  test('force of /delete/CRCS must be a boolean', async () => {
    const s = await newSet();
    await addItem(s.id, 'A', '2026-01-01', '2026-01-31');
    expectError(
      await call('/delete/CRCS', { data: { typedId: `${s.id}.CRCS` }, force: 'yes' }),
      400,
      -4,
      'force',
    );
    expectError(
      await call('/delete/CRCS', { data: { typedId: `${s.id}.CRCS`, force: 1 } }),
      400,
      -4,
      'data.force',
    );
    expectError(
      await call('/delete/CRCS', [{ data: { typedId: `${s.id}.CRCS` } }, { data: { id: 0 }, force: 'true' }]),
      400,
      -4,
      '1.force',
    );
    assert.equal(await setCount(s.name), 1);
    okData(await call('/delete/CRCS', { data: { typedId: `${s.id}.CRCS` }, force: true }));
    assert.equal(await setCount(s.name), 0);
  });

  test('/resetcolumn/CRCS is refused with a pointer to conditionrecordset.update', async () => {
    const s = await newSet();
    const r = await call('/resetcolumn/CRCS/label', {});
    expectError(r, 400, -4, 'typeCode');
    assert.match(r.body.response.data, /conditionrecordset\.update/);
    const [kept] = okData(await call('/fetch/CRCS', { data: { uniqueName: s.name } }));
    assert.equal(kept.label, s.name);
  });

  test('an item may not end before its stored validFrom: -4 on validTo, by every write', async () => {
    const s = await newSet();
    const item = await addItem(s.id, 'K', '2026-03-01', '2026-06-30');
    const writes: [string, unknown][] = [
      ['/update/CRCI', { data: { typedId: item.typedId, validTo: '2026-02-01' } }],
      ['/update/CRCI1', { data: { typedId: `${item.id}.CRCI1`, validTo: '2026-02-01' } }],
      ['/integrate/CRCI', [{ data: { typedId: item.typedId, validTo: '2026-02-01' } }]],
      [
        '/massedit/CRCI1',
        {
          filterCriteria: { conditionRecordSetId: s.id },
          massEditRecords: [{ fieldName: 'validTo', massEditOperator: '=', fieldValue: '2026-01-01' }],
        },
      ],
    ];
    for (const [path, body] of writes) {
      const r = await call(path, body);
      expectError(r, 400, -4, 'validTo');
    }
    const [stored] = okData(await call(`/fetch/CRCI/${item.id}`));
    assert.equal(stored.validTo, '2026-06-30');
    assert.equal(stored.version, item.version);
  });

  test('/update/CRCI refuses changed keys, validFrom and set; repeating them is fine', async () => {
    const s = await newSet();
    const other = await newSet();
    const item = await addItem(s.id, 'K', '2026-03-01', '2026-06-30');
    for (const [field, value] of [
      ['validFrom', '2026-02-01'],
      ['key1', 'OTHER'],
      ['conditionRecordSetId', other.id],
    ] as const) {
      const r = await call('/update/CRCI', { data: { typedId: item.typedId, [field]: value } });
      expectError(r, 400, -4, field);
      assert.match(r.body.response.data, /business key/);
      const i = await call('/integrate/CRCI', [{ data: { typedId: item.typedId, [field]: value } }]);
      expectError(i, 400, -4, field);
    }
    const [same] = okData(
      await call('/update/CRCI', {
        data: {
          typedId: item.typedId,
          conditionRecordSetId: s.id,
          key1: 'K',
          validFrom: '2026-03-01T00:00:00',
          conditionValue: '2.5',
        },
      }),
    );
    assert.equal(same.validFrom, '2026-03-01');
    assert.equal(same.conditionValue, '2.5');
    assert.equal(same.version, item.version + 1);
  });

  test('an add with the start of an item of the same keys is an overlap naming it (-4), as any other', async () => {
    const s = await newSet(2);
    const [a] = okData(
      await call('/add/CRCI2', {
        data: {
          conditionRecordSetId: s.id,
          key1: 'C',
          key2: 'P',
          validFrom: '2026-03-01',
          validTo: '2026-06-30',
        },
      }),
    );
    for (const path of ['/add/CRCI2', '/add/CRCI']) {
      const r = await call(path, {
        data: {
          conditionRecordSetId: s.id,
          key1: 'C',
          key2: 'P',
          validFrom: '2026-03-01',
          validTo: '2026-03-05',
        },
      });
      expectError(r, 400, -4, 'validFrom');
      assert.match(
        r.body.response.data,
        new RegExp(
          `2026-03-01\\.\\.2026-03-05 overlaps item ${a.id}\\.CRCI \\(valid 2026-03-01\\.\\.2026-06-30\\)`,
        ),
      );
    }
    // Overlapping a later item too, the earliest in the way is named: the one with the same start.
    okData(
      await call('/add/CRCI2', {
        data: {
          conditionRecordSetId: s.id,
          key1: 'C',
          key2: 'P',
          validFrom: '2026-07-01',
          validTo: '2026-07-31',
        },
      }),
    );
    for (const validTo of [undefined, '2026-07-05']) {
      const r = await call('/add/CRCI2', {
        data: { conditionRecordSetId: s.id, key1: 'C', key2: 'P', validFrom: '2026-03-01', validTo },
      });
      expectError(r, 400, -4, 'validFrom');
      assert.match(
        r.body.response.data,
        new RegExp(`overlaps item ${a.id}\\.CRCI \\(valid 2026-03-01\\.\\.2026-06-30\\)`),
      );
    }
    // Other keys with the same start are no clash.
    okData(
      await call('/add/CRCI2', {
        data: { conditionRecordSetId: s.id, key1: 'C', key2: 'Q', validFrom: '2026-03-01' },
      }),
    );
  });

  test('a batch element that overlaps is named (1.validFrom); an item of the rolled-back batch is named as its element', async () => {
    const s = await newSet(2);
    const stored = await call('/add/CRCI2', {
      data: {
        conditionRecordSetId: s.id,
        key1: 'C-100',
        key2: 'PG-7',
        validFrom: '2026-03-01',
        validTo: '2026-06-30',
      },
    });
    const [old] = okData(stored);
    const el = (key1: string, validFrom: string, validTo?: string) => ({
      data: { conditionRecordSetId: s.id, key1, key2: 'X', validFrom, ...(validTo ? { validTo } : {}) },
    });
    // Element 1 overlaps a stored item: named as element 1, the item named as it is.
    let r = await call('/add/CRCI2', [
      el('N1', '2026-01-01'),
      { data: { ...el('C-100', '2026-04-01').data, key2: 'PG-7' } },
    ]);
    expectError(r, 400, -4, '1.validFrom');
    assert.match(
      r.body.response.errors['1.validFrom'].errorMessage,
      new RegExp(`overlaps item ${old.id}\\.CRCI`),
    );
    // Element 1 overlaps element 0 (never stored: the batch is rolled back): named as that element.
    for (const path of ['/add/CRCI2', '/integrate/CRCI2']) {
      // (The same start is the same item to integrate: an update of it.)
      const seconds = [
        el('I8', '2026-03-01'),
        ...(path === '/add/CRCI2' ? [el('I8', '2026-01-01', '2026-02-01')] : []),
      ];
      for (const second of seconds) {
        r = await call(path, [el('I8', '2026-01-01', '2026-05-01'), second]);
        expectError(r, 400, -4, '1.validFrom');
        const message = r.body.response.errors['1.validFrom'].errorMessage as string;
        assert.match(
          message,
          /overlaps element 0 of this request \(valid 2026-01-01\.\.2026-05-01\)/,
          message,
        );
        assert.doesNotMatch(r.body.response.data, /item \d+\.CRCI/);
      }
      assert.equal(
        okData(await call('/fetch/CRCI2', { data: { conditionRecordSetId: s.id, key1: 'I8' } })).length,
        0,
      );
    }
    // An update batch: element 1 moves into the validity of a stored item.
    const [b] = okData(
      await call('/add/CRCI2', {
        data: {
          conditionRecordSetId: s.id,
          key1: 'C-100',
          key2: 'PG-7',
          validFrom: '2026-07-01',
          validTo: '2026-07-31',
        },
      }),
    );
    r = await call('/update/CRCI', [
      { data: { typedId: `${old.id}.CRCI`, currency: 'EUR' } },
      { data: { typedId: `${old.id}.CRCI`, validTo: '2026-07-15' } },
    ]);
    expectError(r, 400, -4, '1.validFrom');
    assert.match(
      r.body.response.errors['1.validFrom'].errorMessage,
      new RegExp(`overlaps item ${b.id}\\.CRCI`),
    );
    // An item an earlier element changed: its validity as that element leaves it (never stored).
    r = await call('/update/CRCI', [
      { data: { typedId: `${b.id}.CRCI`, validTo: '2026-12-31' } },
      { data: { typedId: `${old.id}.CRCI`, validTo: '2026-09-15' } },
    ]);
    expectError(r, 400, -4, '1.validFrom');
    assert.match(
      r.body.response.errors['1.validFrom'].errorMessage,
      new RegExp(
        `overlaps item ${b.id}\\.CRCI as element 0 of this request leaves it \\(valid 2026-07-01\\.\\.2026-12-31\\)`,
      ),
    );
    const [stillB] = okData(await call(`/fetch/CRCI/${b.id}`));
    assert.equal(stillB.validTo, '2026-07-31');
  });

  test('a key past the size of the set given as "" is no key: stored NULL, found, and in the way of overlaps, by every write', async () => {
    const set = await newSet(1);
    const lookup = async (key: string, date: string) =>
      okData(await call(`/conditionrecordset.lookup/${set.name}`, { data: { keys: [[key]], date } }))[0];
    const item = (key1: string, validFrom: string, validTo: string, extra: object = {}) => ({
      conditionRecordSetId: set.id,
      key1,
      key2: '',
      key12: '',
      validFrom,
      validTo,
      ...extra,
    });
    okData(await call('/add/CRCI', { data: item('A', '2026-01-01', '2026-12-31') }));
    okData(await call('/add/CRCI', [{ data: item('B', '2026-01-01', '2026-12-31') }]));
    const header = ['conditionRecordSetId', 'key1', 'key2', 'validFrom', 'validTo'];
    assert.equal(
      okData(
        await call('/loaddata/CRCI', {
          data: { header, data: [[set.id, 'C', '', '2026-01-01', '2026-12-31']] },
        }),
      )[0].insertedRecords ?? 1,
      1,
    );
    assert.equal(
      okData(
        await call('/loaddata/CRCP', {
          data: { header, data: [[set.id, 'D', '', '2026-01-01', '2026-12-31']] },
        }),
      )[0].inserted,
      1,
    );
    const stored = okData(
      await call('/fetch/CRCI', { data: { conditionRecordSetId: set.id }, sortBy: 'key1' }),
    );
    assert.deepEqual(
      stored.map((r: any) => [r.key1, r.key2 ?? null, r.key12 ?? null]),
      [
        ['A', null, null],
        ['B', null, null],
        ['C', null, null],
        ['D', null, null],
      ],
    );
    for (const key of ['A', 'B', 'C', 'D']) {
      assert.deepEqual((await lookup(key, '2026-06-15'))?.keys, [key], key);
      // An item of the same key inside the year overlaps it, with "" or without the extra keys.
      const r = await call('/add/CRCI1', {
        data: { conditionRecordSetId: set.id, key1: key, validFrom: '2026-06-01', validTo: '2026-06-30' },
      });
      expectError(r, 400, -4, 'validFrom');
      expectError(
        await call('/add/CRCI', { data: item(key, '2026-06-01', '2026-06-30') }),
        400,
        -4,
        'validFrom',
      );
    }
    // A spliced load of a key with "" cuts the item of that key (one key tuple, not two).
    const cut = okData(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: [[set.id, 'A', '', '2026-07-01', '2026-07-31']],
          options: { conditionRecords: { splicing: {} } },
        },
      }),
    )[0];
    assert.deepEqual([cut.inserted, cut.split], [1, 1]);
    assert.equal((await lookup('A', '2026-07-15'))?.validFrom, '2026-07-01');
  });

  test('record history names an item by set|keys|validFrom, whichever item code and path wrote it', async () => {
    const set = await newSet(2);
    const [a] = okData(
      await call('/add/CRCI', {
        data: {
          conditionRecordSetId: set.id,
          key1: 'a',
          key2: 'b',
          validFrom: '2026-01-01',
          validTo: '2026-12-31',
        },
      }),
    );
    okData(await call('/update/CRCI', { data: { typedId: `${a.id}.CRCI`, conditionValue: 2 } }));
    okData(await call('/update/CRCI2', { data: { typedId: `${a.id}.CRCI2`, conditionValue: 3 } }));
    const header = ['conditionRecordSetId', 'key1', 'key2', 'validFrom', 'validTo', 'conditionValue'];
    okData(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: [[set.id, 'a', 'b', '2026-07-01', '2026-12-31', 4]],
          options: { conditionRecords: { splicing: {} } },
        },
      }),
    );
    const key = `${set.id}|a|b|2026-01-01`;
    const rows = okData(
      await call('/history.fetch', { data: { typeCode: 'CRCI', recordId: a.id }, sortBy: ['id'] }),
    );
    assert.deepEqual(
      rows.map((r: any) => [r.action, r.businessKey]),
      [
        ['ADD', key],
        ['UPDATE', key],
        ['UPDATE', key],
        ['UPDATE', key],
      ],
    );
    const byKey = okData(await call('/history.fetch', { data: { businessKey: key }, sortBy: ['id'] }));
    assert.equal(byKey.length, 4);
    const [cut] = okData(
      await call('/history.fetch', { data: { businessKey: `${set.id}|a|b|2026-07-01` }, sortBy: ['id'] }),
    );
    assert.equal(cut.action, 'ADD', 'the new item of the load, under its own key');
  });

  test('CRCIH is read-only, for admins too', async () => {
    const s = await newSet();
    const item = await addItem(s.id, 'K', '2026-01-01', '2026-01-31');
    okData(await call('/delete/CRCI', { data: { typedId: item.typedId } }));
    const [hist] = okData(await call('/fetch/CRCIH', { data: { itemId: item.id } }));
    assert.ok(hist, 'the deleted item is in CRCIH');
    expectError(await call('/delete/CRCIH', { data: { typedId: hist.typedId } }), 400, -4, 'typeCode');
    for (const path of ['/delete/CRCIH/batch', '/delete/CRCIH/batch/forcefilter']) {
      expectError(await call(path, { data: { itemId: item.id } }), 400, -4, 'typeCode');
      // Also when nothing matches: read-only is no answer that depends on the filter.
      expectError(await call(path, { data: { key1: 'no such key' } }), 400, -4, 'typeCode');
    }
    assert.equal(okData(await call('/fetch/CRCIH', { data: { itemId: item.id } })).length, 1);
  });

  test('integrationStatus beyond its 4-byte column: a row error in a load, -4 elsewhere', async () => {
    const s = await newSet();
    const header = ['conditionRecordSetId', 'key1', 'validFrom', 'validTo', 'integrationStatus'];
    const [r] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: [
            [s.id, 'A', '2026-01-01', '2026-01-31', 1],
            [s.id, 'B', '2026-01-01', '2026-01-31', 99999999999],
            [s.id, 'C', '2026-01-01', '2026-01-31', 2147483647],
          ],
        },
      }),
    );
    assert.equal(r.inserted, 2);
    assert.deepEqual(
      r.errors.map((e: any) => [e.row, e.field]),
      [[1, 'integrationStatus']],
    );
    expectError(
      await call('/add/CRCI1', {
        data: {
          conditionRecordSetId: s.id,
          key1: 'D',
          validFrom: '2026-01-01',
          integrationStatus: -2147483649,
        },
      }),
      400,
      -4,
      'integrationStatus',
    );
    expectError(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: [[s.id, 'A', '2026-01-15', '2026-01-20', 1]],
          options: { conditionRecords: { splicing: { setFields: { integrationStatus: 2 ** 31 } } } },
        },
      }),
      400,
      -4,
      'options.conditionRecords.splicing.setFields.integrationStatus',
    );
  });

  test('massedit arithmetic: a stored value that is not a number and an integer overflow are -4s naming the field', async () => {
    const s = await newSet();
    const a = await addItem(s.id, 'A', '2026-01-01', '2026-01-31');
    okData(
      await call('/update/CRCI', {
        data: { typedId: a.typedId, attribute2: 'abc', integrationStatus: 2147483000 },
      }),
    );
    const b = await addItem(s.id, 'B', '2026-01-01', '2026-01-31');
    okData(await call('/update/CRCI', { data: { typedId: b.typedId, attribute2: '5' } }));
    okData(
      await call('/add/CRCIAM', {
        data: { conditionRecordSetId: s.id, fieldName: 'attribute2', label: 'Rank', fieldType: 'NUMERIC' },
      }),
    );
    const edit = (fieldName: string, fieldValue: unknown) =>
      call('/massedit/CRCI1', {
        filterCriteria: { conditionRecordSetId: s.id },
        massEditRecords: [{ fieldName, massEditOperator: '+', fieldValue }],
      });
    let r = await edit('attribute2', 1);
    expectError(r, 400, -4, 'attribute2');
    assert.match(r.body.response.data, new RegExp(`record ${a.id} holds 'abc', not a number`));
    r = await edit('integrationStatus', 1000);
    expectError(r, 400, -4, 'integrationStatus');
    assert.match(r.body.response.data, /outside -2147483648\.\.2147483647/);
    // An integer plus a fraction: refused (it was rounded back to the value, its version raised).
    for (const v of [0.4, '-1.5']) {
      r = await edit('integrationStatus', v);
      expectError(r, 400, -4, 'massEditRecords.0.fieldValue');
      assert.match(r.body.response.data, /must be an integer: integrationStatus is an integer field/);
    }
    // Nothing changed: the stored values stand.
    const items = okData(
      await call('/fetch/CRCI1', { data: { conditionRecordSetId: s.id }, sortBy: ['key1'] }),
    );
    assert.deepEqual(
      items.map((i: any) => [i.attribute2, i.integrationStatus, i.version]),
      [
        ['abc', 2147483000, 1],
        [5, null, 1],
      ],
    );
    // Once the value is a number, the arithmetic applies (a blank one stays blank).
    okData(await call('/update/CRCI', { data: { typedId: a.typedId, attribute2: null } }));
    okData(await edit('attribute2', 1));
    const after = okData(
      await call('/fetch/CRCI1', { data: { conditionRecordSetId: s.id }, sortBy: ['key1'] }),
    );
    assert.deepEqual(
      after.map((i: any) => i.attribute2),
      [null, 6],
    );
  });

  test('of two rows of one load that overlap, the later one is the error', async () => {
    const s = await newSet();
    const [r] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header: ['conditionRecordSetId', 'key1', 'validFrom', 'validTo'],
          data: [
            [s.id, 'K', '2026-03-01', '2026-04-30'],
            [s.id, 'K', '2026-01-01', '2026-12-31'],
            [s.id, 'K', '2026-05-01', '2026-05-31'],
          ],
        },
      }),
    );
    assert.equal(r.inserted, 2);
    assert.deepEqual(
      r.errors.map((e: any) => [e.row, e.field]),
      [[1, 'validFrom']],
    );
    assert.match(r.errors[0].message, /row 0/);
    const kept = okData(
      await call('/fetch/CRCI', { data: { conditionRecordSetId: s.id }, sortBy: ['validFrom'] }),
    );
    assert.deepEqual(
      kept.map((i: any) => `${i.validFrom}..${i.validTo}`),
      ['2026-03-01..2026-04-30', '2026-05-01..2026-05-31'],
    );
  });

  test('key lengths count characters as the database does (63 emoji are 63 characters)', async () => {
    const s = await newSet();
    const emoji = '\u{1F600}';
    const [item] = okData(
      await call('/add/CRCI1', {
        data: { conditionRecordSetId: s.id, key1: emoji.repeat(63), validFrom: '2026-01-01' },
      }),
    );
    assert.equal(item.key1, emoji.repeat(63));
    expectError(
      await call('/add/CRCI1', {
        data: { conditionRecordSetId: s.id, key1: emoji.repeat(64), validFrom: '2026-01-01' },
      }),
      400,
      -4,
      'key1',
    );
    const [found] = okData(
      await call(`/conditionrecordset.lookup/${s.name}`, {
        data: { keys: [[emoji.repeat(63)]], date: '2026-06-01' },
      }),
    );
    assert.equal(found.id, item.id);
  });

  test('look-up keys given as JSON numbers or booleans are their text, as writes take them', async () => {
    const s = await newSet(2);
    const [item] = okData(
      await call('/add/CRCI2', {
        data: { conditionRecordSetId: s.id, key1: 12345, key2: true, validFrom: '2026-01-01' },
      }),
    );
    assert.deepEqual([item.key1, item.key2], ['12345', 'true']);
    const [found, none] = okData(
      await call(`/conditionrecordset.lookup/${s.name}`, {
        data: {
          keys: [
            [12345, true],
            [12345, false],
          ],
          date: '2026-06-15',
        },
      }),
    );
    assert.equal(found.id, item.id);
    assert.deepEqual(found.keys, ['12345', 'true']);
    assert.equal(none, null);
    expectError(
      await call(`/conditionrecordset.lookup/${s.name}`, {
        data: { keys: [[{ a: 1 }, 'x']], date: '2026-06-15' },
      }),
      400,
      -4,
    );
  });

  test('NUL or a lone surrogate: a look-up key is a -4 naming it, a load row naming a set with NUL a row error', async () => {
    const s = await newSet();
    expectError(
      await call(`/conditionrecordset.lookup/${s.name}`, {
        data: { keys: [['A'], ['B\u0000']], date: '2026-01-01' },
      }),
      400,
      -4,
      'keys.1.0',
    );
    // A lone surrogate likewise: no stored key holds one (it found the item of "s\uFFFDx").
    okData(
      await call('/add/CRCI1', {
        data: { conditionRecordSetId: s.id, key1: 's\ufffdx', validFrom: '2026-01-01', conditionValue: 1 },
      }),
    );
    expectError(
      await call(`/conditionrecordset.lookup/${s.name}`, {
        data: { keys: [['s\ufffdx'], ['s\ud800x']], date: '2026-04-01' },
      }),
      400,
      -4,
      'keys.1.0',
    );
    // In the set's name (the path): named as the path parameter, no database text.
    const bad = await call('/conditionrecordset.lookup/A%00B', {
      data: { keys: [['a']], date: '2026-06-15' },
    });
    expectError(bad, 400, -4, 'setUniqueName');
    assert.doesNotMatch(bad.body.response.data, /database|UTF8/);
    const [r] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header: ['conditionRecordSetId', 'key1', 'validFrom'],
          data: [
            [`${s.name}\u0000`, 'A', '2026-01-01'],
            [s.name, 'B', '2026-01-01'],
          ],
        },
      }),
    );
    assert.equal(r.inserted, 1);
    assert.deepEqual(
      r.errors.map((e: any) => [e.row, e.field]),
      [[0, 'conditionRecordSetId']],
    );
  });

  test('messages: an unknown set of conditionrecordset.update is named; a bad date is one error', async () => {
    const r = await call('/conditionrecordset.update/999999', {
      data: { label: 'x' },
      oldValues: { version: 0 },
    });
    expectError(r, 404, -1);
    assert.match(r.body.response.data, /999999\.CRCS/);
    const s = await newSet();
    const bad = await call('/add/CRCI1', {
      data: { conditionRecordSetId: s.id, key1: 'A', validFrom: '2026-13-01', validTo: '2026-03-30' },
    });
    expectError(bad, 400, -4, 'validFrom');
    assert.deepEqual(Object.keys(bad.body.response.errors), ['validFrom']);
    // Unknown fields of the update are refused, naming them; nothing changes.
    const update = (body: object) => call(`/conditionrecordset.update/${s.id}`, body);
    expectError(
      await update({ data: { label: 'y' }, oldValues: { version: 0 }, bogus: 1 }),
      400,
      -4,
      'bogus',
    );
    expectError(
      await update({ data: { label: 'y' }, oldValues: { version: 0, foo: 'x' } }),
      400,
      -4,
      'oldValues.foo',
    );
    const [kept] = okData(await call('/fetch/CRCS', { data: { id: s.id } }));
    assert.deepEqual([kept.label, kept.version], [s.name, 0]);
  });

  test('conditionrecordset.update: an id or typedId beside the path must name its set; nothing else changes', async () => {
    const [a, b] = [await newSet(), await newSet()];
    const update = (id: number, data: object, oldValues: object = { version: 0 }) =>
      call(`/conditionrecordset.update/${id}`, { data, oldValues });
    // Set b as fetched, sent to a's path: refused, naming the field; neither set changes.
    const [fetchedB] = okData(await call('/fetch/CRCS', { data: { id: b.id } }));
    const wrong = await update(a.id, { ...fetchedB, label: 'meant for b' });
    expectError(wrong, 400, -4, 'data.typedId');
    assert.match(
      wrong.body.response.data,
      new RegExp(`names set ${b.id}, not the set of the path \\(${a.id}\\)`),
    );
    expectError(await update(a.id, { id: b.id, label: 'x' }), 400, -4, 'data.id');
    expectError(await update(a.id, { id: 'zz', label: 'x' }), 400, -4, 'data.id');
    // keySize is fixed when the set is made (not a business key: the message says what it is).
    const sized = await update(a.id, { keySize: 3 });
    expectError(sized, 400, -4, 'keySize');
    assert.match(sized.body.response.data, /is fixed when the record is created/);
    expectError(await update(a.id, { typedId: 'banana', label: 'x' }), 400, -4, 'data.typedId');
    expectError(
      await update(a.id, { label: 'x' }, { version: 0, typedId: `${b.id}.CRCS` }),
      400,
      -4,
      'oldValues.typedId',
    );
    for (const s of [a, b]) {
      const [kept] = okData(await call('/fetch/CRCS', { data: { id: s.id } }));
      assert.deepEqual([kept.label, kept.version], [s.name, 0]);
    }
    // Its own id and typedId (as fetched, as a number or digits) are fine.
    const [fetchedA] = okData(await call('/fetch/CRCS', { data: { id: a.id } }));
    const [done] = okData(await update(a.id, { ...fetchedA, id: String(a.id), label: 'renamed' }, fetchedA));
    assert.deepEqual([done.id, done.label, done.version], [a.id, 'renamed', 1]);
  });

  test('a write of many items takes a bounded number of locks (PostgreSQL), and still finds overlaps', async () => {
    const s = await newSet();
    const rows = Array.from({ length: 2_000 }, (_, i) => [s.id, `L${i}`, '2026-01-01', '2026-06-30']);
    const [loaded] = okData(
      await call('/loaddata/CRCI', {
        data: { header: ['conditionRecordSetId', 'key1', 'validFrom', 'validTo'], data: rows },
      }),
    );
    assert.equal(loaded.inserted, 2_000);
    // Every item's validity changes in one statement: the overlap check runs per item. A lock per
    // key tuple was 2,000 locks here (20,000 items ran PostgreSQL's shared lock table out: a 500).
    const [edited] = okData(
      await call('/massedit/CRCI', {
        filterCriteria: { conditionRecordSetId: s.id },
        massEditRecords: [{ fieldName: 'validTo', massEditOperator: '=', fieldValue: '2026-12-31' }],
      }),
    );
    assert.equal(edited.updatedRecords, 2_000);
    if (h.db.kind === 'postgres') {
      const held = await h.db.transaction(async (tx) => {
        await tx.query(
          `UPDATE condition_records SET valid_to = '2027-01-31' WHERE partition_id = $1 AND condition_record_set_id = $2`,
          [h.partitionId, s.id],
        );
        const r = await tx.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`,
        );
        return r.rows[0]!.n;
      });
      assert.ok(held <= 513, `${held} advisory locks`);
    }
    // The check itself is unchanged: an item overlapping another of its keys is refused.
    await addItem(s.id, 'L7', '2027-03-01', '2027-03-31');
    expectError(
      await call('/massedit/CRCI', {
        filterCriteria: { conditionRecordSetId: s.id, key1: 'L7', validFrom: '2027-03-01' },
        massEditRecords: [{ fieldName: 'validFrom', massEditOperator: '=', fieldValue: '2027-01-15' }],
      }),
      400,
      -4,
    );
  });
});
