// INDEX_SYNC jobs of one table queued together (one per change of attribute meta) run in parallel:
// each index is built once, none is dropped by another job, every job finishes and every index the
// meta asks for exists (two syncs planned from the same catalog raced: on PostgreSQL the loser's
// COMMENT ON INDEX failed with "tuple concurrently updated", it dropped the index the other had built
// and failed before the table's other indexes).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { runnerFor } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';
import { syncIndexes } from '../../src/engine/indexes.ts';
import { allTypes, findType } from '../../src/engine/registry.ts';
import { isAttributeMeta } from '../../src/modules/admin/indexes.ts';
import { okData } from '../helpers/envelope.ts';

// customers: no other test indexes its attributes, so what gets built here is built by these jobs.
const META = [
  { fieldName: 'attribute21', fieldType: 'TEXT' },
  { fieldName: 'attribute22', fieldType: 'TEXT' },
  { fieldName: 'attribute23', fieldType: 'DATE' },
  { fieldName: 'attribute24', fieldType: 'NUMERIC' },
];
const WANTED = [
  'rcx_customers_attribute21_eq',
  'rcx_customers_attribute21_lower',
  'rcx_customers_attribute21_trgm',
  'rcx_customers_attribute22_eq',
  'rcx_customers_attribute22_lower',
  'rcx_customers_attribute22_trgm',
  'rcx_customers_attribute23_date',
  'rcx_customers_attribute24_num',
];

describe('INDEX_SYNC jobs of one table at the same time', () => {
  let h: Harness;
  let runner: JobRunner;
  let call: Client;

  before(async () => {
    h = await startHarness();
    call = await clientOf(h);
    // What an earlier run left on the shared database (PostgreSQL) is not this run's to count.
    for (const n of [
      ...WANTED,
      'rcx_condition_records_attribute29_num',
      'rcx_rebate_record_groups_attribute28_num',
    ])
      await h.db.query(`DROP INDEX IF EXISTS ${n}`);
    okData(await call('/add/C', [{ data: { customerId: 'SY-1', name: 'One', attribute21: 'a' } }]));
  });
  after(async () => {
    await runner?.stop();
    // The meta asks for nothing any more: the indexes go (before the harness closes the database).
    await h.db.query(`DELETE FROM attribute_meta WHERE partition_id = $1`, [h.partitionId]);
    await syncIndexes(h.db, 'customers');
    await syncIndexes(h.db, 'condition_records');
    await syncIndexes(h.db, 'rebate_record_groups');
    await h.close();
  });

  test('each builds what is missing when it runs; all finish; every index exists, built once', async () => {
    // Four requests, four jobs, queued before the runner starts: they are claimed together.
    for (const m of META) okData(await call('/add/CAM', { data: { ...m, indexed: true } }));
    runner = runnerFor(h);
    runner.start();
    const deadline = Date.now() + 60_000;
    let jobs: any[] = [];
    while (Date.now() < deadline) {
      jobs = okData(await call('/fetch/JST', { data: { trackerType: 'INDEX_SYNC' } }));
      if (jobs.length === META.length && jobs.every((j) => ['FINISHED', 'FAILED'].includes(j.status))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(
      jobs.map((j) => j.status),
      META.map(() => 'FINISHED'),
      JSON.stringify(jobs.map((j) => j.messages)),
    );
    const results = jobs.map((j) => j.calculationResults as { created: string[]; failed: unknown[] });
    assert.deepEqual(
      results.flatMap((r) => r.failed),
      [],
    );
    assert.deepEqual(results.flatMap((r) => r.created).sort(), WANTED);
    const list = okData(await call('/admin.indexes/C'));
    assert.deepEqual(
      list
        .filter((i) => i.managed && i.valid)
        .map((i) => i.name)
        .sort(),
      WANTED,
    );
  });

  test('deleting a condition record set (its CRCIAM rows go with it) drops the index only it asked for', async () => {
    const wait = async (until: (names: string[]) => boolean) => {
      const deadline = Date.now() + 60_000;
      let names: string[] = [];
      while (Date.now() < deadline) {
        names = okData(await call('/admin.indexes/CRCI'))
          .filter((i) => i.managed && i.valid)
          .map((i) => i.name as string);
        if (until(names)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      return names;
    };
    const name = 'rcx_condition_records_attribute29_num';
    const [set] = okData(
      await call('/add/CRCS', { data: { uniqueName: 'SY-SET', label: 'Set', keySize: 1 } }),
    );
    okData(
      await call('/add/CRCIAM', {
        data: { conditionRecordSetId: set.id, fieldName: 'attribute29', fieldType: 'NUMERIC', indexed: true },
      }),
    );
    assert.ok((await wait((n) => n.includes(name))).includes(name));
    okData(await call('/delete/CRCS', { data: { typedId: set.typedId }, force: true }));
    assert.deepEqual(okData(await call('/fetch/CRCIAM', { data: {} })), []);
    assert.ok(!(await wait((n) => !n.includes(name))).includes(name));
  });

  test('deleting a rebate type (its RBTAM rows go with it) drops the index only it asked for', async () => {
    const name = 'rcx_rebate_record_groups_attribute28_num';
    const present = async () =>
      okData(await call('/admin.indexes/RRG')).some((i) => i.name === name && i.valid);
    const until = async (want: boolean) => {
      const deadline = Date.now() + 60_000;
      while ((await present()) !== want && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      return present();
    };
    const [type] = okData(await call('/add/RBT', { data: { uniqueName: 'SY-RBT', label: 'Type' } }));
    okData(
      await call('/add/RBTAM', {
        data: { name: 'SY-RBT', fieldName: 'attribute28', fieldType: 'INTEGER', indexed: true },
      }),
    );
    assert.equal(await until(true), true);
    okData(await call('/delete/RBT', { data: { typedId: type.typedId } }));
    assert.deepEqual(okData(await call('/fetch/RBTAM', { data: {} })), []);
    assert.equal(await until(false), false);
  });
});

test('every deletesMeta of the registry names an attribute-meta type', () => {
  const declaring = allTypes().filter((t) => t.deletesMeta !== undefined);
  assert.deepEqual(declaring.map((t) => t.code).sort(), ['CRCS', 'RBT']);
  for (const t of declaring) {
    const meta = findType(t.deletesMeta!);
    assert.ok(meta !== undefined && isAttributeMeta(meta), `${t.code}.deletesMeta: ${t.deletesMeta}`);
  }
});
