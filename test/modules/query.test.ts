// The query API over HTTP on both databases: each pipeline element (source, filter, select, join,
// groupBy, aggregates, having, sortBy, paging, valueFields), joins across three kinds of source (P,
// PX:<table>, LTV:<table>), aggregates typed by the attribute meta, permissions and record-level
// user groups, partition isolation, limits as settings, and /queryapi.meta. Injection attempts in
// every name and value live in ./query-injection.test.ts.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness, type Reply } from '../helpers/app.ts';
import { seedQueryData, QUERY_ADMIN, QUERY_READER } from './query-seed.ts';
import { okData } from '../helpers/envelope.ts';

const status = (r: Reply): [number, number | undefined] => [r.status, r.body?.response?.status];

describe('query API', () => {
  let h: Harness;
  let other: Harness;

  const run = (data: unknown, who = QUERY_ADMIN) =>
    h.call('/queryapi.execute', { basic: who, body: { data } });
  const rows = async (data: unknown, who = QUERY_ADMIN): Promise<any[]> => {
    const r = await run(data, who);
    assert.equal(r.status, 200, r.text);
    return r.body.response.data;
  };
  const refused = async (data: unknown, http: number, code: number, field?: string, who = QUERY_ADMIN) => {
    const r = await run(data, who);
    assert.deepEqual(status(r), [http, code], r.text);
    if (field !== undefined) assert.ok(r.body.response.errors?.[field], `${field}: ${r.text}`);
    return r;
  };

  before(async () => {
    h = await startHarness({ env: { QUERY_MAX_JOINS: '2', QUERY_MAX_ROWS: '50' } });
    other = await startHarness({ shareDbWith: h });
    await seedQueryData(h);
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('without credentials: 401; a source is required', async () => {
    assert.equal((await h.call('/queryapi.execute', { body: { data: { source: 'P' } } })).status, 401);
    assert.equal((await h.call('/queryapi.meta', {})).status, 401);
    await refused({}, 400, -4, 'source');
  });

  test('source, select (with as), filter, sortBy, paging; totalRows; typed values', async () => {
    const r = await run({
      source: 'P',
      select: ['sku', { field: 'attribute1', as: 'weight' }, 'attribute2'],
      filter: { fieldName: 'attribute1', operator: 'greaterThan', value: 2 },
      sortBy: ['-weight'],
      startRow: 1,
      endRow: 3,
    });
    assert.equal(r.status, 200, r.text);
    const res = r.body.response;
    assert.equal(res.totalRows, 4);
    assert.equal(res.startRow, 1);
    assert.equal(res.endRow, 3);
    // weights 3, 10, 20, 100 (numeric order, not text order); descending, skipping the first
    assert.deepEqual(res.data, [
      { sku: 'P-20', weight: 20, attribute2: 'tools' },
      { sku: 'P-10', weight: 10, attribute2: 'food' },
    ]);
    assert.deepEqual(
      res.columns.map((c: any) => [c.name, c.type]),
      [
        ['sku', 'string'],
        ['weight', 'decimal'],
        ['attribute2', 'string'],
      ],
    );
    // Past the end: no rows, the total still right.
    const past = await run({ source: 'P', select: ['sku'], startRow: 40, endRow: 45 });
    assert.deepEqual(past.body.response.data, []);
    assert.equal(past.body.response.totalRows, 7);
    // Without select: every field of the source.
    const all = await rows({ source: 'P', filter: { sku: 'P-3' } });
    assert.equal(all.length, 1);
    assert.equal(all[0].label, 'three');
    assert.equal(all[0].attribute1, 3);
    // valueFields: arrays in that order, and the columns name them in that order.
    const arrays = await run({
      source: 'P',
      select: ['sku', 'attribute1', 'label'],
      valueFields: ['attribute1', 'sku'],
      sortBy: 'sku',
      endRow: 2,
    });
    assert.deepEqual(arrays.body.response.data, [
      [1, 'P-1'],
      [10, 'P-10'],
    ]);
    assert.deepEqual(
      arrays.body.response.columns.map((c: any) => c.name),
      ['attribute1', 'sku'],
    );
  });

  test('joins across three kinds of source: P ⋈ PX:Costs ⋈ LTV:Regions', async () => {
    const data = await rows({
      source: 'P',
      join: [
        { source: 'PX:Costs', as: 'px', on: { sku: 'sku' } },
        { source: 'LTV:Regions', as: 'region', type: 'left', on: { attribute2: 'name' } },
      ],
      select: ['sku', 'px.attribute1', { field: 'region.value', as: 'region' }],
      filter: { fieldName: 'px.attribute1', operator: 'lessThan', value: 100 },
      sortBy: 'sku',
    });
    assert.deepEqual(data, [
      { sku: 'P-1', 'px.attribute1': 1.5, region: 'North' },
      { sku: 'P-10', 'px.attribute1': 15, region: 'South' },
      { sku: 'P-3', 'px.attribute1': 4.5, region: 'North' },
      { sku: 'P-x', 'px.attribute1': 7, region: null },
    ]);
    // An inner join drops products without a lookup row; a bad join is -4 naming the field.
    const inner = await rows({
      source: 'P',
      join: [{ source: 'LTV:Regions', as: 'region', on: { attribute2: 'name' } }],
      select: ['sku'],
      sortBy: 'sku',
    });
    assert.ok(!inner.some((r) => r.sku === 'P-x'));
    await refused(
      { source: 'P', join: [{ source: 'PX:Costs', as: 'px', on: { sku: 'nope' } }] },
      400,
      -4,
      'join[0].on',
    );
    await refused(
      { source: 'P', join: [{ source: 'PX:Costs', as: 'px', on: { nope: 'sku' } }] },
      400,
      -4,
      'join[0].on',
    );
    await refused(
      { source: 'P', join: [{ source: 'PX:Costs', as: 'px', on: { attribute1: 'sku' } }] },
      400,
      -4,
      'join[0].on',
    );
    await refused(
      { source: 'P', join: [{ source: 'PX:Costs', as: 'PX', on: { sku: 'sku' } }] },
      400,
      -4,
      'join[0].as',
    );
    await refused(
      { source: 'P', join: [{ source: 'PX:Nope', as: 'px', on: { sku: 'sku' } }] },
      404,
      -1,
      'join[0].source',
    );
    await refused(
      { source: 'P', join: [{ source: 'PX:Costs', as: 'px', on: { sku: 'sku' }, type: 'full' }] },
      400,
      -4,
      'join[0].type',
    );
  });

  test('groupBy and aggregates typed by the attribute meta; having; sort by an aggregate', async () => {
    const r = await run({
      source: 'P',
      join: [{ source: 'PX:Costs', as: 'px', type: 'left', on: { sku: 'sku' } }],
      groupBy: ['attribute2'],
      aggregates: [
        { fn: 'count', as: 'n' },
        { fn: 'sum', field: 'attribute1', as: 'weight' },
        { fn: 'avg', field: 'px.attribute1', as: 'avgCost' },
        { fn: 'max', field: 'px.attribute2', as: 'lastCostDate' },
        { fn: 'countDistinct', field: 'px.attribute1' },
        { fn: 'min', field: 'sku' },
      ],
      having: { fieldName: 'n', operator: 'greaterOrEqual', value: 2 },
      sortBy: '-weight',
    });
    assert.equal(r.status, 200, r.text);
    const res = r.body.response;
    assert.deepEqual(res.data, [
      {
        attribute2: 'tools',
        n: 3,
        weight: 122,
        avgCost: 100,
        lastCostDate: '2024-03-01',
        'countDistinct_px.attribute1': 1,
        min_sku: 'P-100',
      },
      {
        attribute2: 'north',
        n: 2,
        weight: 4,
        avgCost: 3,
        lastCostDate: '2024-01-15',
        'countDistinct_px.attribute1': 2,
        min_sku: 'P-1',
      },
    ]);
    assert.equal(res.totalRows, 2);
    assert.deepEqual(
      res.columns.map((c: any) => [c.name, c.type]),
      [
        ['attribute2', 'string'],
        ['n', 'integer'],
        ['weight', 'decimal'],
        ['avgCost', 'decimal'],
        ['lastCostDate', 'date'],
        ['countDistinct_px.attribute1', 'integer'],
        ['min_sku', 'string'],
      ],
    );
    // One group field selected under two names: two outputs (the second was dropped), both usable.
    const twice = {
      source: 'P',
      groupBy: ['attribute2'],
      select: [
        { field: 'attribute2', as: 'a' },
        { field: 'attribute2', as: 'b' },
      ],
      sortBy: 'a',
    };
    assert.deepEqual(await rows(twice), [
      { a: 'food', b: 'food' },
      { a: 'misc', b: 'misc' },
      { a: 'north', b: 'north' },
      { a: 'tools', b: 'tools' },
    ]);
    assert.deepEqual(await rows({ ...twice, endRow: 2, valueFields: ['b', 'a'] }), [
      ['food', 'food'],
      ['misc', 'misc'],
    ]);
    await refused({ source: 'P', valueFields: Array(1001).fill('sku') }, 400, -4);
    // Groups come in the order of their values, the NULL group lowest, as sorted by them (sixth audit).
    const byCost = {
      source: 'P',
      join: [{ source: 'PX:Costs', as: 'px', type: 'left', on: { sku: 'sku' } }],
      groupBy: ['px.attribute1'],
      aggregates: [{ fn: 'count', as: 'n' }],
    };
    const unsorted = await rows(byCost);
    assert.ok(unsorted.length > 2 && Object.values(unsorted[0])[0] === null, JSON.stringify(unsorted));
    assert.deepEqual(unsorted, await rows({ ...byCost, sortBy: 'px.attribute1' }));
    // Aggregates alone: one row.
    assert.deepEqual(
      await rows({ source: 'P', aggregates: [{ fn: 'count' }, { fn: 'max', field: 'attribute1' }] }),
      [{ count: 7, max_attribute1: 100 }],
    );
    // sum over a text attribute, min over a boolean-less field, unknown fn: -4 naming the element.
    await refused(
      { source: 'P', aggregates: [{ fn: 'sum', field: 'attribute2' }] },
      400,
      -4,
      'aggregates[0].field',
    );
    await refused(
      { source: 'P', aggregates: [{ fn: 'median', field: 'attribute1' }] },
      400,
      -4,
      'aggregates[0].fn',
    );
    await refused({ source: 'P', aggregates: [{ fn: 'avg' }] }, 400, -4, 'aggregates[0].field');
    await refused({ source: 'P', groupBy: ['attribute2'], select: ['sku'] }, 400, -4, 'select[0]');
    await refused({ source: 'P', having: { n: 1 } }, 400, -4, 'having');
    await refused(
      { source: 'P', groupBy: ['attribute2'], having: { fieldName: 'sku', operator: 'equals', value: 1 } },
      400,
      -4,
      'having.sku',
    );
  });

  test('every source needs its fetch permission; user groups filter rows of every source', async () => {
    // The reader has no PRODUCTEXTENSION_FETCH: the PX source is refused, directly or joined.
    await refused({ source: 'PX:Costs' }, 403, -3, undefined, QUERY_READER);
    await refused(
      { source: 'P', join: [{ source: 'PX:Costs', as: 'px', on: { sku: 'sku' } }] },
      403,
      -3,
      undefined,
      QUERY_READER,
    );
    // P-secret is visible to the admin only (group "secret"); the reader does not see it, not even counted.
    const admin = await rows({ source: 'P', aggregates: [{ fn: 'count' }] });
    const reader = await rows({ source: 'P', aggregates: [{ fn: 'count' }] }, QUERY_READER);
    assert.equal(admin[0].count, 7);
    assert.equal(reader[0].count, 6);
    assert.deepEqual(
      await rows({ source: 'P', filter: { sku: 'P-secret' }, select: ['sku'] }, QUERY_READER),
      [],
    );
    // Lookup values and products are open to every user.
    assert.equal((await rows({ source: 'LTV:Regions', select: ['name', 'value'] }, QUERY_READER)).length, 2);
  });

  test('condition record items as a source: CRCI:<set>, joined and aggregated; hidden sets are unknown', async () => {
    const data = await rows({
      source: 'P',
      join: [{ source: 'CRCI:PRICES', as: 'price', on: { sku: 'key1' } }],
      groupBy: ['attribute2'],
      aggregates: [
        { fn: 'sum', field: 'price.conditionValue', as: 'total' },
        { fn: 'max', field: 'price.validTo', as: 'until' },
        { fn: 'min', field: 'price.conditionValue', as: 'least' },
      ],
      sortBy: 'attribute2',
    });
    // Aggregates of a decimal column of its own type are its exact text, as the column itself.
    assert.deepEqual(data, [
      { attribute2: 'north', total: '21.5', until: '2030-12-31', least: '9.5' },
      { attribute2: 'tools', total: '30', until: '2030-12-31', least: '30' },
    ]);
    const items = await rows({ source: 'CRCI:PRICES', select: ['key1', 'conditionValue'], sortBy: 'key1' });
    assert.deepEqual(
      items.map((i) => i.key1),
      ['P-1', 'P-20', 'P-3'],
    );
    // A decimal column of its own type comes back as /fetch answers it (its exact text), grouped too.
    const fetched = await h.call('/fetch/CRCI', {
      basic: QUERY_ADMIN,
      body: { data: { key1: ['P-1', 'P-20', 'P-3'] }, sortBy: 'key1', valueFields: ['conditionValue'] },
    });
    const values = (fetched.body.response.data as unknown[][]).map((r) => r[0]);
    assert.ok(
      values.every((v) => typeof v === 'string'),
      JSON.stringify(values),
    );
    assert.deepEqual(
      items.map((i) => i.conditionValue),
      ['9.5', '30', '12'],
    );
    assert.ok(
      items.every((i) => values.includes(i.conditionValue)),
      JSON.stringify(values),
    );
    const grouped = await rows({
      source: 'CRCI:PRICES',
      groupBy: ['conditionValue'],
      sortBy: 'conditionValue',
    });
    assert.ok(
      grouped.every((g) => typeof g.conditionValue === 'string'),
      JSON.stringify(grouped),
    );
    assert.equal((await rows({ source: 'CRCI:HIDDEN' })).length, 1);
    // Reading condition records needs CONDITIONRECORD_FETCH (a user without roles is refused and the
    // meta lists no set to him), then the set's view group (HIDDEN is not his: no such source).
    await refused({ source: 'CRCI:PRICES' }, 403, -3, undefined, QUERY_READER);
    await refused({ source: 'CRCI:HIDDEN' }, 403, -3, undefined, QUERY_READER);
    const crcReader = { user: 'crcreader', password: 'crcreader-password-1' };
    await h.newUser(crcReader.user, crcReader.password, ['PB_CONDITIONRECORDEDITOR']);
    assert.equal((await rows({ source: 'CRCI:PRICES' }, crcReader)).length, 3);
    await refused({ source: 'CRCI:HIDDEN' }, 404, -1, 'source', crcReader);
    await refused({ source: 'CRCI:NOPE' }, 404, -1, 'source');
    assert.deepEqual(await rows({ source: 'CRCIH:PRICES', aggregates: [{ fn: 'count' }] }), [{ count: 0 }]);
    const tablesOf = async (who: typeof crcReader) => {
      const meta = await h.call('/queryapi.meta', { basic: who });
      const crci = (meta.body.response.data as any[]).find((k) => k.kind === 'CRCI');
      return crci?.tables.map((t: any) => t.name) ?? [];
    };
    assert.deepEqual(await tablesOf(crcReader), ['CRCI:PRICES']);
    assert.deepEqual(await tablesOf(QUERY_READER), []);
  });

  test('another partition sees none of it', async () => {
    const r = await other.call('/queryapi.execute', {
      basic: { user: 'admin', password: 'admin-password-1' },
      body: { data: { source: 'P', aggregates: [{ fn: 'count' }] } },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.response.data, [{ count: 0 }]);
    const px = await other.call('/queryapi.execute', {
      basic: { user: 'admin', password: 'admin-password-1' },
      body: { data: { source: 'PX:Costs' } },
    });
    assert.deepEqual(status(px), [404, -1]);
    const lt = await other.call('/queryapi.execute', {
      basic: { user: 'admin', password: 'admin-password-1' },
      body: { data: { source: 'LTV:Regions' } },
    });
    assert.deepEqual(status(lt), [404, -1]);
  });

  test('limits are settings and say which: joins, rows', async () => {
    const join = (as: string) => ({ source: 'PX:Costs', as, type: 'left', on: { sku: 'sku' } });
    const tooMany = await refused({ source: 'P', join: [join('a'), join('b'), join('c')] }, 400, -4, 'join');
    assert.match(tooMany.body.response.data, /QUERY_MAX_JOINS/);
    assert.equal((await run({ source: 'P', join: [join('a'), join('b')], select: ['sku'] })).status, 200);
    const big = await refused({ source: 'P', endRow: 51 }, 400, -4, 'endRow');
    assert.match(big.body.response.data, /QUERY_MAX_ROWS/);
  });

  test('unknown sources, fields and elements are -4 naming them', async () => {
    await refused({ source: 'NOPE' }, 400, -4, 'source');
    await refused({ source: 'U' }, 400, -4, 'source');
    await refused({ source: 'PX' }, 400, -4, 'source');
    await refused({ source: 'P:x' }, 400, -4, 'source');
    await refused({ source: 'LTV:Nope' }, 404, -1, 'source');
    await refused({ source: 'P', select: ['password'] }, 400, -4, 'select[0]');
    await refused({ source: 'P', select: [{ field: 'sku', as: 'a b' }] }, 400, -4, 'select[0].as');
    await refused({ source: 'P', select: ['sku', 'sku'] }, 400, -4, 'select[1]');
    await refused(
      { source: 'P', filter: { fieldName: 'px.attribute1', operator: 'equals', value: 1 } },
      400,
      -4,
      'filter.px.attribute1',
    );
    // typedId names a record of the main source, as on /fetch (sixth audit).
    const [[id, sku]] = await rows({ source: 'P', valueFields: ['id', 'sku'], sortBy: 'id', endRow: 1 });
    assert.deepEqual(await rows({ source: 'P', filter: { typedId: `${id}.P` }, valueFields: ['sku'] }), [
      [sku],
    ]);
    for (const typedId of ['1.C', '1.NOPE', ['1.C', '3.SL']])
      await refused({ source: 'P', filter: { typedId }, valueFields: ['sku'] }, 400, -4, 'filter.typedId');
    await refused(
      { source: 'C', filter: { fieldName: 'typedId', operator: 'notEqual', value: '1.P' } },
      400,
      -4,
      'filter.typedId',
    );
    await refused({ source: 'P', sortBy: 'label', select: ['sku'] }, 400, -4, 'sortBy');
    await refused({ source: 'P', valueFields: ['label'], select: ['sku'] }, 400, -4, 'valueFields[0]');
    await refused({ source: 'P', extra: 1 }, 400, -4, 'extra');
    // Unknown members of an element are named too.
    await refused({ source: 'P', select: [{ field: 'sku', as: 's', bogus: 1 }] }, 400, -4, 'select[0].bogus');
    await refused({ source: 'P', aggregates: [{ fn: 'count', bogus: 1 }] }, 400, -4, 'aggregates[0].bogus');
    await refused(
      { source: 'P', join: [{ source: 'P', as: 'a', on: { sku: 'sku' }, extra: 1 }] },
      400,
      -4,
      'join[0].extra',
    );
  });

  test("/queryapi.meta: kinds, the partition's tables, typed and labelled columns; a pipeline's columns", async () => {
    const r = await h.call('/queryapi.meta', { basic: QUERY_ADMIN });
    assert.equal(r.status, 200, r.text);
    const kinds = r.body.response.data as any[];
    const p = kinds.find((k) => k.kind === 'P');
    const weight = p.tables[0].columns.find((c: any) => c.name === 'attribute1');
    assert.deepEqual([weight.type, weight.label], ['decimal', 'Weight']);
    assert.ok(weight.description.includes('attribute meta'));
    const px = kinds.find((k) => k.kind === 'PX');
    const costs = px.tables.find((t: any) => t.name === 'PX:Costs');
    assert.equal(costs.columns.find((c: any) => c.name === 'attribute2').type, 'date');
    const ltv = kinds.find((k) => k.kind === 'LTV');
    assert.ok(ltv.tables.some((t: any) => t.name === 'LTV:Regions' && t.label === 'Sales regions'));
    // The items of a set are labelled by the set's own attribute meta (CRCIAM), as its types are.
    const set = (
      await h.call('/fetch/CRCS', { basic: QUERY_ADMIN, body: { data: { uniqueName: 'PRICES' } } })
    ).body.response.data[0];
    const meta = {
      conditionRecordSetId: set.id,
      fieldName: 'attribute1',
      fieldType: 'NUMERIC',
      label: 'Quantity',
    };
    assert.equal((await h.call('/add/CRCIAM', { basic: QUERY_ADMIN, body: { data: meta } })).status, 200);
    const after = (await h.call('/queryapi.meta', { basic: QUERY_ADMIN })).body.response.data as any[];
    for (const kind of ['CRCI', 'CRCIH']) {
      const table = after.find((k) => k.kind === kind).tables.find((t: any) => t.name === `${kind}:PRICES`);
      const quantity = table.columns.find((c: any) => c.name === 'attribute1');
      assert.deepEqual([quantity.type, quantity.label], ['decimal', 'Quantity'], kind);
      assert.ok(quantity.description.includes('attribute meta'), kind);
    }
    // The reader lacks PRODUCTEXTENSION_FETCH: no PX kind for them.
    const reader = await h.call('/queryapi.meta', { basic: QUERY_READER });
    assert.ok(!(reader.body.response.data as any[]).some((k) => k.kind === 'PX'));
    const cols = await h.call('/queryapi.meta', {
      basic: QUERY_ADMIN,
      body: {
        data: {
          pipeline: {
            source: 'P',
            groupBy: ['attribute2'],
            aggregates: [{ fn: 'sum', field: 'attribute1', as: 's' }],
          },
        },
      },
    });
    assert.deepEqual(cols.body.response.data, [
      { name: 'attribute2', type: 'string', field: 'attribute2' },
      { name: 's', type: 'decimal', aggregate: 'sum' },
    ]);
    const bad = await h.call('/queryapi.meta', {
      basic: QUERY_ADMIN,
      body: { data: { pipeline: { source: 'P', select: ['nope'] } } },
    });
    assert.deepEqual(status(bad), [400, -4]);
  });

  test('text that is not a number aggregates as NULL; numbers written differently group as one', async () => {
    await h.db.query(
      `INSERT INTO products (partition_id, sku, attribute1, attribute2)
       VALUES ($1, 'W-1', 'abc', 'weird'), ($1, 'W-2', '1e3', 'weird'), ($1, 'W-3', ' 2.50 ', 'weird'),
              ($1, 'W-4', '10', 'w10'), ($1, 'W-5', '10.0', 'w10')`,
      [h.partitionId],
    );
    try {
      assert.deepEqual(
        await rows({
          source: 'P',
          filter: { attribute2: 'weird' },
          aggregates: [
            { fn: 'sum', field: 'attribute1' },
            { fn: 'count', field: 'attribute1' },
          ],
        }),
        [{ sum_attribute1: 1002.5, count_attribute1: 2 }],
      );
      assert.deepEqual(
        await rows({
          source: 'P',
          filter: { attribute2: 'w10' },
          groupBy: ['attribute1'],
          aggregates: [{ fn: 'count' }],
        }),
        [{ attribute1: 10, count: 2 }],
      );
    } finally {
      await h.db.query(`DELETE FROM products WHERE partition_id = $1 AND sku LIKE 'W-%'`, [h.partitionId]);
    }
  });

  test('user groups filter the rows of joined sources: not joined, not counted, not aggregated', async () => {
    // P-secret (group "secret") joined in from two sources the reader may read: the extension table
    // Margins (reader with PRICESHOP_RO, which grants PRODUCTEXTENSION_FETCH) and the lookup table
    // Teams (any user).
    const pxReader = { user: 'pxreader', password: 'pxreader-password-1' };
    await h.newUser(pxReader.user, pxReader.password, ['PRICESHOP_RO']);
    const load = await h.call('/loaddata/PX', {
      basic: QUERY_ADMIN,
      body: {
        data: {
          header: ['name', 'sku', 'attribute1'],
          data: [
            ['Margins', 'P-1', 'a'],
            ['Margins', 'P-20', 'b'],
            ['Margins', 'P-secret', 'c'],
          ],
        },
      },
    });
    assert.equal(load.status, 200, load.text);
    const inner = {
      source: 'PX:Margins',
      join: [{ source: 'P', as: 'p', on: { sku: 'sku' } }],
      select: ['sku', 'p.label'],
      sortBy: 'sku',
    };
    const joined = async (data: unknown, who: typeof QUERY_ADMIN) => {
      const r = await run(data, who);
      assert.equal(r.status, 200, r.text);
      return [r.body.response.totalRows, r.body.response.data];
    };
    assert.deepEqual(await joined(inner, QUERY_ADMIN), [
      3,
      [
        { sku: 'P-1', 'p.label': 'one' },
        { sku: 'P-20', 'p.label': 'twenty' },
        { sku: 'P-secret', 'p.label': 'secret' },
      ],
    ]);
    assert.deepEqual(await joined(inner, pxReader), [
      2,
      [
        { sku: 'P-1', 'p.label': 'one' },
        { sku: 'P-20', 'p.label': 'twenty' },
      ],
    ]);
    // A left join neither: the extension row of a product the reader may not see follows the
    // product (README, "Descriptions, ..."), so it is not there to keep.
    const left = { ...inner, join: [{ ...inner.join[0], type: 'left' }] };
    assert.deepEqual((await joined(left, pxReader))[1], [
      { sku: 'P-1', 'p.label': 'one' },
      { sku: 'P-20', 'p.label': 'twenty' },
    ]);
    assert.deepEqual(
      await rows(
        { ...left, filter: { fieldName: 'p.sku', operator: 'equals', value: 'P-secret' } },
        pxReader,
      ),
      [],
    );
    // Aggregates over the joined product: the hidden one is neither counted nor summed.
    const grouped = {
      source: 'PX:Margins',
      join: [{ source: 'P', as: 'p', type: 'left', on: { sku: 'sku' } }],
      groupBy: ['p.attribute2'],
      aggregates: [
        { fn: 'count', field: 'p.sku', as: 'n' },
        { fn: 'sum', field: 'p.attribute1', as: 'weight' },
      ],
      sortBy: 'p.attribute2',
    };
    assert.deepEqual(await rows(grouped), [
      { 'p.attribute2': 'north', n: 1, weight: 1 },
      { 'p.attribute2': 'tools', n: 2, weight: 22 },
    ]);
    assert.deepEqual(await rows(grouped, pxReader), [
      { 'p.attribute2': 'north', n: 1, weight: 1 },
      { 'p.attribute2': 'tools', n: 1, weight: 20 },
    ]);

    // A lookup table joined to products, read by a user without any role.
    const [teams] = okData(
      await h.call('/lookuptablemanager.add', {
        basic: QUERY_ADMIN,
        body: { data: { uniqueName: 'Teams', type: 'SIMPLE', valueType: 'STRING' } },
      }),
    );
    okData(
      await h.call(`/lookuptablemanager.add/${teams.id}`, {
        basic: QUERY_ADMIN,
        body: { data: { name: 'tools', value: 'Workshop' } },
      }),
    );
    const byTeam = {
      source: 'LTV:Teams',
      join: [{ source: 'P', as: 'p', on: { name: 'attribute2' } }],
      groupBy: ['value'],
      aggregates: [
        { fn: 'count', as: 'n' },
        { fn: 'sum', field: 'p.attribute1', as: 'weight' },
      ],
    };
    assert.deepEqual(await rows(byTeam), [{ value: 'Workshop', n: 3, weight: 122 }]);
    assert.deepEqual(await rows(byTeam, QUERY_READER), [{ value: 'Workshop', n: 2, weight: 120 }]);
    const list = { source: 'LTV:Teams', join: byTeam.join, select: ['p.sku'], sortBy: 'p.sku' };
    assert.deepEqual(await joined(list, QUERY_READER), [2, [{ 'p.sku': 'P-100' }, { 'p.sku': 'P-20' }]]);
  });

  test("descriptions, references and cross-references as sources; a customer's groups hide its descriptions", async () => {
    const load = async (code: string, header: string[], data: string[][]) =>
      okData(await h.call(`/loaddata/${code}`, { basic: QUERY_ADMIN, body: { data: { header, data } } }));
    await load(
      'C',
      ['customerId', 'name', 'userGroupViewDetails'],
      [
        ['QC-open', 'Open', ''],
        ['QC-hidden', 'Hidden', 'secret'],
      ],
    );
    await load(
      'CDESC',
      ['customerId', 'language', 'label'],
      [
        ['QC-open', 'de', 'Offen'],
        ['QC-hidden', 'de', 'Geheim'],
      ],
    );
    await load(
      'PDESC',
      ['sku', 'language', 'label'],
      [
        ['P-1', 'de', 'Eins'],
        ['P-20', 'de', 'Zwanzig'],
      ],
    );
    await load('PR', ['sku', 'relationType', 'targetSku'], [['P-1', 'SUCCESSOR', 'P-20']]);
    await load('PXREF', ['sku', 'referenceType', 'externalId'], [['P-20', 'EAN', '4000000000020']]);

    const successors = {
      source: 'PR',
      join: [
        { source: 'PDESC', as: 'd', on: { targetSku: 'sku' } },
        { source: 'PXREF', as: 'x', type: 'left', on: { targetSku: 'sku' } },
      ],
      select: ['sku', 'relationType', 'd.label', 'x.externalId'],
      filter: { fieldName: 'd.language', operator: 'equals', value: 'de' },
    };
    const expected = [
      { sku: 'P-1', relationType: 'SUCCESSOR', 'd.label': 'Zwanzig', 'x.externalId': '4000000000020' },
    ];
    assert.deepEqual(await rows(successors), expected);
    assert.deepEqual(await rows(successors, QUERY_READER), expected);

    const descriptions = {
      source: 'CDESC',
      join: [{ source: 'C', as: 'c', type: 'left', on: { customerId: 'customerId' } }],
      select: ['customerId', 'label', 'c.name'],
      filter: { fieldName: 'customerId', operator: 'startsWith', value: 'QC-' },
      sortBy: 'customerId',
    };
    assert.deepEqual(await rows(descriptions), [
      { customerId: 'QC-hidden', label: 'Geheim', 'c.name': 'Hidden' },
      { customerId: 'QC-open', label: 'Offen', 'c.name': 'Open' },
    ]);
    // The reader is not in "secret": neither the customer nor its description is read.
    assert.deepEqual(await rows(descriptions, QUERY_READER), [
      { customerId: 'QC-open', label: 'Offen', 'c.name': 'Open' },
    ]);
  });

  test('null means absent for every optional field of a pipeline (execute and meta)', async () => {
    const r = await run({ source: 'P', startRow: null, endRow: null });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.body.response.startRow, r.body.response.totalRows], [0, 7]);
    const all = await run({
      source: 'P',
      join: null,
      filter: null,
      select: null,
      groupBy: null,
      aggregates: null,
      having: null,
      sortBy: null,
      startRow: null,
      endRow: null,
      valueFields: null,
    });
    assert.equal(all.status, 200, all.text);
    assert.equal(all.body.response.totalRows, 7);
    assert.ok('label' in all.body.response.data[0]);
    // Inside elements too: a join's type, a select's and an aggregate's as, a count's field.
    assert.deepEqual(
      await rows({
        source: 'P',
        join: [{ source: 'PX:Costs', as: 'px', type: null, on: { sku: 'sku' } }],
        groupBy: ['attribute2'],
        select: [{ field: 'attribute2', as: null }],
        aggregates: [{ fn: 'count', field: null, as: null }],
        filter: { attribute2: 'north' },
      }),
      [{ attribute2: 'north', count: 2 }],
    );
    // A criterion's null value keeps its meaning: P-x has no weight.
    assert.deepEqual(
      await rows({
        source: 'P',
        select: ['sku'],
        filter: { fieldName: 'attribute1', operator: 'isNull', value: null },
      }),
      [{ sku: 'P-x' }],
    );
    // The source stays required.
    await refused({ source: null }, 400, -4, 'source');
    const meta = await h.call('/queryapi.meta', { basic: QUERY_ADMIN, body: { data: { pipeline: null } } });
    assert.equal(meta.status, 200, meta.text);
    assert.ok((meta.body.response.data as any[]).some((k) => k.kind === 'P'));
    const cols = await h.call('/queryapi.meta', {
      basic: QUERY_ADMIN,
      body: { data: { pipeline: { source: 'P', select: ['sku'], join: null, sortBy: null, endRow: null } } },
    });
    assert.deepEqual(okData(cols), [{ name: 'sku', type: 'string', field: 'sku' }]);
  });
});

// PGlite cannot interrupt a running statement (one wasm thread): the time limit is PostgreSQL's.
describe('query API time limit (PostgreSQL)', { skip: process.env.DATABASE_URL === undefined }, () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { QUERY_TIMEOUT_SECONDS: '1' } });
    // 3,000 products and 3,000 extension rows sharing one value: their join has 9,000,000 rows.
    await h.db.query(
      `INSERT INTO products (partition_id, sku, attribute2)
       SELECT $1, 'T-' || g, 'x' FROM generate_series(1, 3000) g`,
      [h.partitionId],
    );
    await h.db.query(
      `INSERT INTO product_extensions (partition_id, name, sku, attribute3)
       SELECT $1, 'Big', 'T-' || g, 'x' FROM generate_series(1, 3000) g`,
      [h.partitionId],
    );
  });
  after(() => h.close());

  test('a pipeline running past QUERY_TIMEOUT_SECONDS is a -4 that says so', async () => {
    const r = await h.call('/queryapi.execute', {
      basic: QUERY_ADMIN,
      body: {
        data: {
          source: 'P',
          join: [{ source: 'PX:Big', as: 'b', on: { attribute2: 'attribute3' } }],
          aggregates: [
            { fn: 'countDistinct', field: 'b.sku' },
            { fn: 'max', field: 'label' },
          ],
        },
      },
    });
    assert.deepEqual(status(r), [400, -4], r.text);
    assert.match(r.body.response.data, /QUERY_TIMEOUT_SECONDS/);
  });
});

describe('query API: exact decimals', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
    const api = async (path: string, body: unknown) => {
      const r = await h.call(path, { basic: QUERY_ADMIN, body });
      assert.equal(r.status, 200, `${path}: ${r.text}`);
    };
    await api('/add/PAM', { data: { fieldName: 'attribute1', fieldType: 'MONEY' } });
    await api('/add/P', [
      { data: { sku: 'BIG', attribute1: '12345678901234567.891' } },
      { data: { sku: 'SMALL', attribute1: '136.4' } },
    ]);
  });
  after(() => h.close());

  test('a value a double cannot hold comes back as its exact text, as /fetch answers it', async () => {
    const execute = async (data: unknown) => {
      const r = await h.call('/queryapi.execute', { basic: QUERY_ADMIN, body: { data } });
      assert.equal(r.status, 200, r.text);
      return r.body.response.data as any[];
    };
    const [fetched] = (
      await h.call('/fetch/P', {
        basic: QUERY_ADMIN,
        body: { data: { sku: 'BIG' }, resultFields: ['attribute1'] },
      })
    ).body.response.data;
    assert.equal(fetched.attribute1, '12345678901234567.891');
    assert.deepEqual(await execute({ source: 'P', select: ['sku', 'attribute1'], sortBy: 'sku' }), [
      { sku: 'BIG', attribute1: '12345678901234567.891' },
      { sku: 'SMALL', attribute1: 136.4 },
    ]);
    assert.deepEqual(
      await execute({ source: 'P', aggregates: [{ fn: 'sum', field: 'attribute1' }, { fn: 'count' }] }),
      [{ sum_attribute1: '12345678901234704.291', count: 2 }],
    );
    assert.deepEqual(
      await execute({
        source: 'P',
        select: ['attribute1'],
        filter: { sku: 'SMALL' },
        valueFields: ['attribute1'],
      }),
      [[136.4]],
    );
  });
});
