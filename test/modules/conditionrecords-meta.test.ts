// Condition records over real HTTP on both databases: attribute meta per set (CRCIAM rows name their
// set; items are typed, checked, filtered and answered with their own set's meta; a fetch across
// sets sees text; a set's meta goes with the set), open-ended items (validTo left out on add,
// integrate and loads), `/loaddata/CRCI` / `/loaddata/CRCIn` (the CRCP load without splicing,
// pointing to CRCP for it), and look-ups of keys whose signature the server computes itself
// (non-ASCII keys, keys with the separator) agreeing with the database's; the no-overlap invariant
// under concurrent single-item writes and loads (held by the database's locks and checks, migration
// 038, now that no exclusion constraint backs it).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { okData, expectError } from '../helpers/envelope.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

describe('condition records: meta per set, open-ended items, CRCI loads', () => {
  let h: Harness;
  const call = (path: string, body?: unknown) =>
    h.call(path, { basic: admin, ...(body === undefined ? {} : { body }) });

  async function newSet(keySize = 1): Promise<{ id: number; name: string }> {
    const name = uniqueName('meta');
    const [s] = okData(await call('/add/CRCS', { data: { uniqueName: name, label: name, keySize } }));
    return { id: s.id, name };
  }

  const item = (setId: number, key1: string, attribute1: unknown, validFrom = '2026-01-01') => ({
    conditionRecordSetId: setId,
    key1,
    validFrom,
    validTo: '2026-12-31',
    attribute1,
  });

  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h.close();
  });

  test('CRCIAM per set: typing, checks, filters and answers follow the item’s set', async () => {
    const num = await newSet();
    const txt = await newSet();
    const [m] = okData(
      await call('/add/CRCIAM', {
        data: { conditionRecordSetId: num.id, fieldName: 'attribute1', label: 'Rank', fieldType: 'NUMERIC' },
      }),
    );
    assert.equal(m.conditionRecordSetId, num.id);
    okData(
      await call('/add/CRCIAM', {
        data: { conditionRecordSetId: txt.id, fieldName: 'attribute1', label: 'Code', fieldType: 'TEXT' },
      }),
    );
    // The same field of another set is another row; the same set twice is a duplicate.
    expectError(
      await call('/add/CRCIAM', {
        data: { conditionRecordSetId: num.id, fieldName: 'attribute1', fieldType: 'TEXT' },
      }),
      409,
      -1,
    );
    expectError(
      await call('/add/CRCIAM', { data: { fieldName: 'attribute2', fieldType: 'TEXT' } }),
      400,
      -4,
      'conditionRecordSetId',
    );
    expectError(
      await call('/add/CRCIAM', {
        data: { conditionRecordSetId: 987654321, fieldName: 'attribute2', fieldType: 'TEXT' },
      }),
      404,
      -1,
      'conditionRecordSetId',
    );
    const metas = okData(await call('/fetch/CRCIAM', { data: { conditionRecordSetId: num.id } }));
    assert.deepEqual(
      metas.map((x) => [x.conditionRecordSetId, x.fieldName, x.fieldType]),
      [[num.id, 'attribute1', 'NUMERIC']],
    );

    // A number where the set says NUMERIC; any text where it says TEXT.
    expectError(await call('/add/CRCI1', { data: item(num.id, 'A', 'abc') }), 400, -4, 'attribute1');
    const ids: Record<string, number> = {};
    for (const v of ['10', '9', '4']) {
      ids[v] = okData(await call('/add/CRCI1', { data: item(num.id, `K${v}`, v) }))[0].id;
      okData(await call('/add/CRCI1', { data: item(txt.id, `K${v}`, v) }));
    }
    okData(await call('/add/CRCI1', { data: item(txt.id, 'Kabc', 'abc') }));

    // Filtered by set: compared as the set's meta types them (10 > 5 as numbers, "10" < "5" as text).
    const gt5 = (setId: number) =>
      call('/fetch/CRCI', {
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [
            { fieldName: 'conditionRecordSetId', operator: 'equals', value: setId },
            { fieldName: 'attribute1', operator: 'greaterThan', value: setId === num.id ? 5 : '5' },
          ],
        },
        sortBy: ['key1'],
      });
    assert.deepEqual(
      okData(await gt5(num.id)).map((r) => [r.key1, r.attribute1]),
      [
        ['K10', 10],
        ['K9', 9],
      ],
    );
    assert.deepEqual(
      okData(await gt5(txt.id)).map((r) => [r.key1, r.attribute1]),
      [
        ['K9', '9'],
        ['Kabc', 'abc'],
      ],
    );
    // Simple criteria name the set too; across sets the attributes are text.
    const simple = okData(
      await call('/fetch/CRCI1', { data: { conditionRecordSetId: num.id, key1: 'K10' } }),
    );
    assert.equal(simple[0].attribute1, 10);
    const across = okData(
      await call('/fetch/CRCI', {
        data: { fieldName: 'conditionRecordSetId', operator: 'inSet', value: [num.id, txt.id] },
        endRow: 100,
      }),
    );
    assert.equal(across.length, 7);
    assert.ok(across.every((r) => typeof r.attribute1 === 'string'));

    // By id: typed with the item's set; updates checked with it.
    const [one] = okData(await call(`/fetch/CRCI/${ids['10']}`));
    assert.equal(one.attribute1, 10);
    expectError(
      await call('/update/CRCI', { data: { typedId: `${ids['10']}.CRCI`, attribute1: 'x' } }),
      400,
      -4,
      'attribute1',
    );
    const [u] = okData(
      await call('/update/CRCI', { data: { typedId: `${ids['10']}.CRCI`, attribute1: '11.5' } }),
    );
    assert.equal(u.attribute1, 11.5);
    expectError(
      await call('/integrate/CRCI', [{ data: { typedId: `${ids['9']}.CRCI`, attribute1: 'y' } }]),
      400,
      -4,
      'attribute1',
    );

    // Loads type each row with its own set's meta; setFields must suit every set of the load.
    const header = ['conditionRecordSetId', 'key1', 'validFrom', 'validTo', 'attribute1'];
    const [r] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: [
            [num.id, 'L1', '2026-01-01', '2026-12-31', 'bad'],
            [txt.id, 'L1', '2026-01-01', '2026-12-31', 'fine'],
            [num.id, 'L2', '2026-01-01', '2026-12-31', '7'],
          ],
        },
      }),
    );
    assert.equal(r.inserted, 2);
    assert.deepEqual(
      r.errors.map((e: any) => [e.row, e.field]),
      [[0, 'attribute1']],
    );
    expectError(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: [[num.id, 'L1', '2026-03-01', '2026-03-31', '1']],
          options: { conditionRecords: { splicing: { setFields: { attribute1: 'cut' } } } },
        },
      }),
      400,
      -4,
      'options.conditionRecords.splicing.setFields.attribute1',
    );

    // The query API's CRCI:<set> source types the attributes by that set's meta too.
    const queried = okData(
      await call('/queryapi.execute', {
        data: {
          source: `CRCI:${num.name}`,
          select: ['key1', 'attribute1'],
          filter: { fieldName: 'attribute1', operator: 'greaterThan', value: 5 },
          sortBy: 'key1',
        },
      }),
    );
    assert.deepEqual(
      queried.map((q) => q.key1),
      ['K10', 'K9', 'L2'],
    );
    // The set's meta goes with the set.
    okData(await call('/delete/CRCS', { data: { typedId: `${num.id}.CRCS` }, force: true }));
    assert.equal(okData(await call('/fetch/CRCIAM', { data: { conditionRecordSetId: num.id } })).length, 0);
    assert.equal(okData(await call('/fetch/CRCIAM', { data: { conditionRecordSetId: txt.id } })).length, 1);
  });

  test("a set's attribute meta is changed only by those who may change the set (its userGroupEdit)", async () => {
    const outsider = { user: 'meta-outsider', password: 'outsider-password-1' };
    const member = { user: 'meta-member', password: 'member-password-1' };
    await h.newUser(outsider.user, outsider.password, ['ADMIN_WO_USER_MGMT']);
    await h.newUser(member.user, member.password, ['ADMIN_WO_USER_MGMT'], ['META_EDITORS']);
    const name = uniqueName('guarded');
    const [set] = okData(
      await call('/add/CRCS', {
        data: { uniqueName: name, label: name, keySize: 1, userGroupEdit: 'META_EDITORS' },
      }),
    );
    const [meta] = okData(
      await call('/add/CRCIAM', {
        data: { conditionRecordSetId: set.id, fieldName: 'attribute1', fieldType: 'NUMERIC' },
      }),
    );
    const as = (who: typeof admin, path: string, body: unknown) => h.call(path, { basic: who, body });
    const fresh = { conditionRecordSetId: set.id, fieldName: 'attribute2', fieldType: 'DATE' };
    for (const [path, body] of [
      ['/add/CRCIAM', { data: fresh }],
      ['/integrate/CRCIAM', { data: fresh }],
      ['/update/CRCIAM', { data: { typedId: meta.typedId, label: 'changed' } }],
      ['/integrate/CRCIAM', { data: { typedId: meta.typedId, label: 'changed' } }],
      ['/delete/CRCIAM', { data: { typedId: meta.typedId } }],
    ] as const)
      expectError(await as(outsider, path, body), 403, -3);
    const [kept] = okData(await call('/fetch/CRCIAM', { data: { conditionRecordSetId: set.id } }));
    assert.deepEqual([kept.label, kept.fieldType], [null, 'NUMERIC']);
    // A member of the set's edit group may.
    okData(await as(member, '/update/CRCIAM', { data: { typedId: meta.typedId, label: 'changed' } }));
    okData(await as(member, '/add/CRCIAM', { data: fresh }));
    okData(await as(member, '/delete/CRCIAM', { data: { typedId: meta.typedId } }));
  });

  test('validTo left out: an open-ended item (add, integrate, loads); overlaps still refused', async () => {
    const s = await newSet(2);
    const [a] = okData(
      await call('/integrate/CRCI2', [
        {
          data: {
            conditionRecordSetId: s.id,
            key1: 'C',
            key2: 'P',
            validFrom: '2026-01-01',
            conditionValue: '1',
          },
        },
      ]),
    );
    assert.equal(a.validTo, '9999-12-31');
    // Integrate by business key again: the same item, partially updated.
    const [b] = okData(
      await call('/integrate/CRCI2', [
        {
          data: {
            conditionRecordSetId: s.id,
            key1: 'C',
            key2: 'P',
            validFrom: '2026-01-01',
            conditionValue: '2',
          },
        },
      ]),
    );
    assert.equal(b.id, a.id);
    assert.equal(b.conditionValue, '2');
    assert.equal(b.validTo, '9999-12-31');
    // A later start for the same keys overlaps the open-ended item: -4 naming it.
    const clash = await call('/integrate/CRCI2', [
      { data: { conditionRecordSetId: s.id, key1: 'C', key2: 'P', validFrom: '2027-01-01' } },
    ]);
    expectError(clash, 400, -4, 'validFrom');
    assert.match(clash.body.response.data, new RegExp(`item ${a.id}\\.CRCI`));
    // validTo null is open-ended, as left out (and as in /loaddata/CRCP): add, update, massedit.
    const [nulled] = okData(
      await call('/add/CRCI2', {
        data: { conditionRecordSetId: s.id, key1: 'N', key2: 'P', validFrom: '2026-01-01', validTo: null },
      }),
    );
    assert.equal(nulled.validTo, '9999-12-31');
    const [added] = okData(
      await call('/add/CRCI2', {
        data: {
          conditionRecordSetId: s.id,
          key1: 'D',
          key2: 'P',
          validFrom: '2026-01-01',
          validTo: '2026-03-31',
        },
      }),
    );
    assert.equal(added.validTo, '2026-03-31');
    const [reopened] = okData(
      await call('/update/CRCI', { data: { typedId: `${added.id}.CRCI`, validTo: null } }),
    );
    assert.equal(reopened.validTo, '9999-12-31');
    okData(await call('/update/CRCI', { data: { typedId: `${added.id}.CRCI`, validTo: '2026-03-31' } }));
    okData(
      await call('/massedit/CRCI2', {
        filterCriteria: { conditionRecordSetId: s.id, key1: 'D' },
        massEditRecords: [{ fieldName: 'validTo', massEditOperator: 'null' }],
      }),
    );
    const [massed] = okData(await call(`/fetch/CRCI/${added.id}`));
    assert.equal(massed.validTo, '9999-12-31');
    // A load without validTo (or with an empty one): open-ended too.
    const [r] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header: ['conditionRecordSetId', 'key1', 'key2', 'validFrom'],
          data: [[s.name, 'E', 'P', '2026-01-01']],
        },
      }),
    );
    assert.equal(r.inserted, 1, JSON.stringify(r));
    const [r2] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header: ['conditionRecordSetId', 'key1', 'key2', 'validFrom', 'validTo'],
          data: [[s.name, 'F', 'P', '2026-01-01', '']],
        },
      }),
    );
    assert.equal(r2.inserted, 1, JSON.stringify(r2));
    const [f] = okData(await call('/fetch/CRCI2', { data: { conditionRecordSetId: s.id, key1: 'F' } }));
    assert.equal(f.validTo, '9999-12-31');
    const [e] = okData(await call('/fetch/CRCI2', { data: { conditionRecordSetId: s.id, key1: 'E' } }));
    assert.equal(e.validTo, '9999-12-31');
  });

  test('/metadata.describe reports CRCI and CRCIn bulk-loadable, as /loaddata/CRCI and /loaddata/CRCIn load them', async () => {
    for (const code of ['CRCI', 'CRCI1', 'CRCI12']) {
      const [d] = okData(await call(`/metadata.describe/${code}`));
      assert.equal(d.bulkLoadable, true, code);
    }
    for (const code of ['CRCS', 'CRCIH']) {
      const [d] = okData(await call(`/metadata.describe/${code}`));
      assert.equal(d.bulkLoadable, false, code);
    }
  });

  test('/loaddata/CRCI and /loaddata/CRCIn: the CRCP load without splicing, pointing to CRCP for it', async () => {
    const s = await newSet(1);
    const header = ['conditionRecordSetId', 'key1', 'validFrom', 'validTo', 'conditionValue'];
    const [r] = okData(
      await call('/loaddata/CRCI', {
        data: {
          header,
          data: [
            [s.id, 'A', '2026-01-01', '2026-06-30', '1'],
            [s.id, 'B', '2026-01-01', '2026-06-30', '1'],
          ],
        },
      }),
    );
    assert.equal(r.inserted, 2);
    // Overlaps are row errors naming the item; the rest is written.
    const [r2] = okData(
      await call('/loaddata/CRCI1', {
        data: {
          header,
          data: [
            [s.id, 'A', '2026-06-01', '2026-12-31', '2'],
            [s.id, 'C', '2026-01-01', '2026-06-30', '1'],
          ],
        },
      }),
    );
    assert.equal(r2.inserted, 1);
    assert.equal(r2.errors[0].row, 0);
    assert.match(r2.errors[0].message, /overlaps item \d+\.CRCI/);
    // Splicing is CRCP's: the error says where to send the same load.
    const spliced = await call('/loaddata/CRCI', {
      data: {
        header,
        data: [[s.id, 'A', '2026-06-01', '2026-12-31', '2']],
        options: { conditionRecords: { splicing: {} } },
      },
    });
    expectError(spliced, 400, -4, 'options.conditionRecords');
    assert.match(spliced.body.response.data, /\/loaddata\/CRCP/);
    const joined = await call('/loaddata/CRCI', {
      data: { header, data: [], options: { joinFields: ['key1'] } },
    });
    expectError(joined, 400, -4, 'options.joinFields');
    assert.match(joined.body.response.data, /CRCP/);
    // An empty list names no join fields: the interface's whole options object is taken by CRCP.
    const [none] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: [[s.id, 'J', '2026-01-01', '2026-01-31', '1']],
          options: { detectJoinFields: false, joinFields: [], conditionRecords: { splicing: {} } },
        },
      }),
    );
    assert.deepEqual([none.inserted, none.invalid], [1, 0]);
    // detectJoinFields asks for the server's join fields: the set, keys and validity these loads match by.
    const [detected] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: [[s.id, 'J', '2026-01-15', '2026-02-15', '2']],
          options: { detectJoinFields: true, conditionRecords: { splicing: {} } },
        },
      }),
    );
    assert.deepEqual([detected.inserted, detected.cut, detected.invalid], [1, 1, 0]);
    const crcpJoined = await call('/loaddata/CRCP', {
      data: { header, data: [], options: { joinFields: ['key1'] } },
    });
    expectError(crcpJoined, 400, -4, 'options.joinFields');
    assert.doesNotMatch(crcpJoined.body.response.data, /with \/loaddata\/CRCP/);
    // CRCIn loads only into sets of n keys.
    const [r3] = okData(
      await call('/loaddata/CRCI2', {
        data: { header, data: [[s.id, 'Z', '2026-01-01', '2026-06-30', '1']] },
      }),
    );
    assert.equal(r3.inserted, 0);
    assert.equal(r3.errors[0].field, 'conditionRecordSetId');
    assert.match(r3.errors[0].message, /CRCI1, not CRCI2/);
  });

  test('look-up: key signatures computed by the server agree with the database (any characters)', async () => {
    const s = await newSet(2);
    const keys = [
      ['Ä:ß', 'x'],
      ['1:2', '3'],
      ['1', '2:3'],
      ['😀 emoji', '漢字'],
      ['-', '-'],
      ["quote'\\", 'tab\tnew\nline'],
    ];
    const [r] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header: ['conditionRecordSetId', 'key1', 'key2', 'validFrom', 'conditionValue'],
          data: keys.map((k, i) => [s.id, k[0], k[1], '2026-01-01', String(i)]),
        },
      }),
    );
    assert.equal(r.inserted, keys.length, JSON.stringify(r));
    const found = okData(
      await call(`/conditionrecordset.lookup/${s.name}`, {
        data: { keys: [...keys, ['1:2', '2:3'], ['Ä', 'ß:x']], date: '2030-05-05' },
      }),
    );
    assert.deepEqual(
      found.map((f) => f?.conditionValue ?? null),
      [...keys.map((_, i) => String(i)), null, null],
    );
    assert.deepEqual(found[3].keys, ['😀 emoji', '漢字']);
    assert.equal(found[0].conditionRecordSetId, s.id);
    assert.equal(found[0].validTo, '9999-12-31');
  });

  test('concurrent writers of the same keys: adds, integrates and a load never leave an overlap', async () => {
    const s = await newSet(1);
    const N = 30;
    const add = (k: string, from: string, to: string) =>
      call('/add/CRCI1', { data: { conditionRecordSetId: s.id, key1: k, validFrom: from, validTo: to } });
    const integrate = (k: string, from: string, to: string) =>
      call('/integrate/CRCI1', [
        { data: { conditionRecordSetId: s.id, key1: k, validFrom: from, validTo: to } },
      ]);
    const load = call('/loaddata/CRCI1', {
      data: {
        header: ['conditionRecordSetId', 'key1', 'validFrom', 'validTo'],
        data: Array.from({ length: N }, (_, i) => [s.id, `K${i}`, '2026-02-01', '2026-04-30']),
      },
    });
    const singles = Array.from({ length: N }, (_, i) => [
      add(`K${i}`, '2026-01-01', '2026-03-31'),
      integrate(`K${i}`, '2026-03-15', '2026-12-31'),
    ]).flat();
    const replies = await Promise.all([load, ...singles]);
    for (const r of replies.slice(1)) {
      assert.ok(r.body.response.status === 0 || (r.status === 400 && r.body.response.status === -4), r.text);
    }
    const [loaded] = okData(replies[0]);
    const written = loaded.inserted + replies.slice(1).filter((r) => r.body.response.status === 0).length;
    const items = okData(
      await call('/fetch/CRCI1', {
        data: { conditionRecordSetId: s.id },
        sortBy: ['key1', 'validFrom'],
        endRow: 1000,
      }),
    );
    assert.equal(items.length, written);
    // Every key has at least one item, and no two items of a key overlap.
    const byKey = new Map<string, any[]>();
    for (const it of items) byKey.set(it.key1, [...(byKey.get(it.key1) ?? []), it]);
    assert.equal(byKey.size, N);
    for (const [k, list] of byKey) {
      for (let i = 1; i < list.length; i++) {
        assert.ok(list[i].validFrom > list[i - 1].validTo, `${k}: ${JSON.stringify(list)}`);
      }
    }
  });

  test('record history of an item is one, whichever code (CRCI, CRCIn) and write path wrote it', async () => {
    const s = await newSet(1);
    const key = { conditionRecordSetId: s.id, key1: 'HH', validFrom: '2026-01-01' };
    const [a] = okData(
      await call('/add/CRCI1', { data: { ...key, validTo: '2026-06-30', currency: 'usd' } }),
    );
    okData(await call('/update/CRCI1', { data: { ...key, currency: 'GBP' } }));
    okData(await call('/update/CRCI', { data: { typedId: `${a.id}.CRCI`, currency: 'JPY' } }));
    okData(await call('/integrate/CRCI1', { data: { ...key, currency: 'EUR' } }));
    okData(
      await call('/massedit/CRCI1', {
        filterCriteria: { conditionRecordSetId: s.id },
        massEditRecords: [{ fieldName: 'currency', massEditOperator: '=', fieldValue: 'CHF' }],
      }),
    );
    // A spliced load cuts it (its tail), as /loaddata/CRCP writes items as CRCI.
    const header = ['conditionRecordSetId', 'key1', 'validFrom', 'validTo'];
    okData(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: [[s.id, 'HH', '2026-05-01', '2026-07-31']],
          options: { conditionRecords: { splicing: {} } },
        },
      }),
    );
    okData(await call('/delete/CRCI1', { data: { typedId: `${a.id}.CRCI1` } }));
    const expected = [
      ['ADD', { currency: { old: null, new: 'usd' } }],
      ['UPDATE', { currency: { old: 'usd', new: 'GBP' } }],
      ['UPDATE', { currency: { old: 'GBP', new: 'JPY' } }],
      ['UPDATE', { currency: { old: 'JPY', new: 'EUR' } }],
      ['UPDATE', { currency: { old: 'EUR', new: 'CHF' } }],
      ['UPDATE', { validTo: { old: '2026-06-30', new: '2026-04-30' } }],
      ['DELETE', { currency: { old: 'CHF', new: null } }],
    ];
    const chain = async (code: string) =>
      okData(await call(`/fetch/${code}/${a.id}/history`, {})).map((h) => [
        h.action,
        Object.fromEntries(
          Object.entries(h.changes).filter(
            ([f]) => f === (h.action === 'UPDATE' ? Object.keys(h.changes)[0] : 'currency'),
          ),
        ),
      ]);
    for (const code of ['CRCI1', 'CRCI']) assert.deepEqual(await chain(code), expected, code);
    const rows = okData(await call(`/fetch/CRCI/${a.id}/history`, {}));
    assert.deepEqual(
      rows.map((h) => h.operation),
      [
        'add/CRCI1',
        'update/CRCI1',
        'update/CRCI',
        'integrate/CRCI1',
        'massedit/CRCI1',
        'loaddata/CRCP',
        'delete/CRCI1',
      ],
    );
    assert.ok(rows.every((h) => h.typeCode === 'CRCI'));
    // Rows stored under CRCIn before (one history per code) are still read, by either code.
    await h.db.query(`UPDATE record_history SET type_code = 'CRCI1' WHERE partition_id = $1 AND id = $2`, [
      h.partitionId,
      rows[1].id,
    ]);
    for (const code of ['CRCI1', 'CRCI']) assert.deepEqual(await chain(code), expected, code);
  });

  test('record history keeps exact decimals: old and new values, asOf, 1e400', async () => {
    const s = await newSet(1);
    const tiny = '0.1000000000000000000001';
    const [a] = okData(
      await call('/add/CRCI1', {
        data: {
          conditionRecordSetId: s.id,
          key1: 'D',
          validFrom: '2026-01-01',
          conditionValue: tiny,
          priceUnit: '1.50',
        },
      }),
    );
    assert.equal(a.conditionValue, tiny);
    const before = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    const [big] = okData(
      await call('/update/CRCI', { data: { typedId: `${a.id}.CRCI`, conditionValue: '1e400' } }),
    );
    assert.equal(big.conditionValue, `1${'0'.repeat(400)}`);
    okData(
      await call('/massedit/CRCI1', {
        filterCriteria: { conditionRecordSetId: s.id },
        massEditRecords: [{ fieldName: 'conditionValue', massEditOperator: '=', fieldValue: tiny }],
      }),
    );
    const rows = okData(await call(`/fetch/CRCI1/${a.id}/history`, {}));
    assert.deepEqual(
      rows.map((r) => [r.action, r.changes.conditionValue]),
      [
        ['ADD', { old: null, new: tiny }],
        ['UPDATE', { old: tiny, new: big.conditionValue }],
        ['UPDATE', { old: big.conditionValue, new: tiny }],
      ],
    );
    assert.deepEqual(rows[0].changes.priceUnit, { old: null, new: '1.50' });
    const [then] = okData(await call(`/fetch/CRCI1/${a.id}?asOf=${before}`));
    assert.equal(then.conditionValue, tiny);
    okData(await call('/delete/CRCI', { data: { typedId: `${a.id}.CRCI` } }));
    const [gone] = okData(await call(`/fetch/CRCI/${a.id}/history`, { data: { action: 'DELETE' } }));
    assert.deepEqual(gone.changes.conditionValue, { old: tiny, new: null });
  });

  test('record history of a spliced load: ADD of new items and copies, UPDATE of cut items (changed fields only)', async () => {
    const s = await newSet(1);
    const header = ['conditionRecordSetId', 'key1', 'validFrom', 'validTo', 'conditionValue', 'attribute1'];
    const [first] = okData(
      await call('/loaddata/CRCP', {
        data: { header, data: [[s.id, 'A', '2026-01-01', '2026-12-31', '1', 'orig']] },
      }),
    );
    assert.equal(first.inserted, 1);
    const [a] = okData(await call('/fetch/CRCI1', { data: { conditionRecordSetId: s.id, key1: 'A' } }));
    // Split around May: A is cut to Jan..Apr (attribute1 set), a copy holds Jun..Dec.
    const [r] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: [[s.id, 'A', '2026-05-01', '2026-05-31', '2', 'new']],
          options: { conditionRecords: { splicing: { setFields: { attribute1: 'cut' } } } },
        },
      }),
    );
    assert.deepEqual([r.inserted, r.split, r.cut], [1, 1, 0]);
    const items = okData(
      await call('/fetch/CRCI1', { data: { conditionRecordSetId: s.id }, sortBy: ['validFrom'] }),
    );
    assert.deepEqual(
      items.map((i) => [i.validFrom, i.validTo, i.attribute1]),
      [
        ['2026-01-01', '2026-04-30', 'cut'],
        ['2026-05-01', '2026-05-31', 'new'],
        ['2026-06-01', '2026-12-31', 'cut'],
      ],
    );
    const history = async (id: number) => okData(await call(`/fetch/CRCI/${id}/history`, {}));
    const cut = await history(a.id);
    assert.deepEqual(
      cut.map((h) => [h.action, [...h.field].sort()]),
      [
        ['ADD', ['attribute1', 'conditionRecordSetId', 'conditionValue', 'key1', 'validFrom', 'validTo']],
        ['UPDATE', ['attribute1', 'validTo']],
      ],
    );
    assert.deepEqual(cut[1].changes, {
      attribute1: { old: 'orig', new: 'cut' },
      validTo: { old: '2026-12-31', new: '2026-04-30' },
    });
    assert.deepEqual(cut[0].changes.conditionValue, { old: null, new: '1' });
    const copy = await history(items[2].id);
    assert.deepEqual(
      copy.map((h) => h.action),
      ['ADD'],
    );
    assert.deepEqual(copy[0].changes.validFrom, { old: null, new: '2026-06-01' });
    const added = await history(items[1].id);
    assert.deepEqual(added[0].changes.attribute1, { old: null, new: 'new' });
  });
});
