// Submitting a DCR. `/dcrmanager.submit/{id}` starts the approval (./approval.ts; no workflow
// definition: approved at once) and, approved at once, applies it in the SAME transaction
// (./applytx.ts) — unless the DCR holds more items than the advanced configuration option
// `asyncSubmitDCRThreshold` (no option: never), then a DCR_SUBMIT job applies it. A failed apply
// commits the submit with the DCR FAILED (nothing of it written) and answers the error (409 naming
// the conflicting items); a submit refused with 403 changes nothing, the DCR's state included.
// `/dcrmanager.submit/{id}/async` checks the DCR, queues a DCR_SUBMIT job that submits it (and
// applies it when approved at once) as the caller, and answers the job (JST).

import type { Principal } from '../../access/access.ts';
import { batchTransaction, type Db, type Queryable } from '../../db/db.ts';
import { fetchOne, requireAccess } from '../../engine/crud.ts';
import { findType } from '../../engine/registry.ts';
import { AppError } from '../../http/errors.ts';
import { notifyJobQueued, type JobContext, type JobKind } from '../../jobs/runner.ts';
import { RESTRICTION_PARAM, restrictionOf } from '../../jobs/principal.ts';
import { createJob, jobState } from '../../jobs/store.ts';
import { submitApprovable } from '../workflows/service.ts';
import {
  DCR_SUBMIT,
  SUBMIT_PARAM,
  applyByJob,
  applyWithin,
  queueApply,
  refuseUnwritable,
} from './applytx.ts';
import { dcrRecord } from './service.ts';
import * as store from './store.ts';
import type { Written } from './staged.ts';

type Obj = Record<string, unknown>;

export { DCR_SUBMIT } from './applytx.ts';

const JST = findType('JST')!;

/** States a DCR can be submitted from (a failed or denied one after fixing it). */
const SUBMITTABLE = ['DRAFT', 'FAILED', 'DENIED'];

/**
 * The DCR, locked, if it can be submitted; else 409. An asynchronous submit of it that is queued or
 * running (not the job calling this, `inJob`) is a 409 too, naming its job: the row lock makes this
 * check and the async submit's mark (`job_id`) one step, so of two submits one is refused at once.
 */
async function lockSubmittable(
  q: Queryable,
  principal: Principal,
  id: number,
  inJob: boolean,
): Promise<store.DcrRow> {
  const dcr = await store.findDcrOrFail(q, principal.partitionId, id, true);
  if (!SUBMITTABLE.includes(dcr.status)) {
    throw new AppError(
      'CONFLICT',
      `${dcr.unique_name} is ${dcr.status}: only ${SUBMITTABLE.join(', ')} DCRs can be submitted`,
    );
  }
  if (
    !inJob &&
    dcr.job_id !== null &&
    (await jobState(q, principal.partitionId, dcr.job_id))?.ended === false
  )
    throw new AppError('CONFLICT', `${dcr.unique_name} is already being submitted (job ${dcr.job_id}.JST)`);
  return dcr;
}

/**
 * The DCR locked for a submit (lockSubmittable). A synchronous submit forgets an earlier async
 * submit's job (./applytx.ts applyByJob reads it). Also the DCR's rules for
 * `/workflowsmanager.submit/{id}.DCR` (./approval.ts `beforeSubmit`).
 */
export async function claimForSubmit(
  q: Queryable,
  principal: Principal,
  id: number,
  inJob = false,
): Promise<store.DcrRow> {
  const dcr = await lockSubmittable(q, principal, id, inJob);
  if (!inJob && dcr.job_id !== null) {
    await store.setDcrState(q, principal.partitionId, id, principal.userId, {
      status: dcr.status,
      jobId: null,
    });
  }
  return dcr;
}

type Submitted =
  | { readonly kind: 'pending' }
  | { readonly kind: 'queued'; readonly jobId: number }
  | { readonly kind: 'applied'; readonly summary: Written }
  | { readonly kind: 'failed'; readonly error: AppError };

/**
 * The submit in one transaction: the workflow starts; approved at once, the DCR is applied here
 * (`inJob`: always; otherwise unless above the threshold, then queued as a job).
 */
async function submitInTransaction(
  db: Db,
  principal: Principal,
  id: number,
  inJob: boolean,
): Promise<Submitted> {
  return batchTransaction(db, async (tx): Promise<Submitted> => {
    const dcr = await claimForSubmit(tx, principal, id, inJob);
    await submitApprovable(tx, principal, 'DCR', id, { ownSubmit: true });
    const now = await store.findDcrOrFail(tx, principal.partitionId, id);
    // Not applied in this transaction (a workflow runs, or a job applies it): the submitter's rights
    // over its targets are checked now, as the apply would (a 403 that rolls the submit back).
    const later = now.status !== 'APPROVED' || (!inJob && (await applyByJob(tx, principal.partitionId, now)));
    if (later) await refuseUnwritable(tx, principal, now);
    if (now.status !== 'APPROVED') return { kind: 'pending' };
    if (later) {
      const jobId = await queueApply(
        tx,
        principal.partitionId,
        principal.userId,
        { id, uniqueName: dcr.unique_name },
        restrictionOf(principal),
      );
      return { kind: 'queued', jobId };
    }
    const out = await applyWithin(db, tx, principal, id);
    // A refused submit (403: an item changes a record hidden from the submitter) changes nothing:
    // thrown, it rolls back the whole submit, the DCR's state with it. Conflicts and refused values
    // commit the DCR FAILED with the reasons (fix the items and submit again).
    if (!out.ok && out.error.code === 'FORBIDDEN') throw out.error;
    return out.ok ? { kind: 'applied', summary: out.summary } : { kind: 'failed', error: out.error };
  });
}

/**
 * `/dcrmanager.submit/{id}`: answers the DCR (APPLIED; SUBMITTED while a workflow runs; APPROVED
 * with `jstId` when a job applies it). A failed apply: the DCR is FAILED and the error answered.
 */
export async function submitDcr(db: Db, principal: Principal, idText: string): Promise<Obj> {
  requireAccess(principal, 'DCR_EDIT');
  const id = store.parseDcrId(idText);
  const out = await submitInTransaction(db, principal, id, false);
  if (out.kind === 'failed') throw out.error;
  if (out.kind === 'queued') {
    notifyJobQueued();
    return { ...(await dcrRecord(db, principal, id)), jstId: out.jobId };
  }
  return dcrRecord(db, principal, id);
}

/**
 * `/dcrmanager.submit/{id}/async`: checks the DCR as the synchronous submit would, then queues a
 * DCR_SUBMIT job that submits it as the caller (rights re-read when it starts). Answers the job as
 * `/admin.fetchjst/{id}` does, with `jstId`.
 */
export async function submitDcrAsync(db: Db, principal: Principal, idText: string): Promise<Obj> {
  requireAccess(principal, 'DCR_EDIT');
  const id = store.parseDcrId(idText);
  const jobId = await db.transaction(async (tx) => {
    const dcr = await lockSubmittable(tx, principal, id, false);
    await refuseUnwritable(tx, principal, dcr);
    const job = await createJob(tx, principal, {
      jobName: `Submit ${dcr.unique_name}`,
      trackerType: DCR_SUBMIT,
      targetObject: `${id}.DCR`,
      parameters: { dcrId: id, [SUBMIT_PARAM]: true, [RESTRICTION_PARAM]: restrictionOf(principal) },
      maxAttempts: 1,
    });
    await store.setDcrState(tx, principal.partitionId, id, principal.userId, {
      status: dcr.status,
      jobId: job.id,
    });
    return Number(job.id);
  });
  notifyJobQueued();
  return { ...(await fetchOne(db, principal, JST, String(jobId))), jstId: jobId };
}

/**
 * DCR_SUBMIT, not retried (a half-run apply left nothing behind). With `submit`: submits the DCR
 * as the caller of /async (applied in the job's transaction when approved at once). Without: applies
 * the APPROVED DCR (queued by a submit or a final approval above the threshold) as its submitter.
 */
export function dcrSubmitJobKind(db: Db): JobKind {
  return {
    maxAttempts: 1,
    async run(ctx: JobContext) {
      const dcrId = Number(ctx.job.parameters.dcrId);
      await ctx.progress({ progress: 1 });
      if (ctx.job.parameters[SUBMIT_PARAM] === true) {
        const out = await submitInTransaction(db, ctx.principal, dcrId, true);
        if (out.kind === 'failed') throw out.error;
        const status = (await store.findDcrOrFail(db, ctx.principal.partitionId, dcrId)).status;
        return { dcrId, status, ...(out.kind === 'applied' ? out.summary : {}) };
      }
      const out = await batchTransaction(db, (tx) => applyWithin(db, tx, ctx.principal, dcrId));
      if (!out.ok) throw out.error;
      return { dcrId, status: 'APPLIED', ...out.summary };
    },
  };
}
