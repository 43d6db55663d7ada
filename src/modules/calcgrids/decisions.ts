// Accepting and rejecting calculation grid items (/calculationgridmanager.accept|reject/{gridId}):
// the items chosen by id or by a filter over CGI{k}, submitted to their workflows set-based
// (./submit-many.ts) or denied, each in one transaction, answering the items' workflow status and
// approval state. Both lock the items (id order) and check their states under the lock.

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { Params } from '../../db/sql.ts';
import { loadTypeContext, rowScope } from '../../engine/context.ts';
import { compileCriteria, parseCriteria, resolveCriteria } from '../../engine/criteria.ts';
import { gridItemType } from '../../engine/registry-calcgrids.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import {
  APPROVABLE_CODE,
  itemConflict,
  lockDocuments,
  requireResults,
  setItemStates,
  type ItemField,
} from './approval.ts';
import { gridOrFail, itemIdOf } from './service.ts';
import { submitItems } from './submit-many.ts';
import type * as store from './store.ts';
import { isObj } from '../../engine/values.ts';

type Obj = Record<string, unknown>;

/** Items one request may accept or reject at most. */
export const MAX_SELECTED = 10_000;

/** The items a decision chose: their ids, and the field of the request that chose each. */
interface Selection {
  readonly ids: number[];
  /** `data.items.<first index naming the item>`, or `data.filter`: what a 409 about the item names. */
  readonly fieldOf: ItemField;
}

/** `{data: {items: [ids or typedIds]}}` or `{data: {filter: <criteria over CGI{k}>}}`: the ids, in the grid. */
async function selectItems(
  q: Queryable,
  principal: Principal,
  grid: store.GridRow,
  data: unknown,
): Promise<Selection> {
  if (!isObj(data) || (data.items === undefined) === (data.filter === undefined))
    throw validationError('data', 'give {items: [ids]} or {filter: criteria}');
  for (const k of Object.keys(data))
    if (k !== 'items' && k !== 'filter') throw validationError(`data.${k}`, 'unknown field');
  const pid = principal.partitionId;
  if (data.items !== undefined) {
    if (!Array.isArray(data.items) || data.items.length === 0 || data.items.length > MAX_SELECTED)
      throw validationError('data.items', `must list 1 to ${MAX_SELECTED} items`);
    const at = new Map<number, number>(); // item id -> the first index naming it
    data.items.forEach((v, i) => {
      const ref = itemIdOf(v, `data.items.${i}`);
      // A typedId names its type: CGI<k> of another key number is no item of this grid.
      if (ref.keyNumber !== undefined && ref.keyNumber !== grid.key_number)
        throw notFound(
          `Item ${String(v)} of calculation grid ${grid.id} (its items are CGI${grid.key_number})`,
          `data.items.${i}`,
        );
      if (!at.has(ref.id)) at.set(ref.id, i);
    });
    const ids = [...at.keys()];
    const r = await q.query<{ id: string }>(
      `SELECT id FROM calc_grid_items WHERE partition_id = $1 AND grid_id = $2 AND id = ANY($3::bigint[])`,
      [pid, grid.id, ids],
    );
    const found = new Set(r.rows.map((x) => Number(x.id)));
    const missing = ids.find((id) => !found.has(id));
    if (missing !== undefined)
      throw notFound(`Item ${missing} of calculation grid ${grid.id}`, `data.items.${at.get(missing)}`);
    return { ids, fieldOf: (id) => (at.has(id) ? `data.items.${at.get(id)}` : undefined) };
  }
  // Within this grid: its results typed as its own elements are.
  const tc = await loadTypeContext(q, principal, gridItemType(grid.key_number), undefined, {
    calculationGridId: grid.id,
  });
  const params = new Params();
  let where: string;
  try {
    where = compileCriteria(resolveCriteria(parseCriteria(data.filter), tc.fields).criteria, params, 't');
  } catch (err) {
    if (err instanceof AppError && err.code === 'VALIDATION')
      throw validationError('data.filter', err.message);
    throw err;
  }
  const r = await q.query<{ id: string }>(
    `SELECT t.id FROM calc_grid_items t WHERE ${rowScope(tc, principal, params, 't')}
        AND t.grid_id = ${params.add(grid.id)} AND ${where} ORDER BY t.id LIMIT ${params.add(MAX_SELECTED + 1)}`,
    params.values,
  );
  if (r.rows.length > MAX_SELECTED)
    throw validationError('data.filter', `selects more than ${MAX_SELECTED} items: narrow it`);
  return { ids: r.rows.map((x) => Number(x.id)), fieldOf: () => 'data.filter' };
}

interface Summary {
  readonly typedId: string;
  readonly workflowStatus: string;
  readonly approvalState: string;
  readonly version: number;
}

async function summaries(q: Queryable, pid: number, ids: readonly number[]): Promise<Summary[]> {
  const r = await q.query<{
    id: string;
    key_number: number;
    workflow_status: string;
    approval_state: string;
    version: number;
  }>(
    `SELECT id, key_number, workflow_status, approval_state, version FROM calc_grid_items
      WHERE partition_id = $1 AND id = ANY($2::bigint[]) ORDER BY id`,
    [pid, ids],
  );
  return r.rows.map((x) => ({
    typedId: `${x.id}.CGI${x.key_number}`,
    workflowStatus: x.workflow_status,
    approvalState: x.approval_state,
    version: Number(x.version),
  }));
}

const answer = (s: readonly Summary[]): Obj[] =>
  s.map((x) => ({ typedId: x.typedId, workflowStatus: x.workflowStatus, approvalState: x.approvalState }));

/** `/calculationgridmanager.accept/{gridId}`: submits each chosen item to its workflow (one transaction). */
export async function acceptItems(
  db: Db,
  principal: Principal,
  idText: string,
  data: unknown,
): Promise<Obj[]> {
  return db.transaction(async (tx) => {
    const grid = await gridOrFail(tx, principal, idText, 'key share'); // a delete of the grid waits for this
    const { ids, fieldOf } = await selectItems(tx, principal, grid, data);
    await requireResults(tx, principal.partitionId, ids, fieldOf);
    await submitItems(tx, principal, ids, fieldOf);
    return answer(await summaries(tx, principal.partitionId, ids));
  });
}

/**
 * `/calculationgridmanager.reject/{gridId}`: denies the chosen items (DENIED). An item waiting in a
 * workflow is refused (409): its approvers deny it there (`/workflowsmanager.deny`); so is an item
 * already decided (APPROVED through its workflow or at once, or DENIED): a reject never overturns a
 * decision.
 */
export async function rejectItems(
  db: Db,
  principal: Principal,
  idText: string,
  data: unknown,
): Promise<Obj[]> {
  return db.transaction(async (tx) => {
    const grid = await gridOrFail(tx, principal, idText, 'key share');
    const { ids, fieldOf } = await selectItems(tx, principal, grid, data);
    // Locked (id order) and checked under the lock: an accept of the same items running at the same
    // time is waited for, and its outcome refuses this reject (409) instead of being overwritten.
    const docs = await lockDocuments(tx, principal.partitionId, ids);
    const decided = docs.find((d) => d.workflowStatus === 'APPROVED' || d.workflowStatus === 'DENIED');
    if (decided)
      throw itemConflict(
        decided.workflowStatus === 'APPROVED'
          ? `Item ${decided.id}.${decided.typeCode} is already approved: it cannot be rejected (an override, or results changed by a recalculation, make it a new proposal)`
          : `Item ${decided.id}.${decided.typeCode} is already denied`,
        decided.id,
        fieldOf,
      );
    const r = await tx.query<{ id: string; approvable_id: string }>(
      `SELECT id, approvable_id FROM workflows
        WHERE partition_id = $1 AND code = $2 AND approvable_id = ANY($3::bigint[]) AND workflow_status = 'SUBMITTED'
        LIMIT 1`,
      [principal.partitionId, APPROVABLE_CODE, ids],
    );
    const waiting = r.rows[0];
    if (waiting) {
      const id = Number(waiting.approvable_id);
      const doc = docs.find((d) => d.id === id);
      throw itemConflict(
        `Item ${doc === undefined ? id : `${id}.${doc.typeCode}`} waits in workflow ${waiting.id}.WF: deny it there (/workflowsmanager.deny)`,
        id,
        fieldOf,
      );
    }
    const submitted = docs.find((d) => d.workflowStatus === 'SUBMITTED');
    if (submitted)
      throw itemConflict(
        `Item ${submitted.id}.${submitted.typeCode} waits in a workflow: deny it there`,
        submitted.id,
        fieldOf,
      );
    await setItemStates(tx, principal, ids, 'DENIED');
    const after = await summaries(tx, principal.partitionId, ids);
    return answer(after);
  });
}
