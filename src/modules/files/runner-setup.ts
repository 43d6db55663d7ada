// The job runner of a server process, composed: the job kinds that exist so far (LOADDATA_FILE,
// INDEX_SYNC, DCR_SUBMIT) and
// the file maintenance (expired upload slots, abandoned loads, orphan files) and the daily record
// history clean-up. main.ts starts it; tests build
// their own with extra kinds or a partition filter.

import type { Config } from '../../config.ts';
import type { Db } from '../../db/db.ts';
import { createBlobStore } from '../../db/blob-store.ts';
import { JobRunner, type JobKinds, type RunnerOptions } from '../../jobs/runner.ts';
import { LOADDATA_FILE, loadFileJobKind } from './loadfile-job.ts';
import { closeAbandonedLoads } from './upload-status.ts';
import { removeExpiredSlots } from './slots.ts';
import { removeOrphanFiles } from './orphan-files.ts';
import { INDEX_SYNC, indexSyncJobKind } from '../admin/indexes.ts';
import { DCR_SUBMIT, dcrSubmitJobKind } from '../dcr/apply.ts';
import { REBATERECORD, rebateRecordJobKind } from '../rebates/submit.ts';
import { historyCleanupTask } from '../history/retention.ts';
import { CALCULATIONGRID, calcGridJobKind } from '../calcgrids/job.ts';

/** The orphan sweep scans whole tables: hourly is enough. */
const ORPHAN_SWEEP_MS = 60 * 60 * 1000;

export function buildJobRunner(
  db: Db,
  config: Config,
  extra: Partial<Omit<RunnerOptions, 'db' | 'config'>> & { extraKinds?: JobKinds } = {},
): JobRunner {
  const blobs = createBlobStore(db, config.blobStore);
  const { extraKinds, ...rest } = extra;
  let orphansSweptAt = 0;
  return new JobRunner({
    db,
    config,
    kinds: {
      [LOADDATA_FILE]: loadFileJobKind(db, blobs),
      [INDEX_SYNC]: indexSyncJobKind(db),
      [DCR_SUBMIT]: dcrSubmitJobKind(db),
      [REBATERECORD]: rebateRecordJobKind(db),
      [CALCULATIONGRID]: calcGridJobKind(db, { maxSteps: config.logicMaxSteps, maxMs: config.logicMaxMs }),
      ...extraKinds,
    },
    maintenance: [
      () => removeExpiredSlots(db, blobs, config.jobStaleSeconds),
      () => closeAbandonedLoads(db, blobs, config.syncTimeoutSeconds),
      async () => {
        if (Date.now() - orphansSweptAt < ORPHAN_SWEEP_MS) return;
        orphansSweptAt = Date.now();
        await removeOrphanFiles(db, blobs);
      },
      // Daily: record history older than HISTORY_RETENTION_DAYS.
      historyCleanupTask(db, config.historyRetentionDays),
    ],
    ...rest,
  });
}
