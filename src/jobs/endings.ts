// What a job kind does when one of its jobs ends FAILED or CANCELLED: the record the job worked for
// (a DCR it was to apply, a grid it was to calculate) must not stay marked as waiting for a job that
// will never run again. A kind registers its hook once (`onJobEnded`, code configuration filled when
// its module is loaded: by the routes and by the runner alike); src/jobs/store.ts calls it in the
// transaction that ends the job, whichever way it ends — cancelled before it ran (/admin.canceljst),
// stopped by a cancel or an error, failed by the stale sweep or a stop after its last attempt.
// A hook moves the record to a state a user can act from, and only when the record still waits for
// THIS job (the run may have settled it already, or a later job taken it over); a record that is gone
// is no error. Deleting a job that has not ended is refused (src/engine/registry.ts), so no hook is
// needed there.

import type { Queryable } from '../db/db.ts';

export type JobStatus =
  | 'WAITING_FOR_DISPATCH'
  | 'QUEUED_FOR_EXECUTION'
  | 'PROCESSING'
  | 'FINISHED'
  | 'FAILED'
  | 'CANCELLED'
  | 'INTERRUPTED';

/** The statuses of a job that has ended (a leaf of its own: the engine's JST type reads it too). */
export const FINAL_STATUSES: readonly JobStatus[] = ['FINISHED', 'FAILED', 'CANCELLED'];

/** What a hook knows of the ended job. */
export interface EndedJob {
  readonly partition_id: number;
  readonly id: number;
  readonly job_name: string;
  readonly tracker_type: string;
  readonly status: 'FAILED' | 'CANCELLED';
  readonly created_by: number | null;
  readonly parameters: Record<string, unknown>;
}

export type JobEndedHook = (q: Queryable, job: EndedJob) => Promise<void>;

const hooks = new Map<string, JobEndedHook>();

/** Registers the hook of a tracker type (again: replaces it). */
export function onJobEnded(trackerType: string, hook: JobEndedHook): void {
  hooks.set(trackerType, hook);
}

/** Calls the hook of the job's kind when it ended FAILED or CANCELLED (in the caller's transaction). */
export async function jobEnded(
  q: Queryable,
  job: Omit<EndedJob, 'status'> & { readonly status: string },
): Promise<void> {
  if (job.status !== 'FAILED' && job.status !== 'CANCELLED') return;
  await hooks.get(job.tracker_type)?.(q, { ...job, status: job.status });
}
