// Indexes that follow the filters: the attribute meta's `indexed` flag builds (and drops) indexes
// through the INDEX_SYNC job; `/admin.indexes/P` lists them; every operator the issue names is
// served by an index (with sequential scans disabled the plan must not fall back to one, which it
// would if the compiled SQL did not match the index expression); results are the same with and
// without the index; on PostgreSQL a 50,000-row partition is filtered without a sequential scan.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminPrincipal, startHarness, type Harness } from '../helpers/app.ts';
import { runnerFor } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';
import { Params } from '../../src/db/sql.ts';
import { compileCriteria, parseCriteria, resolveCriteria } from '../../src/engine/criteria.ts';
import { loadTypeContext, rowScope } from '../../src/engine/context.ts';
import { compileFetch, planFetch } from '../../src/engine/fetch.ts';
import { findType } from '../../src/engine/registry.ts';
import { syncIndexes } from '../../src/engine/indexes.ts';
import { okData } from '../helpers/envelope.ts';
import { adv, leaf } from '../helpers/criteria.ts';
import { indexProductAttributes } from '../helpers/products.ts';

const P = findType('P')!;
const onPostgres = process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== '';

/** Filters each served by an index once attribute1 (TEXT), attribute2 (NUMERIC), attribute3 (DATE) are indexed. */
const INDEXED_FILTERS: readonly [string, object][] = [
  ['equals text attribute', leaf('attribute1', 'equals', 'alpha')],
  ['iEquals text attribute', leaf('attribute1', 'iEquals', 'ALPHA')],
  ['inSet text attribute', leaf('attribute1', 'inSet', ['alpha', 'beta%x'])],
  ['startsWith text attribute', leaf('attribute1', 'startsWith', 'al')],
  ['iStartsWith text attribute', leaf('attribute1', 'iStartsWith', 'AL')],
  ['contains text attribute', leaf('attribute1', 'contains', 'lph')],
  ['iContains text attribute', leaf('attribute1', 'iContains', 'LPH')],
  ['endsWith text attribute', leaf('attribute1', 'endsWith', 'pha')],
  ['iEndsWith text attribute', leaf('attribute1', 'iEndsWith', 'PHA')],
  ['equals numeric attribute', leaf('attribute2', 'equals', 10)],
  ['greaterThan numeric attribute', leaf('attribute2', 'greaterThan', 5)],
  ['lessThan numeric attribute (NULLs count as lowest)', leaf('attribute2', 'lessThan', 5)],
  ['between numeric attribute', leaf('attribute2', 'betweenInclusive', undefined, { start: 2.5, end: 10 })],
  ['inSet numeric attribute', leaf('attribute2', 'inSet', [10, 2.5])],
  ['greaterOrEqual date attribute', leaf('attribute3', 'greaterOrEqual', '2024-01-05')],
  ['iStartsWith label', leaf('label', 'iStartsWith', 'PRODUCT 1')],
  ['iContains label', leaf('label', 'iContains', 'DUCT 1')],
  ['startsWith label', leaf('label', 'startsWith', 'Product 1')],
  ['iEquals label', leaf('label', 'iEquals', 'product 3')],
  ['inSet sku', leaf('sku', 'inSet', ['IX-1', 'IX-2', 'IX-9'])],
  ['iStartsWith sku', leaf('sku', 'iStartsWith', 'ix-1')],
  ['iContains sku', leaf('sku', 'iContains', 'X-1')],
];

/** More filters (not all of them indexable) whose results must not change when indexes appear. */
const OTHER_FILTERS: readonly [string, object][] = [
  ['notEqual text attribute', leaf('attribute1', 'notEqual', 'alpha')],
  ['iNotContains text attribute', leaf('attribute1', 'iNotContains', 'LPH')],
  ['short contains', leaf('attribute1', 'contains', '%')],
  ['underscore is literal', leaf('attribute1', 'iContains', '_')],
  ['startsWithPattern', leaf('attribute1', 'startsWithPattern', 'b?ta*')],
  ['notInSet numeric attribute', leaf('attribute2', 'notInSet', [10])],
  ['isNull numeric attribute', leaf('attribute2', 'isNull')],
  ['lessOrEqual date attribute', leaf('attribute3', 'lessOrEqual', '2024-01-05')],
  ['strict lessThan', { ...adv(leaf('attribute2', 'lessThan', 5)), strictSQLFiltering: true }],
];

// attribute1 text with mixed case and LIKE characters; attribute2 numbers as text (some not
// numbers); attribute3 dates as text (one impossible).
const ROWS: readonly (readonly [string, string | null, string | null, string | null, string | null])[] = [
  ['IX-1', 'Product 1', 'alpha', '10', '2024-01-05'],
  ['IX-2', 'product 2', 'Alpha', '10.0', '2024-02-30'],
  ['IX-3', 'PRODUCT 3', 'ALPHA-2', '2.5', '2023-12-31'],
  ['IX-4', 'Product 10', 'beta%x', 'abc', 'x'],
  ['IX-5', 'Product 11', 'b_ta', null, null],
  ['IX-6', null, null, ' 7 ', '2024-06-01'],
  ['IX-7', 'Prod', '', '1e3', '2024-01-05'],
  ['IX-8', 'Produkt 1', 'gamma', '-4', '2025-01-01'],
  ['IX-9', 'Product 1x', 'alphabet', '5', '2024-01-04'],
];

const META = [
  { fieldName: 'attribute1', label: 'text', fieldType: 'TEXT' },
  { fieldName: 'attribute2', label: 'number', fieldType: 'NUMERIC' },
  { fieldName: 'attribute3', label: 'date', fieldType: 'DATE' },
];

const WANTED = [
  'rcx_products_attribute1_eq',
  'rcx_products_attribute1_lower',
  'rcx_products_attribute1_trgm',
  'rcx_products_attribute2_num',
  'rcx_products_attribute3_date',
];

/** The filter as the engine compiles it for /fetch/P (row scope included), for EXPLAIN and plan tests. */
async function compiled(h: Harness, criteria: object): Promise<{ where: string; params: unknown[] }> {
  const principal = adminPrincipal(h);
  const tc = await loadTypeContext(h.db, principal, P);
  const params = new Params();
  const { criteria: resolved } = resolveCriteria(parseCriteria(criteria), tc.fields);
  const where = `${rowScope(tc, principal, params)} AND ${compileCriteria(resolved, params, 't')}`;
  return { where, params: params.values };
}

/** Ids matching, with only sequential scans or with sequential scans off; and that plan. */
async function idsWith(
  h: Harness,
  criteria: object,
  scans: 'seq' | 'index',
): Promise<{ ids: number[]; plan: string }> {
  const { where, params } = await compiled(h, criteria);
  const sql = `SELECT t.id FROM products t WHERE ${where} ORDER BY t.id`;
  const settings =
    scans === 'seq' ? ['enable_indexscan', 'enable_bitmapscan', 'enable_indexonlyscan'] : ['enable_seqscan'];
  return h.db.transaction(async (tx) => {
    for (const s of settings) await tx.query(`SET LOCAL ${s} = off`);
    const plan = (await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params)).rows
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    const ids = (await tx.query<{ id: number }>(sql, params)).rows.map((r) => r.id);
    return { ids, plan };
  });
}

async function fetchSkus(h: Harness, criteria: object): Promise<{ skus: string[]; total: number }> {
  const r = await h.call('/fetch/P', {
    basic: { user: 'admin', password: 'admin-password-1' },
    body: { data: criteria, sortBy: 'sku', startRow: 0, endRow: 100 },
  });
  const rows = okData(r);
  return { skus: rows.map((x) => x.sku as string), total: r.body.response.totalRows as number };
}

describe('indexes on what users filter on', () => {
  let h: Harness;
  let runner: JobRunner;
  const call = (path: string, body?: unknown) =>
    h.call(path, { basic: { user: 'admin', password: 'admin-password-1' }, ...(body ? { body } : {}) });

  before(async () => {
    h = await startHarness();
    runner = runnerFor(h);
    runner.start();
    okData(
      await call(
        '/add/P',
        ROWS.map(([sku, label, a1, a2, a3]) => ({
          data: { sku, label, attribute1: a1, attribute2: a2, attribute3: a3 },
        })),
      ),
    );
    okData(
      await call(
        '/add/PAM',
        META.map((data) => ({ data })),
      ),
    );
  });
  after(async () => {
    await runner.stop();
    await h.close();
    // The partition and its meta are gone: the indexes it asked for go too.
    await syncIndexes(h.db, 'products').catch(() => {});
  });

  const before$ = new Map<string, { skus: string[]; total: number }>();
  test('results before any attribute index exists', async () => {
    for (const [name, filter] of [...INDEXED_FILTERS, ...OTHER_FILTERS]) {
      const criteria = 'fieldName' in filter ? adv(filter) : filter;
      before$.set(name, await fetchSkus(h, criteria));
    }
    assert.deepEqual(before$.get('iEquals text attribute')!.skus, ['IX-1', 'IX-2']);
    assert.deepEqual(before$.get('lessThan numeric attribute (NULLs count as lowest)')!.skus, [
      'IX-3',
      'IX-4',
      'IX-5',
      'IX-8',
    ]);
    assert.deepEqual(before$.get('iContains label')!.skus, ['IX-1', 'IX-4', 'IX-5', 'IX-9']);
  });

  test('indexed: true builds the indexes through the INDEX_SYNC job; /admin.indexes/P lists them', async () => {
    const meta = okData(await call('/fetch/PAM', { data: {} }));
    assert.equal(meta.length, 3);
    assert.equal(meta[0].indexed, false);
    okData(
      await call(
        '/update/PAM',
        META.map((m) => ({ data: { fieldName: m.fieldName, indexed: true } })),
      ),
    );
    const deadline = Date.now() + 30_000;
    let names: string[] = [];
    while (Date.now() < deadline) {
      const list = okData(await call('/admin.indexes/P'));
      names = list.filter((i) => i.managed && i.valid).map((i) => i.name as string);
      if (WANTED.every((w) => names.includes(w))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(names.sort(), WANTED);
    const answer = await call('/admin.indexes/P');
    const list = okData(answer);
    // A list answer carries its paging members, the whole list as one page.
    const { startRow, endRow, totalRows } = answer.body.response;
    assert.deepEqual([startRow, endRow, totalRows], [0, list.length, list.length]);
    const num = list.find((i) => i.name === 'rcx_products_attribute2_num');
    assert.match(num.definition, /rc_try_numeric\(attribute2\)/);
    assert.equal(typeof num.sizeBytes, 'number');
    assert.equal(typeof num.scans, 'number');
    assert.ok(list.some((i) => i.name === 'rc_products_label_trgm' && !i.managed));
    const jobs = okData(await call('/fetch/JST', { data: { trackerType: 'INDEX_SYNC' } }));
    assert.ok(jobs.length >= 1);
    assert.ok(
      jobs.every((j) => j.status === 'FINISHED'),
      JSON.stringify(jobs),
    );
  });

  test("another partition's /admin.indexes/P shows the table's own indexes, not the ones this partition asked for", async () => {
    const other = await startHarness({ shareDbWith: h });
    try {
      const list = okData(
        await other.call('/admin.indexes/P', { basic: { user: 'admin', password: 'admin-password-1' } }),
      );
      assert.deepEqual(
        list.filter((i) => i.managed),
        [],
      );
      assert.ok(list.some((i) => i.name === 'rc_products_label_trgm'));
      // This partition still sees its own.
      const mine = okData(await call('/admin.indexes/P'))
        .filter((i) => i.managed)
        .map((i) => i.name);
      assert.deepEqual(mine.sort(), WANTED);
    } finally {
      await other.close();
    }
  });

  test('an index built from another definition (an older version) is built again by the next sync', async () => {
    await h.db.query('DROP INDEX rcx_products_attribute2_num');
    await h.db.query(
      'CREATE INDEX rcx_products_attribute2_num ON products (partition_id, rc_try_numeric(attribute2))',
    );
    // Those whose definition did not change stay (PostgreSQL prints them as the meta asks for them).
    const again = await syncIndexes(h.db, 'products');
    assert.deepEqual(again.created, ['rcx_products_attribute2_num']);
    assert.ok(!again.dropped.includes('rcx_products_attribute2_num'), JSON.stringify(again));
    const num = okData(await call('/admin.indexes/P')).find((i) => i.name === 'rcx_products_attribute2_num');
    assert.match(num.definition, /rc_try_numeric\(attribute2\) NULLS FIRST\) INCLUDE \(attribute2, id\)/);
    const quiet = await syncIndexes(h.db, 'products');
    assert.deepEqual(quiet.created, []);
  });

  test('with the indexes, every named operator is served by one (no sequential scan)', async () => {
    for (const [name, filter] of INDEXED_FILTERS) {
      const { plan } = await idsWith(h, adv(filter), 'index');
      assert.doesNotMatch(plan, /Seq Scan/, `${name}:\n${plan}`);
    }
  });

  test('same rows with and without the index, and over HTTP as before the index existed', async () => {
    for (const [name, filter] of [...INDEXED_FILTERS, ...OTHER_FILTERS]) {
      const criteria = 'fieldName' in filter ? adv(filter) : filter;
      const seq = await idsWith(h, criteria, 'seq');
      const idx = await idsWith(h, criteria, 'index');
      assert.deepEqual(idx.ids, seq.ids, name);
      assert.deepEqual(await fetchSkus(h, criteria), before$.get(name), name);
    }
  });

  /** Pages of `criteria` (three windows) over HTTP: those of the plain scan; ids from an index or not. */
  async function samePages(criteria: object, deferred: boolean): Promise<void> {
    const principal = adminPrincipal(h);
    const tc = await loadTypeContext(h.db, principal, P);
    const all = (await idsWith(h, criteria, 'seq')).ids;
    assert.ok(all.length >= 2, JSON.stringify(criteria));
    for (const [startRow, endRow] of [
      [0, 100],
      [1, 3],
      [all.length - 1, all.length + 5],
    ] as const) {
      const c = compileFetch(planFetch(tc, principal, { data: criteria, startRow, endRow }, 1000));
      assert.equal(/ANY\(ARRAY\(/.test(c.sql), deferred, JSON.stringify(criteria));
      const r = await h.call('/fetch/P', {
        basic: { user: 'admin', password: 'admin-password-1' },
        body: { data: criteria, startRow, endRow },
      });
      const rows = okData(r);
      const ids = rows.map((x) => Number(String(x.typedId).split('.')[0]));
      assert.deepEqual(ids, all.slice(startRow, endRow), `${JSON.stringify(criteria)} ${startRow}-${endRow}`);
      assert.equal(r.body.response.totalRows, all.length);
    }
  }

  test('a range of an indexed typed attribute: the page ids come from the index, the pages are the same', async () => {
    const ranges: [object, boolean][] = [
      [adv(leaf('attribute2', 'greaterThan', 2)), true],
      [adv(leaf('attribute2', 'betweenInclusive', undefined, { start: 2.5, end: 10 })), true],
      [adv(leaf('attribute3', 'greaterOrEqual', '2024-01-05')), true],
      [{ ...adv(leaf('attribute2', 'lessThan', 11)), strictSQLFiltering: true }, true],
      // NULLs pass a lone lessThan outside strict mode; equality and sorted pages keep the plain page.
      [adv(leaf('attribute2', 'lessThan', 11)), false],
      [adv(leaf('attribute2', 'equals', 10)), false],
      [adv(leaf('attribute2', 'greaterThan', 2), leaf('attribute3', 'greaterThan', '2000-01-01')), false],
    ];
    for (const [criteria, deferred] of ranges) await samePages(criteria, deferred);
  });

  test('a prefix of label or sku: the page ids come from the covering prefix index, the pages are the same', async () => {
    const prefixes: [object, boolean][] = [
      [adv(leaf('label', 'iStartsWith', 'PRODUCT 1')), true],
      [adv(leaf('label', 'startsWith', 'Product 1')), true],
      [adv(leaf('label', 'iStartsWithPattern', 'prod*1')), true],
      [adv(leaf('sku', 'iStartsWith', 'ix-')), true],
      [adv(leaf('label', 'iStartsWith', 'pro'), leaf('label', 'startsWith', 'Product')), true],
      // Not a prefix of one covered field: the plain page.
      [adv(leaf('label', 'iNotStartsWith', 'product 1')), false],
      [adv(leaf('label', 'iContains', 'DUCT 1')), false],
      [adv(leaf('attribute1', 'iStartsWith', 'AL')), false],
      [adv(leaf('label', 'startsWithField', undefined, { value: 'attribute1' })), false],
      [adv(leaf('label', 'iStartsWith', 'pro'), leaf('sku', 'iStartsWith', 'IX')), false],
    ];
    for (const [criteria, deferred] of prefixes) {
      if (JSON.stringify(criteria).includes('startsWithField')) {
        // No row's label starts with its attribute1: only the form of the SQL is compared.
        const principal = adminPrincipal(h);
        const tc = await loadTypeContext(h.db, principal, P);
        const c = compileFetch(planFetch(tc, principal, { data: criteria }, 1000));
        assert.equal(/ANY\(ARRAY\(/.test(c.sql), deferred);
        continue;
      }
      await samePages(criteria, deferred);
    }
  });

  test('indexed: false (or deleting the meta) drops the indexes no partition asks for', async () => {
    okData(await call('/update/PAM', [{ data: { fieldName: 'attribute1', indexed: false } }]));
    okData(await call('/delete/PAM', [{ data: { fieldName: 'attribute3' } }]));
    const deadline = Date.now() + 30_000;
    let names: string[] = [];
    while (Date.now() < deadline) {
      names = okData(await call('/admin.indexes/P'))
        .filter((i) => i.managed)
        .map((i) => i.name as string);
      if (names.length === 1) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(names, ['rcx_products_attribute2_num']);
  });

  test('/admin.indexes needs ATTRIBUTEMETA_EDIT and a known type', async () => {
    await h.newUser('plain', 'plain-password-1');
    const r = await h.call('/admin.indexes/P', { basic: { user: 'plain', password: 'plain-password-1' } });
    assert.equal(r.status, 403, r.text);
    const u = await call('/admin.indexes/NOPE');
    assert.equal(u.status, 404, u.text);
  });
});

describe(
  'a 50,000-row partition is filtered through indexes (PostgreSQL EXPLAIN)',
  { skip: !onPostgres },
  () => {
    let h: Harness;
    before(async () => {
      h = await startHarness();
      await h.db.query(
        `INSERT INTO products (partition_id, sku, label, attribute1, attribute2)
       SELECT $1, 'SKU' || lpad(g::text, 6, '0'), 'Product ' || g, 'v' || (g % 5000), (g % 10000)::text
         FROM generate_series(1, 50000) g`,
        [h.partitionId],
      );
      await indexProductAttributes(h);
      await h.db.query('ANALYZE products');
    });
    after(async () => {
      await h.close();
      await syncIndexes(h.db, 'products').catch(() => {});
    });

    const skus = Array.from({ length: 50 }, (_, i) => `SKU${String(i * 997 + 1).padStart(6, '0')}`);
    const FILTERS: readonly [string, object][] = [
      ['equals on an indexed attribute', leaf('attribute1', 'equals', 'v5')],
      [
        'numeric range on an indexed NUMERIC attribute',
        leaf('attribute2', 'between', undefined, { start: 100, end: 105 }),
      ],
      ['iStartsWith on label', leaf('label', 'iStartsWith', 'product 4999')],
      ['iContains on label', leaf('label', 'iContains', 'uct 4999')],
      ['inSet of 50 skus', leaf('sku', 'inSet', skus)],
      ['iEquals on an indexed attribute', leaf('attribute1', 'iEquals', 'V7')],
      ['iStartsWith on an indexed attribute', leaf('attribute1', 'iStartsWith', 'V499')],
      ['iContains on an indexed attribute', leaf('attribute1', 'iContains', '4999')],
    ];

    test('once vacuumed, the count of a typed range is answered by the index alone', async () => {
      await h.db.query('VACUUM products');
      const principal = adminPrincipal(h);
      const tc = await loadTypeContext(h.db, principal, P);
      const range = leaf('attribute2', 'betweenInclusive', undefined, { start: 100, end: 2000 });
      const c = compileFetch(planFetch(tc, principal, { data: adv(range) }, 1000));
      const plan = (await h.db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${c.countSql}`, c.countParams)).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      assert.match(plan, /Index Only Scan using rcx_products_attribute2_num/, plan);
    });

    test('the page of a typed range reads its ids by the index alone', async () => {
      await h.db.query('VACUUM products');
      const principal = adminPrincipal(h);
      const tc = await loadTypeContext(h.db, principal, P);
      // 105 of the 50,000 rows, spread over the partition: the primary key's order would read it all.
      const range = leaf('attribute2', 'betweenInclusive', undefined, { start: 100, end: 120 });
      const c = compileFetch(planFetch(tc, principal, { data: adv(range), startRow: 0, endRow: 100 }, 1000));
      const plan = (await h.db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${c.sql}`, c.params)).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      const scans = plan.match(/Index Only Scan using rcx_products_attribute2_num/g) ?? [];
      assert.equal(scans.length, 2, `the count and the page's ids:\n${plan}`);
    });

    test('once vacuumed, a prefix of label or sku: the count and the page ids by the covering index alone, also in a generic plan', async () => {
      await h.db.query('VACUUM products');
      const principal = adminPrincipal(h);
      const tc = await loadTypeContext(h.db, principal, P);
      const literal = (v: unknown) => (typeof v === 'string' ? `'${v.replace(/'/g, "''")}'` : String(v));
      // The plan a prepared page runs once PostgreSQL stops planning it for its values.
      const genericPlan = (c: { sql: string; params: readonly unknown[] }) =>
        h.db.transaction(async (tx) => {
          await tx.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
          await tx.query(`PREPARE rc_prefix_page AS ${c.sql}`);
          const r = await tx.query(`EXPLAIN EXECUTE rc_prefix_page(${c.params.map(literal).join(', ')})`);
          await tx.query('DEALLOCATE rc_prefix_page');
          return r.rows;
        });
      // 1,111 of the 50,000 labels (12, 120.., 1200.., 12000..), spread over the partition.
      for (const [filter, index] of [
        [leaf('label', 'iStartsWith', 'PRODUCT 12'), 'rc_products_label_lower'],
        [leaf('label', 'startsWith', 'Product 12'), 'rc_products_label_lower'],
        [leaf('sku', 'iStartsWith', 'sku0012'), 'rc_products_sku_lower'],
        [leaf('sku', 'startsWith', 'SKU0012'), 'rc_products_sku_lower'],
      ] as const) {
        const c = compileFetch(
          planFetch(tc, principal, { data: adv(filter), startRow: 0, endRow: 100 }, 1000),
        );
        const custom = (await h.db.query(`EXPLAIN ${c.sql}`, c.params)).rows;
        for (const rows of [custom, await genericPlan(c)]) {
          const plan = rows.map((r) => (r as { 'QUERY PLAN': string })['QUERY PLAN']).join('\n');
          const scans = plan.match(new RegExp(`Index Only Scan using ${index}`, 'g')) ?? [];
          assert.equal(scans.length, 2, `the count and the page's ids:\n${plan}`);
        }
      }
    });

    test('a contains of label: the count and the page read the trigram index once', async () => {
      const principal = adminPrincipal(h);
      const tc = await loadTypeContext(h.db, principal, P);
      // 11 of the 50,000 labels (4999, 49990..49999).
      const body = { data: adv(leaf('label', 'iContains', 'uct 4999')), startRow: 0, endRow: 100 };
      const c = compileFetch(planFetch(tc, principal, body, 1000));
      const plan = (
        await h.db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, COSTS OFF) ${c.sql}`, c.params)
      ).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      const ran = plan
        .split('\n')
        .filter((l) => /rc_products_label_trgm/.test(l) && !/never executed/.test(l));
      assert.equal(ran.length, 1, plan);
      const r = await h.db.query<{ __total: string }>(c.sql, c.params);
      assert.equal(r.rows.length, 11);
      assert.equal(Number(r.rows[0]!.__total), 11);
    });

    test('no sequential scan for the fetch page, nor for its count (the SQL /fetch/P runs)', async () => {
      const principal = adminPrincipal(h);
      const tc = await loadTypeContext(h.db, principal, P);
      for (const [name, filter] of FILTERS) {
        const body = { data: adv(filter), startRow: 0, endRow: 100 };
        const c = compileFetch(planFetch(tc, principal, body, 1000));
        for (const [sql, params] of [
          [c.sql, c.params],
          [c.countSql, c.countParams],
        ] as const) {
          const plan = (await h.db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params)).rows
            .map((r) => r['QUERY PLAN'])
            .join('\n');
          assert.doesNotMatch(plan, /Seq Scan/, `${name}:\n${plan}`);
        }
      }
    });
  },
);
