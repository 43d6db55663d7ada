// Injection attempts against the query API in every name and value a pipeline carries: source and
// table names, joined aliases and join keys, selected fields and output names, filter and having
// field names and values, groupBy, aggregate functions, fields and names, sortBy, valueFields and
// paging. Names are refused (-4, or 404 for unknown tables) before any SQL exists; values travel as
// parameters and match literally. The compiled statement never contains a client-chosen string.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminPrincipal, startHarness, type Harness } from '../helpers/app.ts';
import type { Principal } from '../../src/access/access.ts';
import { compileQuery } from '../../src/modules/query/compile.ts';
import { planQuery } from '../../src/modules/query/pipeline.ts';
import { QUERY_ADMIN, seedQueryData } from './query-seed.ts';

const EVIL = [
  `sku"; DROP TABLE products; --`,
  `sku' OR '1'='1`,
  'sku) OR (1=1',
  'sku/*',
  'sku\u0000',
  `"sku"`,
  'pg_sleep(10)',
];

describe('query API injection', () => {
  let h: Harness;
  const run = (data: unknown) => h.call('/queryapi.execute', { basic: QUERY_ADMIN, body: { data } });
  const refusedName = async (data: unknown, label: string) => {
    const r = await run(data);
    assert.ok(r.status === 400 || r.status === 404, `${label}: ${r.status} ${r.text}`);
    assert.ok(r.body.response.status === -4 || r.body.response.status === -1, label);
  };
  const productCount = async () =>
    (
      await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM products WHERE partition_id = $1', [
        h.partitionId,
      ])
    ).rows[0]!.n;

  before(async () => {
    h = await startHarness();
    await seedQueryData(h);
    // A value that looks like SQL, stored as data.
    const r = await h.call('/add/P', {
      basic: QUERY_ADMIN,
      body: { data: { sku: `P-'; DROP TABLE products; --`, label: "x' OR '1'='1" } },
    });
    assert.equal(r.status, 200, r.text);
  });
  after(() => h.close());

  test('in source and table names', async () => {
    for (const s of [
      'P; DROP TABLE products',
      `PX:Costs'; DELETE FROM products; --`,
      `LTV:Regions' OR '1'='1`,
      'PX:Costs\u0000',
      'p',
      'P ',
      'CX:' + 'x'.repeat(300),
      'users',
    ]) {
      await refusedName({ source: s }, s);
      await refusedName({ source: 'P', join: [{ source: s, as: 'j', on: { sku: 'sku' } }] }, `join ${s}`);
    }
    assert.equal(await productCount(), 8);
  });

  test('in field names of select, filter, groupBy, aggregates, having, sortBy, valueFields, join keys', async () => {
    for (const e of EVIL) {
      await refusedName({ source: 'P', select: [e] }, `select ${e}`);
      await refusedName({ source: 'P', select: [{ field: e }] }, `select.field ${e}`);
      await refusedName(
        { source: 'P', filter: { fieldName: e, operator: 'equals', value: 1 } },
        `filter ${e}`,
      );
      await refusedName({ source: 'P', filter: { [e]: 1 } }, `simple filter ${e}`);
      await refusedName({ source: 'P', groupBy: [e] }, `groupBy ${e}`);
      await refusedName({ source: 'P', aggregates: [{ fn: 'max', field: e }] }, `aggregate field ${e}`);
      await refusedName({ source: 'P', aggregates: [{ fn: e, field: 'sku' }] }, `aggregate fn ${e}`);
      await refusedName(
        { source: 'P', groupBy: ['attribute2'], having: { fieldName: e, operator: 'equals', value: 1 } },
        `having ${e}`,
      );
      await refusedName({ source: 'P', select: ['sku'], sortBy: e }, `sortBy ${e}`);
      await refusedName({ source: 'P', select: ['sku'], sortBy: ['-' + e] }, `sortBy -${e}`);
      await refusedName({ source: 'P', select: ['sku'], valueFields: [e] }, `valueFields ${e}`);
      await refusedName(
        { source: 'P', join: [{ source: 'PX:Costs', as: 'px', on: { [e]: 'sku' } }] },
        `on left ${e}`,
      );
      await refusedName(
        { source: 'P', join: [{ source: 'PX:Costs', as: 'px', on: { sku: e } }] },
        `on right ${e}`,
      );
    }
    assert.equal(await productCount(), 8);
  });

  test('in client-chosen names: join aliases, select and aggregate output names', async () => {
    for (const e of [...EVIL, 'a b', 'x"y', '1abc', 'Px', 'px.'.repeat(20), '']) {
      await refusedName(
        { source: 'P', join: [{ source: 'PX:Costs', as: e, on: { sku: 'sku' } }] },
        `as ${e}`,
      );
    }
    for (const e of [...EVIL, 'a b', 'x"y', '1abc', '', 'x'.repeat(101)]) {
      await refusedName({ source: 'P', select: [{ field: 'sku', as: e }] }, `select as ${e}`);
      await refusedName({ source: 'P', aggregates: [{ fn: 'count', as: e }] }, `aggregate as ${e}`);
    }
  });

  test('in values: filter and having values match literally; paging values are typed', async () => {
    const sku = `P-'; DROP TABLE products; --`;
    const r = await run({
      source: 'P',
      filter: { fieldName: 'sku', operator: 'equals', value: sku },
      select: ['sku', 'label'],
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.response.data, [{ sku, label: "x' OR '1'='1" }]);
    for (const value of [
      "' OR '1'='1",
      '1; DELETE FROM products',
      '%',
      '_',
      '\\',
      "'); SELECT pg_sleep(5); --",
    ]) {
      const c = await run({
        source: 'P',
        filter: { fieldName: 'label', operator: 'contains', value },
        select: ['sku'],
      });
      assert.equal(c.status, 200, c.text);
      const literal = c.body.response.data.map((x: { sku: string }) => x.sku);
      assert.ok(
        value === "' OR '1'='1" ? literal.length === 1 : literal.length === 0,
        `${value}: ${literal}`,
      );
      const having = await run({
        source: 'P',
        groupBy: ['attribute2'],
        having: { fieldName: 'attribute2', operator: 'equals', value },
      });
      assert.equal(having.status, 200, having.text);
      assert.deepEqual(having.body.response.data, []);
    }
    const num = await run({
      source: 'P',
      filter: { fieldName: 'attribute1', operator: 'greaterThan', value: '1 OR 1=1' },
    });
    assert.equal(num.status, 400, 'a number field takes numbers only');
    for (const bad of [{ startRow: '0; DROP' }, { endRow: -1 }, { startRow: 1.5 }, { sortBy: { x: 1 } }]) {
      await refusedName({ source: 'P', ...bad }, JSON.stringify(bad));
    }
    assert.equal(await productCount(), 8);
  });

  test('the compiled statement holds no client-chosen string; values are parameters', async () => {
    const r = await h.db.query<{ id: number }>(
      "SELECT id FROM users WHERE partition_id = $1 AND login_name = 'admin'",
      [h.partitionId],
    );
    const principal: Principal = adminPrincipal(h, r.rows[0]!.id);
    const plan = await planQuery(
      h.db,
      principal,
      {
        source: 'P',
        join: [
          { source: 'PX:Costs', as: 'zqalias', on: { sku: 'sku' } },
          { source: 'LTV:Regions', as: 'zqregion', type: 'left', on: { attribute2: 'name' } },
        ],
        filter: { fieldName: 'zqalias.attribute1', operator: 'greaterThan', value: 2 },
        groupBy: ['zqregion.value'],
        aggregates: [{ fn: 'sum', field: 'zqalias.attribute1', as: 'zqOutput' }],
        having: { fieldName: 'zqOutput', operator: 'greaterThan', value: 1 },
        sortBy: '-zqOutput',
      },
      { queryMaxRows: 100, queryMaxJoins: 4 },
    );
    const { sql, params } = compileQuery(plan);
    for (const s of ['zqalias', 'zqregion', 'zqOutput', 'Costs', 'Regions']) {
      assert.ok(!sql.includes(s), `${s} in ${sql}`);
    }
    assert.ok(params.includes('Costs'));
    const rows = await h.db.query(sql, params);
    assert.ok(rows.rows.length > 0);
  });
});
