// Rebate record groups as approvables of the workflow engine (docs/workflows.md) and their submit:
// `/rebaterecordgroup.submit/{typedId}` starts the group's workflow in one transaction (no workflow
// definition for RRG: approved at once); `/async` checks the same and queues a REBATERECORD job that
// submits as the caller, answering the JST. The workflow's decisions land on the group:
// workflowStatus DRAFT → SUBMITTED → APPROVED | DENIED (| WITHDRAWN), status, approvalState,
// submittedByName, approvedByName / deniedByName, approvalDate, hasWorkflowHistory — each write with
// the group's record history (store.ts `setGroupState`).

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { inSavepoint } from '../../db/savepoint.ts';
import { fetchOne, requireAccess } from '../../engine/crud.ts';
import { AppError } from '../../http/errors.ts';
import { restrictionOf, RESTRICTION_PARAM } from '../../jobs/principal.ts';
import { notifyJobQueued, type JobContext, type JobKind } from '../../jobs/runner.ts';
import { createJob, jobState } from '../../jobs/store.ts';
import { registerApprovable, type ApprovableRef, type WorkflowStatus } from '../workflows/approvables.ts';
import { submitApprovable } from '../workflows/service.ts';
import { CALCULATION_STATUS } from './calculate.ts';
import * as store from './store.ts';

export const REBATERECORD = 'REBATERECORD';

type Obj = Record<string, unknown>;

/**
 * A group that can go into a workflow now: not locked, calculated, not already submitted. A 409
 * names `field`, the field of the request that named the group.
 */
function checkSubmittable(row: store.Row, field: string): void {
  const name = `${String(row.id)}.RRG`;
  const conflict = (message: string) => new AppError('CONFLICT', message, { field });
  if (row.locked === true) throw conflict(`${name} is locked: unlock it to submit it`);
  if (row.workflow_status === 'SUBMITTED') throw conflict(`${name} is already submitted`);
  if (row.workflow_status === 'APPROVED') throw conflict(`${name} is already approved`);
  if (row.calculation_status === CALCULATION_STATUS.NONE) {
    // A calculation date with status 0: the group changed since (registry-rebates.ts staleResults).
    if (row.calculation_date !== null && row.calculation_date !== undefined)
      throw conflict(
        `${name} changed since its last calculation, whose results are not current: calculate it again first`,
      );
    throw conflict(`${name} was never calculated: calculate it before submitting it`);
  }
}

/** Submits the group to its workflow as `principal` (inside the caller's transaction). */
function submitAs(q: Queryable, principal: Principal, id: number): Promise<number> {
  return submitApprovable(q, principal, 'RRG', id, { ownSubmit: true });
}

/** A decision lands on the group, written as the one who acted (record history names him). */
async function onStatus(q: Queryable, ref: ApprovableRef, status: WorkflowStatus): Promise<void> {
  const { id, actor } = ref;
  const who = actor.loginName;
  const set = async (state: store.GroupState, sql: Readonly<Record<string, 'now()' | 'NULL'>> = {}) => {
    await store.setGroupState(q, actor, id, state, sql);
  };
  switch (status) {
    case 'SUBMITTED':
      return set(
        {
          status: 'SUBMITTED',
          workflow_status: 'SUBMITTED',
          approval_state: 'NOT_APPROVED',
          submitted_msg: 'SUCCESS',
          submitted_by_name: who,
          approved_by_name: null,
          denied_by_name: null,
          has_workflow_history: true,
        },
        { approval_date: 'NULL' },
      );
    case 'APPROVED':
      return set(
        {
          status: 'APPROVED',
          workflow_status: 'APPROVED',
          approval_state: 'APPROVED',
          approved_by_name: who,
        },
        { approval_date: 'now()' },
      );
    case 'DENIED':
      // Denied: editable again (DRAFT), and it can be recalculated and resubmitted.
      return set({
        status: 'DRAFT',
        workflow_status: 'DENIED',
        approval_state: 'NOT_APPROVED',
        denied_by_name: who,
      });
    case 'WITHDRAWN':
      return set({ status: 'DRAFT', workflow_status: 'WITHDRAWN', approval_state: 'NOT_APPROVED' });
    default: {
      const never: never = status;
      throw new Error(`unknown workflow status ${String(never)}`);
    }
  }
}

const dateText = (v: unknown): string | null =>
  v instanceof Date ? v.toISOString().slice(0, 10) : typeof v === 'string' ? v : null;

export function registerRebateApprovable(): void {
  registerApprovable({
    typeCode: 'RRG',
    label: 'Rebate record group',
    submitAccess: 'REBATERECORD_SUBMIT',
    fields: [
      'uniqueName',
      'label',
      'rebateType',
      'agreementStatus',
      'startDate',
      'endDate',
      'payoutDate',
      'targetDate',
      'calculationStatus',
    ],
    async describe(q, ref) {
      const r = await q.query<store.Row>(
        'SELECT * FROM rebate_record_groups WHERE partition_id = $1 AND id = $2 FOR UPDATE',
        [ref.partitionId, ref.id],
      );
      const row = r.rows[0];
      if (!row) return null;
      // Called on submit (also /workflowsmanager.submit/{id}.RRG: the same rules as the group's own
      // submit, with the submitter's user groups) and on decisions (SUBMITTED: nothing to check).
      if (row.workflow_status !== 'SUBMITTED' && row.workflow_status !== 'APPROVED') {
        const submitter = ref.actor;
        const view = row.user_group_view_details;
        const sees =
          submitter.admin || typeof view !== 'string' || view === '' || submitter.groups.includes(view);
        if (!sees) return null;
        // /workflowsmanager.submit/{typedId}: the path's typedId named the group.
        store.requireEditGroup(submitter, row, 'typedId');
        checkSubmittable(row, 'typedId');
      }
      return {
        label: (row.label as string | null) ?? (row.unique_name as string),
        workflowStatus: row.workflow_status as string,
        fields: {
          uniqueName: row.unique_name,
          label: row.label,
          rebateType: row.rebate_type,
          agreementStatus: row.agreement_status,
          startDate: dateText(row.start_date),
          endDate: dateText(row.end_date),
          payoutDate: dateText(row.payout_date),
          targetDate: dateText(row.target_date),
          calculationStatus: row.calculation_status,
        },
      };
    },
    // The group's own submit rules (an async submit queued or running: 409 naming its job).
    async beforeSubmit(q, ref) {
      await submittableGroup(q, ref.actor, { id: ref.id, field: 'typedId' });
    },
    onStatus,
  });
}

/**
 * The group the caller may submit, locked; 404 / 403 / 409 otherwise. An asynchronous submit queued
 * and not ended (other than `ownJob`, the job doing the submit) is a 409 too: the row lock makes
 * this check and the async submit's mark (`job_id`) one step, so of two concurrent async submits the
 * second is refused at once instead of failing later as a job.
 */
async function submittableGroup(
  q: Queryable,
  principal: Principal,
  group: store.GroupRef,
  ownJob?: number,
): Promise<store.Row> {
  const { id, field } = group;
  const row = await store.lockGroupOrFail(q, principal, group);
  store.requireEditGroup(principal, row, field);
  checkSubmittable(row, field);
  const job = row.job_id === null || row.job_id === undefined ? undefined : Number(row.job_id);
  if (job !== undefined && job !== ownJob && (await jobState(q, principal.partitionId, job))?.ended === false)
    throw new AppError('CONFLICT', `${id}.RRG is already being submitted (job ${job}.JST)`, { field });
  return row;
}

/**
 * Submits the group (one transaction); answers the group after the workflow's first decision. The
 * group as the path names it, or its id (the job: no name to resolve).
 */
export async function submitGroup(
  db: Db,
  principal: Principal,
  idText: string | number,
  ownJob?: number,
): Promise<Obj> {
  requireAccess(principal, 'REBATERECORD_SUBMIT');
  // The job names the group by its id (its parameters): errors name `typedId`, as the path's would.
  const group =
    typeof idText === 'number'
      ? { id: idText, field: 'typedId' }
      : await store.groupOf(db, principal, idText);
  await db.transaction(async (tx) => {
    await submittableGroup(tx, principal, group, ownJob);
    await submitAs(tx, principal, group.id);
  });
  return fetchOne(db, store.answerReader(principal), store.RRG, String(group.id));
}

/**
 * Checks the group as the synchronous submit would, then queues a REBATERECORD job that submits it
 * as the caller (rights re-read when it starts); answers the job (JST) with `jstId`.
 */
export async function submitGroupAsync(db: Db, principal: Principal, idText: string): Promise<Obj> {
  requireAccess(principal, 'REBATERECORD_SUBMIT');
  const group = await store.groupOf(db, principal, idText);
  const { id } = group;
  const job = await db.transaction(async (tx) => {
    const row = await submittableGroup(tx, principal, group);
    // The workflow's own refusals (a step with no active approver, a condition that fails) come at
    // once, as with the synchronous submit: the submit is tried here and rolled back.
    await inSavepoint(tx, 'rrg_submit_check', () => submitAs(tx, principal, id), false);
    const created = await createJob(tx, principal, {
      jobName: `Submit ${String(row.unique_name)}`,
      trackerType: REBATERECORD,
      targetObject: `${id}.RRG`,
      parameters: { groupId: id, [RESTRICTION_PARAM]: restrictionOf(principal) },
      maxAttempts: 1,
    });
    await store.setGroupState(tx, principal, id, { job_id: created.id });
    return created;
  });
  notifyJobQueued();
  const jst = await fetchOne(db, principal, store.JST, String(job.id));
  return { ...jst, jstId: job.id };
}

/** REBATERECORD: submits the group as the job's creator; not retried (a submit is one transaction). */
export function rebateRecordJobKind(db: Db): JobKind {
  return {
    maxAttempts: 1,
    async run(ctx: JobContext) {
      const groupId = Number(ctx.job.parameters.groupId);
      await ctx.progress({ progress: 1 });
      const group = await submitGroup(db, ctx.principal, groupId, Number(ctx.job.id));
      return { groupId, typedId: group.typedId, workflowStatus: group.workflowStatus };
    },
  };
}
