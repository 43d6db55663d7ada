// Data change requests on condition record items over HTTP on both databases: ADD, UPDATE and
// DELETE items of CRCI2 (by business key and by typedId) checked when proposed (per-set attribute
// types, keys, existing keys), changesOnly, the apply through the engine's single-record writes
// (values, CRCIH, record history naming the DCR), an ADD overlapping an existing item failing the
// whole DCR with the item named and nothing written (target type CRCI), a version conflict, a mass
// change evaluated after the items, and the set's userGroupEdit both when proposed and when applied.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { okData, expectError } from '../helpers/envelope.ts';

type Who = { user: string; password: string };
type Obj = Record<string, any>;
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const editor: Who = { user: 'crc_dcr_editor', password: 'editor-password-1' };

describe('data change requests on condition record items', () => {
  let h: Harness;
  const call = (path: string, body?: unknown, who: Who = admin) =>
    h.call(path, { basic: who, ...(body === undefined ? {} : { body }) });

  async function newSet(keySize: number, extra: Obj = {}): Promise<{ id: number; uniqueName: string }> {
    const name = uniqueName('set');
    const [s] = okData(
      await call('/add/CRCS', { data: { uniqueName: name, label: name, keySize, ...extra } }),
    );
    return { id: s.id, uniqueName: name };
  }
  const addItem = async (code: string, data: Obj) => okData(await call(`/add/${code}`, { data }))[0];
  const itemsOf = async (setId: number) =>
    okData(await call('/fetch/CRCI', { data: { conditionRecordSetId: setId }, sortBy: 'id' }));
  const newDcr = async (dcrType: string, who: Who = admin) =>
    okData(await call('/dcrmanager.add', { data: { dcrType, label: 'items' } }, who))[0];
  const historyOf = async (dcrId: number) =>
    (
      await h.db.query<{ action: string; n: number }>(
        `SELECT action, count(*)::int AS n FROM record_history
          WHERE partition_id = $1 AND type_code LIKE 'CRCI%' AND operation = $2 GROUP BY action ORDER BY action`,
        [h.partitionId, `DCR ${dcrId}.DCR`],
      )
    ).rows.map((r) => [r.action, r.n]);

  before(async () => {
    h = await startHarness();
    await h.newUser(editor.user, editor.password, ['ADMIN_WO_USER_MGMT']);
    okData(
      await call('/add/DCRT', {
        data: { uniqueName: 'items2', targetType: 'CRCI2', fields: 'validTo,conditionValue,attribute1' },
      }),
    );
    okData(await call('/add/DCRT', { data: { uniqueName: 'items', targetType: 'CRCI' } }));
    okData(await call('/add/DCRT', { data: { uniqueName: 'items1', targetType: 'CRCI1' } }));
  });
  after(async () => {
    await h.close();
  });

  test('DCR types name any condition record item type', async () => {
    for (const t of ['CRCI', 'CRCI1', 'CRCI12'])
      okData(await call('/add/DCRT', { data: { uniqueName: uniqueName('t'), targetType: t } }));
    expectError(
      await call('/add/DCRT', { data: { uniqueName: uniqueName('t'), targetType: 'CRCI13' } }),
      400,
      -4,
      'targetType',
    );
    expectError(
      await call('/add/DCRT', { data: { uniqueName: uniqueName('t'), targetType: 'CRCIH' } }),
      400,
      -4,
      'targetType',
    );
  });

  test('ADD, UPDATE and DELETE of CRCI2 items: checked when proposed, changesOnly, applied', async () => {
    const s = await newSet(2);
    okData(
      await call('/add/CRCIAM', {
        data: { conditionRecordSetId: s.id, fieldName: 'attribute1', label: 'Rank', fieldType: 'NUMERIC' },
      }),
    );
    const item = (
      key1: string,
      key2: string,
      validFrom: string,
      validTo: string,
      conditionValue: number,
    ) => ({
      conditionRecordSetId: s.id,
      key1,
      key2,
      validFrom,
      validTo,
      conditionValue,
    });
    const a = await addItem('CRCI2', item('K1', 'P1', '2026-01-01', '2026-06-30', 10));
    const b = await addItem('CRCI2', item('K1', 'P2', '2026-01-01', '2026-12-31', 20));
    const c = await addItem('CRCI2', item('K2', 'P1', '2026-01-01', '2026-06-30', 30));
    const dcr = await newDcr('items2');
    const propose = (data: unknown) => call(`/dcrmanager.add/${dcr.id}`, { data });

    // Checked when proposed, -4 naming the field (batches: <index>.<field>).
    const fresh: Obj = { changeType: 'ADD', ...item('K9', 'P9', '2026-01-01', '2026-12-31', 1) };
    expectError(await propose({ ...fresh, attribute1: 'high' }), 400, -4, 'attribute1');
    expectError(await propose([fresh, { ...fresh, key1: 'K8', attribute1: 'x' }]), 400, -4, '1.attribute1');
    expectError(await propose({ ...fresh, key2: undefined }), 400, -4, 'key2');
    expectError(await propose({ ...fresh, key1: 'x'.repeat(64) }), 400, -4, 'key1');
    expectError(await propose({ ...fresh, currency: 'EUR' }), 400, -4, 'currency');
    // An existing business key (set, keys, validFrom) is a conflict, as /add answers it.
    expectError(
      await propose({ changeType: 'ADD', ...item('K1', 'P1', '2026-01-01', '2026-12-31', 1) }),
      409,
      -1,
      'validFrom',
    );
    expectError(await propose({ ...fresh, conditionRecordSetId: 987654 }), 404, -1, 'conditionRecordSetId');
    expectError(await propose({ typedId: '987654.CRCI2', conditionValue: 1 }), 404, -1);
    // Rules across fields, over the item as it would be: validTo before validFrom.
    expectError(await propose({ ...fresh, validTo: '2025-12-31' }), 400, -4, 'validTo');
    expectError(await propose([fresh, { typedId: b.typedId, validTo: '2025-12-31' }]), 400, -4, '1.validTo');
    assert.equal(okData(await call(`/dcrmanager.fetch/${dcr.id}`, {})).length, 0);

    const items = okData(
      await propose([
        // By business key: set + keys + validFrom.
        {
          conditionRecordSetId: s.id,
          key1: 'K1',
          key2: 'P1',
          validFrom: '2026-01-01',
          validTo: '2026-04-30',
          conditionValue: 11,
        },
        // By typedId, in either item type's form; conditionValue unchanged.
        { typedId: `${b.id}.CRCI`, conditionValue: 20, attribute1: 5 },
        { changeType: 'DELETE', typedId: c.typedId },
        // Overlaps a as it is now; fits once a is shortened (updates are applied before adds).
        { changeType: 'ADD', ...item('K1', 'P1', '2026-05-01', '2026-12-31', 12), attribute1: '7' },
      ]),
    );
    assert.equal(items.length, 4);
    assert.deepEqual(items[0].targetKey, [String(s.id), 'K1', 'P1', '2026-01-01']);
    assert.equal(items[0].targetId, a.id);
    assert.equal(items[0].targetVersion, a.version);
    assert.equal(items[1].targetId, b.id);
    assert.equal(items[2].originalValues.conditionValue, '30');
    assert.deepEqual(items[3].targetKey, [String(s.id), 'K1', 'P1', '2026-05-01']);
    assert.equal(Number(items[3].values.attribute1), 7);
    // One item per record: a's second proposal is refused.
    expectError(await propose({ typedId: a.typedId, conditionValue: 3 }), 409, -1);

    const changes = okData(await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, {}));
    const byTarget = new Map<unknown, Obj>(changes.map((x: Obj) => [x.targetId ?? 'add', x]));
    const at = (k: unknown): Obj => byTarget.get(k)!;
    assert.deepEqual(Object.keys(at(a.id).changes).sort(), ['conditionValue', 'validTo']);
    assert.equal(at(a.id).changes.validTo.old, '2026-06-30');
    assert.deepEqual(Object.keys(at(b.id).changes), ['attribute1']);
    assert.equal(at(c.id).changeType, 'DELETE');
    assert.equal(at(c.id).changes.conditionValue.new, null);
    assert.deepEqual(Object.keys(at('add').changes).sort(), ['attribute1', 'conditionValue', 'validTo']);
    // Nothing written before the apply.
    assert.equal((await itemsOf(s.id)).length, 3);

    const [applied] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
    assert.equal(applied.status, 'APPLIED', JSON.stringify(applied.messages));
    const now = await itemsOf(s.id);
    assert.deepEqual(
      now.map((x: Obj) => [x.key1, x.key2, x.validFrom, x.validTo, x.conditionValue, x.attribute1]),
      [
        ['K1', 'P1', '2026-01-01', '2026-04-30', '11', null],
        ['K1', 'P2', '2026-01-01', '2026-12-31', '20', 5],
        ['K1', 'P1', '2026-05-01', '2026-12-31', '12', 7],
      ],
    );
    assert.equal(now[0].version, a.version + 1);
    // The deleted item moved to CRCIH, by the submitter; record history names the DCR.
    const hist = okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id } }));
    assert.deepEqual(
      hist.map((x: Obj) => [x.itemId, x.reason, x.conditionValue]),
      [[c.id, 'DELETED', '30']],
    );
    assert.deepEqual(await historyOf(dcr.id), [
      ['ADD', 1],
      ['DELETE', 1],
      ['UPDATE', 2],
    ]);
    const [listed] = okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }));
    assert.equal(listed.messages[0].added, 1);
    assert.equal(listed.messages[0].updated, 2);
    assert.equal(listed.messages[0].deleted, 1);
  });

  test('an ADD overlapping an existing item fails the DCR with the item named; nothing written', async () => {
    const s = await newSet(1);
    const x = await addItem('CRCI1', {
      conditionRecordSetId: s.id,
      key1: 'K',
      validFrom: '2026-01-01',
      validTo: '2026-06-30',
      conditionValue: 1,
    });
    const y = await addItem('CRCI1', {
      conditionRecordSetId: s.id,
      key1: 'L',
      validFrom: '2026-01-01',
      validTo: '2026-12-31',
      conditionValue: 2,
    });
    // Target type CRCI: items by set + keys + validFrom, or by typedId.
    const dcr = await newDcr('items');
    const [upd, , add] = okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: [
          { conditionRecordSetId: s.id, key1: 'K', validFrom: '2026-01-01', conditionValue: 99 },
          { changeType: 'DELETE', typedId: `${y.id}.CRCI` },
          {
            changeType: 'ADD',
            conditionRecordSetId: s.id,
            key1: 'K',
            validFrom: '2026-03-01',
            validTo: '2026-03-31',
          },
        ],
      }),
    );
    assert.equal(upd.targetId, x.id);
    assert.deepEqual(add.targetKey, [String(s.id), 'K', '2026-03-01']);
    // Keys that do not fit the set: refused when proposed.
    expectError(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: {
          changeType: 'ADD',
          conditionRecordSetId: s.id,
          key1: 'M',
          key2: 'N',
          validFrom: '2026-01-01',
        },
      }),
      400,
      -4,
      'key2',
    );
    const r = await call(`/dcrmanager.submit/${dcr.id}`);
    expectError(r, 400, -4, `${add.typedId}.validFrom`);
    assert.match(
      r.body.response.errors[`${add.typedId}.validFrom`].errorMessage,
      new RegExp(`${x.id}\\.CRCI`),
    );
    const [failed] = okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }));
    assert.equal(failed.status, 'FAILED');
    assert.ok(
      failed.messages.some((m: Obj) => m.item === `${add.typedId}.validFrom`),
      JSON.stringify(failed.messages),
    );
    // Nothing of it written: x keeps its value, y is still there, no history.
    assert.deepEqual(
      (await itemsOf(s.id)).map((i: Obj) => [i.id, i.conditionValue, i.version]),
      [
        [x.id, '1', x.version],
        [y.id, '2', y.version],
      ],
    );
    assert.equal(okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id } })).length, 0);
    assert.deepEqual(await historyOf(dcr.id), []);

    // Fixed (the ADD moved after x), a direct edit of x meanwhile: a version conflict naming the item.
    okData(await call(`/dcrmanager.delete/${dcr.id}`, { data: { typedId: add.typedId } }));
    const [add2] = okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: {
          changeType: 'ADD',
          conditionRecordSetId: s.id,
          key1: 'K',
          validFrom: '2026-07-01',
          conditionValue: 3,
        },
      }),
    );
    okData(
      await call('/update/CRCI', {
        data: { id: x.id, unitOfMeasure: 'kg' },
        oldValues: { version: x.version },
      }),
    );
    const conflict = await call(`/dcrmanager.submit/${dcr.id}`);
    expectError(conflict, 409, -1, upd.typedId);
    assert.equal((await itemsOf(s.id)).length, 2);

    // The UPDATE item proposed again on the current version: applied.
    okData(await call(`/dcrmanager.delete/${dcr.id}`, { data: { typedId: upd.typedId } }));
    okData(
      await call(`/dcrmanager.add/${dcr.id}`, { data: { typedId: `${x.id}.CRCI1`, conditionValue: 99 } }),
    );
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
    assert.deepEqual(
      (await itemsOf(s.id)).map((i: Obj) => [
        i.key1,
        i.validFrom,
        i.validTo,
        i.conditionValue,
        i.unitOfMeasure,
      ]),
      [
        ['K', '2026-01-01', '2026-06-30', '99', 'kg'],
        ['K', '2026-07-01', '9999-12-31', '3', null],
      ],
    );
    assert.equal(add2.changeType, 'ADD');
    assert.deepEqual(
      okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id } })).map((i: Obj) => i.itemId),
      [y.id],
    );
  });

  test('a mass change of items is evaluated when applied, after the items', async () => {
    const s = await newSet(1);
    for (const [key1, v] of [
      ['M1', 1],
      ['M2', 2],
    ] as const) {
      await addItem('CRCI1', {
        conditionRecordSetId: s.id,
        key1,
        validFrom: '2026-01-01',
        conditionValue: v,
      });
    }
    const dcr = await newDcr('items1');
    okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: {
          changeType: 'ADD',
          conditionRecordSetId: s.id,
          key1: 'M3',
          validFrom: '2026-01-01',
          conditionValue: 3,
        },
      }),
    );
    okData(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: {
          filterCriteria: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [{ fieldName: 'conditionRecordSetId', operator: 'equals', value: s.id }],
          },
          massEditRecords: [{ fieldName: 'conditionValue', massEditOperator: '*', fieldValue: 10 }],
        },
      }),
    );
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
    assert.deepEqual(
      (await itemsOf(s.id)).map((i: Obj) => [i.key1, Number(i.conditionValue)]),
      [
        ['M1', 10],
        ['M2', 20],
        ['M3', 30],
      ],
    );
  });

  test("the set's userGroupEdit applies to items when proposed and when applied", async () => {
    const s = await newSet(1, { userGroupEdit: 'CRC_EDITORS' });
    const g = await addItem('CRCI1', {
      conditionRecordSetId: s.id,
      key1: 'G',
      validFrom: '2026-01-01',
      validTo: '2026-12-31',
      conditionValue: 1,
    });
    const dcr = await newDcr('items1', editor);
    const propose = (data: unknown) => call(`/dcrmanager.add/${dcr.id}`, { data }, editor);
    const newItem = { changeType: 'ADD', conditionRecordSetId: s.id, key1: 'H', validFrom: '2026-01-01' };
    expectError(await propose({ typedId: g.typedId, conditionValue: 2 }), 403, -3);
    expectError(await propose({ changeType: 'DELETE', typedId: g.typedId }), 403, -3);
    expectError(await propose(newItem), 403, -3);
    expectError(await propose([{ ...newItem, key1: 'I' }, newItem]), 403, -3);

    await h.db.query(`INSERT INTO user_groups (partition_id, unique_name) VALUES ($1, 'CRC_EDITORS')`, [
      h.partitionId,
    ]);
    await h.db.query(
      `INSERT INTO user_group_members (partition_id, user_id, group_id)
       SELECT $1, u.id, g.id FROM users u, user_groups g WHERE u.partition_id = $1 AND g.partition_id = $1
          AND u.login_name = $2 AND g.unique_name = 'CRC_EDITORS'`,
      [h.partitionId, editor.user],
    );
    okData(await propose([{ typedId: g.typedId, conditionValue: 2 }, newItem]));
    const onlyAdd = await newDcr('items1', editor);
    const [addJ] = okData(
      await call(`/dcrmanager.add/${onlyAdd.id}`, { data: { ...newItem, key1: 'J' } }, editor),
    );

    // The set's edit group changes before the DCR is applied: the apply refuses (403, as for an ADD
    // below), nothing written.
    const [set] = okData(await call('/fetch/CRCS', { data: { uniqueName: s.uniqueName } }));
    okData(
      await call(`/conditionrecordset.update/${s.id}`, {
        data: { userGroupEdit: 'CRC_OTHERS' },
        oldValues: { version: set.version },
      }),
    );
    const [updG] = okData(await call(`/dcrmanager.fetch/${dcr.id}`, { data: { targetId: g.id } }));
    expectError(await call(`/dcrmanager.submit/${dcr.id}`, undefined, editor), 403, -3, updG.typedId);
    // An ADD meets the set's edit group in the engine's own write.
    expectError(await call(`/dcrmanager.submit/${onlyAdd.id}`, undefined, editor), 403, -3, addJ.typedId);
    assert.deepEqual(
      (await itemsOf(s.id)).map((i: Obj) => [i.key1, i.conditionValue]),
      [['G', '1']],
    );
    // Back to the editor's group: applied as the editor.
    okData(
      await call(`/conditionrecordset.update/${s.id}`, {
        data: { userGroupEdit: 'CRC_EDITORS' },
        oldValues: { version: set.version + 1 },
      }),
    );
    const [applied] = okData(await call(`/dcrmanager.submit/${dcr.id}`, undefined, editor));
    assert.equal(applied.status, 'APPLIED');
    assert.equal(
      okData(await call(`/dcrmanager.submit/${onlyAdd.id}`, undefined, editor))[0].status,
      'APPLIED',
    );
    const now = await itemsOf(s.id);
    assert.deepEqual(
      now.map((i: Obj) => [i.key1, i.conditionValue]),
      [
        ['G', '2'],
        ['H', null],
        ['J', null],
      ],
    );
    const editorId = (
      await h.db.query<{ id: number }>('SELECT id FROM users WHERE partition_id = $1 AND login_name = $2', [
        h.partitionId,
        editor.user,
      ])
    ).rows[0]!.id;
    assert.equal(Number(now[1].createdByObj), Number(editorId));
  });
});
