// Calculation grid items as approvables of the workflow engine (type code `CGI`, one code for every
// key number: ids are unique over all items). `/calculationgridmanager.accept` submits the chosen
// items set-based (./submit-many.ts, the outcome of `submitApprovable` for each); with no workflow
// definition for CGI an item is approved at once, with one it waits SUBMITTED for its approvers
// (`/workflowsmanager.approve|deny`). The outcome lands in the item's `workflowStatus` and
// `approvalState`. Conditions of definitions see the item's keys, its grid and its element values
// (`ListPrice > 100`); one that reads a name the item's grid does not have is a -4 at submit (the
// elements differ per grid: not checked on WFD writes). `/workflowsmanager.submit/{id}.CGI{k}`
// (or `.CGI`) submits one item under the same rules as accept: it must have results, and not be
// approved or pending. Workflows name the item by its own typedId (`12.CGI2`).

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { Params } from '../../db/sql.ts';
import type { TypeContext } from '../../engine/context.ts';
import { withHistory } from '../../engine/history.ts';
import { gridItemType } from '../../engine/registry-calcgrids.ts';
import { AppError, type FieldErrors } from '../../http/errors.ts';
import {
  registerApprovable,
  type ApprovableRecord,
  type ApprovableRef,
  type WorkflowStatus,
} from '../workflows/approvables.ts';

export const APPROVABLE_CODE = 'CGI';

/** The approval state an item's workflow status gives it (its workflow status is the workflow's). */
const APPROVAL_OF: Readonly<Record<WorkflowStatus, string>> = {
  SUBMITTED: 'NOT_APPROVED',
  APPROVED: 'APPROVED',
  DENIED: 'DENIED',
  WITHDRAWN: 'NOT_APPROVED',
};
const APPROVAL_SQL = `CASE x.status ${Object.entries(APPROVAL_OF)
  .map(([w, a]) => `WHEN '${w}' THEN '${a}'`)
  .join(' ')} END`;

/**
 * Sets the workflow status of items `ids` (`statuses[i]` of `ids[i]`; a status alone for all) and
 * the approval state it implies, with the items' record history (`CGI<k>` UPDATE rows of the two
 * fields: accept, reject, and every decision of their workflows), one statement per key number.
 */
export async function setItemStates(
  q: Queryable,
  actor: Principal,
  ids: readonly number[],
  statuses: WorkflowStatus | readonly WorkflowStatus[],
): Promise<void> {
  if (ids.length === 0) return;
  const pid = actor.partitionId;
  const all = typeof statuses === 'string' ? ids.map(() => statuses) : statuses;
  const keyNumbers = await q.query<{ key_number: number }>(
    'SELECT DISTINCT key_number FROM calc_grid_items WHERE partition_id = $1 AND id = ANY($2::bigint[])',
    [pid, ids],
  );
  for (const { key_number } of keyNumbers.rows) {
    const type = gridItemType(key_number);
    const params = new Params();
    const stmt = `UPDATE calc_grid_items t
        SET workflow_status = x.status, approval_state = ${APPROVAL_SQL},
            version = t.version + 1, last_update_at = now(), last_update_by = ${params.add(actor.userId)}
       FROM unnest(${params.add(ids)}::bigint[], ${params.add(all)}::text[]) AS x(id, status)
      WHERE t.partition_id = ${params.add(pid)} AND t.id = x.id AND t.key_number = ${params.add(key_number)}`;
    const tc: TypeContext = { type, fields: new Map(type.fields.map((f) => [f.name, f])) };
    const source = { tc, principal: actor, params, kind: 'write', changing: TRACKED } as const;
    await q.query(withHistory(stmt, source, 'count(*)'), params.values);
  }
}

/** The fields a decision changes, recorded in the items' history (server fields set on purpose). */
const TRACKED = ['workflowStatus', 'approvalState'];

/**
 * The field of the request that chose item `id` (`data.items.2` of an accept or reject, `data.filter`
 * when a filter chose it); undefined: no field names it (a submit of the item alone names it by path).
 */
export type ItemField = (id: number) => string | undefined;

/** A 409 about item `id`, naming the field of the request that chose it (`fieldOf`). */
export function itemConflict(message: string, id: number, fieldOf?: ItemField): AppError {
  const field = fieldOf?.(id);
  return new AppError('CONFLICT', message, field === undefined ? {} : { field });
}

/**
 * Items to accept must have results: one never calculated (added since the last run) or whose
 * calculation failed (`error`, no results) gives its approvers nothing to decide on. 409 naming the
 * first few (and, with `fieldOf`, the fields of the request that chose them), as a rebate record
 * group that was never calculated is not submitted.
 */
export async function requireResults(
  q: Queryable,
  partitionId: number,
  ids: readonly number[],
  fieldOf?: ItemField,
): Promise<void> {
  const r = await q.query<{ id: string; typed_id: string }>(
    `SELECT id, id::text || '.CGI' || key_number AS typed_id FROM calc_grid_items
      WHERE partition_id = $1 AND id = ANY($2::bigint[]) AND calculation_results IS NULL
      ORDER BY id LIMIT 6`,
    [partitionId, ids],
  );
  if (r.rows.length === 0) return;
  const shown = r.rows.slice(0, 5);
  const more = r.rows.length > 5 ? ', ...' : '';
  const message = `${shown.map((x) => x.typed_id).join(', ')}${more}: no results (never calculated, or the calculation failed): calculate the grid before accepting ${r.rows.length > 1 ? 'them' : 'it'}`;
  const errors: FieldErrors = {};
  for (const x of shown) {
    const field = fieldOf?.(Number(x.id));
    if (field !== undefined)
      errors[field] ??= {
        errorMessage: `${x.typed_id}: no results (never calculated, or the calculation failed)`,
      };
  }
  throw new AppError('CONFLICT', message, Object.keys(errors).length > 0 ? { errors } : {});
}

/** An item as the workflow engine sees it: its typed code, label, status and the fields conditions read. */
export interface ItemDocument extends ApprovableRecord {
  readonly id: number;
  readonly typeCode: string;
  readonly label: string;
  readonly workflowStatus: string;
}

/**
 * The items of `ids` as documents, locked FOR UPDATE in id order (two calls over overlapping items
 * wait for each other, never deadlock). Conditions see the element values by name, the grid as
 * `calculationGridId` and the keys as `key1..`.
 */
export async function lockDocuments(
  q: Queryable,
  partitionId: number,
  ids: readonly number[],
): Promise<ItemDocument[]> {
  const r = await q.query<{
    id: string;
    grid_id: string;
    label: string | null;
    key_number: number;
    keys: string[];
    workflow_status: string;
    results: Record<string, unknown>;
    result_types: Record<string, string> | null;
  }>(
    `SELECT i.id, i.grid_id, g.label, i.key_number, ARRAY[i.key1, i.key2, i.key3, i.key4, i.key5, i.key6] AS keys,
            i.workflow_status, i.results, g.result_types
       FROM calc_grid_items i JOIN calc_grids g ON g.partition_id = i.partition_id AND g.id = i.grid_id
      WHERE i.partition_id = $1 AND i.id = ANY($2::bigint[]) ORDER BY i.id FOR UPDATE OF i`,
    [partitionId, ids],
  );
  return r.rows.map((row) => {
    const keys = row.keys.filter((k) => k !== '');
    const fields: Record<string, unknown> = { ...row.results, calculationGridId: Number(row.grid_id) };
    keys.forEach((k, i) => (fields[`key${i + 1}`] = k));
    // The names conditions may read: the grid's keys and the elements of its logic (a null value
    // included); another name is a -4 at submit rather than a silent null.
    const names = new Set(['calculationGridId', ...keys.map((_, i) => `key${i + 1}`)]);
    for (const n of [...Object.keys(row.result_types ?? {}), ...Object.keys(row.results ?? {})]) names.add(n);
    return {
      names: [...names],
      id: Number(row.id),
      typeCode: `CGI${row.key_number}`,
      label: `${row.label ?? `grid ${row.grid_id}`}: ${keys.join(' / ')}`,
      workflowStatus: row.workflow_status,
      fields,
    };
  });
}

async function onStatus(q: Queryable, ref: ApprovableRef, status: WorkflowStatus): Promise<void> {
  // /workflowsmanager.submit needs results too (accept checked its whole list before submitting).
  if (status === 'SUBMITTED' && !ref.ownSubmit) await requireResults(q, ref.partitionId, [ref.id]);
  await setItemStates(q, ref.actor, [ref.id], status);
}

export function registerGridApprovable(): void {
  registerApprovable({
    typeCode: APPROVABLE_CODE,
    label: 'Calculation grid item',
    submitAccess: 'CALCULATIONGRID_SUBMIT',
    aliases: ['CGI1', 'CGI2', 'CGI3', 'CGI4', 'CGI5', 'CGI6'],
    async describe(q, ref) {
      const [doc] = await lockDocuments(q, ref.partitionId, [ref.id]);
      return doc ?? null;
    },
    onStatus,
  });
}
