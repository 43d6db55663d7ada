// /importfile over HTTP on both databases: XLSX (exceljs streaming reader) and CSV files from an
// upload slot into extension tables (upsert by the business key), refusals; and the directory blob
// store (BLOB_STORE=<dir>) round trip.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import ExcelJS from 'exceljs';
import { startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { assertError, assertOk, form, send, slotWith } from '../jobs/helpers.ts';

describe('importfile', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  async function xlsx(rows: unknown[][]): Promise<Buffer> {
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet('data');
    for (const r of rows) ws.addRow(r);
    wb.addWorksheet('ignored').addRow(['other', 'sheet']);
    return Buffer.from(await wb.xlsx.writeBuffer());
  }

  test('an XLSX file into a seller extension table, then again as an update', async () => {
    const cat = uniqueName('sx');
    const file = await xlsx([
      ['sellerId', 'attribute1', 'attribute2', 'attribute3'],
      ['S1', 12.5, new Date(Date.UTC(2024, 0, 31)), { richText: [{ text: 'rich ' }, { text: 'text' }] }],
      ['S2', 'plain', null, { formula: '1+1', result: 2 }],
    ]);
    const slot = await slotWith(h, file, 'sellers.xlsx');
    const res = assertOk(await send(h, `/importfile/SX/${cat}/${slot}`))[0];
    assert.deepEqual([res.loadedRecords, res.invalidRecords, res.totalRecords], [2, 0, 2]);
    const rows = await h.db.query<Record<string, any>>(
      `SELECT seller_id, attribute1, attribute2, attribute3 FROM seller_extensions
        WHERE partition_id = $1 AND name = $2 ORDER BY seller_id`,
      [h.partitionId, cat],
    );
    assert.deepEqual(
      rows.rows.map((r) => [r.seller_id, r.attribute1, r.attribute2, r.attribute3]),
      [
        ['S1', '12.5', '2024-01-31', 'rich text'],
        ['S2', 'plain', null, '2'],
      ],
    );
    // The slot keeps its file: the same import again updates (join on the business key).
    const again = assertOk(await send(h, `/importfile/SX/${cat}/${slot}`))[0];
    assert.equal(again.loadedRecords, 2);
    const n = await h.db.query<{ n: number; v: number }>(
      'SELECT count(*)::int AS n, max(version)::int AS v FROM seller_extensions WHERE partition_id = $1 AND name = $2',
      [h.partitionId, cat],
    );
    assert.deepEqual([n.rows[0]!.n, n.rows[0]!.v], [2, 1]);
    const status = assertOk(await send(h, `/uploadmanager.status/${res.uploadStatusId}`))[0];
    assert.deepEqual([status.fileName, status.targetName, status.status], ['sellers.xlsx', cat, 'FINISHED']);
    assertOk(await send(h, `/uploadmanager.deleteslot/${slot}`));
  });

  test('a CSV file into a product extension table; refusals', async () => {
    const table = uniqueName('px');
    const slot = await slotWith(h, 'sku;attribute1\nA;1\nB;2\n', 'px.csv');
    const res = assertOk(await send(h, `/importfile/PX/${table}/${slot}`))[0];
    assert.equal(res.loadedRecords, 2);
    assertError(await send(h, `/importfile/P/${table}/${slot}`), 400, -4);
    assertError(await send(h, `/importfile/PX/${table}/${'0'.repeat(32)}`), 404, -1);
    const empty = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId;
    assertError(await send(h, `/importfile/PX/${table}/${empty}`), 400, -4);
    const broken = await slotWith(
      h,
      Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), randomBytes(200)]),
      'x.xlsx',
    );
    assertError(await send(h, `/importfile/PX/${table}/${broken}`), 400, -4);
  });

  test("a table named by ?name= or the path: errors name the file's own columns (as on P)", async () => {
    const table = uniqueName('px');
    /** The fields and messages of a refused load. */
    const refusal = (r: Awaited<ReturnType<typeof send>>) => {
      assertError(r, 400, -4);
      return [Object.keys(r.body.response.errors ?? {}), r.body.response.data];
    };
    const byName = (code: string, csv: string, query = '') =>
      send(h, `/loaddata.file/${code}${query}`, {
        body: form({}, { field: 'fileName', name: 'data.csv', data: csv }),
      });
    // An unknown second column is header.1 everywhere (0-based, as /loaddata/P).
    const onP = refusal(await byName('P', 'sku,bogus\nA-1,Z\n'));
    assert.deepEqual(onP[0], ['header.1']);
    assert.deepEqual(refusal(await byName('PX', 'sku,bogus\nA-1,Z\n', `?name=${table}`)), [
      ['header.1'],
      'header.1: unknown field "bogus" of PX',
    ]);
    const slot = await slotWith(h, 'sku,bogus\nA-1,Z\n', 'px.csv');
    assert.deepEqual(refusal(await send(h, `/importfile/PX/${table}/${slot}`))[0], ['header.1']);
    const first = await slotWith(h, 'sellerId,attribute1\nS,1\n', 'px.csv');
    assert.deepEqual(refusal(await send(h, `/importfile/PX/${table}/${first}`))[0], ['header.0']);
    // Rows of another width than the file's header count the file's columns only.
    const res = assertOk(await byName('PX', 'sku,attribute1\nA\nB,1,extra\nC,3\n', `?name=${table}`))[0];
    assert.deepEqual([res.loadedRecords, res.invalidRecords], [1, 2]);
    const status = assertOk(await send(h, `/uploadmanager.status/${res.uploadStatusId}`))[0];
    assert.deepEqual(status.errors, [
      { row: 0, field: 'attribute1', message: 'has 1 values; the header has 2 (no value for attribute1)' },
      { row: 1, message: 'has 3 values; the header has 2' },
    ]);
  });
});

describe('directory blob store', () => {
  let h: Harness;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ratecard-blobs-'));
    h = await startHarness({ env: { BLOB_STORE: dir } });
  });
  after(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('files are written to and read from the directory', async () => {
    const sku = uniqueName('sku');
    const add = await send(h, '/add/P', {
      body: JSON.stringify({ data: { sku } }),
      headers: { 'content-type': 'application/json' },
    });
    const typedId = assertOk(add)[0].typedId;
    const data = randomBytes(300 * 1024);
    const att = assertOk(await send(h, `/bdmanager.upload/${typedId}/${await slotWith(h, data)}`))[0];
    assert.equal(readdirSync(join(dir, String(h.partitionId))).length, 1);
    const got = await send(h, `/bdmanager.downloaddata/${att.id}`, { method: 'GET' });
    assert.ok(got.bytes.equals(data));
    const part = await send(h, `/bdmanager.downloaddata/${att.id}`, {
      method: 'GET',
      headers: { range: 'bytes=1000-2999' },
    });
    assert.ok(part.bytes.equals(data.subarray(1000, 3000)));
    assertOk(await send(h, `/bdmanager.delete/${typedId}/${att.id}`));
    assert.equal(readdirSync(join(dir, String(h.partitionId))).length, 0);
  });
});
