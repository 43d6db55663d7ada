// The single-item writers' overlap check (rc_condition_records_before, migration 056) and the look-up
// (rc_condition_records_at, migration 063) on a set just loaded, before any statistics of
// condition_records: a look-up of its 15,000 items and a mass edit of the validity of 3,000 of them
// answer in seconds. Without statistics the check's probe took the key1 index (partition,
// set) and filtered every item of the set by its signature, once per edited item: on PGlite this edit
// ran ~1-2 minutes (5,000 edited items of 50,000: over an hour, the server frozen). PostgreSQL was not
// seen to take that plan; there the test checks the edit and the check alone.
// Its own file: a fresh database, whose condition_records was never analyzed.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

describe('CRCI mass edit of a set just loaded', () => {
  let h: Harness;
  const call = (path: string, body: unknown) => h.call(path, { basic: admin, body });

  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h.close();
  });

  test(
    'looks up all 15,000 items and changes the validity of 3,000 in seconds; overlaps are still refused',
    { timeout: 30_000 },
    async () => {
      const name = uniqueName('crcm');
      const [set] = okData(await call('/add/CRCS', { data: { uniqueName: name, label: name, keySize: 2 } }));
      // 100 customers × 150 product groups. Long group names (60 characters: a product hierarchy path)
      // make the key index large enough beside the key1 index for the planner to take the latter from
      // ~5,000 items without statistics (with 5-character names, from ~30,000).
      const group = (g: number) => `PG-${g}/`.padEnd(60, 'level/');
      const data = Array.from({ length: 15_000 }, (_, i) => [
        set.id,
        `C-${i % 100}`,
        group(Math.floor(i / 100)),
        '2026-01-01',
        '2026-12-31',
        '1',
      ]);
      const header = ['conditionRecordSetId', 'key1', 'key2', 'validFrom', 'validTo', 'conditionValue'];
      const [loaded] = okData(await call('/loaddata/CRCP', { data: { header, data } }));
      assert.equal(loaded.inserted, 15_000);
      // A look-up of every item just loaded probes the key index too (migration 063): it took 62 s
      // on PostgreSQL and 118 s on PGlite by the key1 index, ~0.3 s by the key index.
      const found = okData(
        await call(`/conditionrecordset.lookup/${name}`, {
          data: { keys: data.map((r) => [r[1], r[2]]), date: '2026-06-01' },
        }),
      );
      assert.equal(found.length, 15_000);
      assert.ok(found.every((f, i) => f?.keys[1] === data[i]![2] && f.conditionValue === '1'));
      const groups = Array.from({ length: 30 }, (_, i) => group(i));
      const [edited] = okData(
        await call('/massedit/CRCI', {
          filterCriteria: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [
              { fieldName: 'conditionRecordSetId', operator: 'equals', value: set.id },
              { fieldName: 'key2', operator: 'inSet', value: groups },
            ],
          },
          massEditRecords: [{ fieldName: 'validTo', massEditOperator: '=', fieldValue: '2026-11-30' }],
        }),
      );
      assert.equal(edited.updatedRecords, 3_000);
      // The check still finds an overlapping item of the same keys (by the new validity).
      const r = await call('/add/CRCI', {
        data: { conditionRecordSetId: set.id, key1: 'C-7', key2: group(3), validFrom: '2026-11-01' },
      });
      expectError(r, 400, -4, 'validFrom');
      assert.match(r.body.response.data, /overlaps item \d+\.CRCI \(valid 2026-01-01\.\.2026-11-30\)/);
    },
  );
});
