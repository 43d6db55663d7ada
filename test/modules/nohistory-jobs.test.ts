// Types that keep no record history (jobs, imports, ...) and the ends of jobs, over HTTP on both
// databases: `?asOf` on one of their records is a -4 naming `asOf` (never the record as it is now,
// passing for the one of that moment), on /fetch/{TC}/{id} and /admin.fetchjst alike; an import's
// writes — massedit, massdelete, submit, its delete — record no history, and history reads answer
// none of them (rows earlier versions wrote included); a refused cancel of a finished job changes
// nothing; a LOADDATA_FILE job cancelled before it ran ends its upload status record at once.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { form, send } from '../jobs/helpers.ts';

const PAST = '2020-01-01T00:00:00Z';

describe('types without history; job ends', () => {
  let h: Harness;
  const call = (path: string, body: unknown = {}) =>
    h.call(path, { basic: { user: 'admin', password: 'admin-password-1' }, body });
  const historyRows = async (codes: readonly string[]) =>
    (
      await h.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM record_history WHERE partition_id = $1 AND type_code = ANY($2::text[])',
        [h.partitionId, codes],
      )
    ).rows[0]!.n;
  /** A job of the admin's, ended FINISHED (no runner runs in this suite). */
  const finishedJob = async () => {
    const r = await h.db.query<{ id: number }>(
      `INSERT INTO jobs (partition_id, job_name, tracker_type, status, progress, processing_end, created_by)
       SELECT $1, 'done', 'TEST_DONE', 'FINISHED', 100, now(), id FROM users
        WHERE partition_id = $1 AND login_name = 'admin' RETURNING id`,
      [h.partitionId],
    );
    return r.rows[0]!.id;
  };

  before(async () => {
    h = await startHarness();
    okData(await call('/add/P', { data: { sku: 'NH-1', label: 'one' } }));
  });
  after(async () => {
    await h.close();
  });

  test('a refused cancel of a finished job changes nothing: not its version, not lastUpdateDate', async () => {
    const id = await finishedJob();
    const [before] = okData(await call(`/admin.fetchjst/${id}`));
    for (let i = 0; i < 2; i++) {
      const r = await call(`/admin.canceljst/${id}`);
      expectError(r, 409, -1);
      assert.match(r.body.response.data, /has ended already \(FINISHED\)/);
    }
    const [after] = okData(await call(`/admin.fetchjst/${id}`));
    assert.deepEqual(
      [after.version, after.lastUpdateDate, after.cancelRequested, after.status],
      [before.version, before.lastUpdateDate, before.cancelRequested, 'FINISHED'],
    );
  });

  test('a queued job cancelled twice: CANCELLED by the first, left as it is by the second', async () => {
    const r = await h.db.query<{ id: number }>(
      `INSERT INTO jobs (partition_id, job_name, tracker_type, created_by)
       SELECT $1, 'queued', 'TEST_QUEUED', id FROM users WHERE partition_id = $1 AND login_name = 'admin'
       RETURNING id`,
      [h.partitionId],
    );
    const id = r.rows[0]!.id;
    const [first] = okData(await call(`/admin.canceljst/${id}`));
    assert.equal(first.status, 'CANCELLED');
    const [again] = okData(await call(`/admin.canceljst/${id}`));
    assert.deepEqual(
      [again.status, again.version, again.lastUpdateDate],
      ['CANCELLED', first.version, first.lastUpdateDate],
    );
  });

  test('admin.fetchjst refuses asOf (POST and GET) with a -4 naming it, as /fetch/JST/{id} does', async () => {
    const id = await finishedJob();
    for (const r of [
      await call(`/admin.fetchjst/${id}?asOf=${PAST}`),
      await h.call(`/admin.fetchjst/${id}?asOf=${PAST}`, {
        method: 'GET',
        basic: { user: 'admin', password: 'admin-password-1' },
      }),
      await call(`/fetch/JST/${id}?asOf=${PAST}`),
    ]) {
      expectError(r, 400, -4, 'asOf');
      assert.match(JSON.stringify(r.body.response.errors.asOf), /no record history/);
    }
    assert.equal(okData(await call(`/admin.fetchjst/${id}`))[0].id, id);
  });

  test('imports keep no history: asOf is a -4; massedit, massdelete, submit and delete record none', async () => {
    const [im] = okData(await call('/importmanager.add', { data: { targetType: 'P' } }));
    okData(
      await call(`/importmanager.save/${im.id}`, [
        { data: { targetColumn: 'label', sku: 'NH-1', value: 'new one' } },
        { data: { targetColumn: 'label', sku: 'NH-404', value: 'nobody' } },
        { data: { targetColumn: 'label', sku: 'NH-405', value: 'nobody either' } },
      ]),
    );
    // Two changes name no product: the submit marks them INVALID; a massedit makes them NEW again.
    expectError(await call(`/importmanager.submit/${im.id}`), 400, -4);
    const invalid = { fieldName: 'validationState', operator: 'equals', value: 'INVALID' };
    const [edited] = okData(
      await call(`/importmanager.massedit/${im.id}`, {
        filterCriteria: invalid,
        massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: 'still nobody' }],
      }),
    );
    assert.equal(edited.updated ?? edited.updatedRecords, 2);
    expectError(await call(`/importmanager.submit/${im.id}`), 400, -4);
    const [deleted] = okData(
      await call(`/importmanager.massdelete/${im.id}`, {
        data: { fieldName: 'key1', operator: 'startsWith', value: 'NH-40' },
      }),
    );
    assert.equal(deleted.deleted, 2);
    const [applied] = okData(await call(`/importmanager.submit/${im.id}`));
    assert.equal(applied.status, 'APPLIED');

    // Read as of a moment, the import would be the one as it is now (APPLIED, after that moment).
    const r = await call(`/fetch/IM/${im.id}?asOf=${encodeURIComponent(im.createDate ?? PAST)}`);
    expectError(r, 400, -4, 'asOf');
    assert.match(JSON.stringify(r.body.response.errors.asOf), /imports keep no record history/);
    expectError(await call(`/fetch/IM/${im.id}?asOf=${PAST}`), 400, -4, 'asOf');

    const [change] = okData(await call(`/importmanager.fetch/${im.id}`));
    assert.deepEqual(okData(await call(`/fetch/IMC/${change.id}/history`)), []);
    okData(await call('/delete/IM', { data: { typedId: `${im.id}.IM` } }));
    assert.equal(await historyRows(['IM', 'IMC']), 0);
    const across = okData(
      await call('/history.fetch', {
        data: { fieldName: 'typeCode', operator: 'inSet', value: ['IM', 'IMC'] },
      }),
    );
    assert.deepEqual(across, []);
    // What the target records got is recorded, naming the import.
    const [p] = okData(await call('/fetch/P', { data: { sku: 'NH-1' }, textMatchStyle: 'exactCase' }));
    const rows = okData(await call(`/fetch/P/${p.id}/history`));
    assert.deepEqual(
      rows.map((x: any) => [x.action, x.changes.label?.new ?? null]),
      [
        ['ADD', 'one'],
        ['UPDATE', 'new one'],
      ],
    );
  });

  test('history rows of such a type written by an earlier version are answered by no read', async () => {
    await h.db.query(
      `INSERT INTO record_history (partition_id, type_code, record_id, action, changed_fields, changes, record_version)
       VALUES ($1, 'IMC', 987654, 'UPDATE', '{validationState}', '{"old":{"validationState":"INVALID"}}', 2)`,
      [h.partitionId],
    );
    assert.deepEqual(
      okData(
        await call('/history.fetch', { data: { fieldName: 'typeCode', operator: 'equals', value: 'IMC' } }),
      ),
      [],
    );
    expectError(await call('/fetch/IMC/987654/history'), 404, -1);
  });

  test('a LOADDATA_FILE job cancelled before it ran ends its upload status record CANCELLED at once', async () => {
    const started = await send(h, '/loaddata.file/P/async', {
      body: form({}, { field: 'fileName', name: 'q.csv', data: 'sku,label\nNH-Q,x\n' }),
    });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    const { uploadStatusId, jstId } = started.body.response.data[0];
    const statusOf = async () => okData(await call(`/uploadmanager.status/${uploadStatusId}`))[0];
    assert.equal((await statusOf()).status, 'PROCESSING');
    const [job] = okData(await call(`/admin.canceljst/${jstId}`));
    assert.equal(job.status, 'CANCELLED');
    const status = await statusOf();
    assert.deepEqual(
      [status.status, status.jstId, status.loadedRecords],
      ['CANCELLED', jstId, 0],
      JSON.stringify(status),
    );
    assert.ok(status.finishDate !== null && status.message);
    // Its file stays only until the next maintenance pass removes it (no row refers to it then).
    const key = await h.db.query<{ blob_key: string | null }>(
      'SELECT blob_key FROM upload_status WHERE partition_id = $1 AND id = $2',
      [h.partitionId, uploadStatusId],
    );
    const { closeAbandonedLoads } = await import('../../src/modules/files/upload-status.ts');
    const { createBlobStore } = await import('../../src/db/blob-store.ts');
    await closeAbandonedLoads(h.db, createBlobStore(h.db, h.config.blobStore), h.config.syncTimeoutSeconds);
    const after = await h.db.query<{ blob_key: string | null }>(
      'SELECT blob_key FROM upload_status WHERE partition_id = $1 AND id = $2',
      [h.partitionId, uploadStatusId],
    );
    assert.equal(after.rows[0]!.blob_key, null);
    const oldKey = key.rows[0]!.blob_key;
    if (oldKey !== null) {
      const left = await h.db.query('SELECT 1 FROM blobs WHERE partition_id = $1 AND blob_key = $2', [
        h.partitionId,
        oldKey,
      ]);
      assert.equal(left.rows.length, 0);
    }
    assert.equal((await statusOf()).status, 'CANCELLED');
  });
});
