// Record history over HTTP on both databases: every write path of the engine records who changed
// which fields of which record, from what to what, through which request, api token or job; failed
// writes and rolled-back chunks leave none (a second chunk's failure keeps the first's);
// /fetch/{TC}/{id}/history, /history.fetch (HISTORY_FETCH through a role) and ?asOf= read it, with
// user groups and partitions applied.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADMIN,
  ADMIN_PASSWORD,
  clientOf,
  startHarness,
  type Client,
  type Harness,
  type Reply,
} from '../helpers/app.ts';
import { loadConfig } from '../../src/config.ts';
import { historyCleanupTask, removeExpiredHistory } from '../../src/modules/history/retention.ts';
import { okData, expectError } from '../helpers/envelope.ts';
import { assertOk, form, runnerFor, send, waitForJob } from '../jobs/helpers.ts';
import { adv } from '../helpers/criteria.ts';

const pause = () => new Promise((r) => setTimeout(r, 20));

describe('record history', () => {
  let h: Harness;
  let other: Harness;
  let api: Client;
  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    api = await clientOf(h);
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  const historyOf = async (type: string, id: number | string, body: object = {}, c = api) =>
    okData(await c(`/fetch/${type}/${id}/history`, body));

  test('a product through add, update, integrate, loaddata, massedit and delete', async () => {
    const [p] = okData(
      await api(
        '/add/P',
        { data: { sku: 'H-1', label: 'one', currency: 'EUR' } },
        { 'x-request-id': 'req-add-1' },
      ),
    );
    okData(await api('/update/P', { data: { typedId: p.typedId, label: 'two', currency: 'EUR' } }));
    okData(await api('/integrate/P', { data: { sku: 'H-1', label: 'three', unitOfMeasure: 'kg' } }));
    okData(await api('/integrate/P', { data: { sku: 'H-1', label: 'three' } })); // no change: no entry
    const load = await api('/loaddata/P', {
      data: { header: ['sku', 'label'], data: [['H-1', 'four']], options: { detectJoinFields: true } },
    });
    assert.equal(load.status, 200, load.text);
    okData(
      await api('/massedit/P', {
        filterCriteria: adv({ fieldName: 'sku', operator: 'equals', value: 'H-1' }),
        massEditRecords: [{ fieldName: 'attribute1', massEditOperator: '=', fieldValue: 'x' }],
      }),
    );
    okData(await api('/delete/P', { data: { typedId: p.typedId } }));

    const rows = await historyOf('P', p.id);
    assert.deepEqual(
      rows.map((r) => [r.action, [...r.field].sort(), r.version, r.operation]),
      [
        ['ADD', ['currency', 'label', 'sku'], 0, 'add/P'],
        ['UPDATE', ['label'], 1, 'update/P'],
        ['UPDATE', ['label', 'unitOfMeasure'], 2, 'integrate/P'],
        ['UPDATE', ['label'], 4, 'loaddata/P'],
        ['UPDATE', ['attribute1'], 5, 'massedit/P'],
        ['DELETE', ['attribute1', 'currency', 'label', 'sku', 'unitOfMeasure'], 6, 'delete/P'],
      ],
    );
    assert.deepEqual(rows[0].changes.label, { old: null, new: 'one' });
    assert.deepEqual(rows[1].changes, { label: { old: 'one', new: 'two' } });
    assert.deepEqual(rows[3].changes, { label: { old: 'three', new: 'four' } });
    assert.deepEqual(rows[5].changes.unitOfMeasure, { old: 'kg', new: null });
    assert.equal(rows[0].user, 'admin');
    assert.equal(typeof rows[0].userId, 'number');
    assert.equal(rows[0].requestId, 'req-add-1');
    assert.equal(rows[0].businessKey, 'H-1');
    assert.match(rows[0].changedAt, /^\d{4}-\d{2}-\d{2}T/);

    // Filter and paging are the engine's: by field, by action, by time; sort newest first.
    const labelled = await historyOf('P', p.typedId, {
      data: adv({ fieldName: 'field', operator: 'equals', value: 'label' }),
      sortBy: '-id',
      startRow: 0,
      endRow: 2,
    });
    assert.deepEqual(
      labelled.map((r) => r.operation),
      ['delete/P', 'loaddata/P'],
    );
    const page = await api(`/fetch/P/${p.id}/history`, { startRow: 0, endRow: 2 });
    assert.equal(page.body.response.totalRows, 6);
    const byUser = await historyOf('P', p.id, {
      data: adv(
        { fieldName: 'user', operator: 'equals', value: 'admin' },
        { fieldName: 'changedAt', operator: 'greaterOrEqual', value: rows[1].changedAt },
        { fieldName: 'field', operator: 'inSet', value: ['unitOfMeasure', 'nosuch'] },
      ),
    });
    assert.deepEqual(
      byUser.map((r) => r.version),
      [2, 6],
    );
    expectError(
      await api(`/fetch/P/${p.id}/history`, {
        data: adv({ fieldName: 'field', operator: 'contains', value: 'l' }),
      }),
      400,
      -4,
      'field',
    );
    expectError(
      await api(`/fetch/P/${p.id}/history`, {
        data: adv({ fieldName: 'colour', operator: 'equals', value: 1 }),
      }),
      400,
      -4,
      'colour',
    );
    // A text that is no id names a product by its sku (as /fetch/P/abc does): none, a 404.
    expectError(await api('/fetch/P/abc/history'), 404, -1);
    expectError(await api('/fetch/P/1.X/history'), 404, -1, 'id');
    expectError(await api('/fetch/F/1.X/history'), 400, -4, 'id');
    expectError(await api('/fetch/NOPE/1/history'), 404, -1);
    // The general operations do not serve the history type.
    expectError(await api('/fetch/RH'), 400, -4, 'typeCode');
  });

  test('bulk loads: direct inserts, merge inserts and updates; unchanged rows leave no entry', async () => {
    const first = await api('/loaddata/P', {
      data: {
        header: ['sku', 'label'],
        data: [
          ['HL-1', 'a'],
          ['HL-2', 'b'],
        ],
      },
    });
    assert.equal(first.status, 200, first.text);
    const second = await api('/loaddata/P', {
      data: {
        header: ['sku', 'label'],
        data: [
          ['HL-1', 'a'],
          ['HL-2', 'B'],
          ['HL-3', 'c'],
        ],
        options: { detectJoinFields: true },
      },
    });
    assert.equal(second.status, 200, second.text);
    const rows = okData(
      await api('/history.fetch', {
        data: adv(
          { fieldName: 'typeCode', operator: 'equals', value: 'P' },
          { fieldName: 'businessKey', operator: 'startsWith', value: 'HL-' },
        ),
        sortBy: ['businessKey', 'id'],
      }),
    );
    assert.deepEqual(
      rows.map((r) => [r.businessKey, r.action, [...r.field].sort()]),
      [
        ['HL-1', 'ADD', ['label', 'sku']],
        ['HL-2', 'ADD', ['label', 'sku']],
        ['HL-2', 'UPDATE', ['label']],
        ['HL-3', 'ADD', ['label', 'sku']],
      ],
    );
    assert.ok(rows.every((r) => r.operation === 'loaddata/P'));
    // Simple criteria on `field` (a list of names) match an element, whatever the textMatchStyle.
    for (const field of ['label', ['label']]) {
      const updates = okData(
        await api('/history.fetch', { data: { typeCode: 'P', action: 'UPDATE', field }, sortBy: ['id'] }),
      );
      assert.ok(
        updates.some((r) => r.businessKey === 'HL-2'),
        JSON.stringify(updates.map((r) => r.businessKey)),
      );
    }
    // Distinct field lists (some stored once for a bulk insert, read through their list): sorted by
    // them by default or as asked, beside another field, and counted.
    const hl = adv(
      { fieldName: 'typeCode', operator: 'equals', value: 'P' },
      { fieldName: 'businessKey', operator: 'startsWith', value: 'HL-' },
    );
    for (const sortBy of [undefined, 'field', ['action', '-field']]) {
      const distinct = await api('/history.fetch', {
        data: hl,
        valueFields: ['action', 'field'],
        distinctResults: true,
        sortBy,
      });
      const got = okData(distinct).map(([action, field]) => [action, [...field].sort()]);
      assert.deepEqual(
        got.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
        [
          ['ADD', ['label', 'sku']],
          ['UPDATE', ['label']],
        ],
        JSON.stringify(sortBy),
      );
      assert.equal(distinct.body.response.totalRows, 2);
    }
    // JSON fields take part in distinct rows too (they sort by no rule of the API, so not by default).
    const changes = okData(
      await api('/history.fetch', {
        data: hl,
        valueFields: ['action', 'changes'],
        distinctResults: true,
      }),
    );
    assert.equal(changes.length, 4);
    expectError(
      await api('/history.fetch', {
        data: hl,
        valueFields: ['changes'],
        distinctResults: true,
        sortBy: 'changes',
      }),
      400,
      -4,
      'sortBy',
    );
    // A bulk-inserted record's ADD keeps the field names; its values are rebuilt when read.
    const [hl2] = okData(await api('/fetch/P', { data: { sku: 'HL-2' } }));
    const own = await historyOf('P', hl2.id);
    assert.deepEqual(own[0].changes, { sku: { old: null, new: 'HL-2' }, label: { old: null, new: 'b' } });
    assert.deepEqual(own[1].changes, { label: { old: 'b', new: 'B' } });
    okData(await api('/delete/P', { data: { typedId: hl2.typedId } }));
    const afterDelete = await historyOf('P', hl2.id);
    assert.deepEqual(afterDelete[0].changes.label, { old: null, new: 'b' });
  });

  test('a direct bulk insert stores its field names once; its ADD rows are found by field and present them', async () => {
    const load = (skus: string[]) =>
      api('/loaddata/P', {
        data: { header: ['sku', 'label', 'attribute7'], data: skus.map((s) => [s, `label ${s}`, 'x']) },
      });
    assert.equal((await load(['FL-1', 'FL-2'])).status, 200);
    assert.equal((await load(['FL-3'])).status, 200);
    const stored = await h.db.query<{
      lists: number;
      inline: number;
      pointing: number;
      distinct_lists: number;
    }>(
      `SELECT (SELECT count(*)::int FROM record_history_field_lists WHERE fields = '{sku,label,attribute7}') AS lists,
              count(*) FILTER (WHERE changed_fields <> '{}')::int AS inline,
              count(*) FILTER (WHERE field_list IS NOT NULL)::int AS pointing,
              count(DISTINCT field_list)::int AS distinct_lists
         FROM record_history WHERE partition_id = $1 AND type_code = 'P' AND business_key LIKE 'FL-%'`,
      [h.partitionId],
    );
    assert.deepEqual(stored.rows[0], { lists: 1, inline: 0, pointing: 3, distinct_lists: 1 });
    const byField = async (operator: string, value: unknown) =>
      okData(
        await api('/history.fetch', {
          data: adv(
            { fieldName: 'businessKey', operator: 'startsWith', value: 'FL-' },
            { fieldName: 'field', operator, value },
          ),
          sortBy: ['businessKey'],
        }),
      ).map((r) => [r.businessKey, [...r.field].sort()]);
    const all = [
      ['FL-1', ['attribute7', 'label', 'sku']],
      ['FL-2', ['attribute7', 'label', 'sku']],
      ['FL-3', ['attribute7', 'label', 'sku']],
    ];
    assert.deepEqual(await byField('equals', 'attribute7'), all);
    assert.deepEqual(await byField('inSet', ['nosuch', 'label']), all);
    assert.deepEqual(await byField('notEqual', 'sku'), []);
    assert.deepEqual(await byField('equals', 'attribute8'), []);
    const [fl3] = okData(await api('/fetch/P', { data: { sku: 'FL-3' } }));
    assert.deepEqual((await historyOf('P', fl3.id))[0].changes, {
      sku: { old: null, new: 'FL-3' },
      label: { old: null, new: 'label FL-3' },
      attribute7: { old: null, new: 'x' },
    });
    const before = new Date().toISOString();
    await pause();
    okData(await api('/update/P', { data: { id: fl3.id, version: fl3.version, attribute7: 'y' } }));
    const asOf = okData(await api(`/fetch/P/${fl3.id}?asOf=${encodeURIComponent(before)}`));
    assert.equal(asOf[0].attribute7, 'x');
  });

  test('a direct bulk insert writes the same ADD rows as a single add (ids, key, fields, actor, group)', async () => {
    const header = ['sku', 'label', 'attribute1', 'userGroupViewDetails'];
    const r = await api('/loaddata/P', {
      data: {
        header,
        data: [
          ['HD-1', null, 'a1', 'GRP-HD'],
          ['HD-2', 'two', null, null],
        ],
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.response.data[0].inserted, 2, r.text);
    okData(await api('/add/P', { data: { sku: 'HD-3', attribute1: 'a1', userGroupViewDetails: 'GRP-HD' } }));
    const records = okData(
      await api('/fetch/P', {
        data: adv({ fieldName: 'sku', operator: 'startsWith', value: 'HD-' }),
        sortBy: 'sku',
      }),
    );
    const rows = okData(
      await api('/history.fetch', {
        data: adv({ fieldName: 'businessKey', operator: 'startsWith', value: 'HD-' }),
        sortBy: 'businessKey',
      }),
    );
    const shape = (x: any) => ({
      typeCode: x.typeCode,
      key: x.businessKey,
      action: x.action,
      fields: [...x.field].sort(),
      version: x.version,
      userId: x.userId,
      user: x.user,
      group: x.userGroupViewDetails ?? null,
    });
    assert.deepEqual(rows.map(shape), [
      {
        typeCode: 'P',
        key: 'HD-1',
        action: 'ADD',
        fields: ['attribute1', 'sku', 'userGroupViewDetails'],
        version: records[0].version,
        userId: rows[2].userId,
        user: rows[2].user,
        group: 'GRP-HD',
      },
      {
        typeCode: 'P',
        key: 'HD-2',
        action: 'ADD',
        fields: ['label', 'sku'],
        version: records[1].version,
        userId: rows[2].userId,
        user: rows[2].user,
        group: null,
      },
      {
        typeCode: 'P',
        key: 'HD-3',
        action: 'ADD',
        fields: ['attribute1', 'sku', 'userGroupViewDetails'],
        version: records[2].version,
        userId: rows[2].userId,
        user: rows[2].user,
        group: 'GRP-HD',
      },
    ]);
    // Each row names its own record, and the values are rebuilt from it when read.
    assert.deepEqual(
      rows.map((x) => x.recordId),
      records.map((x) => x.id),
    );
    const own = await historyOf('P', records[0].id);
    assert.deepEqual(own[0].changes.attribute1, { old: null, new: 'a1' });
    assert.equal(rows[0].operation, 'loaddata/P');
  });

  test('a direct bulk insert whose rows set the same fields: ADD rows from the load name each record', async () => {
    // The loader draws the new rows' ids before its COPY and writes their history from the load (no
    // read-back): each row must still name its own record, key, version and view group, also for a
    // type whose rows take their view group from the product they describe (PX).
    const skus = Array.from({ length: 1_200 }, (_, i) => `HE-${String(i).padStart(4, '0')}`);
    const r = await api('/loaddata/P', {
      data: {
        header: ['userGroupViewDetails', 'label', 'sku'],
        data: skus.map((s, i) => [`GRP-HE${i % 3}`, `label ${s}`, s]),
      },
    });
    assert.equal(r.body.response.data[0].inserted, skus.length, r.text);
    const stored = await h.db.query<{ sku: string; id: string; grp: string; version: number }>(
      `SELECT p.sku, p.id::text, p.user_group_view_details AS grp, p.version FROM products p
        WHERE p.partition_id = $1 AND p.sku LIKE 'HE-%' ORDER BY p.sku`,
      [h.partitionId],
    );
    const history = await h.db.query<{ key: string; id: string; grp: string; version: number }>(
      `SELECT business_key AS key, record_id::text AS id, user_group_view_details AS grp, record_version AS version
         FROM record_history WHERE partition_id = $1 AND type_code = 'P' AND business_key LIKE 'HE-%'
        ORDER BY business_key`,
      [h.partitionId],
    );
    assert.deepEqual(
      history.rows,
      stored.rows.map((x) => ({ key: x.sku, id: x.id, grp: x.grp, version: x.version })),
    );
    const [one] = okData(await api('/fetch/P', { data: { sku: 'HE-0001' } }));
    assert.deepEqual((await historyOf('P', one.id))[0].changes, {
      sku: { old: null, new: 'HE-0001' },
      label: { old: null, new: 'label HE-0001' },
      userGroupViewDetails: { old: null, new: 'GRP-HE1' },
    });
    const px = await api('/loaddata/PX', {
      data: { header: ['sku', 'name', 'attribute1'], data: skus.slice(0, 3).map((s) => [s, 'HE-T', 'x']) },
    });
    assert.equal(px.body.response.data[0].inserted, 3, px.text);
    const pxHistory = await h.db.query<{ grp: string }>(
      `SELECT user_group_view_details AS grp FROM record_history
        WHERE partition_id = $1 AND type_code = 'PX' AND business_key LIKE 'HE-%' ORDER BY business_key`,
      [h.partitionId],
    );
    assert.deepEqual(
      pxHistory.rows.map((x) => x.grp),
      ['GRP-HE0', 'GRP-HE1', 'GRP-HE2'],
    );
  });

  test('bulk ADD rows list the fields a single add lists, defaults and trigger-set fields included', async () => {
    // Uniform rows: the loader names the fields itself; a type with a BEFORE INSERT trigger and
    // defaults outside the header (to-do items: status, priority) leaves it to the SQL.
    for (const [code, header, row, single] of [
      ['P', ['sku', 'label'], ['HF-P1', 'x'], { sku: 'HF-P2', label: 'x' }],
      ['TODO', ['uniqueName', 'label'], ['HF-T1', 'x'], { uniqueName: 'HF-T2', label: 'x' }],
    ] as const) {
      const r = await api(`/loaddata/${code}`, { data: { header, data: [row] } });
      assert.equal(r.status, 200, r.text);
      okData(await api(`/add/${code}`, { data: single }));
      const rows = okData(
        await api('/history.fetch', {
          data: adv(
            { fieldName: 'typeCode', operator: 'equals', value: code },
            { fieldName: 'businessKey', operator: 'startsWith', value: 'HF-' },
          ),
          sortBy: 'businessKey',
        }),
      );
      assert.equal(rows.length, 2, code);
      assert.deepEqual(rows[0].field, rows[1].field, `${code}: load and add list the same fields`);
      if (code === 'TODO') assert.ok(rows[0].field.includes('status'), 'the default status is listed');
    }
  });

  test('a rolled-back chunk and failed writes leave no history', async () => {
    const count = async () =>
      (
        await h.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM record_history WHERE partition_id = $1',
          [h.partitionId],
        )
      ).rows[0]!.n;
    const before = await count();
    expectError(await api('/add/P', [{ data: { sku: 'HF-1' } }, { data: { sku: 'HF-1' } }]), 409, -1);
    expectError(await api('/update/P', { data: { sku: 'HF-NOPE', label: 'x' } }), 404, -1);
    // A database-side failure in the middle of a chunk: the whole chunk and its history roll back.
    await h.db.query(`CREATE OR REPLACE FUNCTION rc_test_refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.sku = 'HF-BOOM' THEN RAISE EXCEPTION 'refused' USING ERRCODE = '23514'; END IF; RETURN NEW; END $$`);
    await h.db.query(`CREATE TRIGGER rc_test_refuse_boom BEFORE INSERT OR UPDATE ON products
      FOR EACH ROW EXECUTE FUNCTION rc_test_refuse_boom()`);
    try {
      const r = await api('/loaddata/P', {
        data: {
          header: ['sku', 'label'],
          data: [
            ['HF-2', 'a'],
            ['HF-BOOM', 'b'],
            ['HF-3', 'c'],
          ],
        },
      });
      assert.equal(r.status, 200, r.text);
      assert.match(JSON.stringify(r.body.response), /rolled back/);
    } finally {
      await h.db.query('DROP TRIGGER rc_test_refuse_boom ON products');
      await h.db.query('DROP FUNCTION rc_test_refuse_boom()');
    }
    assert.equal(await count(), before);
    assert.equal(okData(await api('/fetch/P', { data: { sku: 'HF-2' } })).length, 0);
  });

  test('asOf rebuilds the record as it stood at three moments; before it existed it is not found', async () => {
    const t0 = new Date().toISOString();
    await pause();
    const [p] = okData(await api('/add/P', { data: { sku: 'HA-1', label: 'first', attribute2: '10' } }));
    await pause();
    const t1 = new Date().toISOString();
    await pause();
    okData(await api('/update/P', { data: { typedId: p.typedId, label: 'second', attribute2: '12.50' } }));
    await pause();
    const t2 = new Date().toISOString();
    await pause();
    okData(await api('/integrate/P', { data: { sku: 'HA-1', label: 'third', currency: 'USD' } }));
    await pause();
    const t3 = new Date().toISOString();
    // A change made at t3 itself (the same millisecond) belongs to the record as of t3: keep clear.
    await pause();
    okData(await api('/delete/P', { data: { typedId: p.typedId } }));

    const at = async (t: string) => okData(await api(`/fetch/P/${p.id}?asOf=${encodeURIComponent(t)}`))[0];
    expectError(await api(`/fetch/P/${p.id}?asOf=${encodeURIComponent(t0)}`), 404, -1);
    const one = await at(t1);
    assert.deepEqual([one.label, one.attribute2, one.currency, one.version], ['first', '10', null, 0]);
    assert.equal(one.typedId, p.typedId);
    assert.equal(one.createDate, p.createDate);
    const two = await at(t2);
    assert.deepEqual([two.label, two.attribute2, two.currency, two.version], ['second', '12.50', null, 1]);
    const three = await at(t3);
    assert.deepEqual(
      [three.label, three.attribute2, three.currency, three.version],
      ['third', '12.50', 'USD', 2],
    );
    // Deleted now: not found now, found as of before the delete.
    expectError(await api(`/fetch/P/${p.id}?asOf=${encodeURIComponent(new Date().toISOString())}`), 404, -1);
    expectError(await api(`/fetch/P/${p.id}?asOf=yesterday`), 400, -4, 'asOf');
    // By its business key, as /fetch/P/<sku> names it, though deleted: the same answers.
    const [bySku] = okData(await api(`/fetch/P/HA-1?asOf=${encodeURIComponent(t2)}`));
    assert.deepEqual([bySku.id, bySku.label, bySku.version], [p.id, 'second', 1]);
    const hist = okData(await api('/fetch/P/HA-1/history', {}));
    assert.deepEqual(
      hist.map((r: any) => r.action),
      ['ADD', 'UPDATE', 'UPDATE', 'DELETE'],
    );
    expectError(await api('/fetch/P/NO-SUCH-SKU/history', {}), 404, -1);
    expectError(await api(`/fetch/P/NO-SUCH-SKU?asOf=${encodeURIComponent(t2)}`), 404, -1);
  });

  test('a write that waited for a concurrent change of its row records the values that change left', async () => {
    // Another writer's change of the row, uncommitted while the integrate starts: the integrate waits
    // for it, then changes the newest version. Its history read the row from a snapshot taken before
    // the other commit (a stale "old"); it runs again instead (migration 064).
    const [p] = okData(await api('/integrate/P', { data: { sku: `HW-${Date.now()}`, label: 'first' } }));
    let integrate: Promise<unknown> | undefined;
    await h.db.transaction(async (tx) => {
      await tx.query(
        `UPDATE products SET label = 'theirs', version = version + 1 WHERE partition_id = $1 AND id = $2`,
        [h.partitionId, p.id],
      );
      integrate = api('/integrate/P', { data: { sku: p.sku, label: 'ours' } });
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    const [after] = okData((await integrate) as never);
    assert.deepEqual([after.label, after.version], ['ours', 2]);
    const hist = okData(await api(`/fetch/P/${p.id}/history`, { sortBy: 'id' }));
    assert.deepEqual(
      hist.map((r: any) => [r.action, r.version, r.changes.label]),
      [
        ['ADD', 0, { old: null, new: 'first' }],
        ['UPDATE', 2, { old: 'theirs', new: 'ours' }],
      ],
    );
    // The same for another writer's insert of the key: the integrate updates that row (not a second ADD).
    const sku = `HW-${Date.now()}-new`;
    await h.db.transaction(async (tx) => {
      await tx.query(`INSERT INTO products (partition_id, sku, label) VALUES ($1, $2, 'theirs')`, [
        h.partitionId,
        sku,
      ]);
      integrate = api('/integrate/P', { data: { sku, label: 'ours' } });
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    const [added] = okData((await integrate) as never);
    const addedHist = okData(await api(`/fetch/P/${added.id}/history`, { sortBy: 'id' }));
    assert.deepEqual(
      addedHist.map((r: any) => [r.action, r.version, r.changes.label]),
      [['UPDATE', 1, { old: 'theirs', new: 'ours' }]],
    );
  });

  test('a date-time as answered finds what it stamps: asOf, lastUpdateDate and changedAt filters', async () => {
    const [p] = okData(await api('/integrate/P', { data: { sku: `HT-${Date.now()}`, label: 'v0' } }));
    await pause();
    const [v1] = okData(await api('/update/P', { data: { typedId: p.typedId, label: 'v1' } }));
    const [hist] = okData(
      await api(`/fetch/P/${p.id}/history`, {
        data: adv({ fieldName: 'version', operator: 'equals', value: 1 }),
      }),
    );
    assert.equal(hist.changedAt, v1.lastUpdateDate);
    // As of the moment the change answered, the record is as that change left it.
    const [asOf] = okData(await api(`/fetch/P/${p.id}?asOf=${encodeURIComponent(v1.lastUpdateDate)}`));
    assert.deepEqual([asOf.label, asOf.version], ['v1', 1]);
    const [first] = okData(await api(`/fetch/P/${p.id}?asOf=${encodeURIComponent(p.lastUpdateDate)}`));
    assert.deepEqual([first.label, first.version], ['v0', 0]);
    // Filters with the answered value: equals and lessOrEqual find the record, greaterThan does not.
    const count = async (operator: string) =>
      (
        await api('/fetch/P', {
          endRow: 0,
          data: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [
              { fieldName: 'sku', operator: 'equals', value: p.sku },
              { fieldName: 'lastUpdateDate', operator, value: v1.lastUpdateDate },
            ],
          },
        })
      ).body.response.totalRows;
    assert.deepEqual(
      [await count('equals'), await count('lessOrEqual'), await count('greaterThan')],
      [1, 1, 0],
    );
    const stamped = okData(
      await api(`/fetch/P/${p.id}/history`, {
        data: adv({ fieldName: 'changedAt', operator: 'equals', value: hist.changedAt }),
      }),
    );
    assert.deepEqual(
      stamped.map((r: any) => r.version),
      [1],
    );
  });

  test('asOf after writes that changed no value (no history) answers the stored version', async () => {
    const [p] = okData(await api('/integrate/P', { data: { sku: 'HNV-1', label: 'x' } }));
    await pause();
    const first = new Date().toISOString();
    await pause();
    okData(await api('/integrate/P', { data: { sku: 'HNV-1', label: 'x' } }));
    const [stored] = okData(await api('/integrate/P', { data: { sku: 'HNV-1', label: 'x' } }));
    assert.equal(stored.version, p.version + 2, 'a write that changes nothing still counts a version');
    await pause();
    const now = new Date().toISOString();
    const at = async (t: string) => okData(await api(`/fetch/P/${p.id}?asOf=${encodeURIComponent(t)}`))[0];
    const latest = await at(now);
    assert.deepEqual([latest.version, latest.lastUpdateDate], [stored.version, stored.lastUpdateDate]);
    // Its version as of a moment before those writes is the one it had then.
    assert.equal((await at(first)).version, p.version);
    okData(
      await api('/update/P', {
        data: { typedId: p.typedId, label: 'y' },
        oldValues: { version: latest.version },
      }),
    );
  });

  test('soft-deletable types: DELETE and RESTORE; asOf across them', async () => {
    const [x] = okData(await api('/add/PX', { data: { name: 'HX', sku: 'S1', attribute1: 'v' } }));
    await pause();
    const added = new Date().toISOString();
    await pause();
    okData(await api('/delete/PX', { data: { typedId: x.typedId } }));
    await pause();
    const deleted = new Date().toISOString();
    await pause();
    okData(await api('/integrate/PX', { data: { name: 'HX', sku: 'S1', attribute1: 'w' } }));
    const rows = await historyOf('PX', x.id);
    assert.deepEqual(
      rows.map((r) => r.action),
      ['ADD', 'DELETE', 'RESTORE'],
    );
    assert.deepEqual(rows[2].changes, { attribute1: { old: 'v', new: 'w' } });
    assert.equal(rows[2].businessKey, 'HX|S1');
    expectError(await api(`/fetch/PX/${x.id}?asOf=${encodeURIComponent(deleted)}`), 404, -1);
    assert.equal(okData(await api(`/fetch/PX/${x.id}?asOf=${encodeURIComponent(added)}`))[0].attribute1, 'v');
  });

  test('a load that restores a soft-deleted row records RESTORE with the old values; its new rows ADD', async () => {
    const [x] = okData(await api('/add/PX', { data: { name: 'HR', sku: 'R1', attribute1: 'v' } }));
    okData(await api('/delete/PX', { data: { typedId: x.typedId } }));
    // Without join fields the key of the deleted row is an INSERT that restores it (ON CONFLICT), in
    // the merge with a new row; the merge reads old values for the restored row only.
    const load = await api('/loaddata/PX', {
      data: {
        header: ['name', 'sku', 'attribute1'],
        data: [
          ['HR', 'R1', 'w'],
          ['HR', 'R2', 'n'],
        ],
      },
    });
    assert.equal(load.body.response.data[0].inserted, 2, load.text);
    const restored = await historyOf('PX', x.id);
    assert.deepEqual(
      restored.map((r) => r.action),
      ['ADD', 'DELETE', 'RESTORE'],
    );
    assert.deepEqual(restored[2].changes, { attribute1: { old: 'v', new: 'w' } });
    const [r2] = okData(await api('/fetch/PX', { data: { name: 'HR', sku: 'R2' } }));
    const added = await historyOf('PX', r2.id);
    assert.deepEqual(
      added.map((r) => [r.action, r.changes]),
      [
        [
          'ADD',
          {
            name: { old: null, new: 'HR' },
            sku: { old: null, new: 'R2' },
            attribute1: { old: null, new: 'n' },
          },
        ],
      ],
    );
  });

  test('an update stores its old values only; the new ones are read back from later changes', async () => {
    const [p] = okData(await api('/add/P', { data: { sku: 'HN-1', label: 'a', attribute1: 'x' } }));
    okData(await api('/update/P', { data: { typedId: p.typedId, label: 'b' } }));
    okData(await api('/integrate/P', { data: { sku: 'HN-1', attribute1: 'y', attribute2: 'z' } }));
    const load = await api('/loaddata/P', {
      data: { header: ['sku', 'label'], data: [['HN-1', 'c']], options: { detectJoinFields: true } },
    });
    assert.equal(load.status, 200, load.text);
    okData(await api('/update/P', { data: { typedId: p.typedId, label: null, attribute2: 'w' } }));
    const stored = await h.db.query<{ changes: Record<string, unknown> }>(
      `SELECT changes FROM record_history WHERE partition_id = $1 AND type_code = 'P' AND record_id = $2
        ORDER BY id`,
      [h.partitionId, p.id],
    );
    assert.deepEqual(stored.rows[1]!.changes, { old: { label: 'a' } });
    const expected = [
      [
        'ADD',
        {
          sku: { old: null, new: 'HN-1' },
          label: { old: null, new: 'a' },
          attribute1: { old: null, new: 'x' },
        },
      ],
      ['UPDATE', { label: { old: 'a', new: 'b' } }],
      ['UPDATE', { attribute1: { old: 'x', new: 'y' }, attribute2: { old: null, new: 'z' } }],
      ['UPDATE', { label: { old: 'b', new: 'c' } }],
      ['UPDATE', { label: { old: 'c', new: null }, attribute2: { old: 'z', new: 'w' } }],
    ];
    assert.deepEqual(
      (await historyOf('P', p.id)).map((r) => [r.action, r.changes]),
      expected,
    );
    // Newest first, one row a page, and with the client's own fields (as objects or arrays): the
    // same values, and only the fields asked for.
    for (let start = 0; start < 5; start++) {
      const [row] = await historyOf('P', p.id, { sortBy: '-id', startRow: start, endRow: start + 1 });
      assert.deepEqual(row.changes, expected[4 - start]![1]);
    }
    const asked = await historyOf('P', p.id, { resultFields: ['changes'] });
    assert.deepEqual(
      asked,
      expected.map(([, changes]) => ({ changes })),
    );
    const arrays = await historyOf('P', p.id, { valueFields: ['action', 'changes'] });
    assert.deepEqual(arrays, expected);
    // Across types, and after the record is gone (its DELETE holds the last values).
    okData(await api('/delete/P', { data: { typedId: p.typedId } }));
    const across = okData(
      await api('/history.fetch', {
        data: adv(
          { fieldName: 'typeCode', operator: 'equals', value: 'P' },
          { fieldName: 'recordId', operator: 'equals', value: p.id },
          { fieldName: 'action', operator: 'equals', value: 'UPDATE' },
        ),
        sortBy: 'id',
      }),
    );
    assert.deepEqual(
      across.map((r) => r.changes),
      expected.slice(1).map(([, changes]) => changes),
    );
  });

  test('user groups and permissions apply to history; HISTORY_FETCH for /history.fetch', async () => {
    const g = await h.db.query<{ id: number }>(
      `INSERT INTO user_groups (partition_id, unique_name) VALUES ($1, 'hsales') RETURNING id`,
      [h.partitionId],
    );
    const member = await h.newUser('hmember', 'hmember-password', ['PRICESHOP_EDIT']);
    await h.newUser('houtsider', 'houtsider-password', ['PRICESHOP_EDIT']);
    await h.db.query('INSERT INTO user_group_members (partition_id, user_id, group_id) VALUES ($1, $2, $3)', [
      h.partitionId,
      member,
      g.rows[0]!.id,
    ]);
    const [hidden] = okData(await api('/add/P', { data: { sku: 'HG-1', userGroupViewDetails: 'hsales' } }));
    const [open] = okData(await api('/add/P', { data: { sku: 'HG-2' } }));
    const m = await clientOf(h, 'hmember', 'hmember-password');
    const o = await clientOf(h, 'houtsider', 'houtsider-password');
    assert.equal((await historyOf('P', hidden.id, {}, m)).length, 1);
    expectError(await o(`/fetch/P/${hidden.id}/history`), 404, -1);
    expectError(
      await o(`/fetch/P/${hidden.id}?asOf=${encodeURIComponent(new Date().toISOString())}`),
      404,
      -1,
    );
    assert.equal((await historyOf('P', open.id, {}, o)).length, 1);
    // A record that was in the outsider's sight, then hidden, then back: as it stood is rebuilt from
    // every change (those made while it was hidden from him included), and a moment it was hidden
    // from him is not found.
    const at = (r: { lastUpdateDate: string }) => encodeURIComponent(r.lastUpdateDate);
    const [v0] = okData(await api('/add/P', { data: { sku: 'HG-3', label: 'a' } }));
    const [v1] = okData(
      await api('/update/P', { data: { sku: 'HG-3', label: 'b', userGroupViewDetails: 'hsales' } }),
    );
    okData(await api('/update/P', { data: { sku: 'HG-3', label: 'c' } }));
    okData(await api('/update/P', { data: { sku: 'HG-3', label: 'd', userGroupViewDetails: null } }));
    const [then] = okData(await o(`/fetch/P/HG-3?asOf=${at(v0)}`));
    assert.deepEqual([then.label, then.userGroupViewDetails, then.version], ['a', null, 0]);
    expectError(await o(`/fetch/P/HG-3?asOf=${at(v1)}`), 404, -1);
    const [seen] = okData(await m(`/fetch/P/HG-3?asOf=${at(v1)}`));
    assert.deepEqual([seen.label, seen.userGroupViewDetails, seen.version], ['b', 'hsales', 1]);
    // Hidden from him now, in his sight then: as it stood then.
    const [w0] = okData(await api('/add/P', { data: { sku: 'HG-4', label: 'open' } }));
    okData(
      await api('/update/P', { data: { sku: 'HG-4', label: 'secret', userGroupViewDetails: 'hsales' } }),
    );
    expectError(await o('/fetch/P/HG-4'), 404, -1);
    for (const path of ['HG-4', String(w0.id)]) {
      const [before] = okData(await o(`/fetch/P/${path}?asOf=${at(w0)}`));
      assert.deepEqual([before.label, before.userGroupViewDetails], ['open', null]);
    }
    // The change that brought HG-3 back into his sight does not tell what it held while hidden.
    const back = (rows: any[]) => rows.find((r) => r.changes.label?.new === 'd').changes;
    assert.deepEqual(back(await historyOf('P', v0.id, {}, o)), {
      label: { old: null, new: 'd' },
      userGroupViewDetails: { old: null, new: null },
    });
    assert.deepEqual(back(await historyOf('P', v0.id, {}, m)).label, { old: 'c', new: 'd' });
    // Without HISTORY_FETCH no cross-type reading.
    expectError(await o('/history.fetch', {}), 403, -3);
    // A type the user may not fetch: no history of it either.
    expectError(await o(`/fetch/U/${member}/history`), 403, -3);
    // Types sharing a table (attribute meta of P, PX, SX): a row of another type is no record of this
    // one, as of any moment or in its history — an admin's 404 too.
    await h.newUser('hnorole', 'hnorole-password', []);
    const n = await clientOf(h, 'hnorole', 'hnorole-password');
    const [sxam] = okData(
      await api('/add/SXAM', { data: { name: 'HCat', fieldName: 'attribute5', label: 'Seller margin' } }),
    );
    const [pxam] = okData(
      await api('/add/PXAM', { data: { name: 'HCosts', fieldName: 'attribute6', label: 'Ext cost' } }),
    );
    const [pam] = okData(await api('/add/PAM', { data: { fieldName: 'attribute9', label: 'Own' } }));
    const now = encodeURIComponent(new Date(Date.now() + 60_000).toISOString());
    expectError(await n('/fetch/SXAM', {}), 403, -3);
    for (const id of [sxam.id, pxam.id]) {
      expectError(await n(`/fetch/PAM/${id}?asOf=${now}`), 404, -1);
      expectError(await n(`/fetch/PAM/${id}/history`), 404, -1);
      expectError(await api(`/fetch/PAM/${id}?asOf=${now}`), 404, -1);
    }
    assert.equal(okData(await n(`/fetch/PAM/${pam.id}?asOf=${now}`))[0].label, 'Own');
    assert.equal(okData(await api(`/fetch/PXAM/${pxam.id}?asOf=${now}`))[0].label, 'Ext cost');
  });

  test('a lookup table value and a table copy (manager operations)', async () => {
    const [t] = okData(
      await api('/lookuptablemanager.add', {
        data: { uniqueName: 'HT', type: 'SIMPLE', valueType: 'STRING' },
      }),
    );
    const [v] = okData(await api(`/lookuptablemanager.add/${t.id}`, { data: { name: 'k', value: 'a' } }));
    okData(
      await api(`/lookuptablemanager.update/${t.id}`, {
        data: { typedId: v.typedId, value: 'b' },
        oldValues: { version: 0 },
      }),
    );
    const code = String(v.typedId).split('.')[1]!;
    const rows = await historyOf(code, v.id);
    assert.deepEqual(
      rows.map((r) => [r.action, r.changes.value]),
      [
        ['ADD', { old: null, new: 'a' }],
        ['UPDATE', { old: 'a', new: 'b' }],
      ],
    );
    assert.equal(rows[1].operation, `lookuptablemanager.update/${t.id}`);
    const [copy] = okData(await api(`/lookuptablemanager.copy/${t.id}`, { data: { uniqueName: 'HT2' } }));
    const copied = okData(
      await api('/history.fetch', {
        data: adv({ fieldName: 'operation', operator: 'equals', value: `lookuptablemanager.copy/${t.id}` }),
        sortBy: 'typeCode',
      }),
    );
    assert.deepEqual(
      copied.map((r) => [r.typeCode, r.action]),
      [
        ['LT', 'ADD'],
        [code, 'ADD'],
      ],
    );
    assert.equal(copied[0].recordId, copy.id);
  });

  test('JSON values keep the nulls inside them; a field set to null reads as null', async () => {
    const [t] = okData(await api('/lookuptablemanager.add', { data: { uniqueName: 'HJ', type: 'JSON' } }));
    const first = { a: null, b: [1, null], c: { d: null } };
    const [v] = okData(await api(`/lookuptablemanager.add/${t.id}`, { data: { name: 'k', value: first } }));
    const second = { a: 2, b: [null] };
    okData(
      await api(`/lookuptablemanager.update/${t.id}`, {
        data: { typedId: v.typedId, value: second },
        oldValues: { version: 0 },
      }),
    );
    const code = String(v.typedId).split('.')[1]!;
    const rows = await historyOf(code, v.id);
    assert.deepEqual(
      rows.map((r) => [r.action, r.changes.value]),
      [
        ['ADD', { old: null, new: first }],
        ['UPDATE', { old: first, new: second }],
      ],
    );
    const [p] = okData(await api('/add/P', { data: { sku: 'HJ-1', label: 'x', attribute1: 'y' } }));
    okData(
      await api('/update/P', {
        data: { typedId: p.typedId, label: null },
        oldValues: { version: p.version },
      }),
    );
    const own = await historyOf('P', p.id);
    assert.deepEqual(own[1].changes, { label: { old: 'x', new: null } });
    assert.deepEqual(own[1].field, ['label']);
  });

  test('role assignments and password changes (the fact, never the secret)', async () => {
    const id = await h.newUser('hroles', 'hroles-password-1');
    okData(await api(`/accountmanager.assignrole/${id}`, { data: { roles: ['PRICESHOP_RO'] } }));
    okData(
      await api(`/accountmanager.assignrole/${id}`, {
        data: { roles: ['PRICESHOP_EDIT'], unassign: ['PRICESHOP_RO'] },
      }),
    );
    okData(await api(`/accountmanager.assignrole/${id}`, { data: { roles: ['PRICESHOP_EDIT'] } })); // no change
    okData(await api(`/accountmanager.changepassword/${id}`, { data: { newPassword: 'Brand-new-pass-1' } }));
    const rows = await historyOf('U', id);
    assert.deepEqual(
      rows.map((r) => [r.action, r.changes]),
      [
        ['UPDATE', { roles: { old: [], new: ['PRICESHOP_RO'] } }],
        ['UPDATE', { roles: { old: ['PRICESHOP_RO'], new: ['PRICESHOP_EDIT'] } }],
        ['UPDATE', { password: { old: null, new: '(changed)' } }],
      ],
    );
    assert.deepEqual(
      rows.map((r) => r.version),
      // A password change is a new version of the user like any other change.
      [1, 2, 3],
    );
    assert.ok(!JSON.stringify(rows).includes('Brand-new-pass-1'));
    const stored = await h.db.query<{ t: string }>(
      `SELECT changes::text AS t FROM record_history WHERE partition_id = $1 AND type_code = 'U' AND record_id = $2`,
      [h.partitionId, id],
    );
    assert.ok(stored.rows.every((r) => !r.t.includes('scrypt') && !r.t.includes('Brand-new')));
  });

  test('retention: the daily clean-up removes rows older than HISTORY_RETENTION_DAYS', async () => {
    const [p] = okData(await api('/add/P', { data: { sku: 'HR-1', label: 'old' } }));
    okData(await api('/update/P', { data: { typedId: p.typedId, label: 'new' } }));
    // The ADD happened 40 days ago.
    await h.db.query(
      `UPDATE record_history SET changed_at = now() - interval '40 days'
        WHERE partition_id = $1 AND type_code = 'P' AND record_id = $2 AND action = 'ADD'`,
      [h.partitionId, p.id],
    );
    assert.equal(loadConfig({ HISTORY_RETENTION_DAYS: '30' }).historyRetentionDays, 30);
    assert.equal(loadConfig({}).historyRetentionDays, 0);
    assert.throws(() => loadConfig({ HISTORY_RETENTION_DAYS: '-1' }));
    await historyCleanupTask(h.db, 0)(); // 0: unlimited, nothing removed
    assert.equal((await historyOf('P', p.id)).length, 2);
    const task = historyCleanupTask(h.db, 30);
    await task();
    assert.deepEqual(
      (await historyOf('P', p.id)).map((r) => r.action),
      ['UPDATE'],
    );
    assert.ok((await removeExpiredHistory(h.db, 30)) === 0);
  });

  test('HISTORY_FETCH through a role, not an admin: /history.fetch answers, filtered by user groups', async () => {
    const auditor = await h.newUser('hauditor', 'hauditor-password-1', ['ADMIN_WO_USER_MGMT']);
    okData(await api('/add/UG', { data: { uniqueName: 'haudit' } }));
    okData(await api(`/accountmanager.assigngroup/${auditor}`, { data: { groups: ['haudit'] } }));
    okData(
      await api('/add/P', [
        { data: { sku: 'HU-1', userGroupViewDetails: 'haudit-other' } },
        { data: { sku: 'HU-2', userGroupViewDetails: 'haudit' } },
        { data: { sku: 'HU-3' } },
      ]),
    );
    const body = {
      data: adv({ fieldName: 'businessKey', operator: 'startsWith', value: 'HU-' }),
      sortBy: 'businessKey',
    };
    const a = await clientOf(h, 'hauditor', 'hauditor-password-1');
    const seen = await a('/history.fetch', body);
    assert.deepEqual(
      okData(seen).map((r) => r.businessKey),
      ['HU-2', 'HU-3'],
    );
    assert.equal(seen.body.response.totalRows, 2);
    assert.deepEqual(
      okData(await api('/history.fetch', body)).map((r) => r.businessKey),
      ['HU-1', 'HU-2', 'HU-3'],
    );
    // Not even by asking for it.
    const asked = await a('/history.fetch', { data: { businessKey: 'HU-1' } });
    assert.deepEqual(okData(asked), []);
  });

  test('actor and origin: api token id, file load job id; resetcolumn; group and business-role assignments', async () => {
    // An api token: its id on every row it writes.
    const [issued] = okData(
      await h.call('/accountmanager.getjsonwebtoken', { basic: { user: ADMIN, password: ADMIN_PASSWORD } }),
    );
    assert.ok(Number.isInteger(issued.tokenId), JSON.stringify(issued));
    const bearer = { authorization: `Bearer ${issued.token}` };
    const [t] = okData(await h.call('/add/P', { headers: bearer, body: { data: { sku: 'HO-1' } } }));
    okData(await h.call('/update/P', { headers: bearer, body: { data: { sku: 'HO-1', label: 'x' } } }));
    const byToken = await historyOf('P', t.id);
    assert.deepEqual(
      byToken.map((r) => [r.action, r.tokenId, r.user, r.operation]),
      [
        ['ADD', issued.tokenId, ADMIN, 'add/P'],
        ['UPDATE', issued.tokenId, ADMIN, 'update/P'],
      ],
    );
    // A session login writes no token id.
    okData(await api('/update/P', { data: { sku: 'HO-1', label: 'y' } }));
    assert.equal((await historyOf('P', t.id)).at(-1).tokenId, null);

    // An asynchronous file load: every row it writes carries the job's id.
    const runner = runnerFor(h).start();
    try {
      const started = await send(h, '/loaddata.file/P/async', {
        body: form({}, { field: 'fileName', name: 'h.csv', data: 'sku,label\nHO-F1,a\nHO-F2,b\n' }),
      });
      const [{ jstId }] = assertOk(started);
      assert.equal((await waitForJob(h, jstId)).status, 'FINISHED');
      const rows = okData(
        await api('/history.fetch', {
          data: adv({ fieldName: 'jobId', operator: 'equals', value: jstId }),
          sortBy: 'businessKey',
        }),
      );
      assert.deepEqual(
        rows.map((r) => [r.businessKey, r.action, r.jobId, r.user]),
        [
          ['HO-F1', 'ADD', jstId, ADMIN],
          ['HO-F2', 'ADD', jstId, ADMIN],
        ],
      );
    } finally {
      await runner.stop();
    }

    // resetcolumn: an UPDATE per record that had a value, none for the others.
    okData(
      await api('/add/P', [
        { data: { sku: 'HO-R1', attribute3: 'a' } },
        { data: { sku: 'HO-R2', attribute3: 'b' } },
        { data: { sku: 'HO-R3' } },
      ]),
    );
    okData(await api('/resetcolumn/P/attribute3', {}));
    const reset = okData(
      await api('/history.fetch', {
        data: adv({ fieldName: 'operation', operator: 'equals', value: 'resetcolumn/P/attribute3' }),
        sortBy: 'businessKey',
      }),
    );
    assert.deepEqual(
      reset.map((r) => [r.businessKey, r.action, r.changes]),
      [
        ['HO-R1', 'UPDATE', { attribute3: { old: 'a', new: null } }],
        ['HO-R2', 'UPDATE', { attribute3: { old: 'b', new: null } }],
      ],
    );

    // A user's groups and business roles, and a business role's groups.
    const u = await h.newUser('hassign', 'hassign-password-1');
    okData(await api('/add/UG', { data: { uniqueName: 'hog' } }));
    const [br] = okData(await api('/add/BR', { data: { uniqueName: 'hobr' } }));
    okData(await api(`/accountmanager.assigngroup/${u}`, { data: { groups: ['hog'] } }));
    okData(await api(`/accountmanager.assignbusinessrole/${u}`, { data: { businessRoles: ['hobr'] } }));
    okData(await api(`/accountmanager.assigngroup/${u}`, { data: { unassign: ['hog'] } }));
    okData(await api(`/accountmanager.assigngroup/BR/${br.id}`, { data: { groups: ['hog'] } }));
    assert.deepEqual(
      (await historyOf('U', u)).map((r) => [r.action, r.changes, r.businessKey, r.operation]),
      [
        ['UPDATE', { groups: { old: [], new: ['hog'] } }, 'hassign', `accountmanager.assigngroup/${u}`],
        [
          'UPDATE',
          { businessRoles: { old: [], new: ['hobr'] } },
          'hassign',
          `accountmanager.assignbusinessrole/${u}`,
        ],
        ['UPDATE', { groups: { old: ['hog'], new: [] } }, 'hassign', `accountmanager.assigngroup/${u}`],
      ],
    );
    assert.deepEqual(
      (await historyOf('BR', br.id)).map((r) => [r.action, r.changes]),
      [
        ['ADD', { uniqueName: { old: null, new: 'hobr' } }],
        ['UPDATE', { groups: { old: [], new: ['hog'] } }],
      ],
    );
  });

  test('a rolled-back second chunk: the first chunk keeps its history, the second leaves none', async () => {
    // /loaddata commits 10,000 rows per chunk (not a setting): row 10,001 fails in the database,
    // so rows 10,000..10,002 (the second chunk) roll back with their history.
    const data = Array.from({ length: 10_000 }, (_, i) => [`HC-${String(i).padStart(5, '0')}`, 'a']);
    data.push(['HC-10000', 'b'], ['HC-BOOM', 'b'], ['HC-10001', 'b']);
    await h.db.query(`CREATE OR REPLACE FUNCTION rc_test_refuse_hc() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.sku = 'HC-BOOM' THEN RAISE EXCEPTION 'refused' USING ERRCODE = '23514'; END IF; RETURN NEW; END $$`);
    await h.db.query(`CREATE TRIGGER rc_test_refuse_hc BEFORE INSERT OR UPDATE ON products
      FOR EACH ROW EXECUTE FUNCTION rc_test_refuse_hc()`);
    let r: Reply;
    try {
      r = await api('/loaddata/P', { data: { header: ['sku', 'label'], data } });
    } finally {
      await h.db.query('DROP TRIGGER rc_test_refuse_hc ON products');
      await h.db.query('DROP FUNCTION rc_test_refuse_hc()');
    }
    const [result] = okData(r);
    assert.deepEqual([result.inserted, result.invalid], [10_000, 3], r.text);
    assert.deepEqual(
      result.errors.map((e: any) => e.row),
      [10_000, 10_001, 10_002],
    );
    assert.match(result.errors[0].message, /rolled back/);
    const history = (criteria: object) =>
      api('/history.fetch', {
        data: adv({ fieldName: 'typeCode', operator: 'equals', value: 'P' }, criteria),
        endRow: 1,
      });
    const first = await history({ fieldName: 'businessKey', operator: 'startsWith', value: 'HC-0' });
    assert.equal(first.body.response.totalRows, 10_000, first.text);
    assert.equal(okData(first)[0].action, 'ADD');
    const second = await history({
      fieldName: 'businessKey',
      operator: 'inSet',
      value: ['HC-10000', 'HC-BOOM', 'HC-10001'],
    });
    assert.deepEqual([okData(second), second.body.response.totalRows], [[], 0]);
    assert.equal(okData(await api('/fetch/P', { data: { sku: 'HC-10000' } })).length, 0);
  });

  test("partition isolation: another partition's history is never visible", async () => {
    const otherApi = await clientOf(other);
    const [foreign] = okData(await otherApi('/add/P', { data: { sku: 'HI-SECRET', label: 'theirs' } }));
    assert.equal((await historyOf('P', foreign.id, {}, otherApi)).length, 1);
    expectError(await api(`/fetch/P/${foreign.id}/history`), 404, -1);
    expectError(
      await api(`/fetch/P/${foreign.id}?asOf=${encodeURIComponent(new Date().toISOString())}`),
      404,
      -1,
    );
    const mine = okData(
      await api('/history.fetch', {
        data: adv({ fieldName: 'businessKey', operator: 'equals', value: 'HI-SECRET' }),
      }),
    );
    assert.deepEqual(mine, []);
    const theirs = okData(await otherApi('/history.fetch', { data: { businessKey: 'HI-SECRET' } }));
    assert.equal(theirs.length, 1);
  });
});
