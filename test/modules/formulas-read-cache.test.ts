// The logic engine's cache of lookup rows and condition records (src/modules/formulas/read-cache.ts,
// migration 043) over HTTP on both databases: /formulamanager.execute answers from it while the
// table's values and the set's items are unchanged (shown by a change made behind the versions' back),
// and reads again after every kind of write through the API (update, delete, loads, a spliced load);
// a version changes once per committed transaction, never for a rolled-back one; partitions keep
// their own entries.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';

describe('logic read cache: lookup rows and condition records across executions', () => {
  let h: Harness;
  let api: Client;
  let setId: number;
  let tableId: number;
  before(async () => {
    h = await startHarness();
    api = await clientOf(h);
    await setUp(api);
    [tableId, setId] = await ids(h);
  });
  after(() => h.close());

  async function setUp(c: Client): Promise<void> {
    okData(await c('/add/P', { data: { sku: 'RC-1', label: 'Cached' } }));
    okData(await c('/add/C', { data: { customerId: 'CU-1', name: 'Kunde' } }));
    const [t] = okData(
      await c('/lookuptablemanager.add', {
        data: { uniqueName: 'Rates', label: 'Rates', type: 'SIMPLE', valueType: 'REAL' },
      }),
    );
    okData(await c(`/lookuptablemanager.add/${t.id}`, [{ data: { name: 'EU', value: 0.25 } }]));
    const [set] = okData(
      await c('/add/CRCS', { data: { uniqueName: 'Disc', label: 'Discounts', keySize: 1 } }),
    );
    okData(
      await c('/add/CRCI1', {
        data: {
          conditionRecordSetId: set.id,
          key1: 'CU-1',
          validFrom: '2026-01-01',
          validTo: '2026-12-31',
          conditionValue: '0.10',
        },
      }),
    );
    okData(
      await c('/add/F', {
        data: {
          uniqueName: 'Cached',
          validAfter: '2026-01-01',
          elements: [
            { elementName: 'Rate', expression: 'lookup("Rates", "EU")' },
            {
              elementName: 'Disc',
              expression: 'get(conditionRecord("Disc", customer.customerId), "conditionValue")',
            },
          ],
        },
      }),
    );
  }

  async function ids(x: Harness): Promise<[number, number]> {
    const r = await x.db.query<{ t: number; s: number }>(
      `SELECT (SELECT id FROM lookup_tables WHERE partition_id = $1 AND unique_name = 'Rates') AS t,
              (SELECT id FROM condition_record_sets WHERE partition_id = $1 AND unique_name = 'Disc') AS s`,
      [x.partitionId],
    );
    return [Number(r.rows[0]!.t), Number(r.rows[0]!.s)];
  }

  const run = async (c: Client = api) => {
    const r = okData(
      await c('/formulamanager.execute/RC-1/Cached', {
        data: { customerId: 'CU-1', targetDate: '2026-06-01' },
      }),
    );
    return Object.fromEntries(r.map((x: any) => [x.resultName, x.result]));
  };

  const versions = async () => {
    const r = await h.db.query<{ v: number; i: number }>(
      `SELECT (SELECT values_version FROM lookup_tables WHERE partition_id = $1 AND id = $2)::int AS v,
              (SELECT items_version FROM condition_record_sets WHERE partition_id = $1 AND id = $3)::int AS i`,
      [h.partitionId, tableId, setId],
    );
    return r.rows[0]!;
  };

  /** Changes rows with the version triggers off: what only a cached answer would not see. */
  const behindTheirBack = (sql: string) =>
    h.db.transaction(async (tx) => {
      await tx.query('SET LOCAL session_replication_role = replica');
      await tx.query(sql, [h.partitionId]);
    });

  test('served from the cache while the versions stand; read again after each write through the API', async () => {
    assert.deepEqual(await run(), { Rate: 0.25, Disc: 0.1 });
    await behindTheirBack(`UPDATE lookup_values SET value = '0.99' WHERE partition_id = $1 AND name = 'EU'`);
    await behindTheirBack(
      `UPDATE condition_records SET condition_value = 0.99 WHERE partition_id = $1 AND key1 = 'CU-1'`,
    );
    assert.deepEqual(await run(), { Rate: 0.25, Disc: 0.1 }, 'the versions did not change: cached answers');

    // Lookup values: update, load, delete — each is seen by the next execution.
    const M = `/lookuptablemanager`;
    okData(await api(`${M}.update/${tableId}`, { data: { name: 'EU', value: 0.3 } }));
    assert.equal((await run()).Rate, 0.3);
    const load = await api(`${M}.loaddata/LTV?tableId=${tableId}`, {
      data: { header: ['name', 'value'], data: [['EU', 0.35]], options: { detectJoinFields: true } },
    });
    assert.equal(load.status, 200, load.text);
    assert.equal((await run()).Rate, 0.35);
    okData(await api(`${M}.delete/${tableId}`, { data: { name: 'EU' } }));
    assert.equal((await run()).Rate, null);

    // Condition records: update, a spliced load, delete.
    const [item] = okData(await api('/fetch/CRCI1', { data: { conditionRecordSetId: setId } }));
    assert.equal(item.conditionValue, '0.99', 'the row changed behind the cache');
    okData(
      await api('/update/CRCI1', { data: { id: item.id, conditionValue: '0.2', version: item.version } }),
    );
    assert.equal((await run()).Disc, 0.2);
    const spliced = await api('/loaddata/CRCP', {
      data: {
        header: ['conditionRecordSetId', 'key1', 'validFrom', 'validTo', 'conditionValue'],
        data: [[setId, 'CU-1', '2026-05-01', '2026-06-30', '0.3']],
        options: { conditionRecords: { splicing: {} } },
      },
    });
    assert.equal(spliced.status, 200, spliced.text);
    assert.equal((await run()).Disc, 0.3);
    const inside = okData(
      await api('/fetch/CRCI1', { data: { conditionRecordSetId: setId, validFrom: '2026-05-01' } }),
    );
    okData(await api('/delete/CRCI1', { data: { typedId: inside[0].typedId } }));
    assert.equal((await run()).Disc, null, '1 June now lies between the cut items');
  });

  test('a version changes once per committed transaction, at its commit; not for a rolled-back one', async () => {
    const before = await versions();
    await h.db.transaction(async (tx) => {
      // Three statements on the table's values (an insert, two updates), one on the set's items.
      await tx.query(
        `INSERT INTO lookup_values (partition_id, table_ref, name, value) VALUES ($1, $2, 'TX', '1')`,
        [h.partitionId, String(tableId)],
      );
      for (const value of ['2', '3'])
        await tx.query(`UPDATE lookup_values SET value = $2 WHERE partition_id = $1 AND table_ref = $3`, [
          h.partitionId,
          value,
          String(tableId),
        ]);
      await tx.query(
        `UPDATE condition_records SET currency = 'EUR' WHERE partition_id = $1 AND condition_record_set_id = $2`,
        [h.partitionId, setId],
      );
      const inside = await tx.query<{ v: number }>(
        'SELECT values_version::int AS v FROM lookup_tables WHERE partition_id = $1 AND id = $2',
        [h.partitionId, tableId],
      );
      assert.equal(inside.rows[0]!.v, before.v, 'not before the commit');
    });
    assert.deepEqual(await versions(), { v: before.v + 1, i: before.i + 1 });
    await assert.rejects(
      h.db.transaction(async (tx) => {
        await tx.query(`UPDATE lookup_values SET value = '9' WHERE partition_id = $1 AND table_ref = $2`, [
          h.partitionId,
          String(tableId),
        ]);
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    assert.deepEqual(await versions(), { v: before.v + 1, i: before.i + 1 });
    const notes = await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM logic_read_changes');
    assert.equal(notes.rows[0]!.n, 0, 'no change notes are left behind');
  });

  test("an item's set is noted once per transaction, again after a savepoint that noted it rolled back; a move notes both sets (migration 069)", async () => {
    const [other] = okData(
      await api('/add/CRCS', { data: { uniqueName: 'Disc2', label: 'Other discounts', keySize: 1 } }),
    );
    const itemsVersion = async (set: number) =>
      (
        await h.db.query<{ i: number }>(
          'SELECT items_version::int AS i FROM condition_record_sets WHERE partition_id = $1 AND id = $2',
          [h.partitionId, set],
        )
      ).rows[0]!.i;
    const before = await itemsVersion(setId);
    const notes = (tx: { query: typeof h.db.query }) =>
      tx
        .query<{ n: number }>(`SELECT count(*)::int AS n FROM logic_read_changes WHERE kind = 'C'`)
        .then((r) => r.rows[0]!.n);
    const update = `UPDATE condition_records SET currency = $3 WHERE partition_id = $1 AND condition_record_set_id = $2`;
    await h.db.transaction(async (tx) => {
      await tx.query('SAVEPOINT a');
      await tx.query(update, [h.partitionId, setId, 'USD']);
      assert.equal(await notes(tx), 1);
      await tx.query('ROLLBACK TO SAVEPOINT a');
      assert.equal(await notes(tx), 0, 'the rolled-back savepoint took its note along');
      await tx.query(update, [h.partitionId, setId, 'CHF']);
      await tx.query(update, [h.partitionId, setId, 'GBP']);
      assert.equal(await notes(tx), 1, 'noted again, once');
    });
    assert.equal(await itemsVersion(setId), before + 1);
    const otherBefore = await itemsVersion(other.id);
    await h.db.query(
      `UPDATE condition_records SET condition_record_set_id = $3 WHERE partition_id = $1 AND condition_record_set_id = $2`,
      [h.partitionId, setId, other.id],
    );
    assert.equal(await itemsVersion(setId), before + 2, 'the set the item left');
    assert.equal(await itemsVersion(other.id), otherBefore + 1, 'the set it moved to');
    await h.db.query(
      `UPDATE condition_records SET condition_record_set_id = $3 WHERE partition_id = $1 AND condition_record_set_id = $2`,
      [h.partitionId, other.id, setId],
    );
    // The bulk loader's own check of its sets: a set gone is the foreign key's error.
    await assert.rejects(
      h.db.query(`SELECT rc_condition_records_sets_written($1, $2::bigint[], $3::text[])`, [
        h.partitionId,
        [setId, other.id + 1_000_000],
        ['1', '1'],
      ]),
      { code: '23503', constraint: 'condition_records_partition_id_condition_record_set_id_key_fkey' },
    );
  });

  test("a change of a set's attribute meta is read by the next execution (migration 070)", async () => {
    const [set] = okData(await api('/add/CRCS', { data: { uniqueName: 'Typed', keySize: 1 } }));
    okData(
      await api('/add/CRCI1', {
        data: { conditionRecordSetId: set.id, key1: 'CU-1', validFrom: '2026-01-01', attribute1: '007' },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'MetaTyped',
          validAfter: '2026-01-01',
          elements: [
            {
              elementName: 'A',
              expression: 'get(conditionRecord("Typed", customer.customerId), "attribute1")',
            },
          ],
        },
      }),
    );
    const typed = async () =>
      okData(
        await api('/formulamanager.execute/RC-1/MetaTyped', {
          data: { customerId: 'CU-1', targetDate: '2026-06-01' },
        }),
      )[0].result;
    assert.equal(await typed(), '007');
    const [meta] = okData(
      await api('/add/CRCIAM', {
        data: { conditionRecordSetId: set.id, fieldName: 'attribute1', fieldType: 'INTEGER' },
      }),
    );
    assert.equal(await typed(), 7, 'typed by the new meta');
    const [text] = okData(
      await api('/update/CRCIAM', { data: { id: meta.id, fieldType: 'TEXT', version: meta.version } }),
    );
    assert.equal(await typed(), '007', 'typed by the changed meta');
    okData(
      await api('/update/CRCIAM', { data: { id: meta.id, fieldType: 'INTEGER', version: text.version } }),
    );
    assert.equal(await typed(), 7);
    okData(await api('/delete/CRCIAM', { data: { typedId: `${meta.id}.CRCIAM` } }));
    assert.equal(await typed(), '007', 'no meta: text again');
  });

  test('partitions keep their own entries', async () => {
    const other = await startHarness({ shareDbWith: h });
    try {
      const otherApi = await clientOf(other);
      await setUp(otherApi);
      const [otherTable] = await ids(other);
      okData(
        await otherApi(`/lookuptablemanager.update/${otherTable}`, { data: { name: 'EU', value: 0.5 } }),
      );
      assert.deepEqual(await run(otherApi), { Rate: 0.5, Disc: 0.1 });
      assert.notDeepEqual((await run()).Rate, 0.5);
    } finally {
      await other.close();
    }
  });
});
