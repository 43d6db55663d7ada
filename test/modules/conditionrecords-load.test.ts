// `/loaddata/CRCP` over real HTTP on both databases: plain loads (overlaps with existing items are
// row errors, the rest is written), every splicing case (cover, head, tail, inside/split, several
// new items inside one, touching, same-day items) with setFields/resetFields, supersedeRecords true
// and false (CRCIH rows or none), overlapping rows within one load, sets by uniqueName, bad options,
// permissions, record history, two concurrent loads into one set (the invariant holds), and
// look-ups of loaded items answering their attributes typed by the set's CRCIAM as /fetch/CRCI does.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { okData, expectError } from '../helpers/envelope.ts';
import { findConditionRecords } from '../../src/modules/conditionrecords/lookup.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

const HEADER = ['conditionRecordSetId', 'key1', 'validFrom', 'validTo', 'conditionValue', 'attribute1'];

describe('CRCP loads', () => {
  let h: Harness;
  const call = (path: string, body?: unknown, who: { user: string; password: string } | null = admin) =>
    h.call(path, { ...(who ? { basic: who } : {}), ...(body === undefined ? {} : { body }) });
  const load = (data: unknown[], options?: object, header = HEADER) =>
    call('/loaddata/CRCP', { data: { header, data, ...(options ? { options } : {}) } });

  async function newSet(keySize = 1): Promise<{ id: number; name: string }> {
    const name = uniqueName('crcp');
    const [s] = okData(await call('/add/CRCS', { data: { uniqueName: name, label: name, keySize } }));
    return { id: s.id, name };
  }

  /** Items of a set as "key from..to value attribute1", sorted. */
  async function items(setId: number): Promise<string[]> {
    const rows = okData(
      await call('/fetch/CRCI', {
        data: { conditionRecordSetId: setId },
        sortBy: ['key1', 'validFrom'],
        endRow: 1000,
      }),
    );
    return rows.map((r) => `${r.key1} ${r.validFrom}..${r.validTo} ${r.conditionValue} ${r.attribute1}`);
  }

  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h.close();
  });

  test('without splicing: overlaps with existing items are row errors, the rest is written', async () => {
    const s = await newSet();
    const [first] = okData(
      await load([
        [s.id, 'A', '2026-01-01', '2026-03-31', '1', null],
        [s.name, 'B', '2026-01-01', '2026-12-31', '2', null],
      ]),
    );
    assert.equal(first.inserted, 2);
    assert.equal(first.invalid, 0);
    const [second] = okData(
      await load([
        [s.id, 'A', '2026-03-31', '2026-04-30', '3', null],
        [s.id, 'A', '2026-05-01', '2026-05-31', '4', null],
        [s.id, 'C', '2026-01-01', '2026-01-01', 'x', null],
        [s.id, 'C', '2026-02-01', '2026-01-31', '5', null],
        [999999999, 'D', '2026-01-01', '2026-01-31', '5', null],
        [s.id, 'E', '2026-01-01', '2026-01-31', '5', null, 'extra'],
      ]),
    );
    assert.equal(second.inserted, 1);
    assert.equal(second.invalid, 5);
    assert.deepEqual(
      second.errors.map((e: any) => [e.row, e.field ?? null]),
      [
        [0, 'validFrom'],
        [2, 'conditionValue'],
        [3, 'validTo'],
        [4, 'conditionRecordSetId'],
        [5, null],
      ],
    );
    assert.match(second.errors[0].message, /overlaps item \d+\.CRCI \(valid 2026-01-01\.\.2026-03-31\)/);
    assert.deepEqual(await items(s.id), [
      'A 2026-01-01..2026-03-31 1 null',
      'A 2026-05-01..2026-05-31 4 null',
      'B 2026-01-01..2026-12-31 2 null',
    ]);
  });

  test('splicing: cover, head, tail, split, several inside one, touching, same day; setFields/resetFields; no history', async () => {
    const s = await newSet();
    const existing = [
      ['COVER', '2026-03-01', '2026-03-31'],
      ['HEAD', '2026-01-01', '2026-06-30'],
      ['TAIL', '2026-04-01', '2026-12-31'],
      ['SPLIT', '2026-01-01', '2026-12-31'],
      ['TOUCH', '2026-01-01', '2026-03-31'],
      ['SAMEDAY', '2026-05-05', '2026-05-05'],
      ['SAMEDAY2', '2026-01-01', '2026-12-31'],
      ['MULTI', '2026-01-01', '2026-12-31'],
    ];
    okData(await load(existing.map(([k, f, t]) => [s.id, k, f, t, '1', 'old'])));
    const [r] = okData(
      await load(
        [
          [s.id, 'COVER', '2026-02-15', '2026-04-15', '2', 'new'],
          [s.id, 'HEAD', '2026-04-01', '2026-12-31', '2', 'new'],
          [s.id, 'TAIL', '2026-01-01', '2026-06-30', '2', 'new'],
          [s.id, 'SPLIT', '2026-05-01', '2026-05-31', '2', 'new'],
          [s.id, 'TOUCH', '2026-04-01', '2026-04-30', '2', 'new'],
          [s.id, 'SAMEDAY', '2026-05-05', '2026-05-05', '2', 'new'],
          [s.id, 'SAMEDAY2', '2026-05-05', '2026-05-05', '2', 'new'],
          [s.id, 'MULTI', '2026-03-01', '2026-03-31', '2', 'new'],
          [s.id, 'MULTI', '2026-06-01', '2026-06-30', '2', 'new'],
        ],
        {
          conditionRecords: {
            splicing: { setFields: { attribute1: 'cut' }, resetFields: ['conditionValue'] },
          },
        },
      ),
    );
    assert.deepEqual(
      { inserted: r.inserted, cut: r.cut, split: r.split, superseded: r.superseded, invalid: r.invalid },
      { inserted: 9, cut: 2, split: 3, superseded: 2, invalid: 0 },
    );
    assert.deepEqual(await items(s.id), [
      'COVER 2026-02-15..2026-04-15 2 new',
      'HEAD 2026-01-01..2026-03-31 null cut',
      'HEAD 2026-04-01..2026-12-31 2 new',
      'MULTI 2026-01-01..2026-02-28 null cut',
      'MULTI 2026-03-01..2026-03-31 2 new',
      'MULTI 2026-04-01..2026-05-31 null cut',
      'MULTI 2026-06-01..2026-06-30 2 new',
      'MULTI 2026-07-01..2026-12-31 null cut',
      'SAMEDAY 2026-05-05..2026-05-05 2 new',
      'SAMEDAY2 2026-01-01..2026-05-04 null cut',
      'SAMEDAY2 2026-05-05..2026-05-05 2 new',
      'SAMEDAY2 2026-05-06..2026-12-31 null cut',
      'SPLIT 2026-01-01..2026-04-30 null cut',
      'SPLIT 2026-05-01..2026-05-31 2 new',
      'SPLIT 2026-06-01..2026-12-31 null cut',
      'TAIL 2026-01-01..2026-06-30 2 new',
      'TAIL 2026-07-01..2026-12-31 null cut',
      'TOUCH 2026-01-01..2026-03-31 1 old',
      'TOUCH 2026-04-01..2026-04-30 2 new',
    ]);
    assert.equal(okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id } })).length, 0);
    // Record history (issue 12) saw the cut and the removal.
    const hist = await h.db.query<{ action: string; n: number }>(
      `SELECT action, count(*)::int AS n FROM record_history WHERE partition_id = $1 AND type_code = 'CRCI'
          AND record_id IN (SELECT id FROM condition_records WHERE condition_record_set_id = $2
                            UNION SELECT 0) GROUP BY action ORDER BY action`,
      [h.partitionId, s.id],
    );
    assert.ok(
      hist.rows.some((x) => x.action === 'UPDATE' && x.n >= 5),
      JSON.stringify(hist.rows),
    );
  });

  test('record history of new items: the fields set, stored once per load when every row sets the same', async () => {
    const s = await newSet();
    // Every row sets the same fields (attribute1 left empty in all): the ADD rows point to one list.
    okData(
      await load([
        [s.id, 'HL-A', '2026-01-01', '2026-12-31', '1', null],
        [s.id, 'HL-B', '2026-01-01', '2026-12-31', '2', null],
      ]),
    );
    // Rows that set different fields (attribute1 in one only), spliced: names kept in each ADD row.
    okData(
      await load(
        [
          [s.id, 'HL-A', '2026-06-01', '2026-06-30', '3', 'x'],
          [s.id, 'HL-C', '2026-01-01', '2026-12-31', '4', null],
        ],
        { conditionRecords: { splicing: { setFields: { attribute1: 'cut' } } } },
      ),
    );
    const stored = await h.db.query<{ key1: string; from: string; list: boolean; inline: string[] }>(
      `SELECT c.key1, to_char(c.valid_from, 'MM-DD') AS from, r.field_list IS NOT NULL AS list,
              r.changed_fields AS inline
         FROM record_history r JOIN condition_records c ON c.partition_id = r.partition_id AND c.id = r.record_id
        WHERE r.type_code = 'CRCI' AND r.action = 'ADD' AND c.condition_record_set_id = $1
        ORDER BY c.key1, c.valid_from`,
      [s.id],
    );
    const fields = ['conditionRecordSetId', 'key1', 'validFrom', 'validTo', 'conditionValue'];
    assert.deepEqual(
      stored.rows.map((r) => [r.key1, r.from, r.list, r.inline]),
      [
        ['HL-A', '01-01', true, []],
        ['HL-A', '06-01', false, [...fields, 'attribute1']],
        // The split copy of HL-A's first item: its own fields, named in the row.
        ['HL-A', '07-01', false, [...fields, 'attribute1']],
        ['HL-B', '01-01', true, []],
        ['HL-C', '01-01', false, fields],
      ],
    );
    // Read back through the API, the pointed-to list answers as the names would.
    const [b] = okData(await call('/fetch/CRCI', { data: { conditionRecordSetId: s.id, key1: 'HL-B' } }));
    const [added] = okData(await call(`/fetch/CRCI/${b.id}/history`, {}));
    assert.equal(added.action, 'ADD');
    assert.deepEqual(Object.keys(added.changes).sort(), [...fields].sort());
    assert.deepEqual(
      [added.changes.key1, added.changes.validFrom, added.changes.validTo],
      [
        { old: null, new: 'HL-B' },
        { old: null, new: '2026-01-01' },
        { old: null, new: '2026-12-31' },
      ],
    );
    assert.equal(Number(added.changes.conditionValue.new), 2);
  });

  test('supersedeRecords: removed items and the state before each cut move to CRCIH', async () => {
    const s = await newSet();
    okData(
      await load([
        [s.id, 'X', '2026-03-01', '2026-03-31', '1', null],
        [s.id, 'Y', '2026-01-01', '2026-12-31', '1', null],
      ]),
    );
    const [r] = okData(
      await load(
        [
          [s.id, 'X', '2026-01-01', '2026-12-31', '2', null],
          [s.id, 'Y', '2026-06-01', '2026-06-30', '2', null],
        ],
        { conditionRecords: { splicing: { supersedeRecords: true } } },
      ),
    );
    assert.deepEqual([r.inserted, r.cut, r.split, r.superseded], [2, 0, 1, 1]);
    const hist = okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id }, sortBy: 'key1' }));
    assert.deepEqual(
      hist.map((x) => [x.key1, x.validFrom, x.validTo, x.reason, x.supersededBy !== null]),
      [
        ['X', '2026-03-01', '2026-03-31', 'SUPERSEDED', true],
        ['Y', '2026-01-01', '2026-12-31', 'SUPERSEDED', true],
      ],
    );
  });

  test('rows of one load that overlap each other are row errors', async () => {
    const s = await newSet(2);
    const [r] = okData(
      await load(
        [
          [s.id, 'A', 'P', '2026-01-01', '2026-01-31'],
          [s.id, 'A', 'P', '2026-01-31', '2026-02-28'],
          [s.id, 'A', 'Q', '2026-01-31', '2026-02-28'],
          [s.id, 'A', 'P', '2026-02-01', '2026-02-28'],
        ],
        { conditionRecords: { splicing: {} } },
        ['conditionRecordSetId', 'key1', 'key2', 'validFrom', 'validTo'],
      ),
    );
    assert.equal(r.inserted, 3);
    assert.deepEqual(
      r.errors.map((e: any) => [e.row, e.field]),
      [[1, 'validFrom']],
    );
    assert.match(r.errors[0].message, /row 0/);
  });

  test('rows of another width than the header: a short one names the first field it lacks', async () => {
    const s = await newSet(2);
    const [r] = okData(
      await load(
        [
          [s.id, 'W', 'P', '2026-01-01'],
          [s.id, 'W', 'Q', '2026-01-01', '2026-01-31', 'extra'],
          'no row',
          [s.id, 'W', 'R', '2026-01-01', '2026-01-31'],
        ],
        undefined,
        ['conditionRecordSetId', 'key1', 'key2', 'validFrom', 'validTo'],
      ),
    );
    assert.equal(r.inserted, 1);
    assert.deepEqual(
      r.errors.map((e: any) => [e.row, e.field]),
      [
        [0, 'validTo'],
        [1, undefined],
        [2, undefined],
      ],
    );
    assert.match(r.errors[0].message, /has 4 values; the header has 5 \(no value for validTo\)/);
    assert.match(r.errors[1].message, /has 6 values; the header has 5$/);
    assert.match(r.errors[2].message, /must be an array of 5 values/);
  });

  test('bad header, options and permissions', async () => {
    const s = await newSet();
    expectError(await load([], undefined, ['key1', 'validFrom', 'validTo']), 400, -4, 'header');
    expectError(await load([], undefined, [...HEADER, 'nope']), 400, -4, 'header.6');
    expectError(await load([], undefined, [...HEADER, 'version']), 400, -4, 'header.6');
    expectError(
      await load([], { conditionRecords: { splicing: { setFields: { validTo: '2026-01-01' } } } }),
      400,
      -4,
      'options.conditionRecords.splicing.setFields.validTo',
    );
    expectError(
      await load([], { conditionRecords: { splicing: { setFields: { conditionValue: 'abc' } } } }),
      400,
      -4,
      'options.conditionRecords.splicing.setFields.conditionValue',
    );
    expectError(
      await load([], { conditionRecords: { splicing: { resetFields: ['key1'] } } }),
      400,
      -4,
      'options.conditionRecords.splicing.resetFields.0',
    );
    // CRCI loads are CRCP loads without splicing (conditionrecords-meta.test.ts): options refused.
    expectError(
      await call('/loaddata/CRCI1', {
        data: { header: HEADER, data: [], options: { conditionRecords: { splicing: {} } } },
      }),
      400,
      -4,
      'options.conditionRecords',
    );
    expectError(
      await call('/loaddata/P', { data: { header: ['sku'], data: [], options: { conditionRecords: {} } } }),
      400,
      -4,
    );
    await h.newUser('crcp_plain', 'crcp-password-1');
    const body = { data: { header: HEADER, data: [[s.id, 'A', '2026-01-01', '2026-01-02', '1', null]] } };
    expectError(
      await call('/loaddata/CRCP', body, { user: 'crcp_plain', password: 'crcp-password-1' }),
      403,
      -3,
    );
    expectError(await call('/loaddata/CRCP', body, null), 401, -7);
    // An editor outside the set's edit group gets row errors.
    const g = await newSet();
    okData(
      await call(`/conditionrecordset.update/${g.id}`, {
        data: { userGroupEdit: 'OTHERS' },
        oldValues: { version: 0 },
      }),
    );
    await h.newUser('crcp_ed', 'crcp-password-2', ['PB_CONDITIONRECORDEDITOR']);
    const [r] = okData(
      await call(
        '/loaddata/CRCP',
        { data: { header: HEADER, data: [[g.id, 'A', '2026-01-01', '2026-01-02', '1', null]] } },
        { user: 'crcp_ed', password: 'crcp-password-2' },
      ),
    );
    assert.equal(r.inserted, 0);
    assert.match(r.errors[0].message, /not allowed/);
  });

  /** Attribute meta of a set: `attributeN` → its fieldType. */
  async function declareMeta(setId: number, types: Record<string, string>): Promise<void> {
    for (const [fieldName, fieldType] of Object.entries(types))
      okData(await call('/add/CRCIAM', { data: { conditionRecordSetId: setId, fieldName, fieldType } }));
  }

  /**
   * The look-up of `keys` (key size 1) at 2026-06-01 by HTTP (the database writes the JSON), by
   * findConditionRecords (JavaScript) and /fetch/CRCI of the set: the same attributes, answered.
   */
  async function lookedUp(s: { id: number; name: string }, keys: string[]): Promise<any[]> {
    const tuples = keys.map((k) => [k]);
    const served = okData(
      await call(`/conditionrecordset.lookup/${s.name}`, { data: { keys: tuples, date: '2026-06-01' } }),
    );
    const js = await findConditionRecords(h.db, h.partitionId, s.name, tuples, '2026-06-01');
    assert.deepEqual(served, JSON.parse(JSON.stringify(js)), 'the database and JavaScript agree');
    const fetched = okData(await call('/fetch/CRCI', { data: { conditionRecordSetId: s.id }, endRow: 1000 }));
    for (const item of served.filter((x) => x !== null)) {
      const f = fetched.find((r) => r.id === item.id);
      const attrs = Object.fromEntries(
        Object.entries(f).filter(([k, v]) => /^attribute\d+$/.test(k) && v !== null),
      );
      assert.deepEqual(item.attributes, attrs, `as /fetch/CRCI answers item ${item.keys[0]}`);
    }
    return served;
  }

  test("look-up: attributes typed by the set's CRCIAM (numbers, booleans, dates; text without meta)", async () => {
    const s = await newSet();
    // attributeN: its meta's fieldType (none: no meta) and its value in items A, B and C.
    const columns: [string | null, string | null, string | null, string | null][] = [
      ['NUMERIC', '12.50', '123456789012345678.25', '-7.125e-2'],
      ['INTEGER', '42', '9007199254740993', '-0012'],
      ['BOOLEAN', 'true', 'false', null],
      ['DATE', '2026-03-01', null, null],
      ['MONEY', '1e3', '-0.0', '999999999999999'],
      ['PERCENT', '0.075', '.5', '100000000000000000000'],
      ['TEXT', '007', 'x', null],
      ['DATETIME', '2026-03-01T10:00:00Z', null, null],
      [null, '007', '1.50', null],
      [null, null, '', null],
    ];
    const names = columns.map((_, i) => `attribute${i + 1}`);
    await declareMeta(
      s.id,
      Object.fromEntries(columns.flatMap(([type], i) => (type === null ? [] : [[names[i]!, type]]))),
    );
    const [r] = okData(
      await load(
        ['A', 'B', 'C'].map((k, j) => [s.id, k, '2026-01-01', ...columns.map((c) => c[j + 1])]),
        undefined,
        ['conditionRecordSetId', 'key1', 'validFrom', ...names],
      ),
    );
    assert.equal(r.inserted, 3, JSON.stringify(r));
    const [a, b, c, none] = await lookedUp(s, ['A', 'B', 'C', 'none']);
    assert.deepEqual(a.attributes, {
      attribute1: 12.5,
      attribute2: 42,
      attribute3: true,
      attribute4: '2026-03-01',
      attribute5: 1000,
      attribute6: 0.075,
      attribute7: '007',
      attribute8: '2026-03-01T10:00:00Z',
      attribute9: '007',
    });
    // An attribute without meta stays text (an empty one too); a null one is absent.
    assert.deepEqual(b.attributes, {
      attribute1: '123456789012345678.25',
      attribute2: '9007199254740993',
      attribute3: false,
      attribute5: 0,
      attribute6: 0.5,
      attribute7: 'x',
      attribute9: '1.50',
      attribute10: '',
    });
    assert.deepEqual(c.attributes, {
      attribute1: -0.07125,
      attribute2: -12,
      attribute5: 999999999999999,
      attribute6: 100000000000000000000,
    });
    assert.equal(none, null);
    // In parts at once (more than 2,500 tuples, PostgreSQL) and by a set with wildcards: the same.
    const many = Array.from({ length: 3000 }, (_, i) => ['A', 'B', 'C', 'none'][i % 4]!);
    const big = await lookedUp(s, many);
    assert.deepEqual(big.slice(0, 4), [a, b, c, null]);
    const wild = uniqueName('crcw');
    const [ws] = okData(
      await call('/add/CRCS', { data: { uniqueName: wild, keySize: 1, wildcardKeys: true } }),
    );
    await declareMeta(ws.id, { attribute1: 'NUMERIC', attribute2: 'BOOLEAN' });
    const wildHeader = ['conditionRecordSetId', 'key1', 'validFrom', 'attribute1', 'attribute2'];
    okData(await load([[ws.id, '*', '2026-01-01', '2.50', 'true']], undefined, wildHeader));
    const [x] = await lookedUp({ id: ws.id, name: wild }, ['X']);
    assert.deepEqual(x.attributes, { attribute1: 2.5, attribute2: true });
  });

  test('look-up: text stored before its meta said NUMERIC or INTEGER is typed as /fetch/CRCI types it', async () => {
    const s = await newSet();
    const values: [string, string][] = [
      [' 12 ', '12.0'],
      ['0x1A', '1.00000000000000001'],
      ['1e-7', '1e-400'],
      ['1e21', ' 5'],
      ['abc', '12.5'],
      ['abc1', '4503599627370496.5'],
      ['Infinity', 'n/a'],
      ['0.0000001', '1e3'],
    ];
    const header = ['conditionRecordSetId', 'key1', 'validFrom', 'attribute1', 'attribute2'];
    okData(
      await load(
        values.map(([d, i], k) => [s.id, `K${k}`, '2026-01-01', d, i]),
        undefined,
        header,
      ),
    );
    await declareMeta(s.id, { attribute1: 'NUMERIC', attribute2: 'INTEGER' });
    const found = await lookedUp(
      s,
      values.map((_, k) => `K${k}`),
    );
    assert.deepEqual(
      found.map((f) => [f.attributes.attribute1, f.attributes.attribute2]),
      [
        [12, 12],
        ['0x1A', '1.00000000000000001'],
        [1e-7, '1e-400'],
        [1e21, 5],
        ['abc', '12.5'],
        ['abc1', '4503599627370496.5'],
        ['Infinity', 'n/a'],
        [1e-7, 1000],
      ],
    );
  });

  test('two concurrent spliced loads into one set: no overlap survives', async () => {
    const s = await newSet();
    const rowsOf = (offset: number) =>
      Array.from({ length: 300 }, (_, i) => {
        const month = String(1 + ((i + offset) % 12)).padStart(2, '0');
        return [s.id, `K${i % 50}`, `2026-${month}-01`, `2026-${month}-20`, String(offset), null];
      });
    const opts = { conditionRecords: { splicing: { supersedeRecords: true } } };
    const results = await Promise.all([load(rowsOf(0), opts), load(rowsOf(3), opts), load(rowsOf(5), opts)]);
    for (const r of results) okData(r);
    const overlaps = await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM condition_records a JOIN condition_records b
          ON a.partition_id = b.partition_id AND a.condition_record_set_id = b.condition_record_set_id
         AND a.key_sig = b.key_sig AND a.id < b.id AND a.valid_from <= b.valid_to AND a.valid_to >= b.valid_from
       WHERE a.partition_id = $1 AND a.condition_record_set_id = $2`,
      [h.partitionId, s.id],
    );
    assert.equal(overlaps.rows[0]!.n, 0);
    assert.ok((await items(s.id)).length > 0);
  });
});
