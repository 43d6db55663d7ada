// Record history over HTTP on both databases: every write path of the engine records who changed
// which fields of which record, from what to what, through which request; failed writes leave none.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness, type Reply } from '../helpers/app.ts';

type Client = (path: string, body?: unknown, headers?: Record<string, string>) => Promise<Reply>;

function okData(r: Reply): any[] {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.response.status, 0, r.text);
  return r.body.response.data;
}

interface HistoryRow {
  action: string;
  changed_fields: string[];
  changes: Record<string, { old: unknown; new: unknown }>;
  record_version: number;
  actor_login: string;
  request_id: string | null;
  operation: string | null;
  business_key: string | null;
}

describe('record history written by the engine', () => {
  let h: Harness;
  let api: Client;
  before(async () => {
    h = await startHarness();
    const token = (await h.login()).token;
    api = (path, body, headers = {}) =>
      h.call(path, {
        headers: { 'X-Ratecard-jwt': token, ...headers },
        ...(body === undefined ? {} : { body }),
      });
  });
  after(() => h.close());

  const historyOf = async (type: string, id: number): Promise<HistoryRow[]> =>
    (
      await h.db.query<HistoryRow>(
        `SELECT action, changed_fields, changes, record_version, actor_login, request_id, operation, business_key
           FROM record_history WHERE partition_id = $1 AND type_code = $2 AND record_id = $3 ORDER BY id`,
        [h.partitionId, type, id],
      )
    ).rows;

  test('add, update, integrate and delete of a product: only changed fields, actor, request', async () => {
    const [p] = okData(
      await api(
        '/add/P',
        { data: { sku: 'H-1', label: 'one', currency: 'EUR' } },
        { 'x-request-id': 'req-add-1' },
      ),
    );
    okData(await api('/update/P', { data: { typedId: p.typedId, label: 'two', currency: 'EUR' } }));
    okData(await api('/integrate/P', { data: { sku: 'H-1', label: 'three', unitOfMeasure: 'kg' } }));
    okData(await api('/integrate/P', { data: { sku: 'H-1', label: 'three' } })); // no change: no row
    okData(await api('/delete/P', { data: { typedId: p.typedId } }));
    const rows = await historyOf('P', p.id);
    assert.deepEqual(
      rows.map((r) => [r.action, r.changed_fields, r.record_version]),
      [
        ['ADD', ['currency', 'label', 'sku'], 0],
        ['UPDATE', ['label'], 1],
        ['UPDATE', ['label', 'unitOfMeasure'], 2],
        ['DELETE', ['currency', 'label', 'sku', 'unitOfMeasure'], 3],
      ],
    );
    assert.deepEqual(rows[0]!.changes.label, { old: null, new: 'one' });
    assert.deepEqual(rows[1]!.changes, { label: { old: 'one', new: 'two' } });
    assert.deepEqual(rows[3]!.changes.unitOfMeasure, { old: 'kg', new: null });
    assert.equal(rows[0]!.actor_login, 'admin');
    assert.equal(rows[0]!.request_id, 'req-add-1');
    assert.equal(rows[0]!.operation, 'add/P');
    assert.equal(rows[0]!.business_key, 'H-1');
    assert.equal(rows[2]!.operation, 'integrate/P');
  });

  test('massedit, resetcolumn and delete by filter record one row per changed record', async () => {
    const made = okData(
      await api('/add/P', [
        { data: { sku: 'HM-1', attribute2: 'a' } },
        { data: { sku: 'HM-2', attribute2: 'b' } },
        { data: { sku: 'HM-3', attribute2: 'x', label: 'same' } },
      ]),
    );
    const filter = {
      _constructor: 'AdvancedCriteria',
      operator: 'and',
      criteria: [{ fieldName: 'sku', operator: 'startsWith', value: 'HM-' }],
    };
    okData(
      await api('/massedit/P', {
        filterCriteria: filter,
        massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'same' }],
      }),
    );
    okData(await api('/resetcolumn/P/attribute2'));
    okData(await api('/delete/P/batch', { data: filter }));
    const actions = await Promise.all(
      made.map(async (p) => (await historyOf('P', p.id)).map((r) => r.action)),
    );
    assert.deepEqual(actions, [
      ['ADD', 'UPDATE', 'UPDATE', 'DELETE'],
      ['ADD', 'UPDATE', 'UPDATE', 'DELETE'],
      ['ADD', 'UPDATE', 'DELETE'], // label was already "same": the massedit changed nothing of it
    ]);
    const [, edit, reset] = await historyOf('P', made[0].id);
    assert.equal(edit!.operation, 'massedit/P');
    assert.deepEqual(reset!.changes, { attribute2: { old: 'a', new: null } });
  });

  test('soft-deletable types: DELETE and RESTORE', async () => {
    const [x] = okData(await api('/add/PX', { data: { name: 'HX', sku: 'S1', attribute1: 'v' } }));
    okData(await api('/delete/PX', { data: { typedId: x.typedId } }));
    okData(await api('/integrate/PX', { data: { name: 'HX', sku: 'S1', attribute1: 'w' } }));
    const rows = await historyOf('PX', x.id);
    assert.deepEqual(
      rows.map((r) => r.action),
      ['ADD', 'DELETE', 'RESTORE'],
    );
    assert.deepEqual(rows[2]!.changes, { attribute1: { old: 'v', new: 'w' } });
    assert.equal(rows[2]!.business_key, 'HX|S1');
  });

  test('a failed write leaves no history', async () => {
    const before = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM record_history WHERE partition_id = $1',
      [h.partitionId],
    );
    const r = await api('/add/P', [{ data: { sku: 'HF-1' } }, { data: { sku: 'HF-1' } }]);
    assert.equal(r.status, 409, r.text);
    const bad = await api('/update/P', [{ data: { sku: 'H-NOPE-0', label: 'x' } }]);
    assert.equal(bad.status, 404, bad.text);
    const afterCount = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM record_history WHERE partition_id = $1',
      [h.partitionId],
    );
    assert.equal(afterCount.rows[0]!.n, before.rows[0]!.n);
  });
});
