// Condition records over real HTTP on both databases: how writes name the item or set they mean —
// an integrate by business key (set + keys + validFrom) that leaves validTo out is a partial update
// of the stored item (its validTo stays, so a later item of the same keys is no overlap), while a new
// item so integrated is open-ended; a load row naming its set by a uniqueName made of digits reaches
// that set, and one whose text is a set's uniqueName and another set's id is the row's error (never
// a write into the other set).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

describe('condition records: addressing items and sets', () => {
  let h: Harness;
  const call = (path: string, body?: unknown) => h.call(path, { basic: admin, body: body ?? {} });

  async function newSet(keySize = 1, name = uniqueName('addr')): Promise<{ id: number; name: string }> {
    const [s] = okData(await call('/add/CRCS', { data: { uniqueName: name, label: name, keySize } }));
    return { id: s.id, name };
  }
  const itemsOf = async (setId: number) =>
    okData(
      await call('/fetch/CRCI1', {
        data: { fieldName: 'conditionRecordSetId', operator: 'equals', value: setId },
        resultFields: ['key1', 'validFrom', 'validTo', 'unitOfMeasure'],
        sortBy: ['key1', 'validFrom'],
      }),
    ).map((i: any) => `${i.key1} ${i.validFrom}..${i.validTo} ${i.unitOfMeasure ?? '-'}`);

  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h.close();
  });

  test('integrate by business key without validTo keeps the stored validTo (a later item is no overlap)', async () => {
    const set = await newSet();
    const item = (from: string, to: string) => ({
      conditionRecordSetId: set.id,
      key1: 'A',
      validFrom: from,
      validTo: to,
    });
    okData(await call('/add/CRCI1', { data: item('2026-01-01', '2026-01-31') }));
    okData(await call('/add/CRCI1', { data: item('2026-02-01', '2026-02-28') }));
    const byKey = { conditionRecordSetId: set.id, key1: 'A', validFrom: '2026-01-01' };

    const [one] = okData(await call('/integrate/CRCI1', { data: { ...byKey, unitOfMeasure: 'KG' } }));
    assert.equal(one.validTo, '2026-01-31');
    assert.equal(one.unitOfMeasure, 'KG');
    // The same in a batch, and with the validFrom as a date-time at midnight.
    okData(
      await call('/integrate/CRCI1', [
        { data: { ...byKey, validFrom: '2026-01-01T00:00:00Z', unitOfMeasure: 'L' } },
        { data: { ...byKey, validFrom: '2026-02-01', unitOfMeasure: 'M' } },
      ]),
    );
    // A new item integrated without validTo is open-ended, as on add.
    const [fresh] = okData(
      await call('/integrate/CRCI1', { data: { ...byKey, key1: 'B', unitOfMeasure: 'N' } }),
    );
    assert.equal(fresh.validTo, '9999-12-31');
    assert.deepEqual(await itemsOf(set.id), [
      'A 2026-01-01..2026-01-31 L',
      'A 2026-02-01..2026-02-28 M',
      'B 2026-01-01..9999-12-31 N',
    ]);
    // Its record history: the ADD, then the integrates as UPDATEs that never touch validTo.
    const hist = okData(await call(`/fetch/CRCI1/${one.id}/history`, {}));
    assert.deepEqual(
      hist.map((r: any) => r.action),
      ['ADD', 'UPDATE', 'UPDATE'],
    );
    assert.ok(
      hist.slice(1).every((r: any) => !('validTo' in r.changes)),
      JSON.stringify(hist),
    );
  });

  test('an item is named by its CRCI and its CRCI<n> typedId alike; another size is no such item', async () => {
    const set = await newSet(2);
    const [item] = okData(
      await call('/add/CRCI2', {
        data: { conditionRecordSetId: set.id, key1: 'a', key2: 'b', validFrom: '2026-01-01' },
      }),
    );
    assert.equal(item.typedId, `${item.id}.CRCI2`);
    okData(await call('/update/CRCI', { data: { typedId: `${item.id}.CRCI2`, conditionValue: 1 } }));
    okData(await call('/update/CRCI2', { data: { typedId: `${item.id}.CRCI`, conditionValue: 2 } }));
    const [byOther] = okData(await call(`/fetch/CRCI/${item.id}.CRCI2`));
    assert.equal(Number(byOther.conditionValue), 2);
    const wrongSize = await call('/update/CRCI3', {
      data: { typedId: `${item.id}.CRCI`, conditionValue: 3 },
    });
    assert.equal(wrongSize.status, 404, wrongSize.text);
    const notItem = await call('/update/CRCI', {
      data: { typedId: `${item.id}.CRCI`.replace('CRCI', 'CRCS'), conditionValue: 3 },
    });
    assert.equal(notItem.status, 400, notItem.text);
    // In filters too: a fetch, a massedit and a delete by filter take either form.
    for (const [path, typedId] of [
      ['/fetch/CRCI', `${item.id}.CRCI2`],
      ['/fetch/CRCI2', `${item.id}.CRCI`],
    ] as const) {
      assert.deepEqual(
        okData(await call(path, { data: { typedId }, valueFields: ['id'] })),
        [[item.id]],
        path,
      );
    }
    assert.deepEqual(okData(await call('/fetch/CRCI3', { data: { typedId: `${item.id}.CRCI` } })), []);
    const [edited] = okData(
      await call('/massedit/CRCI', {
        filterCriteria: { typedId: `${item.id}.CRCI2` },
        massEditRecords: [{ fieldName: 'conditionValue', massEditOperator: '=', fieldValue: 4 }],
      }),
    );
    assert.equal(edited.updatedRecords, 1);
    const filterCrcs = await call('/fetch/CRCI', { data: { typedId: `${item.id}.CRCS` } });
    assert.equal(filterCrcs.status, 400, filterCrcs.text);
    const [gone] = okData(
      await call('/delete/CRCI2/batch/forcefilter', { data: { typedId: `${item.id}.CRCI` } }),
    );
    assert.equal(gone.deletedRecords, 1);
    assert.equal((await call(`/fetch/CRCI2/${item.id}`)).status, 404);
  });

  test('CRCI (the interface names no sized code) integrates, updates and deletes items by their business key', async () => {
    const set = await newSet();
    const byKey = { conditionRecordSetId: set.id, key1: 'K', validFrom: '2026-03-01' };
    // A new item by integrate, then the same one updated by integrate (an upsert, not a second item).
    const [added] = okData(
      await call('/integrate/CRCI', [{ data: { ...byKey, validTo: '2026-03-31', conditionValue: '5' } }]),
    );
    const [upserted] = okData(await call('/integrate/CRCI', { data: { ...byKey, conditionValue: '6' } }));
    assert.equal(upserted.id, added.id);
    assert.equal(upserted.conditionValue, '6');
    const [updated] = okData(
      await call('/update/CRCI', {
        data: { ...byKey, unitOfMeasure: 'KG' },
        oldValues: { version: upserted.version },
      }),
    );
    assert.deepEqual([updated.id, updated.unitOfMeasure], [added.id, 'KG']);
    assert.deepEqual(await itemsOf(set.id), ['K 2026-03-01..2026-03-31 KG']);
    // A batch mixing an item by typedId and one by keys; then the delete by keys.
    okData(
      await call('/integrate/CRCI', [
        { data: { typedId: `${added.id}.CRCI`, conditionValue: '7' } },
        { data: { ...byKey, key1: 'L', validTo: '2026-03-31' } },
      ]),
    );
    okData(await call('/delete/CRCI', { data: byKey }));
    assert.deepEqual(await itemsOf(set.id), ['L 2026-03-01..2026-03-31 -']);
    // Keys without a set, an unknown set, sets of two key sizes in one batch: -4 on the set.
    expectError(
      await call('/integrate/CRCI', { data: { key1: 'K', validFrom: '2026-03-01' } }),
      400,
      -4,
      'conditionRecordSetId',
    );
    expectError(
      await call('/delete/CRCI', { data: { ...byKey, conditionRecordSetId: 999999 } }),
      404,
      -1,
      'conditionRecordSetId',
    );
    const two = await newSet(2);
    const mixed = await call('/integrate/CRCI', [
      { data: byKey },
      { data: { conditionRecordSetId: two.id, key1: 'K', key2: 'M', validFrom: '2026-03-01' } },
    ]);
    expectError(mixed, 400, -4, 'conditionRecordSetId');
  });

  test('CRCI by keys takes a record as fetched (keys past the set\'s size null or ""); other sizes in a batch are a -4', async () => {
    const set = await newSet();
    const byKey = { conditionRecordSetId: set.id, key1: 'K', validFrom: '2026-05-01' };
    const [added] = okData(await call('/add/CRCI', { data: { ...byKey, key2: '' } }));
    // The record as /fetch/CRCI answers it (key2..key12 null), sent back without its ids.
    const [fetched] = okData(await call(`/fetch/CRCI/${added.id}`));
    assert.equal(fetched.key12, null);
    const record = { ...fetched };
    delete record.id;
    delete record.typedId;
    const version: number = record.version;
    delete record.version;
    const [integrated] = okData(
      await call('/integrate/CRCI', { data: { ...record, conditionValue: '2', key3: '' } }),
    );
    assert.deepEqual([integrated.id, integrated.conditionValue], [added.id, '2']);
    const [updated] = okData(
      await call('/update/CRCI', {
        data: { ...record, unitOfMeasure: 'KG' },
        oldValues: { version: version + 1 },
      }),
    );
    assert.deepEqual([updated.id, updated.unitOfMeasure], [added.id, 'KG']);
    // A key past the size that is not empty names that key (the element's, in a batch).
    const extra = await call('/integrate/CRCI', [{ data: byKey }, { data: { ...byKey, key2: 'X' } }]);
    expectError(extra, 400, -4, '1.key2');
    // An item by typedId whose set has another key size, beside items by keys: -4 on its typedId,
    // not a "not found" of the sized type.
    const two = await newSet(2);
    const [other] = okData(
      await call('/add/CRCI', {
        data: { conditionRecordSetId: two.id, key1: 'a', key2: 'b', validFrom: '2026-01-01' },
      }),
    );
    const mixed = await call('/update/CRCI', [
      { data: { typedId: `${other.id}.CRCI`, conditionValue: '0.07' } },
      { data: { ...byKey, conditionValue: '3' } },
    ]);
    expectError(mixed, 400, -4, '0.typedId');
    okData(await call('/delete/CRCI', { data: { ...record, key12: null } }));
    assert.deepEqual(await itemsOf(set.id), []);
    const [kept] = okData(await call(`/fetch/CRCI/${other.id}`));
    assert.equal(kept.conditionValue, null);
  });

  test('CRCI<n> takes a key past its size given null or "" as no key, as CRCI does; another value is an unknown field (sixth audit)', async () => {
    const set = await newSet();
    const byKey = { conditionRecordSetId: set.id, key1: 'E', validFrom: '2026-02-01' };
    const [added] = okData(await call('/add/CRCI1', { data: { ...byKey, key2: '', key12: null } }));
    assert.equal(added.key1, 'E');
    const [integrated] = okData(
      await call('/integrate/CRCI1', { data: { ...byKey, key2: '', conditionValue: '4' } }),
    );
    assert.deepEqual([integrated.id, integrated.conditionValue], [added.id, '4']);
    const [updated] = okData(
      await call('/update/CRCI1', {
        data: { typedId: added.typedId, key3: '', currency: 'EUR' },
        oldValues: { version: integrated.version },
      }),
    );
    assert.equal(updated.currency, 'EUR');
    const [stored] = okData(await call(`/fetch/CRCI/${added.id}`));
    assert.equal(stored.key2, null);
    expectError(
      await call('/add/CRCI1', { data: { ...byKey, validFrom: '2027-01-01', key2: 'X' } }),
      400,
      -4,
      'key2',
    );
  });

  test('a load row names its set by a uniqueName of digits; one that is also another set’s id is an error', async () => {
    const digits = String(880_000_000 + Math.floor(Math.random() * 1_000_000));
    const numbered = await newSet(1, digits);
    const load = (rows: unknown[][]) =>
      call('/loaddata/CRCP', { data: { header: ['conditionRecordSetId', 'key1', 'validFrom'], data: rows } });
    const [r1] = okData(await load([[digits, 'K', '2026-01-01']]));
    assert.equal(r1.inserted, 1, JSON.stringify(r1));
    assert.deepEqual(await itemsOf(numbered.id), ['K 2026-01-01..9999-12-31 -']);

    // A set whose uniqueName is another set's id: the text is ambiguous, the number is the id.
    const other = await newSet();
    const clash = await newSet(1, String(other.id));
    const [r2] = okData(
      await load([
        [String(other.id), 'X', '2026-01-01'],
        [other.id, 'Y', '2026-01-01'],
        [String(numbered.id), 'Z', '2026-01-01'],
      ]),
    );
    assert.equal(r2.inserted, 2, JSON.stringify(r2));
    assert.deepEqual(
      r2.errors.map((e: any) => [e.row, e.field]),
      [[0, 'conditionRecordSetId']],
    );
    assert.match(r2.errors[0].message, /uniqueName.*id/);
    assert.deepEqual(await itemsOf(other.id), ['Y 2026-01-01..9999-12-31 -']);
    assert.deepEqual(await itemsOf(clash.id), []);
    assert.deepEqual(await itemsOf(numbered.id), [
      'K 2026-01-01..9999-12-31 -',
      'Z 2026-01-01..9999-12-31 -',
    ]);

    // Digits past a bigint: a uniqueName (never an id), or the row's error; the other rows load.
    const huge = `9${digits}99999999999`;
    const named = await newSet(1, huge);
    const [r3] = okData(
      await load([
        [huge, 'H', '2026-01-01'],
        ['99999999999999999999999', 'U', '2026-01-01'],
        [String(numbered.id), 'V', '2027-01-01'],
      ]),
    );
    assert.equal(r3.inserted, 2, JSON.stringify(r3));
    assert.deepEqual(
      r3.errors.map((e: any) => [e.row, e.field]),
      [[1, 'conditionRecordSetId']],
    );
    assert.deepEqual(await itemsOf(named.id), ['H 2026-01-01..9999-12-31 -']);
  });
});
