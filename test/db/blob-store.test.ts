// The database blob store (src/db/blob-store.ts) on both databases: a blob reads back whole and in
// ranges; a blob removed before or while it is read (an upload slot deleted or expired while its
// file is loaded) is an error, never a file that merely ends early.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { CHUNK_BYTES, createDbBlobStore } from '../../src/db/blob-store.ts';
import { AppError } from '../../src/http/errors.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const bytes = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => i % 251));

async function readAll(pieces: AsyncIterable<Buffer>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const p of pieces) out.push(p);
  return Buffer.concat(out);
}

test('a blob reads back whole and by ranges, also past its end', async () => {
  const store = createDbBlobStore(h.db);
  const data = bytes(CHUNK_BYTES * 2 + 100);
  const key = store.newKey();
  await store.write(h.partitionId, key, [data], { maxBytes: data.length });
  assert.ok((await readAll(store.read(h.partitionId, key))).equals(data));
  const range = { start: CHUNK_BYTES - 10, end: CHUNK_BYTES * 2 + 50 };
  assert.ok(
    (await readAll(store.read(h.partitionId, key, range))).equals(data.subarray(range.start, range.end)),
  );
  const tail = { start: data.length - 5, end: data.length + 1000 };
  assert.ok((await readAll(store.read(h.partitionId, key, tail))).equals(data.subarray(data.length - 5)));
  assert.equal(
    (await readAll(store.read(h.partitionId, key, { start: data.length + 1, end: data.length + 9 }))).length,
    0,
  );
  await store.delete(h.partitionId, key);
});

test('a blob deleted before or while it is read is a 404, not a shorter file', async () => {
  const store = createDbBlobStore(h.db);
  const data = bytes(CHUNK_BYTES * 9);
  const key = store.newKey();
  await store.write(h.partitionId, key, [data], { maxBytes: data.length });
  let read = 0;
  await assert.rejects(
    (async () => {
      for await (const piece of store.read(h.partitionId, key)) {
        if (read === 0) await store.delete(h.partitionId, key);
        read += piece.length;
      }
    })(),
    (e) => e instanceof AppError && e.code === 'NOT_FOUND' && /removed while it was read/.test(e.message),
  );
  assert.ok(read < data.length, `read ${read} of ${data.length}`);
  await assert.rejects(
    readAll(store.read(h.partitionId, key)),
    (e) => e instanceof AppError && e.code === 'NOT_FOUND',
  );
});
