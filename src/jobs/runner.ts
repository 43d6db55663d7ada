// The job runner inside every server process: it claims queued jobs (src/jobs/store.ts), runs each
// with its kind's handler, heartbeats them, sweeps jobs of dead nodes (INTERRUPTED, retried or failed
// per the kind's attempts), and runs the maintenance tasks it is given (expired upload slots, ...).
// Nothing is held in memory that another node needs: the jobs table is the queue. No transaction is
// held while a job works (claims and progress are single short statements), so the runner is safe on
// PGlite's single connection.

import { outsideRequest } from '../db/deadline.ts';
import { runWithHistoryOrigin } from '../engine/history.ts';
import { outsidePatternScope } from '../engine/criteria/patterns.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import type { Principal } from '../access/access.ts';
import { AppError } from '../http/errors.ts';
import { principalForJob } from './principal.ts';
import {
  claimJobs,
  finishJob,
  heartbeat,
  recordProgress,
  sweepStale,
  type JobRow,
  type Progress,
} from './store.ts';

/** What a running job can do besides its own work. */
export interface JobContext {
  readonly job: JobRow;
  /** The job's creator with the rights they hold now (re-read when the job starts). */
  readonly principal: Principal;
  /** Aborted when the node stops: finish the current step, then return or throw. */
  readonly signal: AbortSignal;
  /**
   * Records progress (and a checkpoint to resume from after an interruption). Throws `JobStopped`
   * when cancellation was requested, the node stops, or the job was taken over by another node —
   * so calling it between chunks is also the cancellation check.
   */
  progress(p: Progress): Promise<void>;
}

export interface JobKind {
  /** Attempts in all; 1 means an interrupted job is failed instead of retried. */
  readonly maxAttempts: number;
  /** The work; what it answers becomes the job's `calculationResults`. */
  run(ctx: JobContext): Promise<unknown>;
}

export type JobKinds = Readonly<Record<string, JobKind>>;

/** Why a job stopped early: cancelled, node stopping, or lost to another node. */
export class JobStopped extends Error {
  readonly reason: 'cancel' | 'stop' | 'lost';
  constructor(reason: 'cancel' | 'stop' | 'lost') {
    super(
      reason === 'cancel' ? 'cancelled on request' : reason === 'stop' ? 'the node stopped' : 'taken over',
    );
    this.name = 'JobStopped';
    this.reason = reason;
  }
}

interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface RunnerOptions {
  readonly db: Db;
  readonly config: Pick<Config, 'nodeId' | 'jobConcurrency' | 'jobHeartbeatSeconds' | 'jobStaleSeconds'>;
  readonly kinds: JobKinds;
  readonly log?: Logger;
  /** Periodic clean-ups (expired upload slots, ...), run every `maintenanceMs`. */
  readonly maintenance?: readonly (() => Promise<unknown>)[];
  /** Jobs this node runs at once over all partitions; 8 unless given. */
  readonly nodeCapacity?: number;
  /** How often to look for queued jobs without being nudged; 1 s unless given. */
  readonly pollMs?: number;
  readonly maintenanceMs?: number;
  /** Only these partitions (tests sharing one database with other suites). */
  readonly partitions?: readonly number[];
}

const nudges = new EventTarget();

/** Wakes this process's runner at once (after committing a new job); other nodes find it by polling. */
export function notifyJobQueued(): void {
  nudges.dispatchEvent(new Event('queued'));
}

const silent: Logger = { info() {}, warn() {}, error() {} };

export class JobRunner {
  private readonly o: RunnerOptions;
  private readonly log: Logger;
  private readonly running = new Map<
    number,
    { job: JobRow; abort: AbortController; cancel: boolean; done: Promise<void> }
  >();
  private readonly timers: NodeJS.Timeout[] = [];
  private stopping = false;
  private ticking: Promise<void> | undefined;
  private again = false;
  // A nudge comes from a request handler: the jobs it starts must not inherit that request's
  // synchronous deadline (src/db/deadline.ts).
  // Nor the fields its criteria noted (src/engine/criteria/patterns.ts).
  private readonly onNudge = () => void outsideRequest(() => outsidePatternScope(() => this.tick()));

  constructor(o: RunnerOptions) {
    this.o = o;
    this.log = o.log ?? silent;
  }

  get node(): string {
    return this.o.config.nodeId;
  }

  start(): this {
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const t = setInterval(() => {
        fn().catch((err: unknown) => this.log.error({ err }, 'job runner task failed'));
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    every(this.o.pollMs ?? 1000, () => this.tick());
    every(this.o.config.jobHeartbeatSeconds * 1000, () => this.beat());
    every(Math.max(1000, (this.o.config.jobStaleSeconds * 1000) / 2), () => this.sweep());
    every(this.o.maintenanceMs ?? 60_000, () => this.maintain());
    nudges.addEventListener('queued', this.onNudge);
    this.sweep()
      .then(() => this.tick())
      .catch((err: unknown) => this.log.error({ err }, 'job runner start-up sweep failed'));
    return this;
  }

  /** Claims and starts what fits; concurrent calls coalesce into one more round. */
  tick(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    if (this.ticking) {
      this.again = true;
      return this.ticking;
    }
    this.ticking = (async () => {
      try {
        do {
          this.again = false;
          await this.claimAndStart();
        } while (this.again && !this.stopping);
      } catch (err) {
        this.log.error({ err }, 'job claim failed');
      } finally {
        this.ticking = undefined;
      }
    })();
    return this.ticking;
  }

  private async claimAndStart(): Promise<void> {
    const free = (this.o.nodeCapacity ?? 8) - this.running.size;
    if (free <= 0) return;
    const jobs = await claimJobs(this.o.db, {
      node: this.node,
      kinds: Object.keys(this.o.kinds),
      limit: free,
      perPartition: this.o.config.jobConcurrency,
      ...(this.o.partitions ? { partitions: this.o.partitions } : {}),
    });
    for (const job of jobs) {
      const abort = new AbortController();
      const entry = { job, abort, cancel: job.cancel_requested, done: Promise.resolve() };
      this.running.set(job.id, entry);
      entry.done = this.execute(job, abort.signal)
        // Only recording the end can fail here (database gone): the stale sweep settles the job.
        .catch((err: unknown) => this.log.error({ err, job: job.id }, 'job end not recorded'))
        .finally(() => {
          this.running.delete(job.id);
          void this.tick();
        });
    }
  }

  private async execute(job: JobRow, signal: AbortSignal): Promise<void> {
    const kind = this.o.kinds[job.tracker_type]!;
    const started = Date.now();
    this.log.info({ job: job.id, kind: job.tracker_type, attempt: job.attempts }, 'job started');
    const progress = async (p: Progress): Promise<void> => {
      // On PGlite every query answers without I/O, so a job would never give the event loop back
      // and requests (a second calculate, /health) would wait for its end: each report yields.
      await new Promise<void>((resolve) => setImmediate(resolve));
      // Recorded first, also when the node stops: the report follows committed work, whose checkpoint
      // a retry resumes from (dropped, a resumed file load loaded its last chunk again and listed
      // each row as a duplicate of itself).
      const state = await recordProgress(this.o.db, job, p);
      if (state === 'lost') throw new JobStopped('lost');
      if (signal.aborted) throw new JobStopped('stop');
      if (state === 'cancel' || this.running.get(job.id)?.cancel) throw new JobStopped('cancel');
    };
    try {
      const principal: Principal = await principalForJob(this.o.db, job);
      // Record history names the job as the origin of what it writes.
      const results = await runWithHistoryOrigin({ jobId: job.id }, () =>
        kind.run({ job, signal, principal, progress }),
      );
      await finishJob(this.o.db, job, { status: 'FINISHED', message: 'finished', results });
    } catch (err) {
      if (err instanceof JobStopped) {
        if (err.reason === 'lost') {
          this.log.warn({ job: job.id }, 'job taken over by another node; this attempt stops');
        } else if (err.reason === 'cancel') {
          await finishJob(this.o.db, job, {
            status: 'CANCELLED',
            message: 'cancelled on request',
            level: 'WARNING',
          });
        } else {
          await finishJob(this.o.db, job, {
            status: 'INTERRUPTED',
            message: `interrupted: node ${this.node} stopped`,
            level: 'WARNING',
          });
        }
      } else {
        // A catalogue error's message is meant for users; anything else is logged, not shown.
        const text = err instanceof AppError ? err.message : 'unexpected error (see the server log)';
        if (!(err instanceof AppError)) this.log.error({ err, job: job.id }, 'job failed');
        await finishJob(this.o.db, job, { status: 'FAILED', message: `failed: ${text}`, level: 'ERROR' });
      }
    } finally {
      this.log.info({ job: job.id, ms: Date.now() - started }, 'job ended');
    }
  }

  /** Heartbeats this node's jobs and learns of cancellation requests. */
  async beat(): Promise<void> {
    const entries = [...this.running.values()];
    const cancelled = await heartbeat(
      this.o.db,
      this.node,
      entries.map((e) => e.job),
    );
    for (const e of entries) if (cancelled.has(e.job.id)) e.cancel = true;
  }

  /** Marks the jobs of dead nodes INTERRUPTED (or FAILED), then claims what became retryable. */
  async sweep(): Promise<void> {
    const swept = await sweepStale(this.o.db, this.o.config.jobStaleSeconds);
    for (const j of swept) {
      this.log.warn({ job: j.id, node: j.processing_node, status: j.status }, 'job of a dead node swept');
    }
    if (swept.length > 0) await this.tick();
  }

  async maintain(): Promise<void> {
    for (const task of this.o.maintenance ?? []) await task();
  }

  /** The ids of the jobs running on this node. */
  runningJobs(): number[] {
    return [...this.running.keys()];
  }

  /**
   * Stops claiming, asks running jobs to stop at their next check (they end INTERRUPTED and are
   * retried by another node), and waits for them up to `waitMs`.
   */
  async stop(waitMs = 10_000): Promise<void> {
    this.stopping = true;
    nudges.removeEventListener('queued', this.onNudge);
    for (const t of this.timers) clearInterval(t);
    await this.ticking;
    for (const e of this.running.values()) e.abort.abort();
    const all = Promise.all([...this.running.values()].map((e) => e.done));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
  }
}

export function startJobRunner(o: RunnerOptions): JobRunner {
  return new JobRunner(o).start();
}
