// SQL of the workflow runtime that the generic engine does not cover: the workflow row locked for a
// transition, its steps, assignees and history, the approvers resolved from users and groups, and
// the sets of workflows a user takes part in or must decide. Every statement is scoped by partition.

import type { Queryable } from '../../db/db.ts';
import { validationError } from '../../http/errors.ts';
import type { HistoryEntry } from '../../engine/history.ts';
import type { StepDef } from './definitions.ts';
import type { WorkflowStatus } from './approvables.ts';

export interface WorkflowRow {
  readonly id: number;
  readonly code: string;
  readonly approvableId: number;
  /** The approvable's typedId (`<id>.<code>`, or its own type code: a grid item's `12.CGI2`). */
  readonly approvableTypedId: string;
  readonly label: string | null;
  /** The definition whose steps it copied (null: none applied). */
  readonly definitionName: string | null;
  readonly workflowStatus: WorkflowStatus;
  readonly currentStep: number | null;
  readonly submittedBy: number | null;
  readonly version: number;
}

const WORKFLOW_COLUMNS = `id, code, approvable_id AS "approvableId",
  approvable_id::text || '.' || coalesce(approvable_type_code, code) AS "approvableTypedId", label,
  definition_name AS "definitionName", workflow_status AS "workflowStatus",
  current_step AS "currentStep", submitted_by AS "submittedBy", version`;

export async function lockWorkflow(q: Queryable, pid: number, id: number): Promise<WorkflowRow | undefined> {
  const r = await q.query<WorkflowRow>(
    `SELECT ${WORKFLOW_COLUMNS} FROM workflows WHERE partition_id = $1 AND id = $2 FOR UPDATE`,
    [pid, id],
  );
  return r.rows[0];
}

export async function pendingWorkflowOf(q: Queryable, pid: number, code: string, approvableId: number) {
  const r = await q.query<{ id: number }>(
    `SELECT id FROM workflows
      WHERE partition_id = $1 AND code = $2 AND approvable_id = $3 AND workflow_status = 'SUBMITTED'`,
    [pid, code, approvableId],
  );
  return r.rows[0]?.id;
}

export interface NewWorkflow {
  readonly code: string;
  readonly approvableId: number;
  /** The approvable's own type code in its typedId, where it is not `code` (ApprovableRecord.typeCode). */
  readonly typeCode: string | null;
  readonly label: string | null;
  readonly definition: { id: number; name: string; version: number } | null;
  readonly status: WorkflowStatus;
  readonly userId: number;
}

/** Inserts the workflow; undefined when a pending one exists for the approvable (unique index). */
export async function insertWorkflow(q: Queryable, pid: number, w: NewWorkflow): Promise<number | undefined> {
  const r = await q.query<{ id: number }>(
    `INSERT INTO workflows (partition_id, code, approvable_id, label, definition_id, definition_name,
                            definition_version, workflow_status, submitted_by, end_date, created_by, last_update_by,
                            approvable_type_code)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $8 = 'SUBMITTED' THEN NULL ELSE now() END, $9, $9, $10)
     ON CONFLICT DO NOTHING RETURNING id`,
    [
      pid,
      w.code,
      w.approvableId,
      w.label,
      w.definition?.id ?? null,
      w.definition?.name ?? null,
      w.definition?.version ?? null,
      w.status,
      w.userId,
      w.typeCode,
    ],
  );
  return r.rows[0]?.id;
}

/** Status, current step and version of a workflow after a transition; answers the record history entry. */
export async function setWorkflowState(
  q: Queryable,
  pid: number,
  id: number,
  userId: number,
  state: { status: WorkflowStatus; currentStep: number | null },
): Promise<HistoryEntry> {
  const r = await q.query<{ oldStatus: string; oldStep: number | null; version: number }>(
    `UPDATE workflows w SET workflow_status = $3, current_step = $4, version = w.version + 1,
            end_date = CASE WHEN $3 = 'SUBMITTED' THEN NULL ELSE now() END,
            last_update_at = now(), last_update_by = $5
       FROM (SELECT workflow_status, current_step FROM workflows WHERE partition_id = $1 AND id = $2) o
      WHERE w.partition_id = $1 AND w.id = $2
      RETURNING o.workflow_status AS "oldStatus", o.current_step AS "oldStep", w.version`,
    [pid, id, state.status, state.currentStep, userId],
  );
  const old = r.rows[0]!;
  const changes: Record<string, { old: unknown; new: unknown }> = {};
  if (old.oldStatus !== state.status) changes.workflowStatus = { old: old.oldStatus, new: state.status };
  if (old.oldStep !== state.currentStep) changes.currentStep = { old: old.oldStep, new: state.currentStep };
  return { typeCode: 'WF', recordId: id, action: 'UPDATE', changes, version: old.version };
}

export async function insertSteps(q: Queryable, pid: number, wfId: number, steps: readonly StepDef[]) {
  await q.query(
    `INSERT INTO workflow_steps (partition_id, workflow_id, step_no, name, rule, condition, approver_users,
                                 approver_groups, watcher_users, watcher_groups, deny_reason_required)
     SELECT $1, $2, s.n, s.d->>'name', s.d->>'rule', s.d->>'condition',
            ARRAY(SELECT jsonb_array_elements_text(s.d->'approverUsers')),
            ARRAY(SELECT jsonb_array_elements_text(s.d->'approverGroups')),
            ARRAY(SELECT jsonb_array_elements_text(s.d->'watcherUsers')),
            ARRAY(SELECT jsonb_array_elements_text(s.d->'watcherGroups')),
            (s.d->>'denyReasonRequired')::boolean
       FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS s(d, n)`,
    [pid, wfId, JSON.stringify(steps)],
  );
}

export interface StepRow extends StepDef {
  readonly stepNo: number;
  readonly status: string;
}

export async function stepOf(q: Queryable, pid: number, wfId: number, stepNo: number) {
  const r = await q.query<StepRow>(
    `SELECT step_no AS "stepNo", name, rule, condition, approver_users AS "approverUsers",
            approver_groups AS "approverGroups", watcher_users AS "watcherUsers",
            watcher_groups AS "watcherGroups", deny_reason_required AS "denyReasonRequired", status
       FROM workflow_steps WHERE partition_id = $1 AND workflow_id = $2 AND step_no = $3`,
    [pid, wfId, stepNo],
  );
  return r.rows[0];
}

export async function setStepStatus(
  q: Queryable,
  pid: number,
  wfId: number,
  steps: { from: number; to?: number; only?: string },
  status: string,
): Promise<void> {
  await q.query(
    `UPDATE workflow_steps
        SET status = $5,
            start_date = CASE WHEN $5 = 'ACTIVE' THEN now() ELSE start_date END,
            end_date = CASE WHEN $5 IN ('WAITING', 'ACTIVE') THEN NULL ELSE now() END
      WHERE partition_id = $1 AND workflow_id = $2 AND step_no BETWEEN $3 AND $4
        AND ($6::text IS NULL OR status = $6)`,
    [pid, wfId, steps.from, steps.to ?? steps.from, status, steps.only ?? null],
  );
}

/** Users named directly or through a group (direct members and members through a business role). */
export async function resolveUsers(
  q: Queryable,
  pid: number,
  logins: readonly string[],
  groups: readonly string[],
): Promise<{ ids: number[]; unknownUsers: string[]; unknownGroups: string[] }> {
  const r = await q.query<{ id: number; login: string }>(
    `SELECT u.id, lower(u.login_name) AS login FROM users u
      WHERE u.partition_id = $1 AND u.activated
        AND (lower(u.login_name) = ANY($2::text[])
             OR u.id IN (SELECT m.user_id FROM user_group_members m
                           JOIN user_groups g ON g.partition_id = m.partition_id AND g.id = m.group_id
                          WHERE m.partition_id = $1 AND g.unique_name = ANY($3::text[])
                         UNION
                         SELECT ub.user_id FROM user_business_roles ub
                           JOIN business_role_groups brg
                             ON brg.partition_id = ub.partition_id AND brg.business_role_id = ub.business_role_id
                           JOIN user_groups g ON g.partition_id = brg.partition_id AND g.id = brg.group_id
                          WHERE ub.partition_id = $1 AND g.unique_name = ANY($3::text[])))
      ORDER BY u.id`,
    [pid, logins.map((l) => l.toLowerCase()), groups],
  );
  const found = new Set(r.rows.map((x) => x.login));
  const g = await q.query<{ name: string }>(
    `SELECT unique_name AS name FROM user_groups WHERE partition_id = $1 AND unique_name = ANY($2::text[])`,
    [pid, groups],
  );
  const knownGroups = new Set(g.rows.map((x) => x.name));
  return {
    ids: r.rows.map((x) => Number(x.id)),
    unknownUsers: logins.filter((l) => !found.has(l.toLowerCase())),
    unknownGroups: groups.filter((n) => !knownGroups.has(n)),
  };
}

/**
 * The active users a step names as approvers or watchers (by login and by group): an unknown or
 * deactivated user, or an unknown group, is a -4 naming the step's field — a watcher too, whom the
 * submit would otherwise leave uninformed without a word.
 */
export async function stepUsers(
  q: Queryable,
  pid: number,
  at: string,
  role: 'approver' | 'watcher',
  users: readonly string[],
  groups: readonly string[],
): Promise<number[]> {
  const r = await resolveUsers(q, pid, users, groups);
  if (r.unknownUsers.length > 0)
    throw validationError(
      `${at}.${role}Users`,
      `unknown or deactivated user(s) ${r.unknownUsers.join(', ')}`,
    );
  if (r.unknownGroups.length > 0)
    throw validationError(`${at}.${role}Groups`, `unknown group(s) ${r.unknownGroups.join(', ')}`);
  return r.ids;
}

export async function insertAssignees(
  q: Queryable,
  pid: number,
  wfId: number,
  stepNo: number,
  role: 'APPROVER' | 'WATCHER',
  userIds: readonly number[],
): Promise<void> {
  if (userIds.length === 0) return;
  await q.query(
    `INSERT INTO workflow_assignees (partition_id, workflow_id, step_no, role, user_id)
     SELECT $1, $2, $3, $4, u FROM unnest($5::bigint[]) AS u ON CONFLICT DO NOTHING`,
    [pid, wfId, stepNo, role, userIds],
  );
}

export async function assigneesOf(
  q: Queryable,
  pid: number,
  wfId: number,
  role?: 'APPROVER' | 'WATCHER',
  stepNo?: number,
): Promise<{ userId: number; decision: string | null }[]> {
  const r = await q.query<{ userId: number; decision: string | null }>(
    `SELECT DISTINCT ON (user_id) user_id AS "userId", decision FROM workflow_assignees
      WHERE partition_id = $1 AND workflow_id = $2 AND ($3::text IS NULL OR role = $3)
        AND ($4::int IS NULL OR step_no = $4)
      ORDER BY user_id, decision NULLS FIRST`,
    [pid, wfId, role ?? null, stepNo ?? null],
  );
  return r.rows.map((x) => ({ userId: Number(x.userId), decision: x.decision }));
}

export async function decide(
  q: Queryable,
  pid: number,
  wfId: number,
  stepNo: number,
  userId: number,
  decision: 'APPROVED' | 'DENIED',
  decidedBy: number,
): Promise<void> {
  await q.query(
    `UPDATE workflow_assignees SET decision = $5, decided_by = $6, decision_date = now()
      WHERE partition_id = $1 AND workflow_id = $2 AND step_no = $3 AND role = 'APPROVER'
        AND user_id = $4 AND decision IS NULL`,
    [pid, wfId, stepNo, userId, decision, decidedBy],
  );
}

export async function addEvent(
  q: Queryable,
  pid: number,
  wfId: number,
  e: {
    stepNo?: number | null;
    action: string;
    userId: number | null;
    onBehalfOf?: number | null;
    comment?: string | null;
  },
): Promise<void> {
  await q.query(
    `INSERT INTO workflow_events (partition_id, workflow_id, step_no, action, user_id, on_behalf_of, comment)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [pid, wfId, e.stepNo ?? null, e.action, e.userId, e.onBehalfOf ?? null, e.comment ?? null],
  );
}

/** Users whose delegation to `delegateId` is ACTIVATED today. */
export async function activeDelegators(q: Queryable, pid: number, delegateId: number): Promise<number[]> {
  const r = await q.query<{ id: number }>(
    `SELECT DISTINCT delegator_id AS id FROM workflow_delegations_v
      WHERE partition_id = $1 AND delegate_id = $2 AND status = 'ACTIVATED' ORDER BY 1`,
    [pid, delegateId],
  );
  return r.rows.map((x) => Number(x.id));
}

/** Delegates with an ACTIVATED delegation from any of `userIds`. */
export async function activeDelegates(
  q: Queryable,
  pid: number,
  userIds: readonly number[],
): Promise<number[]> {
  const r = await q.query<{ id: number }>(
    `SELECT DISTINCT delegate_id AS id FROM workflow_delegations_v
      WHERE partition_id = $1 AND delegator_id = ANY($2::bigint[]) AND status = 'ACTIVATED'`,
    [pid, userIds],
  );
  return r.rows.map((x) => Number(x.id));
}

/** Workflows awaiting a decision of one of `userIds` in their current step. */
export async function pendingIds(q: Queryable, pid: number, userIds: readonly number[]): Promise<number[]> {
  const r = await q.query<{ id: number }>(
    `SELECT DISTINCT w.id FROM workflows w
       JOIN workflow_assignees a
         ON a.partition_id = w.partition_id AND a.workflow_id = w.id AND a.step_no = w.current_step
      WHERE w.partition_id = $1 AND w.workflow_status = 'SUBMITTED' AND a.role = 'APPROVER'
        AND a.decision IS NULL AND a.user_id = ANY($2::bigint[])`,
    [pid, userIds],
  );
  return r.rows.map((x) => Number(x.id));
}

/**
 * Workflows a user takes part in: submitted, assigned (approver or watcher), acted on, or assigned
 * to a user whose delegation to them is active (`asDelegateOf`).
 */
export async function participatingIds(
  q: Queryable,
  pid: number,
  userId: number,
  asDelegateOf: readonly number[],
): Promise<number[]> {
  const r = await q.query<{ id: number }>(
    `SELECT id FROM workflows WHERE partition_id = $1 AND submitted_by = $2
     UNION SELECT workflow_id FROM workflow_assignees
            WHERE partition_id = $1 AND (user_id = $2 OR user_id = ANY($3::bigint[]))
     UNION SELECT workflow_id FROM workflow_events WHERE partition_id = $1 AND user_id = $2`,
    [pid, userId, asDelegateOf],
  );
  return r.rows.map((x) => Number(x.id));
}

export async function definitionsFor(q: Queryable, pid: number, code: string) {
  const r = await q.query<{
    id: number;
    name: string;
    version: number;
    condition: string | null;
    steps: unknown;
  }>(
    `SELECT id, unique_name AS name, version, condition, steps FROM workflow_definitions
      WHERE partition_id = $1 AND approvable_type = $2 ORDER BY coalesce(priority, 0), id`,
    [pid, code],
  );
  return r.rows;
}

export async function userIdByLogin(q: Queryable, pid: number, login: string): Promise<number | undefined> {
  const r = await q.query<{ id: number }>(
    `SELECT id FROM users WHERE partition_id = $1 AND lower(login_name) = lower($2)`,
    [pid, login],
  );
  return r.rows[0] === undefined ? undefined : Number(r.rows[0].id);
}

/**
 * What ties a user to workflows, or undefined: a workflow he takes (or took) part in — as approver
 * or watcher, or named in its history (submitted, decided, commented) — or a delegation he gives or
 * receives. Deleting such a user would take his name from their history (and leave a running step
 * without its approver), so he is deactivated instead (accounts' deleteUsers).
 */
export async function workflowTieOf(q: Queryable, pid: number, userId: number): Promise<string | undefined> {
  const r = await q.query<{ workflow: string | null; delegation: string | null }>(
    `SELECT coalesce(
              (SELECT a.workflow_id FROM workflow_assignees a WHERE a.partition_id = $1 AND a.user_id = $2 LIMIT 1),
              (SELECT e.workflow_id FROM workflow_events e WHERE e.partition_id = $1 AND e.user_id = $2 LIMIT 1)
            ) AS workflow,
            coalesce(
              (SELECT d.id FROM workflow_delegations d WHERE d.partition_id = $1 AND d.delegator_id = $2 LIMIT 1),
              (SELECT d.id FROM workflow_delegations d WHERE d.partition_id = $1 AND d.delegate_id = $2 LIMIT 1)
            ) AS delegation`,
    [pid, userId],
  );
  const { workflow, delegation } = r.rows[0]!;
  if (workflow !== null) return `takes part in workflow ${workflow}.WF`;
  if (delegation !== null) return `gives or receives delegation ${delegation}.WFDG`;
  return undefined;
}
