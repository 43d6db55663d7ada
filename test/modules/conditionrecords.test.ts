// Condition records over real HTTP on both databases: sets (add, fetch, conditionrecordset.update
// with its permissions and versions, general update refused, delete refused with items unless
// force), items through the general operations (CRCI2, CRCI), the no-overlap invariant (-4 naming
// the item; touching is fine), history on delete, user groups of the set on item writes, look-ups at
// the edges of validity (HTTP and findConditionRecords), wildcards, partition isolation.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { findConditionRecords } from '../../src/modules/conditionrecords/lookup.ts';
import { AppError } from '../../src/http/errors.ts';
import { okData, expectError } from '../helpers/envelope.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };
type Who = { user: string; password: string };

describe('condition records', () => {
  let h: Harness;
  const call = (path: string, body?: unknown, who: Who | null = admin) =>
    h.call(path, { ...(who ? { basic: who } : {}), ...(body === undefined ? {} : { body }) });

  async function newSet(keySize: number, extra: object = {}): Promise<{ id: number; uniqueName: string }> {
    const name = uniqueName('set');
    const [s] = okData(
      await call('/add/CRCS', { data: { uniqueName: name, label: name, keySize, ...extra } }),
    );
    return { id: s.id, uniqueName: name };
  }

  async function addItem(code: string, data: object): Promise<any> {
    return okData(await call(`/add/${code}`, { data }))[0];
  }

  /** A new set of key size 1 with one item of key `key1`, valid from 2026-01-01 to `validTo`. */
  async function setWithItem(
    key1: string,
    validTo = '2026-01-31',
  ): Promise<{ set: { id: number; uniqueName: string }; item: any }> {
    const set = await newSet(1);
    const item = await addItem('CRCI1', {
      conditionRecordSetId: set.id,
      key1,
      validFrom: '2026-01-01',
      validTo,
    });
    return { set, item };
  }

  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h.close();
  });

  test('sets: add, fetch, keySize checked, general update refused, conditionrecordset.update', async () => {
    const s = await newSet(2);
    const [fetched] = okData(await call('/fetch/CRCS', { data: { uniqueName: s.uniqueName } }));
    assert.equal(fetched.keySize, 2);
    assert.equal(fetched.typedId, `${s.id}.CRCS`);
    expectError(
      await call('/add/CRCS', { data: { uniqueName: uniqueName(), keySize: 13 } }),
      400,
      -4,
      'keySize',
    );
    expectError(await call('/add/CRCS', { data: { uniqueName: uniqueName() } }), 400, -4, 'keySize');
    expectError(await call('/update/CRCS', { data: { id: s.id, label: 'x' } }), 400, -4, 'typeCode');
    expectError(await call('/integrate/CRCS', { data: { uniqueName: s.uniqueName, label: 'x' } }), 400, -4);

    const upd = (body: unknown, who: Who | null = admin) =>
      call(`/conditionrecordset.update/${s.id}`, body, who);
    expectError(await upd({ data: { label: 'new' } }), 400, -4, 'oldValues.version');
    expectError(await upd({ data: { keySize: 3 }, oldValues: { version: 0 } }), 400, -4, 'keySize');
    expectError(
      await upd({ data: { uniqueName: 'other' }, oldValues: { version: 0 } }),
      400,
      -4,
      'uniqueName',
    );
    expectError(await upd({ data: { colour: 'red' }, oldValues: { version: 0 } }), 400, -4, 'data.colour');
    // A client sends the set as fetched, changed, with the fetched set as oldValues.
    const [asFetched] = okData(await call(`/fetch/CRCS/${s.id}`));
    const [u] = okData(
      await upd({ data: { ...asFetched, label: 'new', userGroupEdit: 'G1' }, oldValues: asFetched }),
    );
    assert.equal(u.label, 'new');
    assert.equal(u.version, 1);
    expectError(await upd({ data: { label: 'again' }, oldValues: { version: 0 } }), 409, -1);
    expectError(await upd({ data: { label: 'x' }, oldValues: { version: 1 } }, null), 401, -7);

    await h.newUser('plain', 'plain-password-1');
    await h.newUser('support', 'support-password-1', ['SUPPORT']);
    await h.newUser('editor', 'editor-password-1', ['PB_CONDITIONRECORDEDITOR']);
    expectError(
      await upd(
        { data: { label: 'p' }, oldValues: { version: 1 } },
        { user: 'plain', password: 'plain-password-1' },
      ),
      403,
      -3,
    );
    // SUPPORT holds the permission, but the set's edit group (G1) is not theirs.
    const sup = { user: 'support', password: 'support-password-1' };
    expectError(await upd({ data: { label: 's' }, oldValues: { version: 1 } }, sup), 403, -3);
    okData(await upd({ data: { userGroupEdit: null }, oldValues: { version: 1 } }));
    okData(await upd({ data: { label: 's' }, oldValues: { version: 2 } }, sup));
    const ed = { user: 'editor', password: 'editor-password-1' };
    okData(await upd({ data: { label: 'e' }, oldValues: { version: 3 } }, ed));
    // wildcardKeys, fixed at creation, passes when repeated and is a -4 when changed; of a set the
    // caller does not see, it says nothing: the set is a 404 either way.
    const [now] = okData(await call(`/fetch/CRCS/${s.id}`));
    okData(await upd({ data: { ...now, label: 'w' }, oldValues: now }));
    expectError(
      await upd({ data: { wildcardKeys: !now.wildcardKeys }, oldValues: { version: now.version + 1 } }),
      400,
      -4,
      'wildcardKeys',
    );
    const [hidden] = okData(
      await call('/add/CRCS', {
        data: { uniqueName: uniqueName(), label: 'h', keySize: 1, userGroupViewDetails: 'NOBODY' },
      }),
    );
    for (const wildcardKeys of [true, false]) {
      const r = await call(
        `/conditionrecordset.update/${hidden.id}`,
        { data: { wildcardKeys, label: 'x' }, oldValues: { version: 0 } },
        sup,
      );
      expectError(r, 404, -1);
    }
    expectError(
      await upd({ data: { label: 'e' }, oldValues: { version: 4 } }, { user: 'x', password: 'y' }),
      401,
      -5,
    );
  });

  test('items: add, overlap refused naming the item, touching accepted, validTo >= validFrom', async () => {
    const s = await newSet(2);
    const a = await addItem('CRCI2', {
      conditionRecordSetId: s.id,
      key1: 'C1',
      key2: 'PG1',
      validFrom: '2026-03-01',
      validTo: '2026-06-30',
      conditionValue: '12.50',
    });
    assert.equal(a.conditionValue, '12.50');
    assert.equal(a.typedId, `${a.id}.CRCI2`);
    const overlap = await call('/add/CRCI2', {
      data: {
        conditionRecordSetId: s.id,
        key1: 'C1',
        key2: 'PG1',
        validFrom: '2026-06-30',
        validTo: '2026-07-31',
      },
    });
    expectError(overlap, 400, -4, 'validFrom');
    assert.match(overlap.body.response.data, new RegExp(`item ${a.id}\\.CRCI`));
    // Touching (the day after) is no overlap; other keys never clash; midnight date-times are days.
    await addItem('CRCI2', {
      conditionRecordSetId: s.id,
      key1: 'C1',
      key2: 'PG1',
      validFrom: '2026-07-01T00:00:00',
      validTo: '2026-07-31',
    });
    await addItem('CRCI2', {
      conditionRecordSetId: s.id,
      key1: 'C1',
      key2: 'PG2',
      validFrom: '2026-03-01',
      validTo: '2026-06-30',
    });
    // Midnight where it was written is that day, whatever the offset; another hour is not a day,
    // even when it is midnight in UTC.
    const zoned = await addItem('CRCI2', {
      conditionRecordSetId: s.id,
      key1: 'C1',
      key2: 'PG3',
      validFrom: '2026-03-01T00:00:00+02:00',
      validTo: '2026-06-30T00:00-0530',
    });
    assert.deepEqual([zoned.validFrom, zoned.validTo], ['2026-03-01', '2026-06-30']);
    for (const validFrom of ['2026-07-01T01:00:00+01:00', '2026-07-01T00:00:00+16:00']) {
      expectError(
        await call('/add/CRCI2', {
          data: { conditionRecordSetId: s.id, key1: 'C1', key2: 'PG3', validFrom, validTo: '2026-07-31' },
        }),
        400,
        -4,
        'validFrom',
      );
    }
    expectError(
      await call('/add/CRCI2', {
        data: {
          conditionRecordSetId: s.id,
          key1: 'C2',
          key2: 'P',
          validFrom: '2026-03-02',
          validTo: '2026-03-01',
        },
      }),
      400,
      -4,
      'validTo',
    );
    expectError(
      await call('/add/CRCI2', {
        data: { conditionRecordSetId: s.id, key1: 'C2', validFrom: '2026-01-01', validTo: '2026-01-02' },
      }),
      400,
      -4,
      'key2',
    );
    // Wrong key size for the type; through CRCI a missing key is named too.
    const s3 = await newSet(3);
    expectError(
      await call('/add/CRCI2', {
        data: {
          conditionRecordSetId: s3.id,
          key1: 'a',
          key2: 'b',
          validFrom: '2026-01-01',
          validTo: '2026-01-02',
        },
      }),
      400,
      -4,
      'conditionRecordSetId',
    );
    expectError(
      await call('/add/CRCI', {
        data: {
          conditionRecordSetId: s3.id,
          key1: 'a',
          key2: 'b',
          validFrom: '2026-01-01',
          validTo: '2026-01-02',
        },
      }),
      400,
      -4,
      'key3',
    );
    const [viaAll] = okData(
      await call('/add/CRCI', {
        data: {
          conditionRecordSetId: s3.id,
          key1: 'a',
          key2: 'b',
          key3: 'c',
          validFrom: '2026-01-01',
          validTo: '2026-01-02',
        },
      }),
    );
    assert.equal(viaAll.key3, 'c');
    // The general fetch with a filter on the set, on either type.
    const rows = okData(
      await call('/fetch/CRCI', { data: { conditionRecordSetId: s.id }, sortBy: ['key2', 'validFrom'] }),
    );
    assert.deepEqual(
      rows.map((r) => [r.key2, r.validFrom]),
      [
        ['PG1', '2026-03-01'],
        ['PG1', '2026-07-01'],
        ['PG2', '2026-03-01'],
        ['PG3', '2026-03-01'],
      ],
    );
    const sized = okData(
      await call('/fetch/CRCI2', {
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [
            { fieldName: 'conditionRecordSetId', operator: 'equals', value: s.id },
            { fieldName: 'validTo', operator: 'greaterOrEqual', value: '2026-07-01' },
          ],
        },
      }),
    );
    assert.equal(sized.length, 1);
    // Update of the validity goes through the same check.
    expectError(
      await call('/update/CRCI2', { data: { id: a.id, validTo: '2026-07-15' } }),
      400,
      -4,
      'validFrom',
    );
    const [moved] = okData(await call('/update/CRCI2', { data: { id: a.id, validTo: '2026-06-15' } }));
    assert.equal(moved.validTo, '2026-06-15');
  });

  test('update into an overlap is refused; integrate by business key; delete moves to CRCIH', async () => {
    const s = await newSet(1);
    const a = await addItem('CRCI1', {
      conditionRecordSetId: s.id,
      key1: 'K',
      validFrom: '2026-01-01',
      validTo: '2026-01-31',
      conditionValue: 1,
    });
    const b = await addItem('CRCI1', {
      conditionRecordSetId: s.id,
      key1: 'K',
      validFrom: '2026-02-01',
      validTo: '2026-02-28',
      conditionValue: 2,
    });
    expectError(
      await call('/update/CRCI1', { data: { id: a.id, validTo: '2026-02-01' } }),
      400,
      -4,
      'validFrom',
    );
    const [i] = okData(
      await call('/integrate/CRCI1', {
        data: {
          conditionRecordSetId: s.id,
          key1: 'K',
          validFrom: '2026-02-01',
          validTo: '2026-02-28',
          conditionValue: '3',
        },
      }),
    );
    assert.equal(i.id, b.id);
    assert.equal(i.conditionValue, '3');
    okData(await call('/delete/CRCI1', { data: { typedId: `${b.id}.CRCI1` } }));
    const hist = okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id } }));
    assert.equal(hist.length, 1);
    assert.equal(hist[0].itemId, b.id);
    assert.equal(hist[0].reason, 'DELETED');
    assert.equal(hist[0].conditionValue, '3');
    expectError(await call('/add/CRCIH', { data: { conditionRecordSetId: s.id } }), 400, -4);
  });

  test('CRCIH names the caller who deleted an item and when, not its last editor', async () => {
    const a = { user: 'crci_a', password: 'crci-password-a' };
    const b = { user: 'crci_b', password: 'crci-password-b' };
    const aId = await h.newUser(a.user, a.password, ['PB_CONDITIONRECORDEDITOR']);
    const bId = await h.newUser(b.user, b.password, ['PB_CONDITIONRECORDEDITOR']);
    const s = await newSet(1);
    const item = (validFrom: string, validTo: string) => ({
      conditionRecordSetId: s.id,
      key1: 'DEL',
      validFrom,
      validTo,
      conditionValue: 1,
    });
    const [one] = okData(await call('/add/CRCI1', { data: item('2026-01-01', '2026-01-31') }, a));
    const [two] = okData(await call('/add/CRCI1', { data: item('2026-02-01', '2026-02-28') }, a));
    assert.equal(Number(one.lastUpdateBy), aId);
    const before = Date.now();
    okData(await call('/delete/CRCI1', { data: { typedId: `${one.id}.CRCI1` } }, b));
    // The delete by filter as well (the general batch delete).
    const batch = await call(
      '/delete/CRCI1/batch',
      { data: { conditionRecordSetId: s.id, validFrom: '2026-02-01' } },
      b,
    );
    assert.equal(batch.status, 200, batch.text);
    const hist = okData(
      await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id }, sortBy: 'itemId' }),
    );
    assert.deepEqual(
      hist.map((r) => [r.itemId, r.reason, Number(r.supersededBy), Number(r.lastUpdateBy)]),
      [
        [one.id, 'DELETED', bId, aId],
        [two.id, 'DELETED', bId, aId],
      ],
    );
    for (const r of hist) assert.ok(Date.parse(r.supersededAt) >= before - 1000, r.supersededAt);
  });

  test('delete of a set with items needs force', async () => {
    const { set: s } = await setWithItem('K');
    expectError(await call('/delete/CRCS', { data: { typedId: `${s.id}.CRCS` } }), 400, -4, 'force');
    okData(await call('/delete/CRCS', { data: { typedId: `${s.id}.CRCS` }, force: true }));
    assert.equal(okData(await call('/fetch/CRCI', { data: { conditionRecordSetId: s.id } })).length, 0);
    const empty = await newSet(1);
    okData(await call('/delete/CRCS', { data: { typedId: `${empty.id}.CRCS` } }));
  });

  test('the database keeps every item on an existing set of its key size (migration 041)', async () => {
    const { set: s } = await setWithItem('R');
    const insert = `INSERT INTO condition_records (partition_id, condition_record_set_id, key_size_ref, key1, key2, valid_from, valid_to)
                    VALUES ($1, $2, $3, 'X', $4, '2027-01-01', '2027-01-31')`;
    const refused = {
      code: '23503',
      constraint: 'condition_records_partition_id_condition_record_set_id_key_fkey',
    };
    // No such set; the set, but another key size.
    await assert.rejects(h.db.query(insert, [h.partitionId, s.id + 1_000_000, '1', null]), refused);
    await assert.rejects(h.db.query(insert, [h.partitionId, s.id, '2', 'Y']), refused);
    // Moving an item to no set, or changing a set's key size under its items: refused.
    await assert.rejects(
      h.db.query(
        `UPDATE condition_records SET condition_record_set_id = condition_record_set_id + 1000000
          WHERE partition_id = $1 AND condition_record_set_id = $2`,
        [h.partitionId, s.id],
      ),
      refused,
    );
    await assert.rejects(
      h.db.query(`UPDATE condition_record_sets SET key_size = 2 WHERE partition_id = $1 AND id = $2`, [
        h.partitionId,
        s.id,
      ]),
      refused,
    );
    // A set that holds items is deleted only when forced (migration 045), whatever deletes it.
    await assert.rejects(
      h.db.query(`DELETE FROM condition_record_sets WHERE partition_id = $1 AND id = $2`, [
        h.partitionId,
        s.id,
      ]),
      (e: { code?: string; detail?: string }) => e.code === 'RC400' && e.detail === 'force',
    );
    // Forced, deleting the set deletes its items.
    await h.db.transaction(async (tx) => {
      await tx.query(`SELECT set_config('rc.crcs_force', 'on', true)`);
      await tx.query(`DELETE FROM condition_record_sets WHERE partition_id = $1 AND id = $2`, [
        h.partitionId,
        s.id,
      ]);
    });
    const left = await h.db.query(
      `SELECT count(*)::int AS n FROM condition_records WHERE partition_id = $1 AND condition_record_set_id = $2`,
      [h.partitionId, s.id],
    );
    assert.equal(left.rows[0]!.n, 0);
  });

  test("item writes need the set's userGroupEdit; reads its userGroupViewDetails", async () => {
    const s = await newSet(1, { userGroupEdit: 'EDITORS', userGroupViewDetails: 'VIEWERS' });
    await addItem('CRCI1', {
      conditionRecordSetId: s.id,
      key1: 'K',
      validFrom: '2026-01-01',
      validTo: '2026-01-31',
    });
    await h.newUser('crc_ed', 'crc-password-1', ['PB_CONDITIONRECORDEDITOR']);
    const who = { user: 'crc_ed', password: 'crc-password-1' };
    // Not a viewer: the set and its items are invisible.
    assert.equal(okData(await call('/fetch/CRCI1', { data: { conditionRecordSetId: s.id } }, who)).length, 0);
    expectError(
      await call(
        '/add/CRCI1',
        { data: { conditionRecordSetId: s.id, key1: 'L', validFrom: '2026-01-01', validTo: '2026-01-31' } },
        who,
      ),
      404,
      -1,
      'conditionRecordSetId',
    );
    expectError(
      await call(
        `/conditionrecordset.lookup/${s.uniqueName}`,
        { data: { keys: [['K']], date: '2026-01-01' } },
        who,
      ),
      404,
      -1,
    );
    await h.db.query(
      `INSERT INTO user_groups (partition_id, unique_name) VALUES ($1, 'VIEWERS');
       `.trim(),
      [h.partitionId],
    );
    await h.db.query(
      `INSERT INTO user_group_members (partition_id, user_id, group_id)
       SELECT $1, u.id, g.id FROM users u, user_groups g WHERE u.partition_id = $1 AND g.partition_id = $1
          AND u.login_name = 'crc_ed' AND g.unique_name = 'VIEWERS'`,
      [h.partitionId],
    );
    assert.equal(okData(await call('/fetch/CRCI1', { data: { conditionRecordSetId: s.id } }, who)).length, 1);
    expectError(
      await call(
        '/add/CRCI1',
        { data: { conditionRecordSetId: s.id, key1: 'L', validFrom: '2026-01-01', validTo: '2026-01-31' } },
        who,
      ),
      403,
      -3,
    );
    const [item] = okData(await call('/fetch/CRCI1', { data: { conditionRecordSetId: s.id } }, who));
    expectError(await call('/delete/CRCI1', { data: { typedId: item.typedId } }, who), 403, -3);
    // The set's groups travel to its items.
    okData(
      await call(`/conditionrecordset.update/${s.id}`, {
        data: { userGroupEdit: 'VIEWERS' },
        oldValues: { version: 0 },
      }),
    );
    okData(
      await call(
        '/add/CRCI1',
        { data: { conditionRecordSetId: s.id, key1: 'L', validFrom: '2026-01-01', validTo: '2026-01-31' } },
        who,
      ),
    );
    okData(await call('/update/CRCI1', { data: { id: item.id, conditionValue: 5 } }, who));
    // No permission at all: 403 before anything else.
    await h.newUser('crc_none', 'crc-password-2');
    const none = { user: 'crc_none', password: 'crc-password-2' };
    expectError(
      await call(
        '/add/CRCI1',
        { data: { conditionRecordSetId: s.id, key1: 'M', validFrom: '2026-01-01', validTo: '2026-01-31' } },
        none,
      ),
      403,
      -3,
    );
    // Reading needs CONDITIONRECORD_FETCH: condition records are not among the types the interface
    // lets any user fetch. The same user in the view group, with a role that grants it, reads them.
    const reads: [string, unknown][] = [
      ['/fetch/CRCS', {}],
      [`/fetch/CRCS/${s.id}`, undefined],
      ['/fetch/CRCI', { data: { conditionRecordSetId: s.id } }],
      ['/fetch/CRCI1', {}],
      [`/fetch/CRCI1/${item.id}`, undefined],
      ['/fetch/CRCIH', {}],
      ['/fetch/CRCIAM', {}],
      [`/conditionrecordset.lookup/${s.uniqueName}`, { data: { keys: [['K']], date: '2026-01-01' } }],
    ];
    for (const [path, body] of reads) expectError(await call(path, body, none), 403, -3);
    for (const [path, body] of reads) okData(await call(path, body, who));
    await h.newUser('crc_ro', 'crc-password-3', ['PRICESHOP_RO']);
    const ro = { user: 'crc_ro', password: 'crc-password-3' };
    assert.equal(okData(await call('/fetch/CRCS', { data: { id: s.id } }, ro)).length, 0); // not a viewer
    assert.ok(okData(await call('/fetch/CRCS', {}, ro)).length > 0);
  });

  test("a deleted set's CRCIH rows keep the set's last groups, not those their items had", async () => {
    const s = await newSet(1);
    const item = await addItem('CRCI1', {
      conditionRecordSetId: s.id,
      key1: 'GONE-1',
      validFrom: '2026-01-01',
    });
    okData(await call('/delete/CRCI1', { data: { typedId: item.typedId } }));
    const [hist] = okData(await call('/fetch/CRCIH', { data: { itemId: item.id } }));
    await h.newUser('crc_gone_out', 'crc-password-8', ['PRICESHOP_RO']);
    const ro = { user: 'crc_gone_out', password: 'crc-password-8' };
    okData(
      await call(`/conditionrecordset.update/${s.id}`, {
        data: { userGroupViewDetails: 'board' },
        oldValues: { version: 0 },
      }),
    );
    okData(await call('/delete/CRCS', { data: { typedId: `${s.id}.CRCS` } }));
    assert.equal(okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id } }, ro)).length, 0);
    expectError(await call(`/fetch/CRCIH/${hist.id}`, undefined, ro), 404, -1);
    const [kept] = okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id } }));
    assert.deepEqual([kept.id, kept.key1, kept.userGroupViewDetails], [hist.id, 'GONE-1', 'board']);
  });

  test("CRCIH and CRCIAM follow the set's current userGroupViewDetails (by id, by filter, queryapi)", async () => {
    const s = await newSet(1);
    const [meta] = okData(
      await call('/add/CRCIAM', {
        data: {
          conditionRecordSetId: s.id,
          fieldName: 'attribute1',
          label: 'Margin floor',
          fieldType: 'TEXT',
        },
      }),
    );
    const item = await addItem('CRCI1', {
      conditionRecordSetId: s.id,
      key1: 'CUST-1',
      validFrom: '2026-01-01',
    });
    okData(await call('/delete/CRCI1', { data: { typedId: item.typedId } }));
    const [hist] = okData(await call('/fetch/CRCIH', { data: { itemId: item.id } }));
    await h.newUser('crc_board_out', 'crc-password-9', ['PRICESHOP_RO']);
    const ro = { user: 'crc_board_out', password: 'crc-password-9' };
    const reads = async (visible: boolean) => {
      const n = visible ? 1 : 0;
      assert.equal(
        okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id } }, ro)).length,
        n,
      );
      assert.equal(
        okData(await call('/fetch/CRCIAM', { data: { conditionRecordSetId: s.id } }, ro)).length,
        n,
      );
      for (const path of [`/fetch/CRCIH/${hist.id}`, `/fetch/CRCIAM/${meta.id}`]) {
        const r = await call(path, undefined, ro);
        if (visible) assert.equal(okData(r).length, 1, path);
        else expectError(r, 404, -1);
      }
      const q = await call('/queryapi.execute', { data: { source: `CRCIH:${s.uniqueName}` } }, ro);
      if (visible) assert.equal(okData(q).length, 1);
      else expectError(q, 404, -1);
    };
    await reads(true);
    // Hidden after the item was deleted: its history row (which kept the groups of then) goes too.
    okData(
      await call(`/conditionrecordset.update/${s.id}`, {
        data: { userGroupViewDetails: 'board' },
        oldValues: { version: 0 },
      }),
    );
    await reads(false);
    // Admins see all.
    assert.equal(okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id } })).length, 1);
    assert.equal(okData(await call('/fetch/CRCIAM', { data: { conditionRecordSetId: s.id } })).length, 1);
    // Visible again: so is what was deleted while it was hidden.
    const item2 = await addItem('CRCI1', {
      conditionRecordSetId: s.id,
      key1: 'CUST-2',
      validFrom: '2026-01-01',
    });
    okData(await call('/delete/CRCI1', { data: { typedId: item2.typedId } }));
    okData(
      await call(`/conditionrecordset.update/${s.id}`, {
        data: { userGroupViewDetails: null },
        oldValues: { version: 1 },
      }),
    );
    assert.equal(okData(await call('/fetch/CRCIH', { data: { conditionRecordSetId: s.id } }, ro)).length, 2);
    // A set hidden from the start: its meta is hidden from the start.
    const hidden = await newSet(1, { userGroupViewDetails: 'board' });
    okData(
      await call('/add/CRCIAM', {
        data: {
          conditionRecordSetId: hidden.id,
          fieldName: 'attribute2',
          label: 'Hidden meta',
          fieldType: 'TEXT',
        },
      }),
    );
    assert.equal(
      okData(await call('/fetch/CRCIAM', { data: { conditionRecordSetId: hidden.id } }, ro)).length,
      0,
    );
    assert.ok(
      okData(await call('/fetch/CRCIAM', {}, ro)).every((m: any) => m.conditionRecordSetId !== hidden.id),
    );
  });

  test('look-up at a date: edges of validity, batch order, nulls, wrong sizes, unknown set', async () => {
    const s = await newSet(2);
    await addItem('CRCI2', {
      conditionRecordSetId: s.id,
      key1: 'C1',
      key2: 'P1',
      validFrom: '2026-03-01',
      validTo: '2026-06-30',
      conditionValue: '10',
      attribute3: 'x',
    });
    await addItem('CRCI2', {
      conditionRecordSetId: s.id,
      key1: 'C1',
      key2: 'P1',
      validFrom: '2026-07-01',
      validTo: '2026-07-01',
      conditionValue: '11',
    });
    await addItem('CRCI2', {
      conditionRecordSetId: s.id,
      key1: 'C1',
      key2: 'P2',
      validFrom: '2026-01-01',
      validTo: '2026-12-31',
      conditionValue: '20',
    });
    const look = (date: string, keys: string[][]) =>
      call(`/conditionrecordset.lookup/${s.uniqueName}`, { data: { keys, date } });
    const values = async (date: string, keys: string[][]) =>
      okData(await look(date, keys)).map((r) => r?.conditionValue ?? null);
    assert.deepEqual(
      await values('2026-02-28', [
        ['C1', 'P1'],
        ['C1', 'P2'],
      ]),
      [null, '20'],
    );
    assert.deepEqual(await values('2026-03-01', [['C1', 'P1']]), ['10']);
    assert.deepEqual(await values('2026-06-30', [['C1', 'P1']]), ['10']);
    assert.deepEqual(
      await values('2026-07-01T00:00:00', [
        ['C1', 'P1'],
        ['X', 'Y'],
        ['C1', 'P2'],
      ]),
      ['11', null, '20'],
    );
    assert.deepEqual(await values('2026-07-02', [['C1', 'P1']]), [null]);
    const [item] = okData(await look('2026-04-01', [['C1', 'P1']]));
    assert.deepEqual(item.keys, ['C1', 'P1']);
    assert.deepEqual(item.attributes, { attribute3: 'x' });
    assert.equal(item.typedId, `${item.id}.CRCI`);
    expectError(await look('2026-13-01', [['C1', 'P1']]), 400, -4, 'date');
    expectError(await look('2026-04-01', [['C1']]), 400, -4, 'keys.0');
    expectError(
      await call('/conditionrecordset.lookup/nope', { data: { keys: [['a']], date: '2026-01-01' } }),
      404,
      -1,
    );
    expectError(
      await call(
        `/conditionrecordset.lookup/${s.uniqueName}`,
        { data: { keys: [['a']], date: '2026-01-01' } },
        null,
      ),
      401,
      -7,
    );

    // The service function of the logic engine: many tuples, one answer each, in order.
    const tuples = Array.from({ length: 3000 }, (_, i) =>
      i % 3 === 0 ? ['C1', 'P2'] : i % 3 === 1 ? ['C1', 'P1'] : ['N', String(i)],
    );
    const found = await findConditionRecords(h.db, h.partitionId, s.uniqueName, tuples, '2026-05-05');
    assert.equal(found.length, 3000);
    assert.deepEqual(
      found.slice(0, 3).map((f) => f?.conditionValue ?? null),
      ['20', '10', null],
    );
    // Clients get the same answer, written by the database as JSON text: every member and value.
    await addItem('CRCI2', {
      conditionRecordSetId: s.id,
      key1: 'Ç2 "q"',
      key2: 'P\\9',
      validFrom: '2026-05-05',
      validTo: '2026-05-05',
      conditionValue: '10.50',
      priceUnit: '100',
      currency: 'EUR',
      unitOfMeasure: 'PCE',
      // (The database sends found items as lines of tab-separated JSON texts: values escape both.)
      attribute1: 'a\tb\nc',
      attribute30: 'z',
    });
    const mixed = [...tuples.slice(0, 30), ['Ç2 "q"', 'P\\9'], ['C1', 'P1']];
    const expected = await findConditionRecords(h.db, h.partitionId, s.uniqueName, mixed, '2026-05-05');
    assert.equal(expected[30]?.conditionValue, '10.50');
    const served = await call(`/conditionrecordset.lookup/${s.uniqueName}`, {
      data: { keys: mixed, date: '2026-05-05' },
    });
    assert.deepEqual(okData(served), JSON.parse(JSON.stringify(expected)));
    // A batch of more than 2,500 tuples is probed in parts at once on PostgreSQL (one part on
    // PGlite): the same answer, in the tuples' order, as the logic engine's single statement.
    const big = [...mixed, ...tuples, ['C1', 'P1'], ['none', 'none']];
    const expectedBig = await findConditionRecords(h.db, h.partitionId, s.uniqueName, big, '2026-05-05');
    const servedBig = okData(
      await call(`/conditionrecordset.lookup/${s.uniqueName}`, { data: { keys: big, date: '2026-05-05' } }),
    );
    assert.equal(servedBig.length, big.length);
    assert.deepEqual(servedBig, JSON.parse(JSON.stringify(expectedBig)));
    assert.deepEqual(
      servedBig.slice(-2).map((r) => r?.conditionValue ?? null),
      ['10', null],
    );
    // In parts as in one: a tuple of the wrong size in a later part is a 400 naming it, an unknown
    // set a 404.
    const wrong = big.map((t, i) => (i === 3000 ? ['C1'] : t));
    expectError(
      await call(`/conditionrecordset.lookup/${s.uniqueName}`, { data: { keys: wrong, date: '2026-05-05' } }),
      400,
      -4,
      'keys.3000',
    );
    expectError(
      await call('/conditionrecordset.lookup/nope', { data: { keys: big, date: '2026-05-05' } }),
      404,
      -1,
    );
    assert.deepEqual(
      okData(
        await call(`/conditionrecordset.lookup/${s.uniqueName}`, { data: { keys: [], date: '2026-05-05' } }),
      ),
      [],
    );
    await assert.rejects(
      findConditionRecords(h.db, h.partitionId, 'nope', [['a']], '2026-01-01'),
      (e: unknown) => e instanceof AppError && e.code === 'NOT_FOUND' && /nope/.test(e.message),
    );
  });

  test('wildcards: exact wins, then the most specific from key1 on', async () => {
    const s = await newSet(2, { wildcardKeys: true });
    const add = (key1: string, key2: string, v: string) =>
      addItem('CRCI2', {
        conditionRecordSetId: s.id,
        key1,
        key2,
        validFrom: '2026-01-01',
        validTo: '2026-12-31',
        conditionValue: v,
      });
    await add('*', '*', '1');
    await add('C1', '*', '2');
    await add('*', 'P1', '3');
    await add('C1', 'P1', '4');
    const r = await findConditionRecords(
      h.db,
      h.partitionId,
      s.uniqueName,
      [
        ['C1', 'P1'],
        ['C1', 'P9'],
        ['C9', 'P1'],
        ['C9', 'P9'],
      ],
      '2026-06-01',
    );
    assert.deepEqual(
      r.map((x) => x?.conditionValue),
      ['4', '2', '3', '1'],
    );
    // The keys are the matching item's: the tuple's for the exact one, with `*` where a wildcard matched.
    assert.deepEqual(
      r.map((x) => x?.keys),
      [
        ['C1', 'P1'],
        ['C1', '*'],
        ['*', 'P1'],
        ['*', '*'],
      ],
    );
    const served = await call(`/conditionrecordset.lookup/${s.uniqueName}`, {
      data: {
        keys: [
          ['C9', 'P9'],
          ['C1', 'P1'],
          ['C1', 'P9'],
        ],
        date: '2026-06-01',
      },
    });
    assert.deepEqual(okData(served), JSON.parse(JSON.stringify([r[3], r[0], r[1]])));
    // Without wildcardKeys, '*' is just a key.
    const { set: plain } = await setWithItem('*', '2026-12-31');
    const p = await findConditionRecords(h.db, h.partitionId, plain.uniqueName, [['A'], ['*']], '2026-06-01');
    assert.deepEqual(
      p.map((x) => x !== null),
      [false, true],
    );
  });

  test('partition isolation', async () => {
    const other = await startHarness({ shareDbWith: h });
    try {
      const { set: s, item } = await setWithItem('K');
      const o = (path: string, body: unknown) => other.call(path, { basic: admin, body });
      assert.equal(okData(await o('/fetch/CRCI', { data: { conditionRecordSetId: s.id } })).length, 0);
      expectError(await o(`/fetch/CRCI1/${item.id}`, {}), 404, -1);
      expectError(
        await o('/add/CRCI1', {
          data: { conditionRecordSetId: s.id, key1: 'Z', validFrom: '2026-01-01', validTo: '2026-01-31' },
        }),
        404,
        -1,
        'conditionRecordSetId',
      );
      expectError(
        await o(`/conditionrecordset.lookup/${s.uniqueName}`, {
          data: { keys: [['K']], date: '2026-01-01' },
        }),
        404,
        -1,
      );
      expectError(
        await o(`/conditionrecordset.update/${s.id}`, { data: { label: 'x' }, oldValues: { version: 0 } }),
        404,
        -1,
      );
      await assert.rejects(
        findConditionRecords(h.db, other.partitionId, s.uniqueName, [['K']], '2026-01-01'),
      );
    } finally {
      await other.close();
    }
  });
});
