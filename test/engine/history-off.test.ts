// RECORD_HISTORY=false (benchmarks, initial migrations): every writer works and writes no history
// row — a spliced condition-record load (its new items' history names the fields set by a parameter
// the statement must still use: the load failed with "could not determine data type of parameter"),
// the general bulk loader, single writes, upserts and deletes. Its own file: the setting is global
// to the process (buildApp sets it), and node --test runs each file in a process of its own.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };
let h: Harness;
const call = (path: string, body: unknown) => h.call(path, { basic: admin, body });

before(async () => {
  h = await startHarness({ env: { RECORD_HISTORY: 'false' } });
});
after(async () => {
  await h.close();
});

async function historyRows(): Promise<number> {
  const r = await h.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM record_history WHERE partition_id = $1',
    [h.partitionId],
  );
  return r.rows[0]!.n;
}

test('with record history off, loads and writes succeed and record nothing', async () => {
  const before = await historyRows();
  const name = uniqueName('off');
  okData(await call('/add/CRCS', { data: { uniqueName: name, label: name, keySize: 1 } }));
  const header = ['conditionRecordSetId', 'key1', 'validFrom', 'validTo', 'conditionValue'];
  const [first] = okData(
    await call('/loaddata/CRCP', {
      data: {
        header,
        data: [
          [name, 'A', '2026-01-01', '2026-12-31', '1'],
          [name, 'B', '2026-01-01', '2026-12-31', '2'],
        ],
      },
    }),
  );
  assert.deepEqual([first.inserted, first.invalid], [2, 0]);
  // Spliced: A is split around the new item, B cut, C new.
  const [second] = okData(
    await call('/loaddata/CRCP', {
      data: {
        header,
        data: [
          [name, 'A', '2026-05-01', '2026-05-31', '3'],
          [name, 'B', '2026-07-01', '2027-06-30', '4'],
          [name, 'C', '2026-01-01', '2026-12-31', '5'],
        ],
        options: { conditionRecords: { splicing: { setFields: { currency: 'EUR' } } } },
      },
    }),
  );
  assert.deepEqual(
    [second.inserted, second.split, second.cut, second.invalid, second.errors],
    [3, 1, 1, 0, []],
  );
  const items = okData(
    await call('/fetch/CRCI', { data: { key1: 'A' }, sortBy: ['validFrom'], endRow: 100 }),
  );
  assert.deepEqual(
    items.map((r) => `${r.validFrom}..${r.validTo} ${r.conditionValue} ${r.currency ?? '-'}`),
    ['2026-01-01..2026-04-30 1 EUR', '2026-05-01..2026-05-31 3 -', '2026-06-01..2026-12-31 1 EUR'],
  );

  const sku = uniqueName('sku');
  const [loaded] = okData(
    await call('/loaddata/P', { data: { header: ['sku', 'label'], data: [[sku, 'one']] } }),
  );
  assert.equal(loaded.invalid ?? 0, 0);
  okData(await call('/integrate/P', { data: { sku, label: 'two' } }));
  const [product] = okData(await call('/fetch/P', { data: { sku } }));
  assert.equal(product.label, 'two');
  okData(await call('/delete/P', { data: { sku } }));

  assert.equal(await historyRows(), before);
});
