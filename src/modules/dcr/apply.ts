// Submitting and applying a DCR. Submit starts the approval (no workflow: approved at once) and then
// applies — synchronously, or as a DCR_SUBMIT job when forced or when the DCR holds more items than
// the advanced configuration option `asyncSubmitDCRThreshold` (no option: always synchronous).
// Apply is ONE transaction: every UPDATE/DELETE target is locked and its version compared with the
// one its item was proposed on (any moved: nothing written, every conflicting item listed), then
// the engine's own add/update/delete/massEdit write the changes with the same validation as direct
// writes, as the submitter (allowed to write the target type; user groups still apply).

import type { Principal } from '../../access/access.ts';
import type { Db, Tx } from '../../db/db.ts';
import { ident } from '../../db/sql.ts';
import { requireAccess } from '../../engine/crud.ts';
import { AppError, type FieldErrors } from '../../http/errors.ts';
import { currentHistoryOrigin, runWithHistoryOrigin } from '../../engine/history.ts';
import { toAppError } from '../../http/envelope.ts';
import { notifyJobQueued, type JobContext, type JobKind } from '../../jobs/runner.ts';
import { restrictionOf } from '../../jobs/principal.ts';
import { submitApprovable } from '../workflows/service.ts';
import { queueApply, whileSubmitting } from './approval.ts';
import { dcrRecord, scopeOf } from './service.ts';
import * as store from './store.ts';
import { findTargets, inTransaction, mayEdit, metaVersionOf, writerFor } from './target.ts';
import { writeItems, type Written } from './write.ts';

type Obj = Record<string, unknown>;

export { DCR_SUBMIT } from './approval.ts';

export type ApplySummary = Written;

/** States a DCR can be submitted from (a failed or denied one after fixing it). */
const SUBMITTABLE = ['DRAFT', 'FAILED', 'DENIED'];

/**
 * Submits a DCR through the workflow engine; answers the DCR (with `jstId` when a job applies it).
 * Approved at once (no workflow definition applies): applied now, or by a job when forced or above
 * `asyncSubmitDCRThreshold`. Otherwise it waits SUBMITTED; the final approval queues the job.
 */
export async function submitDcr(
  db: Db,
  principal: Principal,
  idText: string,
  forceAsync: boolean,
): Promise<Obj> {
  requireAccess(principal, 'DCR_EDIT');
  const id = store.parseDcrId(idText);
  const outcome = await db.transaction(async (tx): Promise<number | 'apply' | 'pending'> => {
    const dcr = await store.findDcrOrFail(tx, principal.partitionId, id, true);
    if (!SUBMITTABLE.includes(dcr.status)) {
      throw new AppError(
        'CONFLICT',
        `${dcr.unique_name} is ${dcr.status}: only ${SUBMITTABLE.join(', ')} DCRs can be submitted`,
      );
    }
    await whileSubmitting(id, () => submitApprovable(tx, principal, 'DCR', id));
    if ((await store.findDcrOrFail(tx, principal.partitionId, id)).status !== 'APPROVED') return 'pending';
    const count = await tx.query<{ n: string }>(
      'SELECT count(*) AS n FROM dcr_items WHERE partition_id = $1 AND dcr_id = $2',
      [principal.partitionId, id],
    );
    const threshold = await store.asyncThreshold(tx, principal.partitionId);
    if (!forceAsync && (threshold === undefined || Number(count.rows[0]!.n) <= threshold)) return 'apply';
    return queueApply(
      tx,
      principal.partitionId,
      principal.userId,
      { id, uniqueName: dcr.unique_name },
      restrictionOf(principal),
    );
  });
  if (outcome === 'apply') await applyDcr(db, principal, id);
  if (typeof outcome === 'number') {
    notifyJobQueued();
    return { ...(await dcrRecord(db, principal, id)), jstId: outcome };
  }
  return dcrRecord(db, principal, id);
}

/** Applies an APPROVED DCR in one transaction; on failure records FAILED with the reasons and rethrows. */
export async function applyDcr(db: Db, owner: Principal, id: number): Promise<ApplySummary> {
  // Record history names the DCR as the operation of every change it writes (request id or job kept).
  const origin = { ...currentHistoryOrigin(), operation: `DCR ${id}.DCR` };
  try {
    return await runWithHistoryOrigin(origin, () => applyInTransaction(db, owner, id));
  } catch (err) {
    const e = toAppError(err);
    const reasons = Object.entries(e.errors ?? {}).map(([item, r]) => ({ item, message: r.errorMessage }));
    await store.setDcrState(db, owner.partitionId, id, owner.userId, {
      status: 'FAILED',
      from: 'APPROVED',
      messages: [{ level: 'ERROR', text: e.message }, ...reasons.map((r) => ({ level: 'ERROR', ...r }))],
    });
    throw e;
  }
}

async function applyInTransaction(db: Db, owner: Principal, id: number): Promise<ApplySummary> {
  let ended = false;
  try {
    return await db.transaction(async (tx) => {
      const dcr = await store.findDcrOrFail(tx, owner.partitionId, id, true);
      if (dcr.status !== 'APPROVED') {
        throw new AppError('CONFLICT', `${dcr.unique_name} is ${dcr.status}, not APPROVED: nothing applied`);
      }
      const s = await scopeOf(tx, owner, dcr);
      const writer = writerFor(owner, s.type, await metaVersionOf(tx, owner.partitionId));
      const items = await store.itemsOf(tx, owner.partitionId, id);
      const massOps = await store.massOpsOf(tx, owner.partitionId, id);
      await lockAndCompare(tx, writer, s, items);
      const within = inTransaction(db, tx, () => ended);
      const staged = items.map((i) => ({ ...i, ref: `${i.id}.DCRI` }));
      const summary = await writeItems(within, writer, s.type, staged, massOps);
      await store.setDcrState(tx, owner.partitionId, id, owner.userId, {
        status: 'APPLIED',
        applied: true,
        messages: [{ level: 'INFO', text: 'applied', ...summary }],
      });
      return summary;
    });
  } finally {
    ended = true;
  }
}

/**
 * Locks every UPDATE/DELETE target (FOR UPDATE, one statement) and compares versions; an ADD whose
 * key exists by now conflicts as well. Any conflict: a 409 listing each item, nothing written.
 */
async function lockAndCompare(
  tx: Tx,
  writer: Principal,
  s: Awaited<ReturnType<typeof scopeOf>>,
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
  const found = await findTargets(tx, writer, s.tc, {
    ids,
    keys: items.filter((i) => i.change_type === 'ADD').map((i) => i.target_key),
  });
  const errors: FieldErrors = {};
  for (const i of items) {
    const name = `${i.id}.DCRI`;
    if (i.change_type === 'ADD') {
      const row = found.byKey.get(JSON.stringify(i.target_key));
      if (row) {
        errors[name] = {
          errorMessage: `${s.type.label} ${JSON.stringify(i.target_key)} was added since (${row.typedId as string})`,
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
    } else if (!mayEdit(s.type, writer, row)) {
      errors[name] = { errorMessage: `${row.typedId as string} is outside the submitter's edit groups now` };
    }
  }
  const n = Object.keys(errors).length;
  if (n > 0) {
    throw new AppError('VERSION_CONFLICT', `${n} target record(s) changed since proposed: nothing applied`, {
      errors,
    });
  }
}

/** DCR_SUBMIT: applies the DCR as its submitter; not retried (a half-run apply left nothing behind). */
export function dcrSubmitJobKind(db: Db): JobKind {
  return {
    maxAttempts: 1,
    async run(ctx: JobContext) {
      const dcrId = Number(ctx.job.parameters.dcrId);
      await ctx.progress({ progress: 1 });
      const summary = await applyDcr(db, ctx.principal, dcrId);
      return { dcrId, ...summary };
    },
  };
}
