// Upload slots: create a slot, stream a file into it, watch its progress, delete it. A slot belongs
// to the user who created it (others get 404, as for an unknown slot) and expires
// UPLOAD_SLOT_TTL_MINUTES after its last use; expired slots are removed with their file by the job
// runner's maintenance pass (`removeExpiredSlots`). Other operations (attachments, images,
// /importfile) read a slot's file, or take it over without copying (`takeSlotFile`).

import { randomBytes } from 'node:crypto';
import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import type { BlobStore } from '../../db/blob-store.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';

export interface SlotRow {
  readonly partition_id: number;
  readonly id: string;
  readonly created_by: number;
  readonly status: 'EMPTY' | 'UPLOADING' | 'FINISHED' | 'FAILED';
  readonly file_name: string | null;
  readonly content_type: string | null;
  readonly bytes_received: number;
  readonly size: number | null;
  readonly file_version: number;
  readonly blob_key: string | null;
  readonly message: string | null;
  readonly created_at: Date | string;
  readonly expires_at: Date | string;
}

/** A slot as the API shows it. */
export function slotView(s: SlotRow) {
  return {
    // Clients of the interface read `id`; `slotId` names the same value.
    id: s.id,
    slotId: s.id,
    status: s.status,
    fileName: s.file_name,
    contentType: s.content_type,
    bytesReceived: Number(s.bytes_received),
    size: s.size === null ? null : Number(s.size),
    fileVersion: s.file_version,
    hasFile: s.blob_key !== null && s.status === 'FINISHED',
    message: s.message,
    createDate: iso(s.created_at),
    expiresAt: iso(s.expires_at),
  };
}

export function iso(v: Date | string | null): string | null {
  if (v === null) return null;
  return v instanceof Date ? v.toISOString() : new Date(v).toISOString();
}

const SLOT_ID = /^[a-f0-9]{32}$/;

/** What no file name holds (cleanFileName drops it): control characters and quotes. */
// eslint-disable-next-line no-control-regex
const NOT_IN_FILE_NAMES = /[\u0000-\u001f\u007f"]/g;

/** A file name as given by the client, reduced to its last path segment and printable characters. */
export function cleanFileName(raw: string | undefined | null, fallback = 'upload'): string {
  const base = (raw ?? '').split(/[/\\]/).pop() ?? '';
  const printable = base.replace(NOT_IN_FILE_NAMES, '').trim();
  return maxCharacters(printable === '' ? fallback : printable, 255);
}

/** Whether `name` is a file name as cleanFileName keeps one: no directory, quote or control character. */
export function isFileName(name: string): boolean {
  return !/[/\\]/.test(name) && name.replace(NOT_IN_FILE_NAMES, '') === name;
}

/** The first `n` characters of `s`, whole ones: a cut between the halves of a pair would leave one. */
export function maxCharacters(s: string, n: number): string {
  return s.length <= n ? s : Array.from(s).slice(0, n).join('');
}

export async function createSlot(db: Db, principal: Principal, ttlMinutes: number): Promise<SlotRow> {
  const r = await db.query<SlotRow>(
    `INSERT INTO upload_slots (partition_id, id, created_by, expires_at)
     VALUES ($1, $2, $3, now() + make_interval(mins => $4)) RETURNING *`,
    [principal.partitionId, randomBytes(16).toString('hex'), principal.userId, ttlMinutes],
  );
  return r.rows[0]!;
}

/** The caller's slot, not expired; 404 for anything else (unknown, expired, another user's). */
export async function findSlotOrFail(q: Queryable, principal: Principal, slotId: string): Promise<SlotRow> {
  if (!SLOT_ID.test(slotId)) throw notFound(`Upload slot ${slotId}`, 'slotId');
  const r = await q.query<SlotRow>(
    `SELECT * FROM upload_slots
      WHERE partition_id = $1 AND id = $2 AND created_by = $3 AND expires_at > now()`,
    [principal.partitionId, slotId, principal.userId],
  );
  if (!r.rows[0]) throw notFound(`Upload slot ${slotId}`, 'slotId');
  return r.rows[0];
}

/** The caller's slot holding a whole file (for operations that use the file). */
export async function findFilledSlotOrFail(
  q: Queryable,
  principal: Principal,
  slotId: string,
): Promise<SlotRow & { blob_key: string; size: number; file_name: string }> {
  const slot = await findSlotOrFail(q, principal, slotId);
  if (slot.status !== 'FINISHED' || slot.blob_key === null) {
    throw validationError('slotId', `upload slot ${slotId} holds no file (status ${slot.status})`);
  }
  return slot as SlotRow & { blob_key: string; size: number; file_name: string };
}

export interface IncomingFile {
  readonly fileName: string;
  readonly contentType: string;
  readonly stream: AsyncIterable<Uint8Array>;
  /** A file of no bytes is refused (a -4 on this field: `body`, or the multipart part's name), the slot keeping what it held. */
  readonly emptyRefusedAs?: string;
}

export interface UploadLimits {
  readonly maxBytes: number;
  readonly ttlMinutes: number;
  /** An UPLOADING slot not updated for this long belongs to a dead upload and may be reused. */
  readonly staleSeconds: number;
}

/** Progress is written at most this often (bytes or time), not per network packet. */
const PROGRESS_BYTES = 1024 * 1024;
const PROGRESS_MS = 1000;

/** Streams a file into the slot (replacing an earlier one); answers the slot as it is afterwards. */
export async function uploadIntoSlot(
  db: Db,
  blobs: BlobStore,
  principal: Principal,
  slotId: string,
  file: IncomingFile,
  limits: UploadLimits,
): Promise<SlotRow> {
  await findSlotOrFail(db, principal, slotId);
  const key = blobs.newKey();
  // Claim the slot for this upload, recording the new key first: if the process dies mid-upload,
  // the slot's expiry removes whatever was written. The file it held stays until the new one is
  // whole: a failed upload puts it back (below).
  type Old = Pick<SlotRow, 'status' | 'blob_key' | 'file_name' | 'content_type' | 'size'>;
  const claimed = await db.query<Old>(
    `WITH old AS (
       SELECT * FROM upload_slots WHERE partition_id = $1 AND id = $2 FOR UPDATE)
     UPDATE upload_slots s
        SET status = 'UPLOADING', blob_key = $3, file_name = $4, content_type = $5, bytes_received = 0,
            size = NULL, message = NULL, last_update_at = now(),
            expires_at = greatest(s.expires_at, now() + make_interval(mins => $6))
       FROM old o -- joined, so read before the update (a sub-select in RETURNING would run after it
                  -- and, FOR UPDATE, skip the row this statement just changed: NULLs)
      WHERE s.partition_id = $1 AND s.id = $2
        AND (s.status <> 'UPLOADING' OR s.last_update_at < now() - make_interval(secs => $7))
     RETURNING o.status, o.blob_key, o.file_name, o.content_type, o.size`,
    [
      principal.partitionId,
      slotId,
      key,
      file.fileName,
      file.contentType,
      limits.ttlMinutes,
      limits.staleSeconds,
    ],
  );
  if (claimed.rows.length === 0) {
    throw new AppError('CONFLICT', `An upload into slot ${slotId} is in progress`);
  }
  const old = claimed.rows[0]!;
  const kept = old.status === 'FINISHED' && old.blob_key !== null ? old : undefined;
  if (old.blob_key !== null && kept === undefined) await blobs.delete(principal.partitionId, old.blob_key);

  let recorded = 0;
  let recordedAt = Date.now();
  try {
    const size = await blobs.write(principal.partitionId, key, file.stream, {
      maxBytes: limits.maxBytes,
      onProgress: async (bytes) => {
        if (bytes - recorded < PROGRESS_BYTES && Date.now() - recordedAt < PROGRESS_MS) return;
        recorded = bytes;
        recordedAt = Date.now();
        await db.query(
          `UPDATE upload_slots SET bytes_received = $3, last_update_at = now()
            WHERE partition_id = $1 AND id = $2 AND blob_key = $4`,
          [principal.partitionId, slotId, bytes, key],
        );
      },
    });
    if (size === 0 && file.emptyRefusedAs !== undefined) {
      throw validationError(
        file.emptyRefusedAs,
        'is empty: send the file as the body or as multipart field `file`',
      );
    }
    const r = await db.query<SlotRow>(
      `UPDATE upload_slots
          SET status = 'FINISHED', size = $3, bytes_received = $3, file_version = file_version + 1,
              last_update_at = now()
        WHERE partition_id = $1 AND id = $2 AND blob_key = $4 RETURNING *`,
      [principal.partitionId, slotId, size, key],
    );
    if (!r.rows[0]) {
      // The slot was deleted while the file arrived: the file has no owner.
      await blobs.delete(principal.partitionId, key);
      throw notFound(`Upload slot ${slotId}`, 'slotId');
    }
    if (kept) await blobs.delete(principal.partitionId, kept.blob_key!);
    return r.rows[0];
  } catch (e) {
    await blobs.delete(principal.partitionId, key).catch(() => {});
    // The slot holds what it held before, or, if that was no whole file, the failure.
    const restored = kept
      ? await db
          .query(
            `UPDATE upload_slots SET status = 'FINISHED', blob_key = $4, file_name = $5, content_type = $6,
                    size = $7, bytes_received = $7, message = NULL, last_update_at = now()
              WHERE partition_id = $1 AND id = $2 AND blob_key = $3`,
            [principal.partitionId, slotId, key, kept.blob_key, kept.file_name, kept.content_type, kept.size],
          )
          .then((r) => (r.rowCount ?? 0) > 0)
          .catch(() => false)
      : false;
    if (kept && !restored) await blobs.delete(principal.partitionId, kept.blob_key!).catch(() => {});
    if (!restored) {
      const message = e instanceof AppError ? e.message : 'The upload failed';
      await db
        .query(
          `UPDATE upload_slots SET status = 'FAILED', blob_key = NULL, message = $4, last_update_at = now()
            WHERE partition_id = $1 AND id = $2 AND blob_key = $3`,
          [principal.partitionId, slotId, key, message],
        )
        .catch(() => {});
    }
    throw e;
  }
}

/** Removes the slot and its file (unless an attachment took it over); answers the slot as it was. */
export async function deleteSlot(
  db: Db,
  blobs: BlobStore,
  principal: Principal,
  slotId: string,
): Promise<SlotRow> {
  await findSlotOrFail(db, principal, slotId);
  const r = await db.query<SlotRow>(
    'DELETE FROM upload_slots WHERE partition_id = $1 AND id = $2 RETURNING *',
    [principal.partitionId, slotId],
  );
  const slot = r.rows[0];
  if (!slot) throw notFound(`Upload slot ${slotId}`, 'slotId');
  if (slot.blob_key !== null) await blobs.delete(principal.partitionId, slot.blob_key);
  return slot;
}

/**
 * Inside the caller's transaction: hands the slot's file over to a new owner (attachment, image);
 * the slot keeps its status and details but no longer owns the file, so deleting it later keeps it.
 */
export async function takeSlotFile(
  q: Queryable,
  principal: Principal,
  slotId: string,
  key: string,
): Promise<void> {
  const r = await q.query(
    `UPDATE upload_slots SET blob_key = NULL, last_update_at = now()
      WHERE partition_id = $1 AND id = $2 AND blob_key = $3`,
    [principal.partitionId, slotId, key],
  );
  if (r.rowCount !== 1) throw new AppError('CONFLICT', `The file of slot ${slotId} changed meanwhile; retry`);
}

/**
 * Maintenance: removes expired slots with their files. A slot still receiving bytes (updated within
 * `staleSeconds`) is kept until its upload ends. Answers the number removed.
 */
export async function removeExpiredSlots(db: Db, blobs: BlobStore, staleSeconds: number): Promise<number> {
  const r = await db.query<{ partition_id: number; blob_key: string | null }>(
    `DELETE FROM upload_slots
      WHERE expires_at < now()
        AND NOT (status = 'UPLOADING' AND last_update_at > now() - make_interval(secs => $1))
     RETURNING partition_id, blob_key`,
    [staleSeconds],
  );
  for (const row of r.rows) {
    if (row.blob_key !== null) await blobs.delete(row.partition_id, row.blob_key);
  }
  return r.rows.length;
}
