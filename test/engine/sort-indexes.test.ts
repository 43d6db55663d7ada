// Sorted pages read their order from an index. A sort puts nulls lowest (first ascending, last
// descending); the indexes of nullable columns a sort may use are built NULLS FIRST (migration 060,
// engine/indexes.ts), and NOT NULL columns are sorted without a NULLS clause (db/columns.ts), so
// the plain unique index of `sku` serves them. Before, every sorted page read and sorted the whole
// partition. The order itself is unchanged: checked over HTTP on both databases.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminPrincipal, startHarness, type Harness } from '../helpers/app.ts';
import { loadTypeContext } from '../../src/engine/context.ts';
import { compileFetch, planFetch } from '../../src/engine/fetch.ts';
import { findType } from '../../src/engine/registry.ts';
import { syncIndexes } from '../../src/engine/indexes.ts';
import { okData } from '../helpers/envelope.ts';
import { indexProductAttributes } from '../helpers/products.ts';

const P = findType('P')!;
const onPostgres = process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== '';
const basic = { user: 'admin', password: 'admin-password-1' };

describe('sorted pages: nulls lowest, in both directions', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
    await indexProductAttributes(h);
    okData(
      await h.call('/add/P', {
        basic,
        body: [
          { data: { sku: 'S-3', label: 'beta', attribute1: 'b', attribute2: '10' } },
          { data: { sku: 'S-1', attribute2: '9' } },
          { data: { sku: 'S-2', label: 'alpha', attribute1: 'a' } },
          { data: { sku: 'S-4', label: 'gamma', attribute1: 'c', attribute2: '-1' } },
        ],
      }),
    );
  });
  after(() => h.close());

  const order = async (sortBy: string) =>
    okData(await h.call('/fetch/P', { basic, body: { data: {}, sortBy, startRow: 0, endRow: 10 } })).map(
      (r) => r.sku as string,
    );

  test('label, attribute1 (TEXT) and attribute2 (NUMERIC, by value): nulls first ascending, last descending', async () => {
    assert.deepEqual(await order('label'), ['S-1', 'S-2', 'S-3', 'S-4']);
    assert.deepEqual(await order('-label'), ['S-4', 'S-3', 'S-2', 'S-1']);
    assert.deepEqual(await order('attribute1'), ['S-1', 'S-2', 'S-3', 'S-4']);
    assert.deepEqual(await order('-attribute1'), ['S-4', 'S-3', 'S-2', 'S-1']);
    assert.deepEqual(await order('attribute2'), ['S-2', 'S-4', 'S-1', 'S-3']);
    assert.deepEqual(await order('-attribute2'), ['S-3', 'S-1', 'S-4', 'S-2']);
    assert.deepEqual(await order('sku'), ['S-1', 'S-2', 'S-3', 'S-4']);
    assert.deepEqual(await order('-sku'), ['S-4', 'S-3', 'S-2', 'S-1']);
  });
});

describe(
  'a sorted page of a 50,000-row partition reads an index in order (PostgreSQL EXPLAIN)',
  { skip: !onPostgres },
  () => {
    let h: Harness;
    before(async () => {
      h = await startHarness();
      await h.db.query(
        `INSERT INTO products (partition_id, sku, label, attribute1, attribute2)
       SELECT $1, 'SKU' || lpad(g::text, 6, '0'), CASE WHEN g % 10 <> 0 THEN 'Product ' || g END,
              'v' || (g % 5000), (g % 10000)::text
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

    const SORTS: readonly [string, RegExp][] = [
      ['label', /rc_products_label\b/],
      ['-label', /rc_products_label\b/],
      ['sku', /products_partition_id_sku_key/],
      ['-sku', /products_partition_id_sku_key/],
      ['attribute1', /rcx_products_attribute1_eq/],
      ['-attribute1', /rcx_products_attribute1_eq/],
      ['attribute2', /rcx_products_attribute2_num/],
      ['-attribute2', /rcx_products_attribute2_num/],
    ];

    test('no sort of the partition: the page comes from the index of the sorted column', async () => {
      const principal = adminPrincipal(h);
      const tc = await loadTypeContext(h.db, principal, P);
      for (const [sortBy, index] of SORTS) {
        for (const startRow of [0, 20_000]) {
          const c = compileFetch(
            planFetch(tc, principal, { data: {}, sortBy, startRow, endRow: startRow + 100 }, 1000),
          );
          const plan = (await h.db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${c.sql}`, c.params)).rows
            .map((r) => r['QUERY PLAN'])
            .join('\n');
          assert.match(plan, index, `${sortBy} from ${startRow}:\n${plan}`);
          // An incremental sort (of the rows sharing a value, by id) is the tie-breaker's; a full one
          // would be a sort of every row.
          assert.doesNotMatch(plan, /(^|->\s+)Sort\s/m, `${sortBy} from ${startRow}:\n${plan}`);
        }
      }
    });
  },
);
