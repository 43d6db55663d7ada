// /loaddata.file/LTV|MLTV|JLTV over real HTTP on both databases: CSV files into SIMPLE (REAL and
// DATE values), RANGE, MATRIX2 and JSON tables through the lookup table manager's loader, values
// checked by /lookuptablemanager.fetch afterwards; the table named by ?name=, ?tableId= or a
// lookupTable column; per-row errors with the file's row numbers (bad numbers, dates, JSON,
// overlapping ranges, tables of another kind); syncOnTargetTable; the async variant and a resumed
// job; refusals (kind, naming, permissions) and another partition's table.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import {
  admin,
  assertError,
  assertOk,
  form,
  runnerFor,
  send,
  waitForJob,
  type Who,
} from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';
import { createBlobStore } from '../../src/db/blob-store.ts';
import { FILE_LOAD_CODES } from '../../src/modules/files/loadfile.ts';
import { TO_DO_CODE } from '../../src/engine/registry-master-more.ts';

const M = '/lookuptablemanager';

describe('file loads of lookup table values', () => {
  let h: Harness;
  let runner: JobRunner;
  const viewer = { user: 'viewer', password: 'viewer-password-1' };
  const integrator = { user: 'integrator', password: 'integrator-password-1' };

  before(async () => {
    h = await startHarness();
    await h.newUser(viewer.user, viewer.password);
    await h.newUser(integrator.user, integrator.password, ['DATAINTEGRATION']);
    runner = runnerFor(h).start();
  });
  after(async () => {
    await runner.stop();
    await h.close();
  });

  const json = (path: string, body: unknown = {}, on: Harness = h) =>
    send(on, path, { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

  async function newTable(type: string, valueType?: string, on: Harness = h) {
    const name = uniqueName(type.toLowerCase());
    const [t] = assertOk(
      await json(`${M}.add`, { data: { uniqueName: name, type, ...(valueType ? { valueType } : {}) } }, on),
    );
    return { id: t.id as number, name };
  }

  /** The values of a table as fetched, keyed by `key` (a field, or a function of the row). */
  async function values(id: number, key: (r: any) => string = (r) => r.name) {
    const rows = assertOk(await json(`${M}.fetch/${id}`)) as any[];
    return new Map(rows.map((r) => [key(r), r]));
  }

  const load = (
    code: string,
    csv: string,
    fields: Record<string, string> = {},
    query = '',
    who: Who = admin,
    on: Harness = h,
  ) =>
    send(on, `/loaddata.file/${code}${query}`, {
      who,
      body: form(fields, { field: 'fileName', name: 'values.csv', data: csv }),
    });

  const counts = (r: any) => [r.loadedRecords, r.invalidRecords, r.totalRecords];
  const statusOf = async (id: number) => assertOk(await send(h, `/uploadmanager.status/${id}`))[0];

  test('LTV into a SIMPLE REAL table by ?name=: numbers converted, a bad row listed with its row number', async () => {
    const t = await newTable('SIMPLE', 'REAL');
    const res = assertOk(
      await load('LTV', 'name;value\r\neu;0.25\r\nus;abc\r\nch;1e1\r\nuk;\r\n', {}, `?name=${t.name}`),
    )[0];
    assert.deepEqual(counts(res), [3, 1, 4]);
    const status = await statusOf(res.uploadStatusId);
    assert.deepEqual([status.status, status.typeCode, status.targetName], ['FINISHED', 'LTV', t.name]);
    assert.equal(status.errors.length, 1);
    assert.deepEqual([status.errors[0].row, status.errors[0].field], [1, 'value']);
    assert.match(status.errors[0].message, /"abc" is not a number/);
    const v = await values(t.id);
    assert.deepEqual([...v.keys()].sort(), ['ch', 'eu', 'uk']);
    assert.equal(Number(v.get('eu').value), 0.25);
    assert.equal(Number(v.get('ch').value), 10);
    assert.equal(v.get('uk').value, null);
  });

  test('empty cells are null in text tables too, as in numeric ones (a CSV cell, quoted or not)', async () => {
    const simple = await newTable('SIMPLE');
    assertOk(await load('LTV', 'name,value\ne1,\ne2,""\ne3,x\n', {}, `?name=${simple.name}`));
    const v = await values(simple.id);
    assert.deepEqual(
      ['e1', 'e2', 'e3'].map((k) => v.get(k).value),
      [null, null, 'x'],
    );
    const matrix = await newTable('MATRIX2');
    assertOk(await load('MLTV', 'key1,key2,attribute1,attribute2\na,b,,x\n', {}, `?name=${matrix.name}`));
    const [row] = (await values(matrix.id, (r) => r.key1)).values();
    assert.deepEqual([row.attribute1, row.attribute2], [null, 'x']);
  });

  test('LTV into a SIMPLE DATE table and a RANGE table by ?tableId=; overlapping ranges refused per row', async () => {
    const d = await newTable('SIMPLE', 'DATE');
    const dated = assertOk(
      await load('LTV', 'name,value\nstart,2026-01-31\nbad,2026-02-30\n', {}, `?tableId=${d.id}`),
    )[0];
    assert.deepEqual(counts(dated), [1, 1, 2]);
    const [err] = (await statusOf(dated.uploadStatusId)).errors;
    assert.deepEqual([err.row, err.field], [1, 'value']);
    assert.equal((await values(d.id)).get('start').value, '2026-01-31');

    const r = await newTable('RANGE', 'REAL');
    const res = assertOk(
      await load(
        'LTV',
        'name,lowerBound,upperBound,value\nsmall,,100,0\nmid,100,500,0.05\nclash,400,600,0.1\nbig,500,,0.1\n',
        {},
        `?tableId=${r.id}`,
      ),
    )[0];
    assert.deepEqual(counts(res), [3, 1, 4]);
    const [clash] = (await statusOf(res.uploadStatusId)).errors;
    assert.equal(clash.row, 2);
    assert.match(clash.message, /overlaps/);
    const v = await values(r.id);
    assert.deepEqual([...v.keys()].sort(), ['big', 'mid', 'small']);
    assert.deepEqual(
      [Number(v.get('mid').lowerBound), Number(v.get('mid').upperBound), Number(v.get('mid').value)],
      [100, 500, 0.05],
    );
  });

  test('MLTV into a MATRIX2 table (INT values), then by a lookupTable column across tables', async () => {
    const t = await newTable('MATRIX2', 'INT');
    const res = assertOk(
      await load(
        'MLTV',
        'key1,key2,attribute1,attribute2\nEU,A,1,2\nEU,B,3,x\nUS,A,5,\n',
        {},
        `?name=${t.name}`,
      ),
    )[0];
    assert.deepEqual(counts(res), [2, 1, 3]);
    const [bad] = (await statusOf(res.uploadStatusId)).errors;
    assert.deepEqual([bad.row, bad.field], [1, 'attribute2']);
    const key = (r: any) => `${r.key1}/${r.key2}`;
    let v = await values(t.id, key);
    assert.deepEqual([...v.keys()].sort(), ['EU/A', 'US/A']);
    assert.deepEqual([Number(v.get('EU/A').attribute1), Number(v.get('EU/A').attribute2)], [1, 2]);
    assert.equal(v.get('US/A').attribute2, null);

    // Rows naming their tables: two MATRIX2 tables, a SIMPLE table (another kind) and no table.
    const u = await newTable('MATRIX2', 'STRING');
    const simple = await newTable('SIMPLE');
    const mixed = assertOk(
      await load(
        'MLTV',
        `lookupTable,key1,key2,attribute1\n${t.id},EU,A,7\n${u.id},X,Y,text\n${simple.id},P,Q,1\n999999999,P,Q,1\n`,
        { detectJoinFields: 'true' },
      ),
    )[0];
    assert.deepEqual(counts(mixed), [2, 2, 4]);
    const errors = (await statusOf(mixed.uploadStatusId)).errors;
    assert.deepEqual(
      errors.map((e: any) => [e.row, e.field]),
      [
        [2, 'lookupTable'],
        [3, 'lookupTable'],
      ],
    );
    assert.match(errors[0].message, /SIMPLE table/);
    assert.match(errors[1].message, /no lookup table has id 999999999/);
    v = await values(t.id, key);
    assert.equal(Number(v.get('EU/A').attribute1), 7);
    assert.equal(Number(v.get('EU/A').attribute2), 2); // join on the keys: the other column kept
    assert.equal((await values(u.id, key)).get('X/Y').attribute1, 'text');
    assert.equal((await values(simple.id)).size, 0);
  });

  test('JLTV into a JSON table: JSON text parsed, bad JSON a row error', async () => {
    const t = await newTable('JSON');
    const csv =
      'name,value\n' +
      'obj,"{""rate"": 0.1, ""tiers"": [1, 2]}"\n' +
      'list,"[1, ""two""]"\n' +
      'broken,"{rate: 1"\n' +
      'text,"""plain"""\n' +
      'empty,\n';
    const res = assertOk(await load('JLTV', csv, {}, `?name=${t.name}`))[0];
    assert.deepEqual(counts(res), [4, 1, 5]);
    const [bad] = (await statusOf(res.uploadStatusId)).errors;
    assert.deepEqual([bad.row, bad.field], [2, 'value']);
    assert.match(bad.message, /not valid JSON/);
    const v = await values(t.id);
    assert.deepEqual(v.get('obj').value, { rate: 0.1, tiers: [1, 2] });
    assert.deepEqual(v.get('list').value, [1, 'two']);
    assert.equal(v.get('text').value, 'plain');
    assert.equal(v.get('empty').value, null);
    assert.equal(v.has('broken'), false);
  });

  test('syncOnTargetTable deletes the values of the table the file does not hold', async () => {
    const t = await newTable('SIMPLE');
    const other = await newTable('SIMPLE');
    assertOk(await load('LTV', 'name,value\na,1\nb,2\nc,3\n', {}, `?name=${t.name}`));
    assertOk(await load('LTV', 'name,value\nkeep,1\n', {}, `?name=${other.name}`));
    // A refused row: nothing is deleted.
    const refused = assertOk(
      await load(
        'LTV',
        'name,value\na,1\nb\n',
        { detectJoinFields: 'true', syncOnTargetTable: 'true' },
        `?name=${t.name}`,
      ),
    )[0];
    assert.deepEqual([refused.invalidRecords, refused.deletedRecords], [1, 0]);
    assert.equal((await values(t.id)).size, 3);
    // Permission: a sync deletes values, which DATAINTEGRATION may not — refused before anything is
    // loaded or queued (async alike), its status record FAILED and its file gone.
    for (const path of ['LTV', 'LTV/async']) {
      const denied = await load(
        path,
        'name,value\na,1\n',
        { syncOnTargetTable: 'true' },
        `?name=${t.name}`,
        integrator,
      );
      assertError(denied, 403, -3);
      const [last] = (
        await h.db.query<{ status: string; blob_key: string | null }>(
          'SELECT status, blob_key FROM upload_status WHERE partition_id = $1 ORDER BY id DESC LIMIT 1',
          [h.partitionId],
        )
      ).rows;
      assert.deepEqual([last!.status, last!.blob_key], ['FAILED', null]);
    }
    const res = assertOk(
      await load(
        'LTV',
        'name,value\na,10\nd,4\n',
        { detectJoinFields: 'true', syncOnTargetTable: 'true' },
        `?name=${t.name}`,
      ),
    )[0];
    assert.deepEqual([res.loadedRecords, res.deletedRecords], [2, 2]);
    const v = await values(t.id);
    assert.deepEqual([...v.keys()].sort(), ['a', 'd']);
    assert.equal(v.get('a').value, '10');
    assert.equal((await values(other.id)).size, 1);
  });

  test('async: a LOADDATA_FILE job loads a JSON table', async () => {
    const t = await newTable('JSON');
    const started = assertOk(
      await send(h, `/loaddata.file/JLTV/async?tableId=${t.id}`, {
        body: form(
          {},
          { field: 'fileName', name: 'j.csv', data: 'name,value\na,"{""x"": 1}"\nb,nope\nc,true\n' },
        ),
      }),
    )[0];
    assert.ok(Number.isInteger(started.uploadStatusId) && Number.isInteger(started.jstId));
    const job = await waitForJob(h, started.jstId);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    assert.equal(job.trackerType, 'LOADDATA_FILE');
    assert.deepEqual(counts(job.calculationResults), [2, 1, 3]);
    const status = await statusOf(started.uploadStatusId);
    assert.deepEqual([status.status, status.jstId, status.errors[0].row], ['FINISHED', started.jstId, 1]);
    const v = await values(t.id);
    assert.deepEqual(v.get('a').value, { x: 1 });
    assert.equal(v.get('c').value, true);
  });

  test('an interrupted LTV job is retried and resumes after its checkpoint', async () => {
    const t = await newTable('SIMPLE', 'INT');
    const blobs = createBlobStore(h.db, h.config.blobStore);
    const key = blobs.newKey();
    const csv = `name,value\n${[0, 1, 2, 3, 4].map((i) => `v${i},${i}`).join('\n')}\n`;
    await blobs.write(h.partitionId, key, [Buffer.from(csv)], { maxBytes: 10_000 });
    // A load whose node died after committing rows 0-1 (its checkpoint), heartbeat long stale.
    const r = await h.db.query<{ job: number; status: number }>(
      `WITH u AS (SELECT id FROM users WHERE partition_id = $1 AND login_name = 'admin'),
            s AS (INSERT INTO upload_status (partition_id, type_code, status, blob_key, file_name, size, created_by)
                  SELECT $1, 'LTV', 'PROCESSING', $2, 'r.csv', $3, u.id FROM u RETURNING id, created_by)
       INSERT INTO jobs (partition_id, job_name, tracker_type, status, processing_node, heartbeat_at, attempts,
                         max_attempts, parameters, checkpoint, created_by)
       SELECT $1, 'resume', 'LOADDATA_FILE', 'PROCESSING', 'dead-node', now() - interval '1 hour', 1, 3,
              jsonb_build_object('uploadStatusId', s.id, 'typeCode', 'LTV', 'options',
                jsonb_build_object('joinFields', '[]'::jsonb, 'detectJoinFields', false,
                                   'replaceSoftDeleted', false, 'syncOnTargetTable', false, 'name', $4::text)),
              '{"rows": 2, "loaded": 2, "invalid": 0, "errors": [], "mark": "2020-01-01T00:00:00Z"}', s.created_by
         FROM s RETURNING id AS job, (SELECT id FROM s) AS status`,
      [h.partitionId, key, Buffer.byteLength(csv), t.name],
    );
    await runner.sweep();
    const job = await waitForJob(h, r.rows[0]!.job);
    assert.equal(job.status, 'FINISHED', JSON.stringify(job));
    assert.deepEqual([job.calculationResults.loadedRecords, job.calculationResults.totalRecords], [5, 5]);
    // Rows 0-1 were the dead attempt's: the retry skipped them.
    assert.deepEqual([...(await values(t.id)).keys()].sort(), ['v2', 'v3', 'v4']);
  });

  test('refusals: kind, naming, permission', async () => {
    const matrix = await newTable('MATRIX');
    const simple = await newTable('SIMPLE');
    const wrong = await load('LTV', 'name,attribute1\na,1\n', {}, `?name=${matrix.name}`);
    assertError(wrong, 400, -4);
    assert.match(wrong.body.response.data, /MATRIX table: load its values as MLTV/);
    const unnamed = await load('LTV', 'name,value\na,1\n');
    assertError(unnamed, 400, -4);
    assert.match(unnamed.body.response.data, /name the table/);
    assertError(await load('LTV', 'name\na\n', {}, `?name=${simple.name}&tableId=${simple.id}`), 400, -4);
    assertError(await load('LTV', `lookupTable,name\n${simple.id},a\n`, {}, `?name=${simple.name}`), 400, -4);
    assertError(await load('LTV', 'name\na\n', {}, '?name=no-such-table'), 404, -1);
    assertError(await load('P', 'sku\nx\n', {}, `?tableId=${simple.id}`), 400, -4);
    assertError(await load('LTV', 'name\na\n', {}, `?name=${simple.name}`, viewer), 403, -3);
    // The refused loads loaded nothing.
    assert.equal((await values(simple.id)).size, 0);
  });

  test("every code of the interface's file-load list loads a file", async () => {
    const simple = await newTable('SIMPLE');
    const matrix = await newTable('MATRIX2');
    const jsonTable = await newTable('JSON');
    const x = uniqueName('every');
    /** One row per code: the fields a new record needs, and the query naming a lookup table. */
    const files: Record<string, [string, string?]> = {
      C: [`customerId\n${x}\n`],
      CDESC: [`customerId,language\n${x},de\n`],
      CX: [`name,customerId\n${x},${x}\n`],
      JLTV: ['name,value\na,"{""x"": 1}"\n', `?name=${jsonTable.name}`],
      LTV: ['name,value\na,1\n', `?name=${simple.name}`],
      MLTV: ['key1,key2,attribute1\na,b,1\n', `?name=${matrix.name}`],
      P: [`sku\n${x}\n`],
      PBOME: [`sku,componentSku,quantity\n${x},${x}-part,2\n`],
      PCOMP: [`sku,competitor,competitionDate,price\n${x},ShopA,2026-01-01,9.5\n`],
      PDESC: [`sku,language\n${x},de\n`],
      PR: [`sku,relationType,targetSku\n${x},SUCCESSOR,${x}-next\n`],
      PX: [`name,sku\n${x},${x}\n`],
      PXREF: [`sku,referenceType,externalId\n${x},EAN,4006381333931\n`],
      SL: [`sellerId\n${x}\n`],
      SX: [`name,sellerId\n${x},${x}\n`],
      [TO_DO_CODE]: [`uniqueName,label,status\n${x},check,OPEN\n`],
      UG: [`uniqueName\n${x}\n`],
    };
    assert.deepEqual(Object.keys(files).sort(), [...FILE_LOAD_CODES].sort());
    for (const code of FILE_LOAD_CODES) {
      const [csv, query] = files[code]!;
      const r = await load(code, csv, {}, query ?? '');
      assert.equal(r.status, 200, `${code}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(counts(r.body.response.data[0]), [1, 0, 1], code);
    }
  });

  test("another partition's table is not found, by name, by id or in a lookupTable column", async () => {
    const mine = await newTable('SIMPLE');
    const other = await startHarness({ shareDbWith: h });
    try {
      assertError(await load('LTV', 'name,value\nx,1\n', {}, `?name=${mine.name}`, admin, other), 404, -1);
      assertError(await load('LTV', 'name,value\nx,1\n', {}, `?tableId=${mine.id}`, admin, other), 404, -1);
      const column = assertOk(
        await load('LTV', `lookupTable,name,value\n${mine.id},x,1\n`, {}, '', admin, other),
      )[0];
      assert.deepEqual(counts(column), [0, 1, 1]);
    } finally {
      await other.close();
    }
    assert.equal((await values(mine.id)).size, 0);
  });
});
