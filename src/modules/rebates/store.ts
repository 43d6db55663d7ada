// SQL of the rebate module that the generic engine does not cover: a group locked FOR UPDATE as the
// caller may see it, and the state writes of calculate, submit and the workflow's decisions (each
// bumps the group's version and records its history).

import { inUserGroup, type Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { Params, ident } from '../../db/sql.ts';
import { addressField, pathAddress, recordNotFound, selectOne } from '../../engine/addressing.ts';
import { loadTypeContext, rowScope, selectList, toRecord, type TypeContext } from '../../engine/context.ts';
import { withHistory } from '../../engine/history.ts';
import { findType } from '../../engine/registry.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';

export type Row = Record<string, unknown>;

export const RRG = findType('RRG')!;
/** The group's type without attribute meta: what a state write's history needs (no custom fields). */
const RRG_CONTEXT: TypeContext = { type: RRG, fields: new Map(RRG.fields.map((f) => [f.name, f])) };
export const JST = findType('JST')!;

/**
 * A group as a request named it: its id, and the field that named it — `typedId` for an id or
 * typedId (in a path, `/workflowsmanager.submit/{typedId}`, or a job's parameters), `uniqueName` for
 * a business key in a path — which the errors about the group name (as the 404 of an unknown name).
 */
export interface GroupRef {
  readonly id: number;
  readonly field: string;
}

/**
 * The stored row (columns) of a group the principal may see, locked FOR UPDATE; 404 otherwise. With
 * its rebate type's logic in `rc_type_formula` and `rc_type_id` (null: no such type), read in the
 * same statement.
 */
export async function lockGroupOrFail(q: Queryable, principal: Principal, ref: GroupRef): Promise<Row> {
  const { id } = ref;
  const tc = await loadTypeContext(q, principal, RRG);
  const params = new Params();
  const scope = rowScope(tc, principal, params);
  const r = await q.query<Row>(
    `SELECT t.*, rt.formula_name AS rc_type_formula, rt.id AS rc_type_id
       FROM rebate_record_groups t
       LEFT JOIN rebate_types rt ON rt.partition_id = t.partition_id AND rt.unique_name = t.rebate_type
      WHERE ${scope} AND t.id = ${params.add(id)} FOR UPDATE OF t`,
    params.values,
  );
  const row = r.rows[0];
  if (!row) throw notFound(`Rebate record group ${id}.RRG`, ref.field);
  return row;
}

/**
 * The caller as the reader of the group it just calculated or submitted: the answer must not fail
 * on REBATERECORD_FETCH after the write committed (a token restricted to REBATERECORD_EDIT, say).
 * The group's user groups still apply.
 */
export function answerReader(principal: Principal): Principal {
  const fetch = 'REBATERECORD_FETCH' as const;
  return {
    ...principal,
    permissions: new Set([...principal.permissions, fetch]),
    restriction: principal.restriction === null ? null : new Set([...principal.restriction, fetch]),
  };
}

/**
 * The caller may change the group: no edit group, or one of theirs (admins always). A 403 names the
 * field that named the group (`field`), as the general update's refusal names its address.
 */
export function requireEditGroup(principal: Principal, row: Row, field: string): void {
  if (inUserGroup(principal, row.user_group_edit)) return;
  throw new AppError(
    'FORBIDDEN',
    `Not allowed to change ${String(row.id)}.RRG (user group ${String(row.user_group_edit)})`,
    { field },
  );
}

/** Column values to set on a group; values are JSON-encoded for jsonb columns by the caller. */
export type GroupState = Readonly<Record<string, unknown>>;

/**
 * Sets server columns of one group (version bumped, last update by `actor`), with the group's record
 * history in the same statement (an UPDATE naming the fields changed, by `actor` through the current
 * request or job). `sqlValues` are SQL expressions (`now()`), never input. With `answer`, the group
 * after the change comes back as the API record of that type context (RETURNING: no second read).
 */
export async function setGroupState(
  q: Queryable,
  actor: Principal,
  id: number,
  state: GroupState,
  sqlValues: Readonly<Record<string, 'now()' | 'NULL'>> = {},
  answer?: TypeContext,
): Promise<Row | undefined> {
  const params = new Params();
  const sets = Object.entries(state).map(([col, v]) => `${ident(col)} = ${params.add(v)}`);
  for (const [col, expr] of Object.entries(sqlValues)) sets.push(`${ident(col)} = ${expr}`);
  // The server fields set are the change the history records (HistorySource.changing).
  const columns = [...Object.keys(state), ...Object.keys(sqlValues)];
  const changing = RRG.fields.filter((f) => columns.includes(f.column)).map((f) => f.name);
  sets.push(
    'version = t.version + 1',
    'last_update_at = now()',
    `last_update_by = ${params.add(actor.userId)}`,
  );
  const stmt = `UPDATE rebate_record_groups t SET ${sets.join(', ')}
                 WHERE t.partition_id = ${params.add(actor.partitionId)} AND t.id = ${params.add(id)}`;
  const select = answer === undefined ? 'w.id' : selectList(answer, undefined, 'w');
  const r = await q.query<Row>(
    withHistory(stmt, { tc: RRG_CONTEXT, principal: actor, params, kind: 'write', changing }, select),
    params.values,
  );
  return answer === undefined || r.rows[0] === undefined ? undefined : toRecord(answer, r.rows[0]);
}

/**
 * The group a path names: its id or typedId, or — an operation may address a record by its business
 * key — its `uniqueName`, as `/fetch/RRG/{key}` reads it (digits are an id, `<digits>.RRG` a
 * typedId). A name no group the caller sees has: 404 naming it as given. Digits (or a typedId)
 * that another group the caller sees has as its `uniqueName` name neither: a -4 naming the path's
 * `typedId` rather than an action on the group the caller may not mean. Answers the group's id and
 * the field its later errors name (`typedId`, or `uniqueName` for a name).
 */
export async function groupOf(q: Queryable, principal: Principal, text: string): Promise<GroupRef> {
  const address = pathAddress(RRG, text, 'typedId');
  const field = addressField(RRG, address, {});
  const tc = await loadTypeContext(q, principal, RRG);
  if ('id' in address) {
    const named = await selectOne(q, tc, principal, { key: [text] }, false);
    if (named !== undefined && Number(named.id) !== address.id)
      throw validationError(
        'typedId',
        `${JSON.stringify(text)} is the uniqueName of ${String(named.id)}.RRG but reads as the id ${address.id}.RRG in a path: name the group meant by its typedId`,
      );
    return { id: address.id, field };
  }
  const row = await selectOne(q, tc, principal, address, false);
  if (row === undefined) throw recordNotFound(RRG, address);
  return { id: Number(row.id), field };
}
