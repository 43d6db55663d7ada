// Tables are shared by all partitions, and so are the indexes another partition's `indexed` meta
// asks for: a text too large for an index entry cannot be stored in that column by any partition.
// In a bulk load of a partition that does not index the attribute itself, such a value is the
// row's error naming the field, and the other rows of the chunk are written (not the whole chunk
// rolled back): the generic loader (/loaddata/SL) and the condition-record loader (/loaddata/CRCP).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';
import { indexedColumns, syncIndexes } from '../../src/engine/indexes.ts';

describe("a column indexed by another partition's meta: too-large values are row errors in loads", () => {
  let h: Harness;
  let other: Harness;
  let H: Record<string, string>;
  let O: Record<string, string>;
  // Random letters: a btree entry is compressed, so a repeated letter would fit.
  const long = randomBytes(3000).toString('base64');

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    H = { 'X-Ratecard-jwt': (await h.login()).token };
    O = { 'X-Ratecard-jwt': (await other.login()).token };
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('/loaddata/SL: the long value is a row error on its field, the other row written', async () => {
    okData(
      await other.call('/integrate/SLAM', {
        headers: O,
        body: [{ data: { fieldName: 'attribute10', fieldType: 'TEXT', indexed: true } }],
      }),
    );
    try {
      // (The harness runs no job runner: the queued INDEX_SYNC job waits; this is its work.)
      const built = await syncIndexes(h.db, 'sellers');
      assert.deepEqual(built.failed, []);
      const [ok, bad] = [uniqueName('sl'), uniqueName('sl')];
      const [r] = okData(
        await h.call('/loaddata/SL', {
          headers: H,
          body: {
            data: {
              header: ['sellerId', 'attribute10'],
              data: [
                [bad, long],
                [ok, 'short'],
              ],
            },
          },
        }),
      );
      assert.equal(r.inserted, 1);
      assert.deepEqual(
        r.errors.map((e: any) => [e.row, e.field]),
        [[0, 'attribute10']],
      );
      assert.match(r.errors[0].message, /too large for its index/);
      const rows = okData(await h.call('/fetch/SL', { headers: H, body: { data: { sellerId: [ok, bad] } } }));
      assert.deepEqual(
        rows.map((x: any) => [x.sellerId, x.attribute10]),
        [[ok, 'short']],
      );
    } finally {
      okData(
        await other.call('/integrate/SLAM', {
          headers: O,
          body: [{ data: { fieldName: 'attribute10', indexed: false } }],
        }),
      );
      await syncIndexes(h.db, 'sellers');
    }
  });

  test('/loaddata/CRCP: the long value is a row error on its field, the other item written', async () => {
    const [otherSet] = okData(
      await other.call('/add/CRCS', {
        headers: O,
        body: { data: { uniqueName: uniqueName('set'), label: 'other', keySize: 1 } },
      }),
    );
    okData(
      await other.call('/add/CRCIAM', {
        headers: O,
        body: {
          data: {
            conditionRecordSetId: otherSet.id,
            fieldName: 'attribute26',
            fieldType: 'TEXT',
            indexed: true,
          },
        },
      }),
    );
    try {
      const built = await syncIndexes(h.db, 'condition_records');
      assert.deepEqual(built.failed, []);
      const setName = uniqueName('set');
      okData(
        await h.call('/add/CRCS', {
          headers: H,
          body: { data: { uniqueName: setName, label: 'mine', keySize: 1 } },
        }),
      );
      const [r] = okData(
        await h.call('/loaddata/CRCP', {
          headers: H,
          body: {
            data: {
              header: ['conditionRecordSetId', 'key1', 'validFrom', 'validTo', 'attribute26'],
              data: [
                [setName, 'k1', '2026-01-01', '2026-12-31', long],
                [setName, 'k2', '2026-01-01', '2026-12-31', 'short'],
              ],
            },
          },
        }),
      );
      assert.equal(r.inserted, 1);
      assert.deepEqual(
        r.errors.map((e: any) => [e.row, e.field]),
        [[0, 'attribute26']],
      );
      const items = okData(
        await h.call('/fetch/CRCI', { headers: H, body: { data: { key1: ['k1', 'k2'] } } }),
      );
      assert.deepEqual(
        items.map((x: any) => [x.key1, x.attribute26]),
        [['k2', 'short']],
      );
    } finally {
      okData(
        await other.call('/delete/CRCS', {
          headers: O,
          body: { data: { typedId: otherSet.typedId }, force: true },
        }),
      );
      await syncIndexes(h.db, 'condition_records');
    }
  });

  test('a trigram index takes any length: only btree indexes bound a column', async () => {
    const names = [
      'rcx_products_attribute2_trgm',
      'rcx_products_attribute3_eq',
      'rcx_products_attribute4_num',
    ];
    const q = { query: () => Promise.resolve({ rows: names.map((name) => ({ name })) }) };
    assert.deepEqual([...(await indexedColumns(q as never, 'products'))].sort(), [
      'attribute3',
      'attribute4',
    ]);
  });
});
