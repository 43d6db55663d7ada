// The workflow runtime: submit, approve, deny, withdraw and comment, each one transaction that
// locks the workflow row (FOR UPDATE) and checks `oldValues.version`, so two approvers can never
// decide the same step twice (the second gets 409). The state machine:
//   submit → SUBMITTED (first step whose condition holds becomes ACTIVE; none left → APPROVED)
//   approve → the step is APPROVED when one (ANY) or every (ALL) approver approved; next step starts;
//             after the last step the workflow is APPROVED
//   deny → the step and the workflow are DENIED (reason required when the step says so)
//   withdraw (submitter or WORKFLOW_ADMIN) → WITHDRAWN
// The approvable's module is called back (onStatus) in the same transaction; approvers and watchers
// are notified (topic WORKFLOW). A delegate with an ACTIVATED delegation acts on the delegator's
// behalf, and the history says so. With no definition for a type, a submit is APPROVED at once.

import type { Principal } from '../../access/access.ts';
import { can } from '../../access/access.ts';
import { requireAccess } from '../../engine/crud.ts';
import { recordHistory } from '../../engine/history.ts';
import { checkVersion } from '../../engine/value-check.ts';
import { batchTransaction, type Db, type Queryable } from '../../db/db.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import { notifyUsers } from '../notifications/service.ts';
import {
  findApprovable,
  type Approvable,
  type ApprovableRecord,
  type ApprovableRef,
  type WorkflowStatus,
} from './approvables.ts';
import { parseSteps } from './definitions.ts';
import { requireParticipant } from './participants.ts';
import { definitionApplies, stepHolds, textOf } from './inputs.ts';
import {
  activeDelegates,
  activeDelegators,
  addEvent,
  assigneesOf,
  decide,
  definitionsFor,
  insertAssignees,
  insertSteps,
  insertWorkflow,
  lockWorkflow,
  pendingWorkflowOf,
  stepUsers,
  setStepStatus,
  setWorkflowState,
  stepOf,
  type WorkflowRow,
} from './store.ts';

/** Who acts: the request's principal (record history names him as the actor). */
export type Actor = Principal;

/** What a transition works on: the workflow, its approvable, and the record conditions read. */
interface Run {
  readonly actor: Actor;
  /** The approvable's own submit operation runs this (ApprovableRef.ownSubmit). */
  readonly ownSubmit: boolean;
  readonly wf: Pick<
    WorkflowRow,
    'id' | 'code' | 'approvableId' | 'approvableTypedId' | 'label' | 'definitionName'
  >;
  readonly approvable: Approvable;
  record?: ApprovableRecord;
  /** The submit request's own transition (ApprovableRef.submitting). */
  readonly submitting?: boolean;
  /** What the approvable answered for a failed apply in the submit request. */
  failure?: AppError;
}

/** What a callback is told of a run: partition, document, actor, workflow, whose operation. */
function refOf(run: Run): ApprovableRef {
  return {
    partitionId: run.actor.partitionId,
    id: run.wf.approvableId,
    actor: run.actor,
    workflowId: run.wf.id,
    ownSubmit: run.ownSubmit,
    submitting: run.submitting === true,
  };
}

function approvableOf(code: string): Approvable {
  const a = findApprovable(code);
  if (!a) throw new AppError('CONFLICT', `Approvable type ${code} is not registered on this server`);
  return a;
}

async function recordOf(q: Queryable, run: Run): Promise<ApprovableRecord> {
  if (run.record) return run.record;
  const rec = await run.approvable.describe(q, refOf(run));
  if (!rec) throw notFound(`${run.approvable.label} ${run.wf.approvableId}`, 'id');
  run.record = rec;
  return rec;
}

async function notify(
  q: Queryable,
  run: Run,
  userIds: readonly number[],
  title: string,
  status: 'INFO' | 'SUCCESS' | 'WARNING',
): Promise<void> {
  const to = [...new Set(userIds)].filter((u) => u !== run.actor.userId);
  const subject = `${run.approvable.label} ${run.wf.approvableId}${run.wf.label ? ` (${run.wf.label})` : ''}`;
  await notifyUsers(
    q,
    run.actor.partitionId,
    to,
    {
      title: `${title}: ${subject}`.slice(0, 1000),
      message: `Workflow ${run.wf.id}.WF of ${subject}`,
      source: 'WORKFLOW',
      topic: 'WORKFLOW',
      status,
      payload: {
        workflowId: run.wf.id,
        typedId: `${run.wf.id}.WF`,
        code: run.wf.code,
        approvableTypedId: run.wf.approvableTypedId,
      },
    },
    run.actor.userId,
  );
}

/** A workflow's new state, with its record history (WF) in the same transaction. */
async function state(
  q: Queryable,
  actor: Actor,
  id: number,
  next: { status: WorkflowStatus; currentStep: number | null },
): Promise<void> {
  const entry = await setWorkflowState(q, actor.partitionId, id, actor.userId, next);
  if (Object.keys(entry.changes).length > 0) await recordHistory(q, actor, [entry]);
}

/**
 * Starts the first step from `from` whose condition holds (the others are SKIPPED): resolves its
 * approvers and watchers and notifies them. Answers the step started, or null when none is left.
 */
async function startStep(q: Queryable, run: Run, from: number): Promise<number | null> {
  const pid = run.actor.partitionId;
  for (let n = from; ; n++) {
    const step = await stepOf(q, pid, run.wf.id, n);
    if (!step) return null;
    // The workflow's copy of the step: mending the definition does not mend this workflow.
    if (
      step.condition !== null &&
      !stepHolds(step.condition, await recordOf(q, run), n, run.wf.definitionName ?? '')
    ) {
      await setStepStatus(q, pid, run.wf.id, { from: n }, 'SKIPPED');
      await addEvent(q, pid, run.wf.id, { stepNo: n, action: 'SKIPPED', userId: null });
      continue;
    }
    const at = `steps[${n - 1}]`;
    const approvers = await stepUsers(q, pid, at, 'approver', step.approverUsers, step.approverGroups);
    if (approvers.length === 0) {
      throw validationError(`${at}.approverGroups`, `step ${n} has no active approver`);
    }
    const watchers = await stepUsers(q, pid, at, 'watcher', step.watcherUsers, step.watcherGroups);
    await insertAssignees(q, pid, run.wf.id, n, 'APPROVER', approvers);
    await insertAssignees(q, pid, run.wf.id, n, 'WATCHER', watchers);
    await setStepStatus(q, pid, run.wf.id, { from: n }, 'ACTIVE');
    await addEvent(q, pid, run.wf.id, { stepNo: n, action: 'STEP_STARTED', userId: null });
    await state(q, run.actor, run.wf.id, { status: 'SUBMITTED', currentStep: n });
    const delegates = await activeDelegates(q, pid, approvers);
    await notify(q, run, [...approvers, ...delegates], 'Approval required', 'INFO');
    await notify(q, run, watchers, `Step ${step.name ?? n} reached`, 'INFO');
    return n;
  }
}

/** Ends the workflow: status, open steps cancelled, the approvable called back, everyone told. */
async function finish(
  q: Queryable,
  run: Run,
  status: Exclude<WorkflowStatus, 'SUBMITTED'>,
  submitter: number | null,
) {
  const pid = run.actor.partitionId;
  if (status !== 'APPROVED') {
    await setStepStatus(q, pid, run.wf.id, { from: 1, to: 1_000_000, only: 'ACTIVE' }, 'CANCELLED');
    await setStepStatus(q, pid, run.wf.id, { from: 1, to: 1_000_000, only: 'WAITING' }, 'CANCELLED');
  }
  await state(q, run.actor, run.wf.id, { status, currentStep: null });
  run.failure = (await run.approvable.onStatus(q, refOf(run), status)) ?? undefined;
  const everyone = (await assigneesOf(q, pid, run.wf.id)).map((a) => a.userId);
  const approvers = (await assigneesOf(q, pid, run.wf.id, 'APPROVER')).map((a) => a.userId);
  // (their active delegates were told a decision was wanted: they learn it is taken)
  everyone.push(...(await activeDelegates(q, pid, approvers)));
  if (submitter !== null) everyone.push(submitter);
  const title = { APPROVED: 'Approved', DENIED: 'Denied', WITHDRAWN: 'Withdrawn' }[status];
  await notify(q, run, everyone, title, status === 'APPROVED' ? 'SUCCESS' : 'WARNING');
}

/**
 * Submits an approvable (the door for the modules' own submit operations, inside their transaction:
 * they pass `ownSubmit`, which their callbacks see). Picks the first definition of the type (by
 * priority, then id) whose condition holds, copies its steps, and starts the first applicable step.
 * Answers the workflow id.
 */
export async function submitApprovable(
  q: Queryable,
  actor: Actor,
  typeCode: string,
  id: number,
  // onFailure: told of an apply that failed when approved at once (committed FAILED: answer it after).
  opts: { readonly ownSubmit: boolean; readonly named?: string; readonly onFailure?: (e: AppError) => void },
): Promise<number> {
  const { ownSubmit, named, onFailure } = opts;
  const approvable = findApprovable(typeCode);
  if (!approvable) throw new AppError('NOT_FOUND', `${typeCode} is not an approvable type`);
  const record = await approvable.describe(q, { partitionId: actor.partitionId, id, actor });
  // A typedId names the document by its own type code (12.CGI2) or the approvable's (12.CGI).
  if (!record || (named !== undefined && named !== typeCode && named !== record.typeCode))
    throw notFound(`${approvable.label} ${id}`, 'typedId');
  // (Named by the typedId of /workflowsmanager.submit; a module's own door names its own field.)
  const already = (state: string) =>
    new AppError(
      'CONFLICT',
      `${approvable.label} ${id} is already ${state}`,
      named ? { field: 'typedId' } : {},
    );
  if (record.workflowStatus === 'APPROVED') throw already('approved');
  if ((await pendingWorkflowOf(q, actor.partitionId, typeCode, id)) !== undefined) throw already('submitted');
  // The module's own submit checked its rules before calling; the generic one has them checked here.
  if (!ownSubmit) await approvable.beforeSubmit?.(q, { partitionId: actor.partitionId, id, actor });
  const definition = (await definitionsFor(q, actor.partitionId, typeCode)).find((d) =>
    definitionApplies(d, record),
  );
  const wfId = await insertWorkflow(q, actor.partitionId, {
    code: typeCode,
    approvableId: id,
    typeCode: record.typeCode ?? null,
    label: record.label ?? null,
    definition: definition ? { id: definition.id, name: definition.name, version: definition.version } : null,
    status: 'SUBMITTED',
    userId: actor.userId,
  });
  if (wfId === undefined) throw already('submitted');
  await recordHistory(q, actor, [
    {
      typeCode: 'WF',
      recordId: wfId,
      action: 'ADD',
      changes: {
        code: { old: null, new: typeCode },
        approvableId: { old: null, new: id },
        workflowStatus: { old: null, new: 'SUBMITTED' },
        definitionName: { old: null, new: definition?.name ?? null },
        definitionVersion: { old: null, new: definition?.version ?? null },
      },
      version: 0,
    },
  ]);
  const run: Run = {
    actor,
    ownSubmit,
    wf: {
      id: wfId,
      code: typeCode,
      approvableId: id,
      approvableTypedId: `${id}.${record.typeCode ?? typeCode}`,
      label: record.label ?? null,
      definitionName: definition?.name ?? null,
    },
    approvable,
    record,
    submitting: true,
  };
  await addEvent(q, actor.partitionId, wfId, {
    action: 'SUBMITTED',
    userId: actor.userId,
    comment: definition ? null : 'no workflow definition applies: approved at once',
  });
  await approvable.onStatus(q, refOf(run), 'SUBMITTED');
  if (definition) {
    const { steps, errors } = parseSteps(definition.steps);
    const first = Object.entries(errors)[0];
    if (first) throw validationError(first[0], `definition ${definition.name}: ${first[1].errorMessage}`);
    await insertSteps(q, actor.partitionId, wfId, steps);
    if ((await startStep(q, run, 1)) !== null) return wfId;
  }
  await finish(q, run, 'APPROVED', actor.userId);
  if (run.failure !== undefined) onFailure?.(run.failure);
  return wfId;
}

/** `/workflowsmanager.submit/{typedId}`: any registered approvable, with its submit permission. */
export async function submitByTypedId(db: Db, principal: Principal, typedId: string): Promise<number> {
  const m = /^(\d{1,15})\.([A-Z][A-Z0-9]{0,39})$/.exec(typedId);
  if (!m) throw validationError('typedId', 'must be <id>.<TypeCode> of an approvable');
  const approvable = findApprovable(m[2]!);
  if (!approvable)
    throw new AppError('NOT_FOUND', `${m[2]!} is not an approvable type`, { field: 'typedId' });
  requireAccess(principal, approvable.submitAccess);
  // Approved at once and its apply failed: committed (the document FAILED), then answered.
  let failed: AppError | undefined;
  const id = await batchTransaction(db, (tx) => {
    failed = undefined; // (a run again after a deadlock starts afresh)
    return submitApprovable(tx, principal, approvable.typeCode, Number(m[1]), {
      ownSubmit: false,
      named: m[2]!,
      onFailure: (e) => (failed = e),
    });
  });
  if (failed !== undefined) throw failed;
  return id;
}

// ---------------------------------------------------------------------------------------------
// Decisions

export interface ActionBody {
  readonly data?: { readonly comment?: string; readonly reason?: string } | null;
  readonly oldValues?: { readonly version?: unknown } | null;
}

export function parseWorkflowId(text: string): number {
  const m = /^(\d{1,15})(?:\.WF)?$/.exec(text);
  if (!m) throw validationError('id', 'must be a workflow id or typedId (<id>.WF)');
  return Number(m[1]);
}

async function lockOrFail(q: Queryable, pid: number, id: number): Promise<WorkflowRow> {
  const wf = await lockWorkflow(q, pid, id);
  if (!wf) throw notFound(`Workflow ${id}`, 'id');
  return { ...wf, id: Number(wf.id), approvableId: Number(wf.approvableId) };
}

/** The action's `oldValues.version` against the workflow's (engine/value-check.ts). */
function checkWorkflowVersion(wf: WorkflowRow, body: ActionBody, required: boolean): void {
  checkVersion(body.oldValues, { typedId: `${wf.id}.WF`, version: wf.version }, required);
}

function requirePending(wf: WorkflowRow): asserts wf is WorkflowRow & { currentStep: number } {
  if (wf.workflowStatus !== 'SUBMITTED' || wf.currentStep === null) {
    throw new AppError('CONFLICT', `Workflow ${wf.id}.WF is ${wf.workflowStatus}, no longer pending`);
  }
}

/** Whose open approval the caller decides: his own, else that of a delegator whose delegation is active. */
async function actingFor(q: Queryable, principal: Principal, wf: WorkflowRow & { currentStep: number }) {
  const pid = principal.partitionId;
  const approvers = await assigneesOf(q, pid, wf.id, 'APPROVER', wf.currentStep);
  const own = approvers.find((a) => a.userId === principal.userId);
  if (own && own.decision === null) return principal.userId;
  const delegators = await activeDelegators(q, pid, principal.userId);
  const other = approvers.find((a) => a.decision === null && delegators.includes(a.userId));
  if (other) return other.userId;
  if (own)
    throw new AppError('CONFLICT', `You already decided step ${wf.currentStep} of workflow ${wf.id}.WF`);
  throw new AppError(
    'FORBIDDEN',
    `You are not an approver of step ${wf.currentStep} of workflow ${wf.id}.WF`,
  );
}

function runOf(principal: Principal, wf: WorkflowRow): Run {
  return { actor: principal, ownSubmit: false, wf, approvable: approvableOf(wf.code) };
}

export async function approveWorkflow(
  db: Db,
  principal: Principal,
  id: number,
  body: ActionBody,
): Promise<number> {
  const comment = textOf(body.data?.comment, 'data.comment');
  // The final approval applies the document (a DCR): run again after a deadlock with another one.
  return batchTransaction(db, async (q) => {
    const pid = principal.partitionId;
    const wf = await lockOrFail(q, pid, id);
    await requireParticipant(q, principal, wf);
    checkWorkflowVersion(wf, body, true);
    requirePending(wf);
    const approver = await actingFor(q, principal, wf);
    const run = runOf(principal, wf);
    const n = wf.currentStep;
    await decide(q, pid, wf.id, n, approver, 'APPROVED', principal.userId);
    await addEvent(q, pid, wf.id, {
      stepNo: n,
      action: 'APPROVED',
      userId: principal.userId,
      onBehalfOf: approver === principal.userId ? null : approver,
      comment,
    });
    const step = (await stepOf(q, pid, wf.id, n))!;
    const open = (await assigneesOf(q, pid, wf.id, 'APPROVER', n)).filter((a) => a.decision === null);
    if (step.rule === 'ALL' && open.length > 0) {
      await state(q, principal, wf.id, { status: 'SUBMITTED', currentStep: n });
      return wf.id;
    }
    await setStepStatus(q, pid, wf.id, { from: n }, 'APPROVED');
    if ((await startStep(q, run, n + 1)) === null) await finish(q, run, 'APPROVED', wf.submittedBy);
    return wf.id;
  });
}

export async function denyWorkflow(
  db: Db,
  principal: Principal,
  id: number,
  body: ActionBody,
): Promise<number> {
  const reason = textOf(body.data?.reason ?? body.data?.comment, 'data.reason');
  return db.transaction(async (q) => {
    const pid = principal.partitionId;
    const wf = await lockOrFail(q, pid, id);
    await requireParticipant(q, principal, wf);
    checkWorkflowVersion(wf, body, true);
    requirePending(wf);
    const approver = await actingFor(q, principal, wf);
    const n = wf.currentStep;
    const step = (await stepOf(q, pid, wf.id, n))!;
    // Blanks are no reason.
    if (step.denyReasonRequired && (reason === null || reason.trim() === ''))
      throw validationError('data.reason', 'is required by this step');
    await decide(q, pid, wf.id, n, approver, 'DENIED', principal.userId);
    await addEvent(q, pid, wf.id, {
      stepNo: n,
      action: 'DENIED',
      userId: principal.userId,
      onBehalfOf: approver === principal.userId ? null : approver,
      comment: reason,
    });
    await setStepStatus(q, pid, wf.id, { from: n }, 'DENIED');
    await finish(q, runOf(principal, wf), 'DENIED', wf.submittedBy);
    return wf.id;
  });
}

export async function withdrawWorkflow(
  db: Db,
  principal: Principal,
  id: number,
  body: ActionBody,
): Promise<number> {
  const comment = textOf(body.data?.comment, 'data.comment');
  return db.transaction(async (q) => {
    const pid = principal.partitionId;
    const wf = await lockOrFail(q, pid, id);
    await requireParticipant(q, principal, wf);
    if (wf.submittedBy !== principal.userId && !can(principal, 'WORKFLOW_ADMIN')) {
      throw new AppError(
        'FORBIDDEN',
        'Only the submitter or a workflow administrator may withdraw a workflow',
      );
    }
    checkWorkflowVersion(wf, body, true);
    requirePending(wf);
    await addEvent(q, pid, wf.id, {
      stepNo: wf.currentStep,
      action: 'WITHDRAWN',
      userId: principal.userId,
      comment,
    });
    await finish(q, runOf(principal, wf), 'WITHDRAWN', wf.submittedBy);
    return wf.id;
  });
}

export async function commentWorkflow(
  db: Db,
  principal: Principal,
  id: number,
  body: ActionBody,
): Promise<number> {
  const comment = textOf(body.data?.comment, 'data.comment');
  if (comment === null) throw validationError('data.comment', 'is required');
  return db.transaction(async (q) => {
    const wf = await lockOrFail(q, principal.partitionId, id);
    await requireParticipant(q, principal, wf);
    checkWorkflowVersion(wf, body, false);
    await addEvent(q, principal.partitionId, wf.id, {
      stepNo: wf.currentStep,
      action: 'COMMENT',
      userId: principal.userId,
      comment,
    });
    return wf.id;
  });
}
