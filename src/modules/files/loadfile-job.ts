// The asynchronous variant of a file load: a LOADDATA_FILE job, queued with the upload status
// record it reports into, running ./loadfile-run.ts's load with checkpoints (resumable) and
// cancellation between chunks.

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import type { BlobStore } from '../../db/blob-store.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { AppError } from '../../http/errors.ts';
import { onJobEnded, type EndedJob } from '../../jobs/endings.ts';
import { JobStopped, type JobContext, type JobKind } from '../../jobs/runner.ts';
import { createJob, type JobRow } from '../../jobs/store.ts';
import { RESTRICTION_PARAM, restrictionOf } from '../../jobs/principal.ts';
import { fileLoadType, type FileLoadOptions } from './loadfile.ts';
import { executeFileLoad, type Checkpoint } from './loadfile-run.ts';
import type { UploadStatusRow } from './upload-status.ts';

export const LOADDATA_FILE = 'LOADDATA_FILE';

interface LoadFileParams {
  readonly uploadStatusId: number;
  readonly typeCode: string;
  readonly options: FileLoadOptions;
}

export async function queueFileLoad(
  db: Db,
  principal: Principal,
  type: TypeDef,
  s: UploadStatusRow,
  o: FileLoadOptions,
): Promise<JobRow> {
  const target = o.name ?? (o.tableId === undefined ? undefined : `#${o.tableId}`);
  return db.transaction(async (tx) => {
    const job = await createJob(tx, principal, {
      jobName: `Load ${s.file_name ?? 'file'} into ${type.code}${target === undefined ? '' : ` ${target}`}`,
      trackerType: LOADDATA_FILE,
      targetObject: target === undefined ? type.code : `${type.code}:${target}`,
      parameters: {
        uploadStatusId: s.id,
        typeCode: type.code,
        options: o,
        [RESTRICTION_PARAM]: restrictionOf(principal),
      } satisfies LoadFileParams & Record<string, unknown>,
      maxAttempts: 3,
    });
    await tx.query('UPDATE upload_status SET job_id = $3 WHERE partition_id = $1 AND id = $2', [
      s.partition_id,
      s.id,
      job.id,
    ]);
    return job;
  });
}

/**
 * A LOADDATA_FILE job ended FAILED or CANCELLED while its status record still waits for it (cancelled
 * before it ran; its last attempt's node lost): the record ends as its job did, in the transaction
 * that ends the job, so `/uploadmanager.status` never shows PROCESSING for a load that will not run.
 * A run that ended by itself (finished, failed, stopped by a cancel with its counts) set the record
 * already. The stored file is removed by the next maintenance pass (closeAbandonedLoads): a file
 * store is no part of the transaction.
 */
async function settleUploadStatus(q: Queryable, job: EndedJob): Promise<void> {
  const message =
    job.status === 'CANCELLED' ? 'cancelled on request before it ran' : 'the load was interrupted';
  await q.query(
    `UPDATE upload_status SET status = $4, message = coalesce(message, $5), finished_at = now()
      WHERE partition_id = $1 AND id = $2 AND job_id = $3 AND status IN ('UPLOADING', 'PROCESSING')`,
    [job.partition_id, Number(job.parameters.uploadStatusId), job.id, job.status, message],
  );
}

onJobEnded(LOADDATA_FILE, settleUploadStatus);

/**
 * LOADDATA_FILE: resumable (a retry after an interruption skips the rows its checkpoint says were
 * committed; a chunk committed just before the node died may be applied twice — an update again,
 * or duplicate-key row errors without join fields). Cancellation stops between chunks.
 */
export function loadFileJobKind(db: Db, blobs: BlobStore): JobKind {
  return {
    maxAttempts: 3,
    async run(ctx: JobContext) {
      const p = ctx.job.parameters as unknown as LoadFileParams;
      const type = fileLoadType(p.typeCode);
      const r = await db.query<UploadStatusRow>(
        'SELECT * FROM upload_status WHERE partition_id = $1 AND id = $2',
        [ctx.job.partition_id, p.uploadStatusId],
      );
      const s = r.rows[0];
      if (!s) throw new AppError('NOT_FOUND', `Upload status ${p.uploadStatusId} is gone`);
      const size = Number(s.size ?? 0);
      /** The last committed chunk's counts (what a cancel leaves written). */
      let last = ctx.job.checkpoint as Checkpoint | null;
      try {
        const result = await executeFileLoad(db, blobs, ctx.principal, type, s, p.options, {
          ...(last ? { resumeFrom: last } : {}),
          afterChunk: (c, bytes) => {
            last = c;
            return ctx.progress({ progress: size > 0 ? (99 * bytes) / size : 0, checkpoint: c });
          },
        });
        return result;
      } catch (e) {
        if (e instanceof JobStopped && e.reason === 'cancel') {
          await db.query(
            `UPDATE upload_status SET status = 'CANCELLED', message = 'cancelled on request', blob_key = NULL,
                    finished_at = now(), loaded_records = $3, invalid_records = $4, total_records = $5
              WHERE partition_id = $1 AND id = $2 AND status <> 'FINISHED'`,
            [s.partition_id, s.id, last?.loaded ?? 0, last?.invalid ?? 0, last?.rows ?? 0],
          );
          if (s.blob_key !== null) await blobs.delete(s.partition_id, s.blob_key);
        }
        throw e;
      }
    },
  };
}
