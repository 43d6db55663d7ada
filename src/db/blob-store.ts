// File storage behind one small interface: uploads, attachments, product images and the files of
// loads are written as a stream and read back as a stream (whole or a byte range), never buffered
// whole. Two stores: chunked `bytea` rows in the database (default; works on PGlite's single
// connection because no statement or transaction spans the stream) and a directory shared by all
// nodes. PostgreSQL large objects were rejected: they need one transaction held open for the whole
// upload, which PGlite's single connection cannot give while other requests run.
// Every blob is registered in `blobs` (partition, key, size), whatever the store.

import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import type { Db } from './db.ts';
import { AppError } from '../http/errors.ts';

/** Bytes `start` (inclusive) to `end` (exclusive). */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

export interface WriteOptions {
  /** Beyond this many bytes the write stops with 413/-11 and nothing is kept. */
  readonly maxBytes: number;
  /** Told the bytes written so far, after each piece (the caller decides how often to record it). */
  readonly onProgress?: (bytes: number) => void | Promise<void>;
}

export interface BlobStore {
  readonly kind: 'postgres' | 'directory';
  /** A fresh key; the caller records it (in its slot, status or job row) before writing. */
  newKey(): string;
  /** Streams `source` into the blob `key`; answers its size. On any failure nothing is kept. */
  write(
    partitionId: number,
    key: string,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    opts: WriteOptions,
  ): Promise<number>;
  /** The blob's bytes (or those of `range`) in pieces of at most a chunk. */
  read(partitionId: number, key: string, range?: ByteRange): AsyncIterable<Buffer>;
  /** Removes the blob (no error when it is gone already). */
  delete(partitionId: number, key: string): Promise<void>;
}

/** Chunk size of the database store: a range read fetches only the chunks it overlaps. */
export const CHUNK_BYTES = 512 * 1024;
/** Chunks fetched per query when reading. */
const READ_BATCH = 4;

const KEY = /^[a-f0-9]{32}$/;

function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`bad blob key ${JSON.stringify(key)}`);
  return key;
}

function asBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

export function uploadTooLarge(maxBytes: number): AppError {
  return new AppError('UPLOAD_TOO_LARGE', `Upload too large: at most ${maxBytes} bytes`);
}

async function register(db: Db, partitionId: number, key: string): Promise<void> {
  await db.query('INSERT INTO blobs (partition_id, blob_key) VALUES ($1, $2)', [partitionId, key]);
}

async function setSize(db: Db, partitionId: number, key: string, size: number): Promise<void> {
  const r = await db.query('UPDATE blobs SET size = $3 WHERE partition_id = $1 AND blob_key = $2', [
    partitionId,
    key,
    size,
  ]);
  // Gone after its last chunk: removed while it was written, as a missing chunk's blob is.
  if (r.rowCount === 0) throw blobGone('written');
}

/** A blob removed before or while it is read (its slot deleted or expired meanwhile). */
function blobGone(while_: 'read' | 'written' = 'read'): AppError {
  return new AppError(
    'NOT_FOUND',
    `The file was removed while it was ${while_} (its upload slot was deleted)`,
  );
}

function newKey(): string {
  return randomBytes(16).toString('hex');
}

// ---------------------------------------------------------------------------------------------
// Database store: fixed-size chunks, one INSERT each (autocommit), so no transaction spans the
// upload; an interrupted upload is removed by its owner (slot expiry, the load's clean-up).

export function createDbBlobStore(db: Db): BlobStore {
  const store: BlobStore = {
    kind: 'postgres',
    newKey,
    async write(partitionId, key, source, opts) {
      checkKey(key);
      await register(db, partitionId, key);
      let seq = 0;
      let size = 0;
      let fill = 0;
      const buf = Buffer.allocUnsafe(CHUNK_BYTES);
      // Awaiting each INSERT before refilling `buf` is what makes reusing it safe.
      const flush = async (bytes: Buffer) => {
        await db.query(
          'INSERT INTO blob_chunks (partition_id, blob_key, seq, data) VALUES ($1, $2, $3, $4)',
          [partitionId, key, seq++, bytes],
        );
      };
      try {
        for await (const raw of source) {
          const piece = asBuffer(raw);
          size += piece.length;
          if (size > opts.maxBytes) throw uploadTooLarge(opts.maxBytes);
          let off = 0;
          while (off < piece.length) {
            const n = Math.min(CHUNK_BYTES - fill, piece.length - off);
            piece.copy(buf, fill, off, off + n);
            fill += n;
            off += n;
            if (fill === CHUNK_BYTES) {
              await flush(buf);
              fill = 0;
            }
          }
          await opts.onProgress?.(size);
        }
        if (fill > 0) await flush(buf.subarray(0, fill));
        await setSize(db, partitionId, key, size);
        return size;
      } catch (e) {
        await store.delete(partitionId, key).catch(() => {});
        // A chunk whose blob is gone: the blob was removed while it was written (its slot deleted).
        if ((e as { code?: unknown }).code === '23503') throw blobGone('written');
        throw e;
      }
    },
    async *read(partitionId, key, range) {
      const start = range?.start ?? 0;
      let end = range?.end ?? Number.MAX_SAFE_INTEGER;
      if (end <= start) return;
      // The blob's size (set once it is whole): a read that finds fewer bytes was cut short by a
      // delete (a slot removed while its file is loaded), which is no end of the file.
      const sized = await db.query<{ size: string | number | null }>(
        'SELECT size FROM blobs WHERE partition_id = $1 AND blob_key = $2',
        [partitionId, key],
      );
      if (sized.rows.length === 0) throw blobGone();
      const size = sized.rows[0]!.size === null ? undefined : Number(sized.rows[0]!.size);
      if (size !== undefined) end = Math.min(end, size);
      if (end <= start) return;
      let got = 0;
      const last = Math.floor((end - 1) / CHUNK_BYTES);
      for (let first = Math.floor(start / CHUNK_BYTES); first <= last; first += READ_BATCH) {
        const r = await db.query<{ seq: number; data: Uint8Array }>(
          `SELECT seq, data FROM blob_chunks
            WHERE partition_id = $1 AND blob_key = $2 AND seq BETWEEN $3 AND $4 ORDER BY seq`,
          [partitionId, key, first, Math.min(last, first + READ_BATCH - 1)],
        );
        for (const row of r.rows) {
          const offset = row.seq * CHUNK_BYTES;
          const data = asBuffer(row.data);
          const from = Math.max(0, start - offset);
          const to = Math.min(data.length, end - offset);
          if (to > from) {
            got += to - from;
            yield data.subarray(from, to);
          }
        }
        if (r.rows.length < Math.min(last, first + READ_BATCH - 1) - first + 1) break;
      }
      if (size !== undefined && got < Math.max(0, end - start)) throw blobGone();
    },
    async delete(partitionId, key) {
      // The chunks go with their `blobs` row (ON DELETE CASCADE).
      await db.query('DELETE FROM blobs WHERE partition_id = $1 AND blob_key = $2', [partitionId, key]);
    },
  };
  return store;
}

// ---------------------------------------------------------------------------------------------
// Directory store: `<dir>/<partition id>/<key>`, written to `<key>.part` and renamed when whole.

export function createDirectoryBlobStore(db: Db, dir: string): BlobStore {
  const root = resolve(dir);
  const pathOf = (partitionId: number, key: string) => join(root, String(partitionId), checkKey(key));
  const store: BlobStore = {
    kind: 'directory',
    newKey,
    async write(partitionId, key, source, opts) {
      const path = pathOf(partitionId, key);
      await register(db, partitionId, key);
      await mkdir(join(root, String(partitionId)), { recursive: true });
      const out = createWriteStream(`${path}.part`);
      let size = 0;
      try {
        for await (const raw of source) {
          const piece = asBuffer(raw);
          size += piece.length;
          if (size > opts.maxBytes) throw uploadTooLarge(opts.maxBytes);
          if (!out.write(piece)) await once(out, 'drain');
          await opts.onProgress?.(size);
        }
        out.end();
        await once(out, 'finish');
        await rename(`${path}.part`, path);
        await setSize(db, partitionId, key, size);
        return size;
      } catch (e) {
        out.destroy();
        await store.delete(partitionId, key).catch(() => {});
        // The `.part` file renamed after it was removed: the blob was deleted while it was written.
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw blobGone('written');
        throw e;
      }
    },
    async *read(partitionId, key, range) {
      if (range !== undefined && range.end <= range.start) return;
      const stream = createReadStream(pathOf(partitionId, key), {
        highWaterMark: CHUNK_BYTES,
        ...(range ? { start: range.start, end: range.end - 1 } : {}),
      });
      try {
        for await (const piece of stream) yield piece as Buffer;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw blobGone();
        throw e;
      }
    },
    async delete(partitionId, key) {
      const path = pathOf(partitionId, key);
      await rm(path, { force: true });
      await rm(`${path}.part`, { force: true });
      await db.query('DELETE FROM blobs WHERE partition_id = $1 AND blob_key = $2', [partitionId, key]);
    },
  };
  return store;
}

/** The store the setting `BLOB_STORE` names: `postgres`, or a directory path. */
export function createBlobStore(db: Db, setting: string): BlobStore {
  return setting === 'postgres' ? createDbBlobStore(db) : createDirectoryBlobStore(db, setting);
}
