// The query API reads a record's fields as /fetch does: a NUMERIC or INTEGER attribute is a number
// wherever /fetch's filters read one (`1e00001` is 10, also in counts, sums, groups and joins; a
// value beyond numeric's range is no number, never a failure); a DATETIME attribute's group, least
// and greatest come back in the text its records hold, system date-times as /fetch answers them;
// `typedId` is a field of every source, selected, grouped, sorted and filtered as /fetch's.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

describe('query API reads fields as /fetch does', () => {
  let h: Harness;
  const call = (path: string, body: unknown) => h.call(path, { basic: admin, body });
  const execute = async (data: unknown): Promise<any[]> => okData(await call('/queryapi.execute', { data }));
  const fetched = async (body: unknown): Promise<any[]> => okData(await call('/fetch/P', body));
  const prefix = (value: string) => ({ fieldName: 'sku', operator: 'startsWith', value });

  before(async () => {
    h = await startHarness();
    for (const [fieldName, fieldType] of [
      ['attribute1', 'NUMERIC'],
      ['attribute9', 'NUMERIC'],
      ['attribute3', 'INTEGER'],
      ['attribute5', 'DATETIME'],
    ])
      okData(await call('/add/PAM', { data: { fieldName, fieldType } }));
  });
  after(() => h.close());

  test('a number /fetch reads (exponent 1e00001) is counted, summed, grouped and joined', async () => {
    okData(
      await call('/add/P', [
        { data: { sku: 'E5-1', attribute1: '1e00001', attribute9: '10' } },
        { data: { sku: 'E5-2', attribute1: '5e-0000000001', attribute9: '0.5' } },
        { data: { sku: 'E5-3', attribute1: '3', attribute9: '3' } },
      ]),
    );
    assert.deepEqual(
      (await fetched({ data: prefix('E5-'), resultFields: ['attribute1'], sortBy: 'sku' })).map(
        (r) => r.attribute1,
      ),
      [10, 0.5, 3],
    );
    assert.deepEqual(
      await execute({
        source: 'P',
        filter: prefix('E5-'),
        aggregates: [
          { fn: 'count', field: 'attribute1', as: 'c' },
          { fn: 'sum', field: 'attribute1', as: 's' },
          { fn: 'min', field: 'attribute1', as: 'lo' },
          { fn: 'max', field: 'attribute1', as: 'hi' },
        ],
      }),
      [{ c: 3, s: 13.5, lo: 0.5, hi: 10 }],
    );
    assert.deepEqual(
      await execute({
        source: 'P',
        filter: prefix('E5-'),
        groupBy: ['attribute1'],
        aggregates: [{ fn: 'count', as: 'n' }],
      }),
      [
        { attribute1: 0.5, n: 1 },
        { attribute1: 3, n: 1 },
        { attribute1: 10, n: 1 },
      ],
    );
    // /fetch's equalsField and the join compare the same values.
    const equal = await fetched({
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [prefix('E5-'), { fieldName: 'attribute1', operator: 'equalsField', value: 'attribute9' }],
      },
      resultFields: ['sku'],
      sortBy: 'sku',
    });
    assert.deepEqual(
      equal.map((r) => r.sku),
      ['E5-1', 'E5-2', 'E5-3'],
    );
    assert.deepEqual(
      await execute({
        source: 'P',
        join: [{ source: 'P', as: 'b', on: { attribute1: 'attribute9' } }],
        filter: prefix('E5-'),
        select: ['sku', 'b.sku'],
        sortBy: 'sku',
      }),
      equal.map((r) => ({ sku: r.sku, 'b.sku': r.sku })),
    );
  });

  test('text stored before the meta typed it: a number exactly where /fetch filters see one', async () => {
    // Written straight to the table, as values stored while the attributes were TEXT.
    const stored = [
      '1e00001',
      '+.5e+0001',
      ' 7 ',
      '2e0003',
      '1e1000',
      '1e200000', // beyond numeric's range: no number
      '9'.repeat(1500), // longer than the inline form reads: the safe cast's number
      '\u20035', // EM SPACE: numeric input does not skip it
      '\u0663', // ARABIC-INDIC DIGIT THREE
      'abc',
      '1e',
      '',
    ];
    await h.db.query(
      `INSERT INTO products (partition_id, sku, attribute1, attribute3)
       SELECT $1, 'W-' || lpad(i::text, 2, '0'), v, v FROM unnest($2::text[]) WITH ORDINALITY AS t(v, i)`,
      [h.partitionId, stored],
    );
    for (const field of ['attribute1', 'attribute3']) {
      // What /fetch's filters read as a number: every one of them is greater than -1.
      const numbers = await fetched({
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [prefix('W-'), { fieldName: field, operator: 'greaterThan', value: -1 }],
        },
        resultFields: ['sku'],
        sortBy: 'sku',
        endRow: 100,
      });
      assert.deepEqual(
        numbers.map((r) => r.sku),
        ['W-01', 'W-02', 'W-03', 'W-04', 'W-05', 'W-07'],
        field,
      );
      const [agg] = await execute({
        source: 'P',
        filter: prefix('W-'),
        aggregates: [
          { fn: 'count', field, as: 'c' },
          { fn: 'min', field, as: 'lo' },
          { fn: 'countDistinct', field, as: 'd' },
        ],
      });
      assert.deepEqual(agg, { c: 6, lo: 5, d: 6 }, field);
      // Grouped: the numbers' groups, and one NULL group for the rest.
      const groups = await execute({
        source: 'P',
        filter: prefix('W-'),
        groupBy: [field],
        aggregates: [{ fn: 'count', as: 'n' }],
        endRow: 50,
      });
      assert.deepEqual(
        groups.map((g) => g.n),
        [6, 1, 1, 1, 1, 1, 1],
        field,
      );
      assert.deepEqual(groups.slice(0, 5), [
        { [field]: null, n: 6 },
        { [field]: 5, n: 1 },
        { [field]: 7, n: 1 },
        { [field]: 10, n: 1 },
        { [field]: 2000, n: 1 },
      ]);
      assert.equal(groups[5][field], '1' + '0'.repeat(1000), field);
      assert.equal(groups[6][field], '9'.repeat(1500), field);
    }
    // Numbers near numeric's greatest: their sum is beyond it, a -4 that says so (not a 500).
    await h.db.query(
      `INSERT INTO products (partition_id, sku, attribute1) VALUES ($1, 'O-1', '9e131071'), ($1, 'O-2', '9e131071')`,
      [h.partitionId],
    );
    const [max] = await execute({
      source: 'P',
      filter: prefix('O-'),
      aggregates: [{ fn: 'max', field: 'attribute1' }],
    });
    assert.equal(max.max_attribute1, '9' + '0'.repeat(131071));
    const sum = await call('/queryapi.execute', {
      data: { source: 'P', filter: prefix('O-'), aggregates: [{ fn: 'sum', field: 'attribute1' }] },
    });
    expectError(sum, 400, -4, 'aggregates');
  });

  test("DATETIME attributes: groups, least and greatest read as the records' text", async () => {
    okData(
      await call('/add/P', [
        { data: { sku: 'D-1', attribute5: '2024-01-15T10:00:00Z' } },
        { data: { sku: 'D-2', attribute5: '2024-01-15T12:00:00+02:00' } }, // the same instant
        { data: { sku: 'D-3', attribute5: 1705312800123 } }, // milliseconds: …00.123Z
        { data: { sku: 'D-4', attribute5: '2024-01-16T08:30:00.5Z' } },
        { data: { sku: 'D-5', attribute5: '2024-01-17T00:00:00.123456Z' } },
      ]),
    );
    const records = await fetched({
      data: prefix('D-'),
      resultFields: ['sku', 'attribute5', 'lastUpdateDate'],
      sortBy: 'sku',
    });
    const text = (sku: string) => records.find((r) => r.sku === sku)!.attribute5;
    assert.deepEqual(
      records.map((r) => r.attribute5),
      [
        '2024-01-15T10:00:00Z',
        '2024-01-15T12:00:00+02:00',
        '2024-01-15T10:00:00.123Z',
        '2024-01-16T08:30:00.5Z',
        '2024-01-17T00:00:00.123456Z',
      ],
    );
    // Selected: the stored text, as /fetch answers it.
    assert.deepEqual(
      await execute({
        source: 'P',
        filter: prefix('D-'),
        select: ['sku', 'attribute5', 'lastUpdateDate'],
        sortBy: 'sku',
      }),
      records,
    );
    // Grouped: the instant, in the text of a record written in UTC.
    assert.deepEqual(
      await execute({
        source: 'P',
        filter: prefix('D-'),
        groupBy: ['attribute5'],
        aggregates: [{ fn: 'count', as: 'n' }],
        sortBy: 'attribute5',
      }),
      [
        { attribute5: text('D-1'), n: 2 },
        { attribute5: text('D-3'), n: 1 },
        { attribute5: text('D-4'), n: 1 },
        { attribute5: text('D-5'), n: 1 },
      ],
    );
    // A having and a sort still compare the instants (not the text).
    assert.deepEqual(
      await execute({
        source: 'P',
        filter: prefix('D-'),
        groupBy: ['attribute5'],
        having: { fieldName: 'attribute5', operator: 'greaterThan', value: '2024-01-15T10:00:00.1Z' },
        sortBy: '-attribute5',
        valueFields: ['attribute5'],
      }),
      [[text('D-5')], [text('D-4')], [text('D-3')]],
    );
    const newest = records
      .map((r) => r.lastUpdateDate as string)
      .sort()
      .at(-1);
    assert.deepEqual(
      await execute({
        source: 'P',
        filter: prefix('D-'),
        aggregates: [
          { fn: 'min', field: 'attribute5', as: 'first' },
          { fn: 'max', field: 'attribute5', as: 'last' },
          { fn: 'max', field: 'lastUpdateDate', as: 'updated' },
        ],
      }),
      [{ first: text('D-1'), last: text('D-5'), updated: newest }],
    );
    // A system date-time grouped is what /fetch answers for it.
    const [one] = records;
    assert.deepEqual(await execute({ source: 'P', filter: { sku: 'D-1' }, groupBy: ['lastUpdateDate'] }), [
      { lastUpdateDate: one.lastUpdateDate },
    ]);
  });

  test('typedId: selected, grouped, sorted and filtered on every source, as /fetch answers it', async () => {
    okData(
      await call(
        '/add/P',
        Array.from({ length: 12 }, (_, i) => ({ data: { sku: `T-${String(i).padStart(2, '0')}` } })),
      ),
    );
    okData(await call('/add/PX', { data: { name: 'Ext', sku: 'T-03', attribute1: 'x' } }));
    const products = await fetched({
      data: prefix('T-'),
      resultFields: ['typedId', 'sku', 'id'],
      endRow: 50,
    });
    const [px] = okData(await call('/fetch/PX', { data: { name: 'Ext' }, resultFields: ['typedId'] }));
    assert.deepEqual(
      await execute({
        source: 'P',
        join: [{ source: 'PX:Ext', as: 'px', on: { sku: 'sku' } }],
        select: ['sku', 'typedId', 'px.typedId'],
      }),
      [{ sku: 'T-03', typedId: products.find((p) => p.sku === 'T-03').typedId, 'px.typedId': px.typedId }],
    );
    // Sorted as the ids it names (numbers, not text), descending too.
    const byId = [...products].sort((a, b) => a.id - b.id).map((p) => p.typedId);
    const sorted = async (sortBy: string) =>
      (
        await execute({ source: 'P', filter: prefix('T-'), valueFields: ['typedId'], sortBy, endRow: 50 })
      ).map(([t]) => t);
    assert.deepEqual(await sorted('typedId'), byId);
    assert.deepEqual(await sorted('-typedId'), [...byId].reverse());
    // Grouped, with a having naming one record by typedId; counted.
    const target = products[4];
    assert.deepEqual(
      await execute({
        source: 'P',
        filter: prefix('T-'),
        groupBy: ['typedId'],
        aggregates: [{ fn: 'count', as: 'n' }],
        having: { typedId: target.typedId },
      }),
      [{ typedId: target.typedId, n: 1 }],
    );
    assert.deepEqual(
      await execute({
        source: 'P',
        filter: prefix('T-'),
        aggregates: [{ fn: 'countDistinct', field: 'typedId', as: 'n' }],
      }),
      [{ n: 12 }],
    );
    expectError(
      await call('/queryapi.execute', {
        data: { source: 'P', aggregates: [{ fn: 'max', field: 'typedId' }] },
      }),
      400,
      -4,
      'aggregates[0].field',
    );
    // A joined source's typedId filters as its records' (another type's typedId is a -4).
    assert.deepEqual(
      await execute({
        source: 'P',
        join: [{ source: 'PX:Ext', as: 'px', on: { sku: 'sku' } }],
        filter: { 'px.typedId': px.typedId },
        valueFields: ['sku'],
      }),
      [['T-03']],
    );
    expectError(
      await call('/queryapi.execute', {
        data: {
          source: 'P',
          join: [{ source: 'PX:Ext', as: 'px', on: { sku: 'sku' } }],
          filter: { 'px.typedId': target.typedId },
        },
      }),
      400,
      -4,
      'filter.px.typedId',
    );
    // Every field of a source: typedId first, as /fetch answers a record.
    const [all] = await execute({ source: 'P', filter: { sku: 'T-03' } });
    assert.equal(Object.keys(all)[0], 'typedId');
    assert.equal(all.typedId, products.find((p) => p.sku === 'T-03').typedId);
    // Lookup table values and condition record items answer theirs too, and meta lists it.
    const [table] = okData(
      await call('/lookuptablemanager.add', {
        data: { uniqueName: 'TT', type: 'SIMPLE', valueType: 'STRING' },
      }),
    );
    const [value] = okData(
      await call(`/lookuptablemanager.add/${table.id}`, { data: { name: 'a', value: 'A' } }),
    );
    assert.deepEqual(await execute({ source: 'LTV:TT', select: ['typedId', 'name'] }), [
      { typedId: value.typedId, name: 'a' },
    ]);
    const [set] = okData(await call('/add/CRCS', { data: { uniqueName: 'TSET', keySize: 1 } }));
    const [item] = okData(
      await call('/add/CRCI1', {
        data: { conditionRecordSetId: set.id, key1: 'k', validFrom: '2024-01-01', conditionValue: '1' },
      }),
    );
    assert.deepEqual(await execute({ source: 'CRCI:TSET', select: ['typedId'] }), [
      { typedId: item.typedId },
    ]);
    const kinds = okData(await call('/queryapi.meta', {}));
    const columns = kinds.find((k: any) => k.kind === 'P').tables[0].columns;
    assert.deepEqual([columns[0].name, columns[0].type], ['typedId', 'string']);
  });
});
