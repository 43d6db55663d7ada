// Who may see a workflow (and so act on it): its participants and workflow administrators.

import type { Principal } from '../../access/access.ts';
import { can } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { notFound } from '../../http/errors.ts';
import { activeDelegators } from './store.ts';

/**
 * Whether the principal may see a workflow: a workflow administrator, or someone taking part. To
 * anyone else it does not exist (404, as its attachments): a 403 would tell which ids are taken.
 * Every operation on one workflow asks this first, before its version, state or the caller's role
 * in it are checked: those answers would tell a workflow's existence and state to anyone.
 */
export async function requireParticipant(
  q: Queryable,
  principal: Principal,
  wf: { id: number; submittedBy: number | null },
) {
  if (can(principal, 'WORKFLOW_ADMIN') || wf.submittedBy === principal.userId) return;
  const pid = principal.partitionId;
  const users = [principal.userId, ...(await activeDelegators(q, pid, principal.userId))];
  const r = await q.query(
    `SELECT 1 FROM workflow_assignees WHERE partition_id = $1 AND workflow_id = $2 AND user_id = ANY($3::bigint[])
     UNION ALL SELECT 1 FROM workflow_events WHERE partition_id = $1 AND workflow_id = $2 AND user_id = $4 LIMIT 1`,
    [pid, wf.id, users, principal.userId],
  );
  // The same answer as for an id no workflow has (lockOrFail, workflowRecord).
  if (r.rows.length === 0) throw notFound(`Workflow ${wf.id}`, 'id');
}
