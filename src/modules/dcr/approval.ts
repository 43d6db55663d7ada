// DCRs as approvables of the workflow engine (src/modules/workflows/approvables.ts). A submit goes
// through `submitApprovable`: with no workflow definition for DCR it is approved at once and the
// submit applies it (./apply.ts); with one, the DCR waits SUBMITTED and the final approval (another
// request) applies it in ITS transaction as the submitter (./applytx.ts), or queues a DCR_SUBMIT
// job above `asyncSubmitDCRThreshold` or after an /async submit. DENIED and WITHDRAWN DCRs can be
// changed and submitted again.

import type { Db, Queryable } from '../../db/db.ts';
import { toAppError } from '../../http/envelope.ts';
import { AppError } from '../../http/errors.ts';
import { principalForJob } from '../../jobs/principal.ts';
import { notifyJobQueued } from '../../jobs/runner.ts';
import { notifyUsers } from '../notifications/service.ts';
import type { JobRow } from '../../jobs/store.ts';
import { registerApprovable, type ApprovableRef, type WorkflowStatus } from '../workflows/approvables.ts';
import { claimForSubmit } from './apply.ts';
import { applyByJob, applyWithin, isTx, queueApply, refuseUnwritable } from './applytx.ts';
import * as store from './store.ts';

/**
 * The final approval of another request (`/workflowsmanager.approve`, or `/workflowsmanager.submit`
 * with no definition): the DCR is applied in that transaction as its submitter (roles and groups
 * read now), or queued as a DCR_SUBMIT job when above the threshold or submitted with /async. A
 * failed apply leaves the DCR FAILED and the approval standing, and tells the submitter (ERROR).
 */
async function applyOnApproval(db: Db, q: Queryable, ref: ApprovableRef): Promise<AppError | void> {
  const { partitionId, id } = ref;
  const userId = ref.actor.userId;
  const dcr = await store.findDcrOrFail(q, partitionId, id);
  const submitter = dcr.submitted_by ?? userId;
  if (!isTx(q) || (await applyByJob(q, partitionId, dcr))) {
    await queueApply(q, partitionId, submitter, { id, uniqueName: dcr.unique_name }, null);
    // The runner also polls: a nudge before the approver's transaction commits is only early.
    notifyJobQueued();
    return;
  }
  // principalForJob reads only partition_id, created_by and parameters of its job row.
  const owner = await principalForJob(q, {
    partition_id: partitionId,
    created_by: submitter,
    parameters: {},
  } as unknown as JobRow).catch((err: unknown) => toAppError(err));
  if (owner instanceof AppError) {
    // The submitter was deactivated meanwhile: nobody to write as; the approval stands.
    await store.setDcrState(q, partitionId, id, userId, {
      status: 'FAILED',
      from: 'APPROVED',
      messages: [{ level: 'ERROR', text: owner.message }],
    });
    return;
  }
  const out = await applyWithin(db, q, owner, id);
  // Approved at once by the submitter's own `/workflowsmanager.submit`: he is answered the error
  // (409 or -4) once the FAILED state commits, as by /dcrmanager.submit.
  if (!out.ok && ref.submitting) return out.error;
  // The submitter hears of the approval from the workflow; that nothing was applied, from here.
  if (!out.ok) {
    await notifyUsers(q, partitionId, [submitter], {
      title: `Not applied: ${dcr.unique_name}${dcr.label ? ` (${dcr.label})` : ''}`.slice(0, 1000),
      message: `Approved, but the apply failed: ${out.error.message}`.slice(0, 4000),
      source: `${id}.DCR`,
      topic: 'WORKFLOW',
      status: 'ERROR',
      actionType: 'INFO_MESSAGE',
      payload: { typedId: `${id}.DCR`, status: 'FAILED' },
    });
  }
}

async function onStatus(
  db: Db,
  q: Queryable,
  ref: ApprovableRef,
  status: WorkflowStatus,
): Promise<AppError | void> {
  const { partitionId, id } = ref;
  const userId = ref.actor.userId;
  switch (status) {
    case 'SUBMITTED':
      await store.setDcrState(q, partitionId, id, userId, {
        status: 'SUBMITTED',
        workflowStatus: 'SUBMITTED',
        submitted: true,
        submittedBy: userId,
        messages: null,
      });
      return;
    case 'APPROVED': {
      await store.setDcrState(q, partitionId, id, userId, { status: 'APPROVED', workflowStatus: 'APPROVED' });
      // The DCR's own submit applies it itself (./apply.ts), after the workflow call returns.
      if (ref.ownSubmit) return;
      return applyOnApproval(db, q, ref);
    }
    case 'DENIED':
      await store.setDcrState(q, partitionId, id, userId, { status: 'DENIED', workflowStatus: 'DENIED' });
      return;
    case 'WITHDRAWN':
      await store.setDcrState(q, partitionId, id, userId, { status: 'DRAFT', workflowStatus: 'WITHDRAWN' });
      return;
    default: {
      const never: never = status;
      throw new Error(`unknown workflow status ${String(never)}`);
    }
  }
}

/** `db` receives only what the engine defers past an apply (the background ANALYZE). */
export function registerDcrApprovable(db: Db): void {
  registerApprovable({
    typeCode: 'DCR',
    label: 'Data change request',
    submitAccess: 'DCR_EDIT',
    fields: ['uniqueName', 'label', 'dcrType', 'targetType', 'items', 'massChanges'],
    async describe(q, ref) {
      const r = await q.query<store.DcrRow & { items: string; mass: string }>(
        `SELECT d.*,
                (SELECT count(*) FROM dcr_items i WHERE i.partition_id = d.partition_id AND i.dcr_id = d.id) AS items,
                (SELECT count(*) FROM dcr_massops m WHERE m.partition_id = d.partition_id AND m.dcr_id = d.id) AS mass
           FROM dcrs d WHERE d.partition_id = $1 AND d.id = $2 FOR UPDATE OF d`,
        [ref.partitionId, ref.id],
      );
      const d = r.rows[0];
      if (!d) return null;
      return {
        label: d.label ?? d.unique_name,
        // A DCR whose apply failed (or that was denied) is approved again when resubmitted.
        workflowStatus: ['FAILED', 'DENIED', 'DRAFT'].includes(d.status) ? d.status : d.workflow_status,
        fields: {
          uniqueName: d.unique_name,
          label: d.label,
          dcrType: d.dcr_type,
          targetType: d.target_type,
          items: Number(d.items),
          massChanges: Number(d.mass),
        },
      };
    },
    // The DCR's own submit rules (an async submit queued or running: 409 naming its job; a target
    // hidden from the submitter or outside his edit groups: 403, nothing changed).
    async beforeSubmit(q, ref) {
      const dcr = await claimForSubmit(q, ref.actor, ref.id);
      await refuseUnwritable(q, ref.actor, dcr);
    },
    onStatus: (q, ref, status) => onStatus(db, q, ref, status),
  });
}
