// The read side of workflows: `/workflowsmanager.fetch` (the workflows the caller takes part in,
// all of them for WORKFLOW_ADMIN), `.fetch/active` (the caller's pending approvals, his own and
// those of users whose delegation to him is active), `.fetchfilteredbyapprovable/active/{login}`
// and `.details/{id}`. The lists are the engine's fetch over the WF type with the caller's set of
// workflow ids as the server-side restriction, so every filter operator, sort and paging apply.

import type { Principal } from '../../access/access.ts';
import { can } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { isoUtcSql } from '../../db/sql.ts';
import { loadTypeContext, selectList } from '../../engine/context.ts';
import { fetchRecords, type FetchBody, type FetchResult } from '../../engine/crud.ts';
import { WORKFLOW_TYPE } from '../../engine/registry-workflows.ts';
import { notFound } from '../../http/errors.ts';
import { requireParticipant } from './participants.ts';
import { activeDelegators, participatingIds, pendingIds, userIdByLogin } from './store.ts';

const idsIn = (ids: readonly number[]) => ({ fieldName: 'id', operator: 'inSet', value: ids });

/** One workflow as the WF type answers it (the fetch fields). */
export async function workflowRecord(
  q: Queryable,
  principal: Principal,
  id: number,
): Promise<Record<string, unknown>> {
  const tc = await loadTypeContext(q, principal, WORKFLOW_TYPE);
  const r = await q.query(
    `SELECT ${selectList(tc)} FROM workflows_v t WHERE t.partition_id = $1 AND t.id = $2`,
    [principal.partitionId, id],
  );
  if (!r.rows[0]) throw notFound(`Workflow ${id}`, 'id');
  return r.rows[0];
}

export async function fetchWorkflows(
  db: Db,
  principal: Principal,
  body: FetchBody,
  max: number,
): Promise<FetchResult> {
  if (can(principal, 'WORKFLOW_ADMIN')) return fetchRecords(db, principal, WORKFLOW_TYPE, body, max);
  const pid = principal.partitionId;
  const ids = await participatingIds(
    db,
    pid,
    principal.userId,
    await activeDelegators(db, pid, principal.userId),
  );
  return fetchRecords(db, principal, WORKFLOW_TYPE, body, max, idsIn(ids));
}

export async function fetchActive(
  db: Db,
  principal: Principal,
  body: FetchBody,
  max: number,
): Promise<FetchResult> {
  const pid = principal.partitionId;
  const users = [principal.userId, ...(await activeDelegators(db, pid, principal.userId))];
  return fetchRecords(db, principal, WORKFLOW_TYPE, body, max, idsIn(await pendingIds(db, pid, users)));
}

/** Pending approvals of one approver; outside WORKFLOW_ADMIN, only workflows the caller takes part in. */
export async function fetchActiveOf(
  db: Db,
  principal: Principal,
  loginName: string,
  body: FetchBody,
  max: number,
): Promise<FetchResult> {
  const pid = principal.partitionId;
  const approver = await userIdByLogin(db, pid, loginName);
  if (approver === undefined) throw notFound(`User ${loginName}`, 'loginName');
  let ids = await pendingIds(db, pid, [approver]);
  if (!can(principal, 'WORKFLOW_ADMIN')) {
    const mine = new Set(
      await participatingIds(db, pid, principal.userId, await activeDelegators(db, pid, principal.userId)),
    );
    ids = ids.filter((i) => mine.has(i));
  }
  return fetchRecords(db, principal, WORKFLOW_TYPE, body, max, idsIn(ids));
}

/** One workflow with its steps (approvers, decisions, who decided on whose behalf) and its history. */
export async function workflowDetails(
  db: Db,
  principal: Principal,
  id: number,
): Promise<Record<string, unknown>> {
  const pid = principal.partitionId;
  const wf = await workflowRecord(db, principal, id);
  await requireParticipant(db, principal, { id, submittedBy: (wf.submittedBy as number | null) ?? null });
  const steps = await db.query<Record<string, unknown>>(
    `SELECT s.step_no AS "stepNo", s.name, s.rule, s.condition, s.status, s.deny_reason_required AS "denyReasonRequired",
            s.approver_users AS "approverUsers", s.approver_groups AS "approverGroups",
            s.watcher_users AS "watcherUsers", s.watcher_groups AS "watcherGroups",
            s.start_date AS "startDate", s.end_date AS "endDate",
            coalesce((SELECT jsonb_agg(jsonb_build_object(
                        'role', a.role, 'userId', a.user_id, 'loginName', u.login_name, 'decision', a.decision,
                        'decisionDate', ${isoUtcSql('a.decision_date')}, 'decidedBy', a.decided_by, 'decidedByName', d.login_name)
                        ORDER BY a.role, u.login_name)
                        FROM workflow_assignees a
                        JOIN users u ON u.partition_id = a.partition_id AND u.id = a.user_id
                        LEFT JOIN users d ON d.partition_id = a.partition_id AND d.id = a.decided_by
                       WHERE a.partition_id = s.partition_id AND a.workflow_id = s.workflow_id
                         AND a.step_no = s.step_no), '[]'::jsonb) AS assignees
       FROM workflow_steps s WHERE s.partition_id = $1 AND s.workflow_id = $2 ORDER BY s.step_no`,
    [pid, id],
  );
  const history = await db.query<Record<string, unknown>>(
    `SELECT e.id, e.step_no AS "stepNo", e.action, e.user_id AS "userId", u.login_name AS "userName",
            e.on_behalf_of AS "onBehalfOf", b.login_name AS "onBehalfOfName", e.comment, e.created_at AS "date"
       FROM workflow_events e
       LEFT JOIN users u ON u.partition_id = e.partition_id AND u.id = e.user_id
       LEFT JOIN users b ON b.partition_id = e.partition_id AND b.id = e.on_behalf_of
      WHERE e.partition_id = $1 AND e.workflow_id = $2 ORDER BY e.id`,
    [pid, id],
  );
  // `approved by del on behalf of ann`, `submitted by sub`, `step 2 started`.
  const events = history.rows.map((e) => {
    const action = String(e.action).toLowerCase();
    const verb = action === 'step_started' ? `step ${String(e.stepNo)} started` : action;
    const by = e.userName === null ? '' : ` by ${e.userName as string}`;
    const behalf = e.onBehalfOfName === null ? '' : ` on behalf of ${e.onBehalfOfName as string}`;
    return { ...e, text: `${verb}${by}${behalf}` };
  });
  return { ...wf, steps: steps.rows, history: events };
}
