// A filter no index finds its rows by cheaply (a contains, a non-indexed field) is answered from one
// scan of its matches (src/engine/fetch.ts `matchesOnce`): the count and the page come from the
// same kept ids while there are at most 1,000 of them, else from the plain count and page. Pages and
// totalRows must be those of the plain statement (the same request sorted by id explicitly), at the
// edges of the page windows and of the 1,000 kept ids, and never hold another partition's rows.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminPrincipal, startHarness, type Harness } from '../helpers/app.ts';
import { loadTypeContext } from '../../src/engine/context.ts';
import { compileFetch, planFetch } from '../../src/engine/fetch.ts';
import { findType } from '../../src/engine/registry.ts';
import { okData } from '../helpers/envelope.ts';
import { adv, leaf } from '../helpers/criteria.ts';

const P = findType('P')!;
const ROWS = 1500;
const basic = { user: 'admin', password: 'admin-password-1' };

type Shape = 'once' | 'plain' | 'index';

/** Filters, the form of their page's SQL, and how many of the rows match (undefined: not counted here). */
const FILTERS: readonly [string, object, Shape, number | undefined][] = [
  // Labels "Product 12", "Product 120".."129", "Product 1200".."1299".
  ['iContains label, 111 matches', adv(leaf('label', 'iContains', 'DUCT 12')), 'once', 111],
  ['contains label, no match', adv(leaf('label', 'contains', 'DUCT 12')), 'once', 0],
  ['iContains label, every row (past the kept ids)', adv(leaf('label', 'iContains', 'duct')), 'once', ROWS],
  ['a non-indexed attribute, 214 matches', adv(leaf('attribute5', 'equals', 'x3')), 'once', 214],
  ['a non-indexed attribute, 1,286 matches', adv(leaf('attribute5', 'notEqual', 'x3')), 'once', 1286],
  ['exactly 1,000 matches', adv(leaf('attribute6', 'lessOrEqual', 'k1000')), 'once', 1000],
  ['1,001 matches', adv(leaf('attribute6', 'lessOrEqual', 'k1001')), 'once', 1001],
  [
    'or of a contains and a non-indexed attribute',
    {
      _constructor: 'AdvancedCriteria',
      operator: 'or',
      criteria: [leaf('label', 'iContains', '77'), leaf('attribute5', 'equals', 'x1')],
    },
    'once',
    undefined,
  ],
  // An index finds these: the plain page (or the index's ids).
  ['sku equals', adv(leaf('sku', 'equals', 'SKU0007')), 'plain', 1],
  [
    'a contains and an indexed equality',
    adv(leaf('label', 'iContains', 'duct'), leaf('sku', 'inSet', ['SKU0007', 'SKU0008'])),
    'plain',
    2,
  ],
  ['iStartsWith label', adv(leaf('label', 'iStartsWith', 'product 12')), 'index', 111],
  ['no filter', {}, 'plain', ROWS],
];

describe('a filter no index serves: count and page from one scan of the matches', () => {
  let h: Harness;
  let other: Harness;
  const fetch = (body: object, on = h) => on.call('/fetch/P', { basic, body });

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    // attribute6 "k0001".."k1500" sorts as its number; attribute5 "x0".."x6".
    for (const x of [h, other]) {
      await x.db.query(
        `INSERT INTO products (partition_id, sku, label, attribute5, attribute6)
         SELECT $1, 'SKU' || lpad(g::text, 4, '0'), 'Product ' || g, 'x' || (g % 7), 'k' || lpad(g::text, 4, '0')
           FROM generate_series(1, ${ROWS}) g`,
        [x.partitionId],
      );
    }
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('pages and totalRows are those of the plain statement, in every window', async () => {
    const principal = adminPrincipal(h);
    const tc = await loadTypeContext(h.db, principal, P);
    for (const [name, data, shape, matches] of FILTERS) {
      const c = compileFetch(planFetch(tc, principal, { data, startRow: 0, endRow: 100 }, 1000));
      const actual: Shape = c.sql.startsWith('WITH "__m"')
        ? 'once'
        : /ANY\(ARRAY\(/.test(c.sql)
          ? 'index'
          : 'plain';
      assert.equal(actual, shape, name);
      // The control: sorted by id explicitly, the plain statement with the same order.
      const all = okData(await fetch({ data, sortBy: 'id', startRow: 0, endRow: ROWS + 1 })).map(
        (r) => r.typedId,
      );
      if (matches !== undefined) assert.equal(all.length, matches, name);
      const n = all.length;
      for (const [startRow, endRow] of [
        [0, 100],
        [1, 3],
        [990, 1010],
        [999, 1001],
        [Math.max(0, n - 1), n + 5],
        [n + 10, n + 20],
        [5, 5],
      ] as const) {
        const r = await fetch({ data, startRow, endRow });
        const ids = okData(r).map((x) => x.typedId);
        const window = `${name} ${startRow}-${endRow}`;
        assert.deepEqual(ids, all.slice(startRow, endRow), window);
        assert.equal(r.body.response.totalRows, n, window);
      }
    }
  });

  test("another partition's rows are neither counted nor paged", async () => {
    for (const [name, data] of FILTERS) {
      const mine = await fetch({ data, startRow: 0, endRow: 50 });
      const theirs = await fetch({ data, startRow: 0, endRow: 50 }, other);
      assert.equal(mine.body.response.totalRows, theirs.body.response.totalRows, name);
      const ids = new Set(okData(mine).map((x) => x.typedId));
      for (const x of okData(theirs)) assert.ok(!ids.has(x.typedId), `${name}: ${x.typedId as string}`);
    }
  });

  test('the page as arrays (valueFields) and with resultFields, from the kept ids', async () => {
    const data = adv(leaf('label', 'iContains', 'duct 12'));
    const r = await fetch({ data, valueFields: ['sku', 'label'], startRow: 0, endRow: 3 });
    assert.deepEqual(okData(r), [
      ['SKU0012', 'Product 12'],
      ['SKU0120', 'Product 120'],
      ['SKU0121', 'Product 121'],
    ]);
    assert.equal(r.body.response.totalRows, 111);
    const s = await fetch({ data, resultFields: ['sku'], startRow: 110, endRow: 200 });
    assert.deepEqual(okData(s), [{ sku: 'SKU1299' }]);
  });
});
