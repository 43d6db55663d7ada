// /loaddata.file over real HTTP on both databases: a CSV with BOM, quoting and a bad row through
// the /loaddata loader; delimiters; join fields; replaceSoftDeleted; syncOnTargetTable; `?name=`;
// the async variant (a LOADDATA_FILE job finishing while another job runs, parallel loads); the
// upload status record; refusals (type, options, permission); partition isolation; the synchronous
// time-out (503/-100, whole chunks only).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminPrincipal, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { admin, assertError, assertOk, form, runnerFor, send, waitForJob } from '../jobs/helpers.ts';
import { JobStopped, type JobRunner } from '../../src/jobs/runner.ts';
import { loadFileJobKind } from '../../src/modules/files/loadfile-job.ts';
import {
  closeAbandonedLoads,
  uploadHeartbeat,
  type UploadStatusRow,
} from '../../src/modules/files/upload-status.ts';
import { createBlobStore } from '../../src/db/blob-store.ts';
import { handWrittenXlsx } from '../helpers/xlsx.ts';
import ExcelJS from 'exceljs';

const BOM = '\uFEFF';

describe('file loads', () => {
  let h: Harness;
  let runner: JobRunner;
  const viewer = { user: 'viewer', password: 'viewer-password-1' };
  let slowRelease: () => void = () => {};

  before(async () => {
    h = await startHarness();
    await h.newUser(viewer.user, viewer.password);
    runner = runnerFor(h, {
      TEST_BLOCK: {
        maxAttempts: 1,
        async run(ctx) {
          await new Promise<void>((r) => (slowRelease = r));
          await ctx.progress({ progress: 50 });
          return {};
        },
      },
    }).start();
  });
  after(async () => {
    slowRelease();
    await runner.stop();
    await h.close();
  });

  const load = (
    code: string,
    csv: string | Buffer,
    fields: Record<string, string> = {},
    query = '',
    who = admin,
  ) =>
    send(h, `/loaddata.file/${code}${query}`, {
      who,
      body: form(fields, { field: 'fileName', name: 'data.csv', data: csv }),
    });

  async function products(prefix: string) {
    const r = await h.db.query<Record<string, any>>(
      `SELECT sku, label, currency, attribute1 FROM products WHERE partition_id = $1 AND sku LIKE $2 ORDER BY sku`,
      [h.partitionId, `${prefix}%`],
    );
    return r.rows;
  }

  test('a CSV with BOM, quoting, embedded newlines and a bad row', async () => {
    const p = uniqueName('q');
    const csv =
      `${BOM}sku;label;currency;attribute1\r\n` +
      `${p}-1;"Semi; colon";EUR;plain\r\n` +
      `${p}-2;"Line\nbreak";USD;"say ""hi"""\r\n` +
      `${p}-3;too;few\r\n` + // a bad row: three values under four columns
      `${p}-4;;CHF;"'; DROP TABLE products; --"\r\n`;
    const res = assertOk(await load('P', csv))[0];
    assert.deepEqual(
      { loaded: res.loadedRecords, invalid: res.invalidRecords, total: res.totalRecords },
      { loaded: 3, invalid: 1, total: 4 },
    );
    assert.ok(Number.isInteger(res.uploadStatusId));
    const rows = await products(p);
    assert.deepEqual(
      rows.map((r) => [r.sku, r.label, r.currency, r.attribute1]),
      [
        [`${p}-1`, 'Semi; colon', 'EUR', 'plain'],
        [`${p}-2`, 'Line\nbreak', 'USD', 'say "hi"'],
        [`${p}-4`, '', 'CHF', "'; DROP TABLE products; --"],
      ],
    );
    const status = assertOk(await send(h, `/uploadmanager.status/${res.uploadStatusId}`))[0];
    assert.equal(status.status, 'FINISHED');
    assert.equal(status.fileName, 'data.csv');
    assert.equal(status.typeCode, 'P');
    assert.equal(status.errors.length, 1);
    assert.equal(status.errors[0].row, 2);
    assert.match(status.errors[0].message, /3 values/);
    // The stored file is gone once the load ended.
    const blobs = await h.db.query(
      'SELECT 1 FROM upload_status WHERE partition_id = $1 AND id = $2 AND blob_key IS NULL',
      [h.partitionId, res.uploadStatusId],
    );
    assert.equal(blobs.rows.length, 1);
    // Another user cannot read the status record.
    assertError(await send(h, `/uploadmanager.status/${res.uploadStatusId}`, { who: viewer }), 404, -1);
  });

  test('an XLSX error cell (#N/A, #DIV/0!) is its text, as in a CSV: a typed field refuses it, nothing is cleared', async () => {
    const p = uniqueName('xe');
    const json = (body: unknown) => ({
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    assertOk(await send(h, '/add/PAM', json({ data: { fieldName: 'attribute9', fieldType: 'NUMERIC' } })));
    assertOk(await send(h, '/add/P', json({ data: { sku: `${p}-1`, label: 'keep', attribute9: 5 } })));
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet('errors');
    ws.addRow(['sku', 'label', 'attribute9']);
    ws.addRow([`${p}-1`, { error: '#N/A' }, { error: '#DIV/0!' }]);
    ws.addRow([`${p}-2`, { error: '#REF!' }, 7]);
    const res = assertOk(
      await load('P', Buffer.from(await wb.xlsx.writeBuffer()), { detectJoinFields: 'true' }),
    )[0];
    assert.deepEqual([res.loadedRecords, res.invalidRecords], [1, 1]);
    const rows = await h.db.query<Record<string, any>>(
      `SELECT sku, label, attribute9 FROM products WHERE partition_id = $1 AND sku LIKE $2 ORDER BY sku`,
      [h.partitionId, `${p}%`],
    );
    assert.deepEqual(
      rows.rows.map((r) => [r.sku, r.label, r.attribute9]),
      [
        [`${p}-1`, 'keep', '5'],
        [`${p}-2`, '#REF!', '7'],
      ],
    );
    assertOk(await send(h, '/delete/PAM', json({ data: { fieldName: 'attribute9' } })));
  });

  test('tab and comma delimiters; detectJoinFields updates; joinFields as a list', async () => {
    const p = uniqueName('d');
    assertOk(await load('P', `sku\tlabel\n${p}-1\tOne\n${p}-2\tTwo\n`));
    const upd = assertOk(
      await load('P', `sku,label\n${p}-1,Uno\n${p}-3,Tres\n`, { detectJoinFields: 'true' }),
    )[0];
    assert.equal(upd.loadedRecords, 2);
    const joined = assertOk(await load('P', `sku,currency\n${p}-2,SEK\n`, { joinFields: 'sku' }))[0];
    assert.equal(joined.loadedRecords, 1);
    const rows = await products(p);
    assert.deepEqual(
      rows.map((r) => [r.sku, r.label, r.currency]),
      [
        [`${p}-1`, 'Uno', null],
        [`${p}-2`, 'Two', 'SEK'],
        [`${p}-3`, 'Tres', null],
      ],
    );
    // A delimiter given explicitly wins over detection.
    const given = assertOk(await load('P', `sku;label\n${p}-4;"a,b"\n`, {}, '?delimiter=;'))[0];
    assert.equal(given.loadedRecords, 1);
  });

  test('replaceSoftDeleted needs join fields; it replaces soft-deleted rows instead of restoring them', async () => {
    const t = uniqueName('px');
    assertError(await load('PX', `name,sku,attribute1\n${t},A,1\n`, { replaceSoftDeleted: 'true' }), 400, -4);
    assertOk(await load('PX', `name,sku,attribute1,attribute2\n${t},A,a1,a2\n${t},B,b1,b2\n`));
    await h.db.query(
      `UPDATE product_extensions SET deleted_at = now() WHERE partition_id = $1 AND name = $2`,
      [h.partitionId, t],
    );
    // A: restored (attribute2 kept); B: replaced (attribute2 emptied).
    assertOk(await load('PX', `name,sku,attribute1\n${t},A,a1new\n`, { detectJoinFields: 'true' }));
    assertOk(
      await load('PX', `name,sku,attribute1\n${t},B,b1new\n`, {
        detectJoinFields: 'true',
        replaceSoftDeleted: 'true',
      }),
    );
    const r = await h.db.query<Record<string, any>>(
      `SELECT sku, attribute1, attribute2, deleted_at FROM product_extensions
        WHERE partition_id = $1 AND name = $2 ORDER BY sku`,
      [h.partitionId, t],
    );
    assert.deepEqual(
      r.rows.map((x) => [x.sku, x.attribute1, x.attribute2, x.deleted_at]),
      [
        ['A', 'a1new', 'a2', null],
        ['B', 'b1new', null, null],
      ],
    );
  });

  test('?name= fills the table of rows without a name column and restricts rows with one', async () => {
    const t = uniqueName('px');
    const res = assertOk(await load('PX', `sku,attribute1\nS1,x\nS2,y\n`, {}, `?name=${t}`))[0];
    assert.equal(res.loadedRecords, 2);
    const other = uniqueName('px');
    const mixed = assertOk(await load('PX', `name,sku\n${t},S3\n${other},S4\n`, {}, `?name=${t}`))[0];
    assert.deepEqual([mixed.loadedRecords, mixed.invalidRecords, mixed.totalRecords], [1, 1, 2]);
    const status = assertOk(await send(h, `/uploadmanager.status/${mixed.uploadStatusId}`))[0];
    assert.match(status.errors[0].message, /belongs to table/);
    assertError(await load('P', `sku\nX\n`, {}, `?name=${t}`), 400, -4);
  });

  test('syncOnTargetTable deletes the rows of that table the file does not hold', async () => {
    const t = uniqueName('px');
    const keep = uniqueName('px');
    assertOk(await load('PX', `name,sku\n${t},A\n${t},B\n${t},C\n${keep},A\n`));
    const res = assertOk(
      await load('PX', `name,sku,attribute1\n${t},A,1\n${t},C,3\n`, {
        detectJoinFields: 'true',
        syncOnTargetTable: 'true',
      }),
    )[0];
    assert.deepEqual([res.loadedRecords, res.deletedRecords], [2, 1]);
    const live = await h.db.query<{ name: string; sku: string }>(
      `SELECT name, sku FROM product_extensions WHERE partition_id = $1 AND name = ANY($2::text[]) AND deleted_at IS NULL
        ORDER BY name = $3, sku`,
      [h.partitionId, [t, keep], keep],
    );
    assert.deepEqual(
      live.rows.map((r) => `${r.name === t ? 't' : 'keep'}:${r.sku}`),
      ['t:A', 't:C', 'keep:A'],
    );
    // With a refused row nothing is deleted (the row may have meant a record that exists).
    const bad = assertOk(
      await load('PX', `name,sku\n${t},A\n${t}\n`, { detectJoinFields: 'true', syncOnTargetTable: 'true' }),
    )[0];
    assert.deepEqual([bad.invalidRecords, bad.deletedRecords], [1, 0]);
  });

  test('syncOnTargetTable meeting a record the loader may not change deletes nothing; on UG it is refused', async () => {
    const json = { 'content-type': 'application/json' };
    const group = uniqueName('grp');
    assertOk(
      await send(h, '/add/UG', { body: JSON.stringify({ data: { uniqueName: group } }), headers: json }),
    );
    const locked = uniqueName('SY-EDT');
    assertOk(
      await send(h, '/add/P', {
        body: JSON.stringify({ data: { sku: locked, userGroupEdit: group } }),
        headers: json,
      }),
    );
    const integ = { user: 'sync_integ', password: 'sync-integ-password-1' };
    await h.newUser(integ.user, integ.password, ['DATAINTEGRATION']);
    const fresh = uniqueName('SY-NEW');
    const r = assertOk(
      await load(
        'P',
        `sku,label\n${fresh},n\n`,
        { detectJoinFields: 'true', syncOnTargetTable: 'true' },
        '',
        integ,
      ),
    )[0];
    assert.deepEqual([r.loadedRecords, r.deletedRecords], [1, 0]);
    assert.equal((await products(fresh)).length, 1);
    assert.equal((await products(locked)).length, 1);
    const [status] = assertOk(await send(h, `/uploadmanager.status/${r.uploadStatusId}`, { who: integ }));
    assert.equal(status.status, 'FINISHED');
    assert.match(
      JSON.stringify(status),
      /nothing deleted, because Not allowed to change \d+\.P \(user group\)/,
    );
    // User groups are deleted by accountmanager.deletegroup only: refused before anything is loaded.
    const other = uniqueName('grp');
    const ug = await load('UG', `uniqueName,label\n${other},x\n`, { syncOnTargetTable: 'true' });
    assertError(ug, 400, -4);
    assert.ok(ug.body.response.errors.syncOnTargetTable, JSON.stringify(ug.body));
    const made = await h.db.query('SELECT 1 FROM user_groups WHERE partition_id = $1 AND unique_name = $2', [
      h.partitionId,
      other,
    ]);
    assert.equal(made.rows.length, 0);
  });

  test('a CSV malformed past the first chunk loads nothing, synchronously and as a job', async () => {
    for (const path of ['/loaddata.file/P', '/loaddata.file/P/async']) {
      const p = uniqueName('m');
      const good = Array.from({ length: 12_000 }, (_, i) => `${p}-${i},label ${i}\n`).join('');
      const csv = `sku,label\n${good}${p}-bad,"never closed\n${p}-after,x\n`;
      const r = await send(h, path, { body: form({}, { field: 'fileName', name: 'm.csv', data: csv }) });
      let statusId: number;
      if (path.endsWith('/async')) {
        const started = assertOk(r)[0];
        const job = await waitForJob(h, started.jstId);
        assert.equal(job.status, 'FAILED', JSON.stringify(job));
        statusId = started.uploadStatusId;
      } else {
        assertError(r, 400, -4);
        assert.match(r.body.response.errors.fileName.errorMessage, /CSV line \d+: Quote Not Closed/);
        const last = await h.db.query<{ id: number }>(
          `SELECT max(id) AS id FROM upload_status WHERE partition_id = $1`,
          [h.partitionId],
        );
        statusId = Number(last.rows[0]!.id);
      }
      assert.equal((await products(p)).length, 0, path);
      const status = assertOk(await send(h, `/uploadmanager.status/${statusId}`))[0];
      assert.deepEqual([status.status, status.loadedRecords ?? 0], ['FAILED', 0], path);
    }
  });

  test('an XLSX whose worksheet breaks past the first chunk: a -4 saying what stays committed, status FAILED', async () => {
    for (const path of ['/loaddata.file/P', '/loaddata.file/P/async']) {
      const p = uniqueName('x');
      const rows = [
        ['sku', 'label'],
        ...Array.from({ length: 12_000 }, (_, i) => [`${p}-${i}`, `label ${i}`]),
      ];
      const file = handWrittenXlsx(rows, 11_000);
      const r = await send(h, path, { body: form({}, { field: 'fileName', name: 'x.xlsx', data: file }) });
      let statusId: number;
      if (path.endsWith('/async')) {
        const started = assertOk(r)[0];
        const job = await waitForJob(h, started.jstId);
        assert.equal(job.status, 'FAILED', JSON.stringify(job));
        assert.match(JSON.stringify(job), /not a readable XLSX workbook/);
        statusId = started.uploadStatusId;
      } else {
        assertError(r, 400, -4);
        assert.match(
          r.body.response.errors.fileName.errorMessage,
          /^not a readable XLSX workbook: the worksheet cannot be read past row \d+/,
        );
        assert.match(
          r.body.response.data,
          /; 10000 rows before it stay committed \(10000 loaded, in whole chunks\)$/,
        );
        const last = await h.db.query<{ id: number }>(
          `SELECT max(id) AS id FROM upload_status WHERE partition_id = $1`,
          [h.partitionId],
        );
        statusId = Number(last.rows[0]!.id);
      }
      assert.equal((await products(p)).length, 10_000, path);
      const status = assertOk(await send(h, `/uploadmanager.status/${statusId}`))[0];
      assert.equal(status.status, 'FAILED', path);
    }
  });

  test('a CSV that is not UTF-8 loads nothing and names the line (Windows-1252, UTF-16)', async () => {
    const p = uniqueName('u');
    const good = Array.from({ length: 12_000 }, (_, i) => `${p}-${i},label ${i}\n`).join('');
    // "Café" saved as Windows-1252 (é = 0xE9) past the first chunk: line 12,002, no row written.
    const csv = Buffer.concat([
      Buffer.from(`sku,label\n${good}${p}-x,Caf`),
      Buffer.from([0xe9]),
      Buffer.from('\n'),
    ]);
    const r = await load('P', csv);
    assertError(r, 400, -4);
    assert.match(r.body.response.errors.fileName.errorMessage, /^CSV line 12002: not UTF-8 text/);
    assert.equal((await products(p)).length, 0);
    // A file saved as UTF-16 ("Unicode text") is refused at its first line; a UTF-8 one with the
    // same text loads, é included.
    const utf16 = Buffer.from(`\uFEFFsku,label\n${p}-16,Café\n`, 'utf16le');
    assert.match((await load('P', utf16)).body.response.errors.fileName.errorMessage, /^CSV line 1: /);
    assert.equal(assertOk(await load('P', `sku,label\n${p}-8,Café\n`))[0].loadedRecords, 1);
    assert.deepEqual(
      (await products(p)).map((r) => r.label),
      ['Café'],
    );
  });

  test('refusals: type, options, permission, no file', async () => {
    assertError(await load('CRCS', 'a\n1\n'), 400, -4);
    // A code no type has is unknown (404, as /fetch answers); an unknown form field is named.
    assertError(await load('XYZ', 'a\n1\n'), 404, -1);
    const bogus = await load('P', 'sku\nx\n', { bogus: '1', detectJoinFields: 'true' });
    assertError(bogus, 400, -4);
    assert.ok(bogus.body.response.errors.bogus, JSON.stringify(bogus.body));
    assertError(await load('P', 'sku\nx\n', { detectJoinFields: 'maybe' }), 400, -4);
    // A load option sent as a query parameter would be ignored: a -4 naming it.
    const query = await load('P', 'sku\nx\n', {}, '?detectJoinFields=true');
    assertError(query, 400, -4);
    assert.ok(query.body.response.errors.detectJoinFields, JSON.stringify(query.body));
    // A join field the file lacks is named as the form field that gave it.
    const join = await load('P', 'sku\nx\n', { joinFields: 'bogus' });
    assertError(join, 400, -4);
    assert.deepEqual(Object.keys(join.body.response.errors), ['joinFields.0']);
    assertError(await load('P', 'sku\nx\n', {}, '', viewer), 403, -3);
    assertError(await send(h, '/loaddata.file/P', { body: form({ detectJoinFields: 'true' }) }), 400, -4);
    assertError(await load('P', 'nosuchfield\nx\n'), 400, -4);
    // One file, in fileName (or file): a second file part, or a file in another field, is named and
    // nothing is loaded.
    const files = (...parts: [string, string, string][]) => {
      const f = new FormData();
      for (const [field, name, data] of parts) f.append(field, new Blob([data]), name);
      return send(h, '/loaddata.file/P', { body: f });
    };
    const sku = uniqueName('TWO');
    for (const [r, field] of [
      [
        await files(['fileName', 'a.csv', `sku\n${sku}-A\n`], ['fileName', 'b.csv', `sku\n${sku}-B\n`]),
        'fileName',
      ],
      [await files(['fileName', 'a.csv', `sku\n${sku}-A\n`], ['other', 'b.csv', `sku\n${sku}-B\n`]), 'other'],
      [await files(['other', 'b.csv', `sku\n${sku}-B\n`], ['fileName', 'a.csv', `sku\n${sku}-A\n`]), 'other'],
    ] as const) {
      assertError(r, 400, -4);
      assert.ok(r.body.response.errors[field], JSON.stringify(r.body));
    }
    const loaded = await h.db.query(`SELECT 1 FROM products WHERE partition_id = $1 AND sku LIKE $2`, [
      h.partitionId,
      `${sku}%`,
    ]);
    assert.equal(loaded.rows.length, 0);
    const anon = await fetch(`${h.url}${h.config.basePath}/${h.partition}/loaddata.file/P`, {
      method: 'POST',
      body: form({}, { field: 'fileName', name: 'x.csv', data: 'sku\nx\n' }),
    });
    assert.equal(anon.status, 401);
  });

  test('async: a LOADDATA_FILE job finishes while another job runs; parallel loads', async () => {
    const blockerJob = await h.db.query<{ id: number }>(
      `INSERT INTO jobs (partition_id, job_name, tracker_type, created_by)
       SELECT $1, 'blocker', 'TEST_BLOCK', id FROM users WHERE partition_id = $1 AND login_name = 'admin' RETURNING id`,
      [h.partitionId],
    );
    const blocker = blockerJob.rows[0]!.id;
    await waitForJob(h, blocker, (j) => j.status === 'PROCESSING');
    const p = uniqueName('a');
    const [a, b] = await Promise.all(
      [1, 2].map((n) =>
        send(h, '/loaddata.file/P/async', {
          body: form(
            {},
            { field: 'fileName', name: `a${n}.csv`, data: `sku,label\n${p}-${n}-1,x\n${p}-${n}-2,y\n` },
          ),
        }),
      ),
    );
    const started = [assertOk(a!)[0], assertOk(b!)[0]];
    for (const s of started) {
      assert.ok(Number.isInteger(s.uploadStatusId) && Number.isInteger(s.jstId));
    }
    // JOB_CONCURRENCY is 2: one load runs beside the blocker, then the other.
    for (const s of started) {
      const job = await waitForJob(h, s.jstId);
      assert.equal(job.status, 'FINISHED', JSON.stringify(job));
      assert.equal(job.trackerType, 'LOADDATA_FILE');
      assert.equal(job.calculationResults.loadedRecords, 2);
      const status = assertOk(await send(h, `/uploadmanager.status/${s.uploadStatusId}`))[0];
      assert.deepEqual([status.status, status.loadedRecords, status.jstId], ['FINISHED', 2, s.jstId]);
    }
    assert.equal(assertOk(await send(h, `/admin.fetchjst/${blocker}`))[0].status, 'PROCESSING');
    slowRelease();
    assert.equal((await waitForJob(h, blocker)).status, 'FINISHED');
    assert.equal((await products(p)).length, 4);
  });

  test('maintenance: a load whose job ended without it is closed and its file removed', async () => {
    const blobs = createBlobStore(h.db, h.config.blobStore);
    const key = blobs.newKey();
    await blobs.write(h.partitionId, key, [Buffer.from('sku\nx\n')], { maxBytes: 100 });
    const r = await h.db.query<{ id: number }>(
      `WITH j AS (INSERT INTO jobs (partition_id, job_name, tracker_type, status) VALUES ($1, 'x', 'LOADDATA_FILE', 'CANCELLED')
                  RETURNING id)
       INSERT INTO upload_status (partition_id, type_code, status, job_id, blob_key)
       SELECT $1, 'P', 'PROCESSING', j.id, $2 FROM j RETURNING id`,
      [h.partitionId, key],
    );
    assert.ok((await closeAbandonedLoads(h.db, blobs, 180)) >= 1);
    const status = assertOk(await send(h, `/uploadmanager.status/${r.rows[0]!.id}`))[0];
    assert.equal(status.status, 'CANCELLED');
    const left = await h.db.query('SELECT 1 FROM blobs WHERE partition_id = $1 AND blob_key = $2', [
      h.partitionId,
      key,
    ]);
    assert.equal(left.rows.length, 0);
  });

  test('maintenance: a synchronous load is abandoned only when silent for twice the time-out', async () => {
    const blobs = createBlobStore(h.db, h.config.blobStore);
    const statusOf = async (id: number) => assertOk(await send(h, `/uploadmanager.status/${id}`))[0].status;
    // Both began 20 minutes ago (time-out 180 s): one's upload is still arriving (touched a moment
    // ago), the other's process died.
    const ids: number[] = [];
    for (const activeAt of ['now()', `now() - interval '20 minutes'`]) {
      const key = blobs.newKey();
      await blobs.write(h.partitionId, key, [Buffer.from('sku\nx\n')], { maxBytes: 100 });
      const r = await h.db.query<{ id: number }>(
        `INSERT INTO upload_status (partition_id, type_code, status, blob_key, created_at, active_at)
         VALUES ($1, 'P', 'UPLOADING', $2, now() - interval '20 minutes', ${activeAt}) RETURNING id`,
        [h.partitionId, key],
      );
      ids.push(r.rows[0]!.id);
    }
    // The upload's heartbeat (called as bytes arrive) keeps the first one alive.
    const row = await h.db.query<UploadStatusRow>('SELECT * FROM upload_status WHERE id = $1', [ids[0]]);
    await h.db.query(`UPDATE upload_status SET active_at = now() - interval '20 minutes' WHERE id = $1`, [
      ids[0],
    ]);
    uploadHeartbeat(h.db, row.rows[0]!, 0)();
    for (let i = 0; i < 50; i++) {
      const a = await h.db.query(
        `SELECT 1 FROM upload_status WHERE id = $1 AND active_at > now() - interval '1 minute'`,
        [ids[0]],
      );
      if (a.rows.length > 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await closeAbandonedLoads(h.db, blobs, 180);
    assert.equal(await statusOf(ids[0]!), 'UPLOADING');
    assert.equal(await statusOf(ids[1]!), 'FAILED');
  });

  test('an interrupted LOADDATA_FILE job is retried and resumes after its checkpoint', async () => {
    const p = uniqueName('r');
    const blobs = createBlobStore(h.db, h.config.blobStore);
    const key = blobs.newKey();
    const csv = `sku,label\n${[0, 1, 2, 3, 4].map((i) => `${p}-${i},x`).join('\n')}\n`;
    await blobs.write(h.partitionId, key, [Buffer.from(csv)], { maxBytes: 10_000 });
    // A load whose node died after committing rows 0-1 (its checkpoint), heartbeat long stale.
    const r = await h.db.query<{ job: number; status: number }>(
      `WITH u AS (SELECT id FROM users WHERE partition_id = $1 AND login_name = 'admin'),
            s AS (INSERT INTO upload_status (partition_id, type_code, status, blob_key, file_name, size, created_by)
                  SELECT $1, 'P', 'PROCESSING', $2, 'r.csv', $3, u.id FROM u RETURNING id, created_by)
       INSERT INTO jobs (partition_id, job_name, tracker_type, status, processing_node, heartbeat_at, attempts,
                         max_attempts, parameters, checkpoint, created_by)
       SELECT $1, 'resume', 'LOADDATA_FILE', 'PROCESSING', 'dead-node', now() - interval '1 hour', 1, 3,
              jsonb_build_object('uploadStatusId', s.id, 'typeCode', 'P', 'options',
                jsonb_build_object('joinFields', '[]'::jsonb, 'detectJoinFields', false,
                                   'replaceSoftDeleted', false, 'syncOnTargetTable', false)),
              '{"rows": 2, "loaded": 2, "invalid": 0, "errors": [], "mark": "2020-01-01T00:00:00Z"}', s.created_by
         FROM s RETURNING id AS job, (SELECT id FROM s) AS status`,
      [h.partitionId, key, Buffer.byteLength(csv)],
    );
    await runner.sweep();
    const job = await waitForJob(h, r.rows[0]!.job);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    assert.ok(job.messages.some((m: any) => /interrupted: node dead-node/.test(m.text)));
    assert.deepEqual([job.calculationResults.loadedRecords, job.calculationResults.totalRecords], [5, 5]);
    // Rows 0-1 were the dead attempt's: the retry skipped them.
    assert.deepEqual(
      (await products(p)).map((x) => x.sku),
      [2, 3, 4].map((i) => `${p}-${i}`),
    );
    const status = assertOk(await send(h, `/uploadmanager.status/${r.rows[0]!.status}`))[0];
    assert.deepEqual([status.status, status.loadedRecords], ['FINISHED', 5]);
  });

  test('a LOADDATA_FILE job cancelled between chunks: its status record counts the chunks that stay', async () => {
    const p = uniqueName('c');
    const blobs = createBlobStore(h.db, h.config.blobStore);
    const key = blobs.newKey();
    let csv = 'sku,label\n';
    for (let i = 0; i < 25_000; i++) csv += `${p}-${i},x\n`;
    await blobs.write(h.partitionId, key, [Buffer.from(csv)], { maxBytes: 10_000_000 });
    const s = await h.db.query<{ id: number }>(
      `INSERT INTO upload_status (partition_id, type_code, status, blob_key, file_name, size)
       VALUES ($1, 'P', 'PROCESSING', $2, 'c.csv', $3) RETURNING id`,
      [h.partitionId, key, Buffer.byteLength(csv)],
    );
    const options = {
      joinFields: [],
      detectJoinFields: false,
      replaceSoftDeleted: false,
      syncOnTargetTable: false,
    };
    let calls = 0;
    // The cancel is seen when the second chunk has committed (as the runner's progress does).
    const ctx = {
      job: {
        partition_id: h.partitionId,
        parameters: { uploadStatusId: s.rows[0]!.id, typeCode: 'P', options },
        checkpoint: null,
      },
      principal: adminPrincipal(h),
      progress: () => (++calls === 2 ? Promise.reject(new JobStopped('cancel')) : Promise.resolve()),
    };
    await assert.rejects(loadFileJobKind(h.db, blobs).run(ctx as any), JobStopped);
    const status = assertOk(await send(h, `/uploadmanager.status/${s.rows[0]!.id}`))[0];
    assert.deepEqual(
      [status.status, status.loadedRecords, status.totalRecords],
      ['CANCELLED', 20_000, 20_000],
    );
    assert.equal((await products(p)).length, 20_000);
  });

  test('partition isolation: another partition neither sees nor changes these rows', async () => {
    const p = uniqueName('iso');
    const res = assertOk(await load('P', `sku,label\n${p},mine\n`))[0];
    const other = await startHarness({ shareDbWith: h });
    try {
      const theirs = assertOk(
        await send(other, '/loaddata.file/P', {
          body: form(
            { detectJoinFields: 'true' },
            { field: 'fileName', name: 'x.csv', data: `sku,label\n${p},theirs\n` },
          ),
        }),
      )[0];
      assert.equal(theirs.loadedRecords, 1);
      assertError(await send(other, `/uploadmanager.status/${res.uploadStatusId}`), 404, -1);
    } finally {
      await other.close();
    }
    assert.equal((await products(p))[0]!.label, 'mine');
  });
});

describe('file loads: the synchronous time-out', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { SYNC_TIMEOUT_SECONDS: '1' } });
  });
  after(() => h.close());

  test('a load past SYNC_TIMEOUT_SECONDS answers 503/-100 and keeps whole chunks only', async () => {
    const p = uniqueName('t');
    let csv = 'sku,label\n';
    for (let i = 0; i < 300_000; i++) csv += `${p}-${i},label ${i}\n`;
    const r = await send(h, '/loaddata.file/P', {
      body: form({}, { field: 'fileName', name: 'big.csv', data: csv }),
    });
    assertError(r, 503, -100);
    assert.doesNotMatch(r.body.response.data, /transaction was rolled back$/);
    const status = await h.db.query<{
      status: string;
      message: string;
      loaded_records: number;
      total_records: number;
    }>(
      `SELECT status, message, loaded_records, total_records FROM upload_status
        WHERE partition_id = $1 ORDER BY id DESC LIMIT 1`,
      [h.partitionId],
    );
    const row = status.rows[0]!;
    assert.equal(row.status, 'FAILED');
    assert.match(row.message, /time-out/);
    const n = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM products WHERE partition_id = $1 AND sku LIKE $2',
      [h.partitionId, `${p}-%`],
    );
    // How many chunks commit within the second depends on the machine (none on a loaded one); what
    // must hold is that the load stopped, that only whole 10,000-row chunks were kept, and that the
    // status record (and the answer) count exactly those.
    assert.ok(n.rows[0]!.n < 300_000, String(n.rows[0]!.n));
    assert.equal(n.rows[0]!.n % 10_000, 0);
    assert.deepEqual([Number(row.loaded_records), Number(row.total_records)], [n.rows[0]!.n, n.rows[0]!.n]);
    assert.ok(r.body.response.data.includes(`${n.rows[0]!.n} loaded`), r.body.response.data);
  });
});
