// DCRs as approvables of the workflow engine (src/modules/workflows/approvables.ts). A submit goes
// through `submitApprovable`: with no workflow definition for DCR it is approved at once and the
// submit applies it (synchronously or as a job, see ./apply.ts); with one, the DCR waits SUBMITTED
// and the final approval (another request, in its transaction) queues a DCR_SUBMIT job that applies
// it as its submitter. DENIED and WITHDRAWN DCRs can be changed and submitted again.

import { AsyncLocalStorage } from 'node:async_hooks';
import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { RESTRICTION_PARAM } from '../../jobs/principal.ts';
import { notifyJobQueued } from '../../jobs/runner.ts';
import { createJob } from '../../jobs/store.ts';
import { registerApprovable, type ApprovableRef, type WorkflowStatus } from '../workflows/approvables.ts';
import * as store from './store.ts';

export const DCR_SUBMIT = 'DCR_SUBMIT';

/** The DCR whose own submit is running in this async context (its approval at once is applied there). */
const submitting = new AsyncLocalStorage<number>();

export function whileSubmitting<T>(dcrId: number, fn: () => Promise<T>): Promise<T> {
  return submitting.run(dcrId, fn);
}

/** A job that applies the DCR, owned by `userId` (the runner re-reads their rights when it starts). */
export async function queueApply(
  q: Queryable,
  partitionId: number,
  userId: number,
  dcr: { id: number; uniqueName: string },
  restriction: string[] | null,
): Promise<number> {
  const owner: Principal = {
    partitionId,
    partition: '',
    userId,
    loginName: '',
    roles: [],
    groups: [],
    admin: false,
    permissions: new Set(),
    via: 'header',
    restriction: null,
  };
  const job = await createJob(q, owner, {
    jobName: `Apply ${dcr.uniqueName}`,
    trackerType: DCR_SUBMIT,
    targetObject: `${dcr.id}.DCR`,
    parameters: { dcrId: dcr.id, [RESTRICTION_PARAM]: restriction },
    maxAttempts: 1,
  });
  await store.setDcrState(q, partitionId, dcr.id, userId, { status: 'APPROVED', jobId: job.id });
  return job.id;
}

async function onStatus(q: Queryable, ref: ApprovableRef, status: WorkflowStatus): Promise<void> {
  const { partitionId, id, userId } = ref;
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
      if (submitting.getStore() === id) return;
      const dcr = await store.findDcrOrFail(q, partitionId, id);
      await queueApply(q, partitionId, dcr.submitted_by ?? userId, { id, uniqueName: dcr.unique_name }, null);
      // The runner also polls: a nudge before the approver's transaction commits is only early.
      notifyJobQueued();
      return;
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

export function registerDcrApprovable(): void {
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
    onStatus,
  });
}
