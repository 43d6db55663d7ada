// Upload slots over HTTP on both databases: create, multipart and raw uploads (streamed into the
// blob store), progress, delete, the size limit (413/-11), ownership, partition isolation and the
// clean-up of expired slots.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { startHarness, type Harness } from '../helpers/app.ts';
import { admin, assertError, assertOk, authHeader, form, send, type Res } from '../jobs/helpers.ts';
import { removeExpiredSlots } from '../../src/modules/files/slots.ts';
import { createBlobStore } from '../../src/db/blob-store.ts';

const MAX = 100_000;

/**
 * A POST written on the socket as given (no header added but Host, Authorization and Connection; a
 * chunked one gets its closing chunk): what clients like curl send, which fetch would normalise.
 */
function rawPost(h: Harness, path: string, headers: Record<string, string>): Promise<Res> {
  const url = new URL(h.url);
  const lines = [
    `POST ${path} HTTP/1.1`,
    `Host: ${url.host}`,
    `Authorization: ${authHeader(h)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  const chunked = headers['transfer-encoding'] === 'chunked';
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(`${lines.join('\r\n')}\r\n\r\n${chunked ? '0\r\n\r\n' : ''}`);
    });
    const parts: Buffer[] = [];
    socket.on('data', (b: Buffer) => parts.push(b));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      const json = text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1);
      resolve({ status, body: JSON.parse(json), headers: new Headers(), bytes: Buffer.from(text) });
    });
  });
}

describe('upload slots', () => {
  let h: Harness;
  const bob = { user: 'bob', password: 'bob-password-1' };

  before(async () => {
    h = await startHarness({ env: { MAX_UPLOAD_BYTES: String(MAX) } });
    await h.newUser(bob.user, bob.password);
  });
  after(() => h.close());

  async function blobCount(): Promise<number> {
    const r = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM blobs WHERE partition_id = $1',
      [h.partitionId],
    );
    return r.rows[0]!.n;
  }

  test('a slot by GET and by POST; a multipart upload; progress; delete answers the details', async () => {
    const viaGet = assertOk(await send(h, '/uploadmanager.newuploadslot', { method: 'GET' }))[0];
    assert.match(viaGet.slotId, /^[a-f0-9]{32}$/);
    assert.equal(viaGet.status, 'EMPTY');
    const slotId = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId;
    const data = randomBytes(70 * 1024);
    const up = assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: form(
          { note: 'x' },
          { field: 'file', name: 'C:\\dir\\data.bin', data, type: 'application/x-test' },
        ),
      }),
    )[0];
    assert.equal(up.status, 'FINISHED');
    assert.equal(up.size, data.length);
    assert.equal(up.fileName, 'data.bin');
    assert.equal(up.contentType, 'application/x-test');
    assert.equal(up.fileVersion, 1);

    const progress = assertOk(await send(h, `/uploadmanager.progress/${slotId}`))[0];
    assert.equal(progress.bytesReceived, data.length);
    assert.equal(progress.status, 'FINISHED');

    // A second upload replaces the file and bumps the version.
    const again = assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: form({}, { field: 'file', name: 'second.bin', data: 'abc' }),
      }),
    )[0];
    assert.equal(again.fileVersion, 2);
    assert.equal(again.size, 3);

    const before = await blobCount();
    const deleted = assertOk(await send(h, `/uploadmanager.deleteslot/${slotId}`, { method: 'GET' }))[0];
    assert.equal(deleted.uploadStatus, 'FINISHED');
    assert.equal(deleted.fileName, 'second.bin');
    assert.equal(deleted.size, 3);
    assert.equal(deleted.fileVersion, 2);
    assert.equal(await blobCount(), before - 1);
    assertError(await send(h, `/uploadmanager.progress/${slotId}`), 404, -1);
    assertError(await send(h, `/uploadmanager.deleteslot/${slotId}`), 404, -1);
  });

  test('a raw body upload takes its name from Content-Disposition', async () => {
    const slotId = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId;
    const up = assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: 'a;b\n1;2\n',
        headers: { 'content-type': 'text/csv', 'content-disposition': 'attachment; filename="prices.csv"' },
      }),
    )[0];
    assert.equal(up.fileName, 'prices.csv');
    assert.equal(up.contentType, 'text/csv');
    assert.equal(up.size, 8);
    const utf = assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: 'x',
        headers: {
          'content-type': 'text/plain',
          'content-disposition': "attachment; filename*=UTF-8''pr%C3%A9s.txt",
        },
      }),
    )[0];
    assert.equal(utf.fileName, 'prés.txt');
    // A JSON file is a file too, not a body to parse.
    const jsonFile = assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: '{"a": 1}',
        headers: { 'content-type': 'application/json', 'content-disposition': 'attachment; filename=a.json' },
      }),
    )[0];
    assert.deepEqual(
      [jsonFile.fileName, jsonFile.size, jsonFile.contentType],
      ['a.json', 8, 'application/json'],
    );
    // A Content-Type that is no media type says nothing of the file: taken as octet-stream.
    for (const type of ['a', 'x/', '; charset=utf-8']) {
      const odd = assertOk(
        await send(h, `/uploadmanager.upload/${slotId}`, {
          body: 'abc',
          headers: { 'content-type': type, 'content-disposition': 'attachment; filename=odd.bin' },
        }),
      )[0];
      assert.deepEqual([odd.fileName, odd.size, odd.contentType], ['odd.bin', 3, 'application/octet-stream']);
    }
    assertOk(await send(h, `/uploadmanager.deleteslot/${slotId}`));
  });

  test('an upload over MAX_UPLOAD_BYTES is refused with 413/-11 and leaves nothing', async () => {
    const slotId = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId;
    const before = await blobCount();
    // Multipart: the limit is met while streaming.
    const big = randomBytes(MAX + 5_000);
    assertError(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: form({}, { field: 'file', name: 'big', data: big }),
      }),
      413,
      -11,
    );
    const failed = assertOk(await send(h, `/uploadmanager.progress/${slotId}`))[0];
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.hasFile, false);
    assert.equal(await blobCount(), before);
    // Raw: the declared length alone is refused.
    assertError(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: big,
        headers: { 'content-type': 'application/octet-stream' },
      }),
      413,
      -11,
    );
    // Exactly the limit is fine.
    const ok = assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: randomBytes(MAX),
        headers: { 'content-type': 'application/octet-stream' },
      }),
    )[0];
    assert.equal(ok.size, MAX);
    assertOk(await send(h, `/uploadmanager.deleteslot/${slotId}`));
  });

  test('a malformed multipart body is a -4 on body, and the slot keeps the file it held', async () => {
    const slotId = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId;
    const good = assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: form({}, { field: 'file', name: 'good.txt', data: 'the good file' }),
      }),
    )[0];
    const blobs = await blobCount();
    const truncated = '--XYZ\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc';
    // A whole body whose boundary is longer than the parser searches for (it answered a 500).
    const wholeWith = (b: string) =>
      `--${b}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc\r\n--${b}--\r\n`;
    const long = 'b'.repeat(253);
    for (const [body, type] of [
      [truncated, 'multipart/form-data; boundary=XYZ'],
      ['garbage', 'multipart/form-data; boundary=XYZ'],
      [truncated, 'multipart/form-data'],
      [wholeWith(long), `multipart/form-data; boundary=${long}`],
      [wholeWith(long), `multipart/form-data; boundary="${long}"; charset=utf-8`],
    ] as const) {
      const r = await send(h, `/uploadmanager.upload/${slotId}`, { body, headers: { 'content-type': type } });
      assertError(r, 400, -4);
      assert.ok(r.body.response.errors.body, JSON.stringify(r.body));
      const kept = assertOk(await send(h, `/uploadmanager.progress/${slotId}`))[0];
      assert.equal(kept.status, 'FINISHED');
      assert.equal(kept.hasFile, true);
      assert.equal(kept.fileName, 'good.txt');
      assert.equal(kept.fileVersion, good.fileVersion);
      assert.equal(await blobCount(), blobs, 'the partial file is gone, the good one stays');
    }
    // A whole new file replaces the one held (its blob removed, not left behind).
    const again = assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: form({}, { field: 'file', name: 'better.txt', data: 'the better file' }),
      }),
    )[0];
    assert.equal(again.fileVersion, good.fileVersion + 1);
    assert.equal(await blobCount(), blobs);
    // A boundary past RFC 2046's 70 characters that the parser can take still works.
    const longest = 'c'.repeat(250);
    const taken = assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: wholeWith(longest),
        headers: { 'content-type': `multipart/form-data; boundary=${longest}` },
      }),
    )[0];
    assert.equal(taken.fileVersion, good.fileVersion + 2);
    for (const [body, boundary] of [
      [truncated, 'XYZ'],
      [wholeWith(long), long],
    ]) {
      const loaded = await send(h, '/loaddata.file/P', {
        body,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      });
      assertError(loaded, 400, -4);
    }
    assertOk(await send(h, `/uploadmanager.deleteslot/${slotId}`));
  });

  test('an empty raw body is a -4 on body, and the slot keeps the file it held', async () => {
    const slotId = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId;
    const good = assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: 'seventeen bytes!!',
        headers: { 'content-disposition': 'attachment; filename="raw.bin"' },
      }),
    )[0];
    const blobs = await blobCount();
    const path = `${h.config.basePath}/${h.partition}/uploadmanager.upload/${slotId}`;
    const empties: [string, Record<string, string>][] = [
      // What `curl -X POST` sends: no Content-Length, no Content-Type, no body.
      ['no body, no content type', {}],
      ['a typed body of no bytes', { 'content-type': 'text/csv', 'content-length': '0' }],
      [
        'a chunked body that ends without a byte',
        { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
      ],
    ];
    for (const [what, headers] of empties) {
      const r = await rawPost(h, path, headers);
      assertError(r, 400, -4);
      assert.ok(r.body.response.errors.body, `${what}: ${JSON.stringify(r.body)}`);
      const kept = assertOk(await send(h, `/uploadmanager.progress/${slotId}`))[0];
      assert.equal(kept.status, 'FINISHED', what);
      assert.equal(kept.fileName, 'raw.bin', what);
      assert.equal(kept.size, 17, what);
      assert.equal(kept.fileVersion, good.fileVersion, what);
      assert.equal(await blobCount(), blobs, what);
    }
    // A multipart file part of no bytes is no file either (it replaced the slot's file), and a part
    // whose Content-Type holds NUL is refused naming the part (the database refused it, naming data).
    const multipart = (type: string, data: string) =>
      send(h, `/uploadmanager.upload/${slotId}`, {
        headers: { 'content-type': 'multipart/form-data; boundary=XX' },
        body: Buffer.from(
          `--XX\r\nContent-Disposition: form-data; name="file"; filename="x.txt"\r\nContent-Type: ${type}\r\n\r\n${data}\r\n--XX--\r\n`,
        ),
      });
    for (const [what, r] of [
      ['an empty file part', await multipart('text/plain', '')],
      ['a content type with NUL', await multipart('text/plain\u0000evil', 'hello')],
    ] as const) {
      assertError(r, 400, -4);
      assert.ok(r.body.response.errors.file, `${what}: ${JSON.stringify(r.body)}`);
      const kept = assertOk(await send(h, `/uploadmanager.progress/${slotId}`))[0];
      assert.deepEqual([kept.size, kept.fileVersion], [17, good.fileVersion], what);
    }
    assertOk(await send(h, `/uploadmanager.deleteslot/${slotId}`));
  });

  test('a slot deleted while a file is uploaded into it: the upload is a 404, not a 500', async () => {
    const slotId = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId;
    let resume: () => void = () => {};
    const paused = new Promise<void>((r) => (resume = r));
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(Buffer.from('first part,'));
        await paused;
        controller.enqueue(Buffer.from('second part\n'));
        controller.close();
      },
    });
    const upload = fetch(`${h.url}${h.config.basePath}/${h.partition}/uploadmanager.upload/${slotId}`, {
      method: 'POST',
      headers: {
        authorization: authHeader(h),
        'content-type': 'text/csv',
        'content-disposition': 'attachment; filename="late.csv"',
      },
      body,
      duplex: 'half',
    });
    // The upload has begun (its slot shows it) before the slot is deleted.
    for (let i = 0; i < 100; i++) {
      const p = assertOk(await send(h, `/uploadmanager.progress/${slotId}`))[0];
      if (p.status === 'UPLOADING') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assertOk(await send(h, `/uploadmanager.deleteslot/${slotId}`));
    resume();
    const res = await upload;
    const answer = (await res.json()) as any;
    assert.equal(res.status, 404, JSON.stringify(answer));
    assert.equal(answer.response.status, -1);
  });

  test('a slot is its creator’s: another user, no credentials, another partition are refused', async () => {
    const slotId = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId;
    assertError(await send(h, `/uploadmanager.progress/${slotId}`, { who: bob }), 404, -1);
    assertError(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        who: bob,
        body: form({}, { field: 'file', name: 'x', data: 'x' }),
      }),
      404,
      -1,
    );
    const anon = await fetch(`${h.url}${h.config.basePath}/${h.partition}/uploadmanager.newuploadslot`, {
      method: 'POST',
    });
    assert.equal(anon.status, 401);
    const other = await startHarness({ shareDbWith: h, env: { MAX_UPLOAD_BYTES: String(MAX) } });
    try {
      assertError(await send(other, `/uploadmanager.progress/${slotId}`, { who: admin }), 404, -1);
      assertError(await send(other, `/uploadmanager.deleteslot/${slotId}`, { who: admin }), 404, -1);
    } finally {
      await other.close();
    }
    assertOk(await send(h, `/uploadmanager.deleteslot/${slotId}`));
  });

  test('expired slots are removed with their files', async () => {
    const slotId = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId;
    assertOk(
      await send(h, `/uploadmanager.upload/${slotId}`, {
        body: form({}, { field: 'file', name: 'a', data: randomBytes(1000) }),
      }),
    );
    const keep = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId;
    const before = await blobCount();
    await h.db.query(
      `UPDATE upload_slots SET expires_at = now() - interval '1 minute' WHERE partition_id = $1 AND id = $2`,
      [h.partitionId, slotId],
    );
    // An expired slot is unknown at once, and removed by the maintenance pass.
    assertError(await send(h, `/uploadmanager.progress/${slotId}`), 404, -1);
    assert.ok((await removeExpiredSlots(h.db, createBlobStore(h.db, h.config.blobStore), 60)) >= 1);
    const left = await h.db.query('SELECT id FROM upload_slots WHERE partition_id = $1', [h.partitionId]);
    assert.ok(!left.rows.some((r) => r.id === slotId));
    assert.ok(left.rows.some((r) => r.id === keep));
    assert.equal(await blobCount(), before - 1);
  });
});
