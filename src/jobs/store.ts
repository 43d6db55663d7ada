// The SQL of jobs (table `jobs`, type JST): create, claim, heartbeat, progress, finish, cancel and
// the stale sweep. Every write by a running job is fenced by (processing node, attempt): a node that
// lost its job to the stale sweep (it froze, and another node took the job over) changes nothing.

import type { Principal } from '../access/access.ts';
import type { Db, Queryable } from '../db/db.ts';
import { isoUtcSql } from '../db/sql.ts';
import { notifyUsers, type NotificationInput } from '../modules/notifications/service.ts';
import { FINAL_STATUSES, jobEnded, type JobStatus } from './endings.ts';

export { FINAL_STATUSES, type JobStatus } from './endings.ts';

export interface JobMessage {
  readonly at: string;
  readonly level: 'INFO' | 'WARNING' | 'ERROR';
  readonly text: string;
}

export interface JobRow {
  readonly partition_id: number;
  readonly id: number;
  readonly job_name: string;
  readonly tracker_type: string;
  readonly target_object: string | null;
  readonly status: JobStatus;
  readonly progress: number;
  readonly processing_node: string | null;
  readonly cancel_requested: boolean;
  readonly parameters: Record<string, unknown>;
  readonly checkpoint: unknown;
  readonly attempts: number;
  readonly max_attempts: number;
  readonly created_by: number | null;
}

export interface NewJob {
  readonly jobName: string;
  readonly trackerType: string;
  readonly targetObject?: string;
  readonly parameters: Record<string, unknown>;
  /** 1: never retried after an interruption. */
  readonly maxAttempts: number;
}

/**
 * A job's status and whether it has ended (FINISHED, FAILED, CANCELLED), or undefined when there is
 * no such job: what a record that points at its job (a DCR's, a rebate group's or a grid's `jstId`)
 * asks before another submit or calculation may start.
 */
export async function jobState(
  q: Queryable,
  partitionId: number,
  id: number,
): Promise<{ readonly status: JobStatus; readonly ended: boolean } | undefined> {
  const r = await q.query<{ status: JobStatus }>(
    'SELECT status FROM jobs WHERE partition_id = $1 AND id = $2',
    [partitionId, id],
  );
  const status = r.rows[0]?.status;
  return status === undefined ? undefined : { status, ended: FINAL_STATUSES.includes(status) };
}

function message(level: JobMessage['level'], text: string): string {
  return JSON.stringify([{ at: new Date().toISOString(), level, text }]);
}

/** A new job, queued (the runner picks it up). Call `notifyJobQueued` once the caller commits. */
export async function createJob(q: Queryable, principal: Principal, job: NewJob): Promise<JobRow> {
  const r = await q.query<JobRow>(
    `INSERT INTO jobs (partition_id, job_name, tracker_type, target_object, parameters, max_attempts,
                       created_by, last_update_by)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $7) RETURNING *`,
    [
      principal.partitionId,
      job.jobName,
      job.trackerType,
      job.targetObject ?? null,
      JSON.stringify(job.parameters),
      job.maxAttempts,
      principal.userId,
    ],
  );
  return r.rows[0]!;
}

/** Arbitrary constant naming "Ratecard job claims" among advisory locks. */
const CLAIM_LOCK = 72_657_402;

export interface ClaimOptions {
  readonly node: string;
  /** Tracker types this node can run; others stay queued for nodes that can. */
  readonly kinds: readonly string[];
  /** Free places on this node. */
  readonly limit: number;
  /** Jobs processing at once per partition, over all nodes (JOB_CONCURRENCY). */
  readonly perPartition: number;
  /** Only these partitions (tests); all when undefined. */
  readonly partitions?: readonly number[];
}

/**
 * Claims up to `limit` queued or retryable interrupted jobs. The per-partition bound counts jobs
 * processing on every node, so claims are serialised by a transaction-scoped advisory lock (held
 * for this one statement, never during the work); `FOR UPDATE SKIP LOCKED` passes over rows that a
 * cancel or another claim holds.
 */
export async function claimJobs(db: Db, o: ClaimOptions): Promise<JobRow[]> {
  if (o.limit <= 0 || o.kinds.length === 0) return [];
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [CLAIM_LOCK]);
    const r = await tx.query<JobRow>(
      `WITH running AS (
         SELECT partition_id, count(*)::int AS n FROM jobs WHERE status = 'PROCESSING' GROUP BY partition_id
       ), ranked AS (
         SELECT j.partition_id, j.id,
                row_number() OVER (PARTITION BY j.partition_id ORDER BY j.created_at, j.id)::int AS rn
           FROM jobs j
          WHERE (j.status = 'QUEUED_FOR_EXECUTION'
                 OR (j.status = 'INTERRUPTED' AND j.attempts < j.max_attempts))
            AND j.tracker_type = ANY($2::text[])
            AND ($5::bigint[] IS NULL OR j.partition_id = ANY($5::bigint[]))
       ), eligible AS (
         SELECT k.partition_id, k.id FROM ranked k LEFT JOIN running r USING (partition_id)
          WHERE k.rn <= $4::int - coalesce(r.n, 0)
       )
       UPDATE jobs j
          SET status = 'PROCESSING', processing_node = $1, processing_start = now(), processing_end = NULL,
              heartbeat_at = now(), attempts = j.attempts + 1, cancel_requested = j.cancel_requested,
              version = j.version + 1, last_update_at = now()
        WHERE (j.partition_id, j.id) IN (
          SELECT q.partition_id, q.id FROM jobs q
           WHERE (q.partition_id, q.id) IN (SELECT partition_id, id FROM eligible)
           ORDER BY q.created_at, q.id
           LIMIT $3
             FOR UPDATE SKIP LOCKED)
       RETURNING j.*`,
      [o.node, o.kinds, o.limit, o.perPartition, o.partitions ?? null],
    );
    return r.rows;
  });
}

/** The fence of a running job's writes: still this node's, still this attempt, still processing. */
const FENCE = `partition_id = $1 AND id = $2 AND processing_node = $3 AND attempts = $4 AND status = 'PROCESSING'`;
const fence = (job: JobRow) => [job.partition_id, job.id, job.processing_node, job.attempts];

/** Keeps the node's jobs alive; answers those whose cancellation was requested. */
export async function heartbeat(db: Db, node: string, jobs: readonly JobRow[]): Promise<Set<number>> {
  if (jobs.length === 0) return new Set();
  const r = await db.query<{ id: number; cancel_requested: boolean }>(
    `UPDATE jobs SET heartbeat_at = now()
      WHERE processing_node = $1 AND status = 'PROCESSING' AND id = ANY($2::bigint[])
     RETURNING id, cancel_requested`,
    [node, jobs.map((j) => j.id)],
  );
  return new Set(r.rows.filter((x) => x.cancel_requested).map((x) => x.id));
}

export interface Progress {
  /** 0..100. */
  readonly progress?: number;
  readonly message?: string;
  readonly checkpoint?: unknown;
}

/**
 * Records progress; answers whether cancellation was requested, or `lost` when the job is no
 * longer this node's attempt (then the work must stop without writing anything more).
 */
export async function recordProgress(db: Db, job: JobRow, p: Progress): Promise<'ok' | 'cancel' | 'lost'> {
  const r = await db.query<{ cancel_requested: boolean }>(
    `UPDATE jobs
        SET heartbeat_at = now(),
            progress = coalesce($5, progress),
            checkpoint = coalesce($6::jsonb, checkpoint),
            messages = CASE WHEN $7::jsonb IS NULL THEN messages ELSE messages || $7::jsonb END,
            last_update_at = now()
      WHERE ${FENCE} RETURNING cancel_requested`,
    [
      ...fence(job),
      p.progress === undefined ? null : Math.max(0, Math.min(100, Math.round(p.progress))),
      p.checkpoint === undefined ? null : JSON.stringify(p.checkpoint),
      p.message === undefined ? null : message('INFO', p.message),
    ],
  );
  if (r.rows.length === 0) return 'lost';
  return r.rows[0]!.cancel_requested ? 'cancel' : 'ok';
}

export interface Ending {
  readonly status: 'FINISHED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED';
  readonly message?: string;
  readonly level?: JobMessage['level'];
  readonly results?: unknown;
}

interface EndedJob {
  readonly partition_id: number;
  readonly id: number;
  readonly job_name: string;
  readonly tracker_type: string;
  readonly status: JobStatus;
  readonly created_by: number | null;
  readonly parameters: Record<string, unknown>;
}

const ENDED_JOB = 'partition_id, id, job_name, tracker_type, status, created_by, parameters';

const ENDINGS: Partial<Record<JobStatus, { word: string; level: NotificationInput['status'] }>> = {
  FINISHED: { word: 'finished', level: 'SUCCESS' },
  FAILED: { word: 'failed', level: 'ERROR' },
  CANCELLED: { word: 'was cancelled', level: 'WARNING' },
};

/** Tells the owner of a job that ended (finished, failed, cancelled), in the caller's transaction. */
async function notifyOwner(q: Queryable, job: EndedJob, text: string | undefined): Promise<void> {
  const ending = ENDINGS[job.status];
  if (ending === undefined || job.created_by === null) return;
  await notifyUsers(q, job.partition_id, [job.created_by], {
    title: `Job ${job.job_name} ${ending.word}`,
    ...(text === undefined ? {} : { message: text }),
    source: `${job.id}.JST`,
    status: ending.level,
    topic: 'JOB',
    actionType: 'INFO_MESSAGE',
    payload: { jstId: job.id, typedId: `${job.id}.JST`, trackerType: job.tracker_type, status: job.status },
  });
}

/**
 * Ends the attempt. INTERRUPTED (the node stops) becomes FAILED when no attempt is left. The job's
 * owner is notified of FINISHED, FAILED and CANCELLED in the same transaction, where a FAILED or
 * CANCELLED job's kind also settles the record it worked for (./endings.ts).
 */
export async function finishJob(db: Db, job: JobRow, end: Ending): Promise<boolean> {
  return db.transaction(async (tx) => {
    const r = await tx.query<EndedJob>(
      `UPDATE jobs
        SET status = CASE WHEN $5 = 'INTERRUPTED' AND attempts >= max_attempts THEN 'FAILED' ELSE $5 END,
            progress = CASE WHEN $5 = 'FINISHED' THEN 100 ELSE progress END,
            processing_end = now(),
            calculation_results = coalesce($6::jsonb, calculation_results),
            messages = CASE WHEN $7::jsonb IS NULL THEN messages ELSE messages || $7::jsonb END,
            version = version + 1, last_update_at = now()
      WHERE ${FENCE} RETURNING ${ENDED_JOB}`,
      [
        ...fence(job),
        end.status,
        end.results === undefined ? null : JSON.stringify(end.results),
        end.message === undefined ? null : message(end.level ?? 'INFO', end.message),
      ],
    );
    const ended = r.rows[0];
    if (ended) {
      await notifyOwner(tx, ended, end.message);
      await jobEnded(tx, ended);
    }
    return ended !== undefined;
  });
}

/**
 * Jobs whose node stopped heartbeating for `staleSeconds`: INTERRUPTED, to be retried by any node
 * (the claim takes them) while attempts are left, else FAILED (the owner is notified, the kind
 * settles its record: ./endings.ts). Answers the jobs changed.
 */
export async function sweepStale(db: Db, staleSeconds: number): Promise<JobRow[]> {
  return db.transaction(async (tx) => {
    const r = await tx.query<JobRow>(
      `UPDATE jobs
        SET status = CASE WHEN attempts < max_attempts THEN 'INTERRUPTED' ELSE 'FAILED' END,
            processing_end = now(),
            messages = messages || jsonb_build_array(jsonb_build_object(
              'at', ${isoUtcSql('now()')},
              'level', 'WARNING',
              'text', 'interrupted: node ' || coalesce(processing_node, '?') || ' sent no heartbeat for '
                      || $1 || ' s' || CASE WHEN attempts < max_attempts THEN '; it will be retried'
                                            ELSE '; not retried' END)),
            version = version + 1, last_update_at = now()
      WHERE status = 'PROCESSING' AND heartbeat_at < now() - make_interval(secs => $1)
     RETURNING *`,
      [staleSeconds],
    );
    for (const j of r.rows) {
      await notifyOwner(tx, j, 'interrupted: its node sent no heartbeat; not retried');
      await jobEnded(tx, j);
    }
    return r.rows;
  });
}

/**
 * Cancels a job: one not running yet ends CANCELLED at once (its kind settles the record it was to
 * work for: ./endings.ts); a running one gets `cancelRequested` and stops at its next check (between
 * chunks). A job that has ended, or a running one already asked to stop, is left as it is (not even
 * its version moves: the route refuses the first with a 409, answers the second as it stands).
 * Answers the status afterwards, or undefined when the job is unknown (or, `own` being set, not the
 * caller's).
 */
export async function requestCancel(
  db: Db,
  partitionId: number,
  jobId: number,
  own: number | undefined,
): Promise<JobStatus | undefined> {
  return db.transaction(async (tx) => {
    const old = await tx.query<{ status: JobStatus; cancel_requested: boolean }>(
      `SELECT status, cancel_requested FROM jobs
        WHERE partition_id = $1 AND id = $2 AND ($3::bigint IS NULL OR created_by = $3) FOR UPDATE`,
      [partitionId, jobId, own ?? null],
    );
    const found = old.rows[0];
    if (found === undefined) return undefined;
    const asItIs =
      FINAL_STATUSES.includes(found.status) || (found.status === 'PROCESSING' && found.cancel_requested);
    if (asItIs) return found.status;
    const r = await tx.query<EndedJob>(
      `UPDATE jobs
          SET cancel_requested = true,
              status = CASE WHEN status = 'PROCESSING' THEN status ELSE 'CANCELLED' END,
              processing_end = CASE WHEN status = 'PROCESSING' THEN processing_end ELSE now() END,
              version = version + 1, last_update_at = now()
        WHERE partition_id = $1 AND id = $2
       RETURNING ${ENDED_JOB}`,
      [partitionId, jobId],
    );
    const row = r.rows[0]!;
    if (row.status === 'CANCELLED') {
      await notifyOwner(tx, row, 'cancelled on request before it ran');
      await jobEnded(tx, row);
    }
    return row.status;
  });
}
