// The upload status record of a file load (`uploadStatusId`): created before the file is read,
// given the file's name and size, ended FINISHED with counts and the first row errors (by
// ./loadfile-run.ts), FAILED or CANCELLED; and the maintenance pass that ends the records whose
// load can no longer end by itself. The stored file is removed whenever a record ends.

import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import type { BlobStore } from '../../db/blob-store.ts';
import type { RowError } from '../../engine/loaddata.ts';
import { notFound } from '../../http/errors.ts';

export interface UploadStatusRow {
  readonly partition_id: number;
  readonly id: number;
  readonly type_code: string;
  readonly target_name: string | null;
  readonly file_name: string | null;
  readonly status: 'UPLOADING' | 'PROCESSING' | 'FINISHED' | 'FAILED' | 'CANCELLED';
  readonly job_id: number | null;
  readonly size: number | null;
  readonly loaded_records: number;
  readonly invalid_records: number;
  readonly total_records: number;
  readonly deleted_records: number;
  readonly errors: RowError[];
  readonly message: string | null;
  readonly blob_key: string | null;
  readonly created_by: number | null;
  readonly created_at: Date | string;
  readonly finished_at: Date | string | null;
}

export function uploadStatusView(s: UploadStatusRow) {
  return {
    uploadStatusId: s.id,
    typeCode: s.type_code,
    targetName: s.target_name,
    fileName: s.file_name,
    status: s.status,
    jstId: s.job_id,
    size: s.size,
    loadedRecords: Number(s.loaded_records),
    invalidRecords: Number(s.invalid_records),
    totalRecords: Number(s.total_records),
    deletedRecords: Number(s.deleted_records),
    errors: s.errors,
    message: s.message,
    createDate: new Date(s.created_at).toISOString(),
    finishDate: s.finished_at === null ? null : new Date(s.finished_at).toISOString(),
  };
}

export async function createUploadStatus(
  db: Db,
  principal: Principal,
  typeCode: string,
  targetName: string | undefined,
  file: { readonly blobKey: string } | { readonly fileName: string; readonly size: number },
): Promise<UploadStatusRow> {
  const own = 'blobKey' in file;
  const r = await db.query<UploadStatusRow>(
    `INSERT INTO upload_status (partition_id, type_code, target_name, status, blob_key, file_name, size, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [
      principal.partitionId,
      typeCode,
      targetName ?? null,
      own ? 'UPLOADING' : 'PROCESSING',
      own ? file.blobKey : null,
      own ? null : file.fileName,
      own ? null : file.size,
      principal.userId,
    ],
  );
  return r.rows[0]!;
}

/** A status record of the caller's (any of the partition's for an admin). */
export async function findUploadStatusOrFail(
  db: Db,
  principal: Principal,
  idText: string,
): Promise<UploadStatusRow> {
  const id = /^\d{1,15}$/.test(idText) ? Number(idText) : NaN;
  const r = Number.isNaN(id)
    ? { rows: [] }
    : await db.query<UploadStatusRow>(
        `SELECT * FROM upload_status WHERE partition_id = $1 AND id = $2 AND ($3::bigint IS NULL OR created_by = $3)`,
        [principal.partitionId, id, principal.admin ? null : principal.userId],
      );
  if (!r.rows[0]) throw notFound(`Upload status ${idText}`, 'uploadStatusId');
  return r.rows[0];
}

export async function setStatusFile(
  db: Db,
  s: UploadStatusRow,
  fileName: string,
  size: number,
): Promise<void> {
  await db.query(
    `UPDATE upload_status SET file_name = $3, size = $4, status = 'PROCESSING', active_at = now()
      WHERE partition_id = $1 AND id = $2`,
    [s.partition_id, s.id, fileName, size],
  );
}

/**
 * Ends a status record whose load failed (or never got to load: bad upload or options), removing its
 * file; `committed` counts the rows of the chunks that stay written (none by default).
 */
export async function failUploadStatus(
  db: Db,
  blobs: BlobStore,
  s: UploadStatusRow,
  message: string,
  committed: { readonly rows: number; readonly loaded: number; readonly invalid: number } = {
    rows: 0,
    loaded: 0,
    invalid: 0,
  },
): Promise<void> {
  await db.query(
    `UPDATE upload_status SET status = 'FAILED', message = $3, blob_key = NULL, finished_at = now(),
            loaded_records = $4, invalid_records = $5, total_records = $6
      WHERE partition_id = $1 AND id = $2`,
    [s.partition_id, s.id, message, committed.loaded, committed.invalid, committed.rows],
  );
  if (s.blob_key !== null) await blobs.delete(s.partition_id, s.blob_key);
}

/**
 * Marks the record alive while its upload arrives (`active_at`, migration 067): called as bytes come,
 * it writes at most once per `everyMs`. Answers the function to call; errors are the next touch's.
 */
export function uploadHeartbeat(db: Db, s: UploadStatusRow, everyMs: number): () => void {
  let last = Date.now();
  return () => {
    if (Date.now() - last < everyMs) return;
    last = Date.now();
    db.query('UPDATE upload_status SET active_at = now() WHERE partition_id = $1 AND id = $2', [
      s.partition_id,
      s.id,
    ]).catch(() => {});
  };
}

/**
 * Maintenance: status records whose load can no longer end by itself — their job ended without
 * them (cancelled while queued, failed after interruptions), or a synchronous load whose process
 * died (no sign of life — upload bytes, its end — for twice the synchronous time-out) — are ended,
 * and their files removed; so are the files of records their job's end settled (./loadfile-job.ts:
 * ended in the job's transaction, their file is removed here).
 */
export async function closeAbandonedLoads(
  db: Db,
  blobs: BlobStore,
  syncTimeoutSeconds: number,
): Promise<number> {
  const r = await db.query<{ partition_id: number; blob_key: string | null }>(
    `UPDATE upload_status s
        SET status = CASE WHEN j.status = 'CANCELLED' THEN 'CANCELLED' ELSE 'FAILED' END,
            message = coalesce(s.message, 'the load was interrupted'), finished_at = now(), blob_key = NULL
       FROM (SELECT u.partition_id, u.id, u.blob_key AS old_key, jj.status
               FROM upload_status u LEFT JOIN jobs jj ON jj.partition_id = u.partition_id AND jj.id = u.job_id
              WHERE u.status IN ('UPLOADING', 'PROCESSING')
                AND ((u.job_id IS NOT NULL AND (jj.id IS NULL OR jj.status IN ('FINISHED', 'FAILED', 'CANCELLED')))
                  OR (u.job_id IS NULL AND coalesce(u.active_at, u.created_at) < now() - make_interval(secs => $1)))) j
      WHERE s.partition_id = j.partition_id AND s.id = j.id
     RETURNING s.partition_id, j.old_key AS blob_key`,
    [syncTimeoutSeconds * 2],
  );
  for (const row of r.rows) if (row.blob_key !== null) await blobs.delete(row.partition_id, row.blob_key);
  const settled = await db.query<{ partition_id: number; blob_key: string }>(
    `UPDATE upload_status s SET blob_key = NULL
       FROM (SELECT partition_id, id, blob_key FROM upload_status
              WHERE status IN ('FINISHED', 'FAILED', 'CANCELLED') AND blob_key IS NOT NULL FOR UPDATE) o
      WHERE s.partition_id = o.partition_id AND s.id = o.id
     RETURNING s.partition_id, o.blob_key`,
  );
  for (const row of settled.rows) await blobs.delete(row.partition_id, row.blob_key);
  return r.rows.length + settled.rows.length;
}
