// Attachments and product images over HTTP on both databases: a 70 KB binary round trip byte for
// byte, range requests (206, suffix, 416, ignored multi-range), details/list/update/edit/delete,
// rights taken from the owner record (permission, userGroupEdit, userGroupViewDetails), images
// checked by content, and partition isolation.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { admin, assertError, assertOk, send, slotWith } from '../jobs/helpers.ts';
import { removeOrphanFiles } from '../../src/modules/files/orphan-files.ts';
import { createBlobStore } from '../../src/db/blob-store.ts';

const json = { 'content-type': 'application/json' };
/** The first bytes of a PNG (signature + IHDR), enough for the content check. */
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]),
  randomBytes(2000),
]);

describe('attachments and product images', () => {
  let h: Harness;
  const editor = { user: 'editor', password: 'editor-password-1' };
  const viewer = { user: 'viewer', password: 'viewer-password-1' };

  before(async () => {
    h = await startHarness();
    await h.newUser(editor.user, editor.password, ['DATAINTEGRATION']);
    await h.newUser(viewer.user, viewer.password);
  });
  after(() => h.close());

  async function product(extra: Record<string, unknown> = {}): Promise<{ sku: string; typedId: string }> {
    const sku = uniqueName('sku');
    const r = assertOk(
      await send(h, '/add/P', {
        body: JSON.stringify({ data: { sku, label: 'x', ...extra } }),
        headers: json,
      }),
    );
    return { sku, typedId: r[0].typedId };
  }

  test('a 70 KB binary attached, listed, downloaded byte for byte, and by ranges', async () => {
    const { typedId } = await product();
    const data = randomBytes(70 * 1024);
    const slot = await slotWith(h, data, 'report ü.bin');
    const att = assertOk(await send(h, `/bdmanager.upload/${typedId}/${slot}`))[0];
    assert.equal(att.size, data.length);
    assert.equal(att.ownerTypedId, typedId);
    assert.equal(att.fileName, 'report ü.bin');
    // The slot no longer owns the file: deleting it keeps the attachment's bytes.
    assertOk(await send(h, `/uploadmanager.deleteslot/${slot}`));

    const list = assertOk(await send(h, `/bdmanager.list/${typedId}`));
    assert.deepEqual(
      list.map((a: any) => a.binaryDataId),
      [att.binaryDataId],
    );
    const details = assertOk(await send(h, `/bdmanager.download/${typedId}/${att.binaryDataId}`))[0];
    assert.equal(details.size, data.length);

    const file = await send(h, `/bdmanager.download/${typedId}/${att.binaryDataId}?output=file`, {
      method: 'GET',
    });
    assert.equal(file.status, 200);
    assert.ok(file.bytes.equals(data), 'byte for byte');
    assert.equal(file.headers.get('content-type'), 'application/octet-stream');
    assert.match(
      file.headers.get('content-disposition')!,
      /^attachment; filename="report _.bin"; filename\*=UTF-8''report%20%C3%BC\.bin$/,
    );
    assert.equal(file.headers.get('accept-ranges'), 'bytes');
    const raw = await send(h, `/bdmanager.downloaddata/${att.binaryDataId}`, { method: 'GET' });
    assert.ok(raw.bytes.equals(data));

    const part = await send(h, `/bdmanager.downloaddata/${att.binaryDataId}`, {
      method: 'GET',
      headers: { range: 'bytes=100-199' },
    });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), `bytes 100-199/${data.length}`);
    assert.ok(part.bytes.equals(data.subarray(100, 200)));
    // A range across the chunk boundary of the database store (512 KiB) is not needed for 70 KB;
    // the suffix and open-ended forms are.
    const tail = await send(h, `/bdmanager.downloaddata/${att.binaryDataId}`, {
      method: 'GET',
      headers: { range: 'bytes=-10' },
    });
    assert.equal(tail.status, 206);
    assert.ok(tail.bytes.equals(data.subarray(data.length - 10)));
    const open = await send(h, `/bdmanager.downloaddata/${att.binaryDataId}`, {
      method: 'GET',
      headers: { range: 'bytes=70000-' },
    });
    assert.ok(open.bytes.equals(data.subarray(70000)));
    const beyond = await send(h, `/bdmanager.downloaddata/${att.binaryDataId}`, {
      method: 'GET',
      headers: { range: `bytes=${data.length}-` },
    });
    assertError(beyond, 416, -4);
    assert.ok(beyond.body.response.errors['headers.range'], JSON.stringify(beyond.body));
    assert.equal(beyond.headers.get('content-range'), `bytes */${data.length}`);
    const multi = await send(h, `/bdmanager.downloaddata/${att.binaryDataId}`, {
      method: 'GET',
      headers: { range: 'bytes=0-1,5-6' },
    });
    assert.equal(multi.status, 200);
    assert.equal(multi.bytes.length, data.length);
  });

  test('update, edit (replace the file), checkifexists and delete', async () => {
    const { typedId } = await product();
    const att = assertOk(
      await send(h, `/bdmanager.upload/${typedId}/${await slotWith(h, 'first', 'a.txt')}`),
    )[0];
    const upd = assertOk(
      await send(h, `/bdmanager.update/${typedId}`, {
        body: JSON.stringify({
          data: { id: att.id, fileName: 'renamed.txt', metadata: { tag: 'x' } },
          oldValues: { version: 0 },
        }),
        headers: json,
      }),
    )[0];
    assert.deepEqual([upd.fileName, upd.metadata, upd.version], ['renamed.txt', { tag: 'x' }, 1]);
    assertError(
      await send(h, `/bdmanager.update/${typedId}`, {
        body: JSON.stringify({ data: { id: att.id, fileName: 'again.txt' }, oldValues: { version: 0 } }),
        headers: json,
      }),
      409,
      -1,
    );
    const edited = assertOk(
      await send(h, `/bdmanager.edit/${typedId}/${att.id}/${await slotWith(h, 'second!', 'b.txt')}`),
    )[0];
    assert.deepEqual([edited.fileName, edited.size, edited.version], ['b.txt', 7, 2]);
    const file = await send(h, `/bdmanager.downloaddata/${att.id}`, { method: 'GET' });
    assert.equal(file.bytes.toString(), 'second!');
    assert.equal(assertOk(await send(h, `/bdmanager.checkifexists/${att.id}`)), true);
    assertOk(await send(h, `/bdmanager.delete/${typedId}/${att.id}`));
    assert.equal(assertOk(await send(h, `/bdmanager.checkifexists/${att.id}`)), false);
    assertError(await send(h, `/bdmanager.downloaddata/${att.id}`, { method: 'GET' }), 404, -1);
    // Record history (type ATT): added, renamed with metadata, replaced, deleted; the 409 left none.
    const history = assertOk(
      await send(h, '/history.fetch', {
        body: JSON.stringify({
          data: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [
              { fieldName: 'typeCode', operator: 'equals', value: 'ATT' },
              { fieldName: 'recordId', operator: 'equals', value: att.id },
            ],
          },
          sortBy: 'id',
        }),
        headers: json,
      }),
    );
    assert.deepEqual(
      history.map((x: any) => [x.action, [...x.field].sort(), x.version, x.businessKey, x.operation]),
      [
        [
          'ADD',
          ['contentType', 'fileName', 'ownerTypedId', 'size'],
          0,
          typedId,
          `bdmanager.upload/${typedId}/${history[0].operation.split('/').at(-1)}`,
        ],
        ['UPDATE', ['fileName', 'metadata'], 1, typedId, `bdmanager.update/${typedId}`],
        [
          'UPDATE',
          ['fileName', 'size'],
          2,
          typedId,
          `bdmanager.edit/${typedId}/${att.id}/${history[2].operation.split('/').at(-1)}`,
        ],
        [
          'DELETE',
          ['contentType', 'fileName', 'metadata', 'ownerTypedId', 'size'],
          3,
          typedId,
          `bdmanager.delete/${typedId}/${att.id}`,
        ],
      ],
    );
    assert.deepEqual(history[1].changes, {
      fileName: { old: 'a.txt', new: 'renamed.txt' },
      metadata: { old: null, new: { tag: 'x' } },
    });
    assert.deepEqual(history[2].changes.size, { old: 5, new: 7 });
    assert.ok(!JSON.stringify(history).includes('blob'), 'no blob key in history');
    // The wrong owner in the path is not found either.
    const other = await product();
    const att2 = assertOk(await send(h, `/bdmanager.upload/${typedId}/${await slotWith(h, 'x')}`))[0];
    assertError(await send(h, `/bdmanager.download/${other.typedId}/${att2.id}`), 404, -1);
    assertError(await send(h, `/bdmanager.delete/${other.typedId}/${att2.id}`), 404, -1);
    assertError(await send(h, `/bdmanager.list/1.NOPE`), 404, -1);
    assertError(await send(h, `/bdmanager.list/nonsense`), 400, -4);
  });

  test('bdmanager.list takes the fetch body: filter, sort, paging, page-size limit, unknown fields', async () => {
    const { typedId } = await product();
    const ids: number[] = [];
    for (const name of ['b.txt', 'a.txt', 'c.txt']) {
      ids.push(
        assertOk(await send(h, `/bdmanager.upload/${typedId}/${await slotWith(h, name, name)}`))[0].id,
      );
    }
    const list = (body: unknown, headers: Record<string, string> = json) =>
      send(h, `/bdmanager.list/${typedId}`, { body: JSON.stringify(body), headers });

    const all = await list({});
    assert.deepEqual(
      assertOk(all).map((a: any) => a.id),
      ids,
      'by id without sortBy',
    );
    assert.deepEqual(Object.keys(assertOk(all)[0]), [
      'id',
      'binaryDataId',
      'ownerTypedId',
      'fileName',
      'contentType',
      'size',
      'metadata',
      'version',
      'createDate',
      'createdBy',
      'lastUpdateDate',
      'lastUpdateBy',
    ]);
    assert.equal(assertOk(all)[0].ownerTypedId, typedId);

    const page = await list({ startRow: 1, endRow: 2, sortBy: 'fileName' });
    assert.deepEqual(
      assertOk(page).map((a: any) => a.fileName),
      ['b.txt'],
    );
    const { startRow, endRow, totalRows } = page.body.response;
    assert.deepEqual({ startRow, endRow, totalRows }, { startRow: 1, endRow: 2, totalRows: 3 });

    const desc = assertOk(await list({ sortBy: '-fileName' }));
    assert.deepEqual(
      desc.map((a: any) => a.fileName),
      ['c.txt', 'b.txt', 'a.txt'],
    );
    const filtered = await list({ data: { fieldName: 'fileName', operator: 'equals', value: 'zzz' } });
    assert.deepEqual(assertOk(filtered), []);
    assert.equal(filtered.body.response.totalRows, 0);
    const simple = assertOk(await list({ data: { fileName: 'a.txt' } }));
    assert.deepEqual(
      simple.map((a: any) => a.id),
      [ids[1]],
    );
    assert.deepEqual(assertOk(await list({ valueFields: ['fileName'], sortBy: 'fileName', endRow: 1 })), [
      ['a.txt'],
    ]);

    const tooMany = await list({ startRow: 0, endRow: h.config.maxPageSize + 1 });
    assertError(tooMany, 400, -4);
    assert.ok(tooMany.body.response.errors.endRow, JSON.stringify(tooMany.body));
    assertError(await list({ startRow: -5 }), 400, -4);
    const bogus = await list({ bogus: 1 });
    assertError(bogus, 400, -4);
    assert.ok(bogus.body.response.errors.bogus, JSON.stringify(bogus.body));
    const badField = await list({ data: { colour: 'red' } });
    assertError(badField, 400, -4);
    assert.ok(badField.body.response.errors.colour, JSON.stringify(badField.body));
    // A body that is not JSON is not silently ignored.
    assertError(await list({ startRow: 1 }, { 'content-type': 'text/plain' }), 415, -4);
  });

  test('rights come from the owner: write permission, userGroupEdit, userGroupViewDetails', async () => {
    const open = await product();
    const locked = await product({ userGroupEdit: 'G_EDIT' });
    const hidden = await product({ userGroupViewDetails: 'G_VIEW' });
    // No PRODUCT_EDIT: 403 before anything is attached.
    assertError(
      await send(h, `/bdmanager.upload/${open.typedId}/${await slotWith(h, 'v', 'v', viewer)}`, {
        who: viewer,
      }),
      403,
      -3,
    );
    // PRODUCT_EDIT, but not in the edit group: 403.
    assertError(
      await send(h, `/bdmanager.upload/${locked.typedId}/${await slotWith(h, 'e', 'e', editor)}`, {
        who: editor,
      }),
      403,
      -3,
    );
    const ok = assertOk(
      await send(h, `/bdmanager.upload/${open.typedId}/${await slotWith(h, 'e', 'e', editor)}`, {
        who: editor,
      }),
    )[0];
    // Any user who sees the product may read its attachments.
    assertOk(await send(h, `/bdmanager.list/${open.typedId}`, { who: viewer }));
    assert.equal(
      (await send(h, `/bdmanager.downloaddata/${ok.id}`, { method: 'GET', who: viewer })).status,
      200,
    );
    // A product the user cannot see: 404, and checkifexists says false.
    const att = assertOk(await send(h, `/bdmanager.upload/${hidden.typedId}/${await slotWith(h, 'h')}`))[0];
    assertError(await send(h, `/bdmanager.list/${hidden.typedId}`, { who: viewer }), 404, -1);
    assertError(await send(h, `/bdmanager.downloaddata/${att.id}`, { method: 'GET', who: viewer }), 404, -1);
    assert.equal(assertOk(await send(h, `/bdmanager.checkifexists/${att.id}`, { who: viewer })), false);
    // Another user's slot cannot be attached.
    assertError(
      await send(h, `/bdmanager.upload/${open.typedId}/${await slotWith(h, 'x', 'x', viewer)}`),
      404,
      -1,
    );
    const anon = await fetch(`${h.url}${h.config.basePath}/${h.partition}/bdmanager.downloaddata/${ok.id}`);
    assert.equal(anon.status, 401);
    // Another partition cannot reach the attachment.
    const other = await startHarness({ shareDbWith: h });
    try {
      assertError(
        await send(other, `/bdmanager.downloaddata/${ok.id}`, { method: 'GET', who: admin }),
        404,
        -1,
      );
      assert.equal(assertOk(await send(other, `/bdmanager.checkifexists/${ok.id}`, { who: admin })), false);
    } finally {
      await other.close();
    }
  });

  test('product images: only images (by content), served with their type and ranges', async () => {
    const { sku } = await product();
    const notImage = await slotWith(h, 'definitely text, not a picture', 'photo.png');
    const refused = await send(h, `/productimages.upload/${notImage}/${sku}`);
    assertError(refused, 400, -4);
    assert.match(refused.body.response.data, /not an image/);
    const img = assertOk(
      await send(h, `/productimages.upload/${await slotWith(h, PNG, 'pic.dat')}/${sku}`),
    )[0];
    assert.deepEqual([img.contentType, img.size, img.sku], ['image/png', PNG.length, sku]);
    const got = await send(h, `/productimages.get/${sku}`, { method: 'GET', who: viewer });
    assert.equal(got.status, 200);
    assert.equal(got.headers.get('content-type'), 'image/png');
    assert.match(got.headers.get('content-disposition')!, /^inline;/);
    assert.ok(got.bytes.equals(PNG));
    const part = await send(h, `/productimages.get/${sku}`, {
      method: 'GET',
      headers: { range: 'bytes=0-7' },
    });
    assert.equal(part.status, 206);
    assert.ok(part.bytes.equals(PNG.subarray(0, 8)));
    // Replacing the image keeps one image per product.
    const gif = Buffer.concat([Buffer.from('GIF89a'), randomBytes(100)]);
    assert.equal(
      assertOk(await send(h, `/productimages.upload/${await slotWith(h, gif)}/${sku}`))[0].version,
      1,
    );
    assert.equal(
      (await send(h, `/productimages.get/${sku}`, { method: 'GET' })).headers.get('content-type'),
      'image/gif',
    );
    assertError(
      await send(h, `/productimages.upload/${await slotWith(h, PNG, 'p', viewer)}/${sku}`, { who: viewer }),
      403,
      -3,
    );
    assertError(await send(h, `/productimages.get/no-such-sku`, { method: 'GET' }), 404, -1);
    // Record history (type PIMG, the product's id and sku): set, then replaced; the refusals left none.
    const history = assertOk(
      await send(h, '/history.fetch', {
        body: JSON.stringify({
          data: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [
              { fieldName: 'typeCode', operator: 'equals', value: 'PIMG' },
              { fieldName: 'businessKey', operator: 'equals', value: sku },
            ],
          },
          sortBy: 'id',
        }),
        headers: json,
      }),
    );
    assert.deepEqual(
      history.map((x: any) => [x.action, x.version, x.changes]),
      [
        [
          'ADD',
          0,
          {
            fileName: { old: null, new: 'pic.dat' },
            contentType: { old: null, new: 'image/png' },
            size: { old: null, new: PNG.length },
          },
        ],
        [
          'UPDATE',
          1,
          {
            fileName: { old: 'pic.dat', new: 'f.bin' },
            contentType: { old: 'image/png', new: 'image/gif' },
            size: { old: PNG.length, new: gif.length },
          },
        ],
      ],
    );
  });

  test('maintenance: attachments of deleted records and files nothing refers to are removed', async () => {
    const { typedId } = await product();
    const att = assertOk(await send(h, `/bdmanager.upload/${typedId}/${await slotWith(h, 'bytes')}`))[0];
    assertOk(await send(h, '/delete/P', { body: JSON.stringify({ data: { typedId } }), headers: json }));
    const key = (
      await h.db.query<{ blob_key: string }>(
        'SELECT blob_key FROM attachments WHERE partition_id = $1 AND id = $2',
        [h.partitionId, att.id],
      )
    ).rows[0]!.blob_key;
    // Files younger than a day are never taken (one may be being written).
    await h.db.query(
      `UPDATE blobs SET created_at = now() - interval '2 days' WHERE partition_id = $1 AND blob_key = $2`,
      [h.partitionId, key],
    );
    await removeOrphanFiles(h.db, createBlobStore(h.db, h.config.blobStore));
    assert.equal(assertOk(await send(h, `/bdmanager.checkifexists/${att.id}`)), false);
    const left = await h.db.query('SELECT 1 FROM blobs WHERE partition_id = $1 AND blob_key = $2', [
      h.partitionId,
      key,
    ]);
    assert.equal(left.rows.length, 0);
  });
});
