// Applying an APPROVED DCR inside a transaction that someone else owns: the submit's (no workflow),
// the final approval's (src/modules/workflows calls the DCR back in its transaction), or a
// DCR_SUBMIT job's. The apply runs behind a SAVEPOINT: every UPDATE/DELETE target is locked and its
// version compared with the one its item was proposed on (any moved: every conflicting item listed),
// then the engine's own loadData/deleteByFilter/massEdit write the changes with the same validation
// as direct writes, as the submitter (allowed to write the target type; user groups still apply).
// On any failure the transaction rolls back to the savepoint (nothing of the DCR is written) and the
// DCR is marked FAILED with the reasons in the same transaction; the caller's own work (the
// approval, the workflow record) stands. Whether the apply runs here or as a job is decided by
// `applyByJob`: above `asyncSubmitDCRThreshold` items, or when the DCR was submitted with /async.

import type { Principal } from '../../access/access.ts';
import { isTransientConflict, type Db, type Queryable, type Tx } from '../../db/db.ts';
import { inSavepoint } from '../../db/savepoint.ts';
import { ident } from '../../db/sql.ts';
import { inTransaction } from '../../db/views.ts';
import { canEdit } from '../../engine/crud.ts';
import { currentHistoryOrigin, runWithHistoryOrigin } from '../../engine/history.ts';
import { toAppError } from '../../http/envelope.ts';
import { AppError, type FieldErrors } from '../../http/errors.ts';
import { onJobEnded, type EndedJob } from '../../jobs/endings.ts';
import { RESTRICTION_PARAM } from '../../jobs/principal.ts';
import { createJob } from '../../jobs/store.ts';
import { scopeOf } from './service.ts';
import * as store from './store.ts';
import { findTargets, hiddenTargetIds, metaVersionOf, writerFor } from './target.ts';
import type { Written } from './staged.ts';
import { writeItems } from './write.ts';

export const DCR_SUBMIT = 'DCR_SUBMIT';

/** The job parameter of a DCR_SUBMIT job that submits (not only applies) the DCR: /submit/{id}/async. */
export const SUBMIT_PARAM = 'submit';

type Scope = Awaited<ReturnType<typeof scopeOf>>;

export type ApplyOutcome =
  { readonly ok: true; readonly summary: Written } | { readonly ok: false; readonly error: AppError };

/** A Queryable that is a transaction (the engine's bulk writes need COPY). */
export function isTx(q: Queryable): q is Tx {
  return typeof (q as Partial<Tx>).copyFrom === 'function';
}

/**
 * Whether an APPROVED DCR is applied by a DCR_SUBMIT job rather than in the deciding transaction:
 * it holds more items than `asyncSubmitDCRThreshold` (no option: never), or its submit was the
 * asynchronous one (its current job is a submitting DCR_SUBMIT job).
 */
export async function applyByJob(q: Queryable, partitionId: number, dcr: store.DcrRow): Promise<boolean> {
  const threshold = await store.asyncThreshold(q, partitionId);
  if (threshold !== undefined) {
    const count = await q.query<{ n: string }>(
      'SELECT count(*) AS n FROM dcr_items WHERE partition_id = $1 AND dcr_id = $2',
      [partitionId, dcr.id],
    );
    if (Number(count.rows[0]!.n) > threshold) return true;
  }
  if (dcr.job_id === null) return false;
  const job = await q.query<{ submit: string | null }>(
    `SELECT parameters->>'${SUBMIT_PARAM}' AS submit FROM jobs
      WHERE partition_id = $1 AND id = $2 AND tracker_type = $3`,
    [partitionId, dcr.job_id, DCR_SUBMIT],
  );
  return job.rows[0]?.submit === 'true';
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

/**
 * A DCR_SUBMIT job ended FAILED or CANCELLED while the DCR still waits APPROVED for it (cancelled
 * before it ran, its owner deactivated, its node lost): nothing of it was written, so the DCR is
 * FAILED as after a failed apply, saying why, and can be submitted again. A submitting job (/async)
 * that did not run left its DCR as it was (DRAFT, FAILED or DENIED): nothing to do.
 */
async function settleUnapplied(q: Queryable, job: EndedJob): Promise<void> {
  const id = Number(job.parameters.dcrId);
  const r = await q.query<{ status: string; job_id: string | null }>(
    'SELECT status, job_id FROM dcrs WHERE partition_id = $1 AND id = $2 FOR UPDATE',
    [job.partition_id, id],
  );
  const dcr = r.rows[0];
  if (dcr?.status !== 'APPROVED' || Number(dcr.job_id) !== Number(job.id)) return;
  const why = job.status === 'CANCELLED' ? 'was cancelled' : 'failed';
  await store.setDcrState(q, job.partition_id, id, job.created_by ?? 0, {
    status: 'FAILED',
    from: 'APPROVED',
    messages: [{ level: 'ERROR', text: `the apply ${why} (job ${job.id}.JST): nothing applied` }],
  });
}

onJobEnded(DCR_SUBMIT, settleUnapplied);

/**
 * Applies the APPROVED DCR `id` inside `tx` as `owner`, behind a savepoint. Success: the DCR is
 * APPLIED. Failure (a version conflict, a value the engine refuses, a database error): rolled back
 * to the savepoint, the DCR FAILED with every reason, and the error answered (not thrown), so the
 * caller decides whether its own transaction still commits. `db` receives what the engine defers
 * past the apply (the background ANALYZE after bulk writes).
 */
export async function applyWithin(db: Db, tx: Tx, owner: Principal, id: number): Promise<ApplyOutcome> {
  // Record history names the DCR as the operation of every change it writes (request id or job kept).
  const origin = { ...currentHistoryOrigin(), operation: `DCR ${id}.DCR` };
  let ended = false;
  const within = inTransaction(db, tx, () => ended);
  try {
    const summary = await inSavepoint(tx, 'dcr_apply', () =>
      runWithHistoryOrigin(origin, () => writeApproved(within, tx, owner, id)),
    );
    return { ok: true, summary };
  } catch (err) {
    // A deadlock with another transaction (two approvals applying at once, PostgreSQL) is no reason
    // to fail the DCR: the whole transaction fails and runs again (its callers retry deadlocks).
    if (isTransientConflict(err)) throw err;
    const e = toAppError(err);
    const reasons = Object.entries(e.errors ?? {}).map(([item, r]) => ({ item, message: r.errorMessage }));
    await store.setDcrState(tx, owner.partitionId, id, owner.userId, {
      status: 'FAILED',
      from: 'APPROVED',
      messages: [{ level: 'ERROR', text: e.message }, ...reasons.map((r) => ({ level: 'ERROR', ...r }))],
    });
    return { ok: false, error: e };
  } finally {
    ended = true;
  }
}

async function writeApproved(within: Db, tx: Tx, owner: Principal, id: number): Promise<Written> {
  const dcr = await store.findDcrOrFail(tx, owner.partitionId, id, true);
  if (dcr.status !== 'APPROVED') {
    throw new AppError('CONFLICT', `${dcr.unique_name} is ${dcr.status}, not APPROVED: nothing applied`);
  }
  const s = await scopeOf(tx, owner, dcr);
  const writer = writerFor(owner, s.type, await metaVersionOf(tx, owner.partitionId));
  const items = await store.itemsOf(tx, owner.partitionId, id);
  const massOps = await store.massOpsOf(tx, owner.partitionId, id);
  refuseNarrowedFields(s, items, massOps);
  await lockAndCompare(tx, writer, s, items);
  const staged = items.map((i) => ({ ...i, ref: `${i.id}.DCRI` }));
  const summary = await writeItems(within, writer, s.type, staged, massOps);
  await store.setDcrState(tx, owner.partitionId, id, owner.userId, {
    status: 'APPLIED',
    applied: true,
    messages: [{ level: 'INFO', text: 'applied', ...summary }],
  });
  return summary;
}

/**
 * Every field an item or a mass change sets is one the DCR type lets change NOW (`s.allowed`, read
 * at apply): its `fields` may have been narrowed since they were proposed. Else refused as a value
 * is (-4, nothing applied), naming each item (`<n>.DCRI.<field>`) and mass change (`<n>.DCRM.<field>`).
 */
function refuseNarrowedFields(
  s: Scope,
  items: readonly store.ItemRow[],
  massOps: readonly store.MassOpRow[],
): void {
  const errors: FieldErrors = {};
  const refuse = (ref: string, field: string) => {
    errors[`${ref}.${field}`] = { errorMessage: `${field} may not be changed by this DCR type (any more)` };
  };
  for (const i of items) {
    for (const f of Object.keys(i.proposed)) if (!s.allowed.has(f)) refuse(`${i.id}.DCRI`, f);
  }
  for (const m of massOps) {
    const ops = Array.isArray(m.operations) ? (m.operations as { fieldName?: unknown }[]) : [];
    for (const op of ops) {
      const f = String(op.fieldName);
      if (!s.allowed.has(f)) refuse(`${m.id}.DCRM`, f);
    }
  }
  const n = Object.keys(errors).length;
  if (n > 0) {
    throw new AppError(
      'VALIDATION',
      `${n} change(s) refused when applied (fields the DCR type no longer lets change): nothing applied`,
      { errors },
    );
  }
}

/**
 * Records hidden from the writer (their user groups) are not his to change: refused whole, naming
 * none of them (to him they do not exist; he would have been told "deleted since" and their ids).
 */
async function refuseHidden(q: Queryable, writer: Principal, s: Scope): Promise<void> {
  const hidden = await hiddenTargetIds(q, writer, s.tc, s.dcr.id);
  if (hidden.length > 0) {
    throw new AppError(
      'FORBIDDEN',
      `${hidden.length} item(s) of this DCR change records hidden from the submitter by their user groups: nothing applied`,
    );
  }
}

/**
 * Records the writer sees but may not edit (of the UPDATE/DELETE `items` whose target is `found`):
 * a permission, not a conflict (403, as a record hidden from him), naming each item; nothing applied.
 */
function refuseOutside(
  writer: Principal,
  s: Scope,
  items: readonly store.ItemRow[],
  found: Awaited<ReturnType<typeof findTargets>>,
): void {
  const outside: FieldErrors = {};
  for (const i of items) {
    const row = i.change_type === 'ADD' ? undefined : found.byId.get(i.target_id!);
    if (row && !canEdit(s.type, writer, row))
      outside[`${i.id}.DCRI`] = {
        errorMessage: `${row.typedId as string} is outside the submitter's edit groups now`,
      };
  }
  const refused = Object.keys(outside).length;
  if (refused > 0) {
    throw new AppError(
      'FORBIDDEN',
      `${refused} item(s) of this DCR change records outside the submitter's edit groups: nothing applied`,
      { errors: outside },
    );
  }
}

/**
 * The submitter's rights over the DCR's targets as they stand, checked when a submit does not apply
 * the DCR in its own transaction (a workflow runs, or a job applies it): a target hidden from him or
 * outside his edit groups is the 403 the apply would answer, and the submit changes nothing.
 */
export async function refuseUnwritable(q: Queryable, owner: Principal, dcr: store.DcrRow): Promise<void> {
  const s = await scopeOf(q, owner, dcr);
  const writer = writerFor(owner, s.type, await metaVersionOf(q, owner.partitionId));
  await refuseHidden(q, writer, s);
  const items = (await store.itemsOf(q, owner.partitionId, dcr.id)).filter((i) => i.target_id !== null);
  if (items.length === 0) return;
  const found = await findTargets(q, writer, s.tc, { ids: items.map((i) => i.target_id!), keys: [] });
  refuseOutside(writer, s, items, found);
}

/**
 * Locks every UPDATE/DELETE target (FOR UPDATE, one statement) and compares versions; an ADD whose
 * key exists by now conflicts as well. Any conflict: a 409 listing each item, nothing written; a
 * record hidden from the writer or outside his edit groups: a 403, nothing written.
 */
async function lockAndCompare(
  tx: Tx,
  writer: Principal,
  s: Scope,
  items: readonly store.ItemRow[],
): Promise<void> {
  const ids = items.flatMap((i) => (i.target_id === null ? [] : [i.target_id]));
  if (ids.length > 0) {
    await tx.query(
      `SELECT 1 FROM ${ident(s.type.table)}
        WHERE partition_id = $1 AND id = ANY($2::bigint[]) ORDER BY id FOR UPDATE`,
      [writer.partitionId, ids],
    );
  }
  await refuseHidden(tx, writer, s);
  const addKeys = items.filter((i) => i.change_type === 'ADD').map((i) => i.target_key);
  const found = await findTargets(tx, writer, s.tc, { ids, keys: addKeys });
  // A key taken by now, whatever groups hide its record (named only where the writer sees it).
  const taken =
    addKeys.length === 0
      ? found
      : await findTargets(tx, writer, s.tc, { ids: [], keys: addKeys }, false, true);
  const errors: FieldErrors = {};
  for (const i of items) {
    const name = `${i.id}.DCRI`;
    if (i.change_type === 'ADD') {
      const key = JSON.stringify(i.target_key);
      if (taken.byKey.has(key)) {
        const seen = found.byKey.get(key);
        errors[name] = {
          errorMessage: `${s.type.label} ${key} was added since${seen ? ` (${seen.typedId as string})` : ''}`,
        };
      }
      continue;
    }
    const row = found.byId.get(i.target_id!);
    if (!row)
      errors[name] = { errorMessage: `${i.target_id}.${s.type.code} was deleted since it was proposed` };
    else if (Number(row.version) !== i.target_version) {
      errors[name] = {
        errorMessage: `${row.typedId as string} is at version ${String(row.version)}, proposed on version ${i.target_version}`,
      };
    }
  }
  refuseOutside(
    writer,
    s,
    items.filter((i) => errors[`${i.id}.DCRI`] === undefined),
    found,
  );
  const n = Object.keys(errors).length;
  if (n > 0) {
    throw new AppError('VERSION_CONFLICT', `${n} target record(s) changed since proposed: nothing applied`, {
      errors,
    });
  }
}
