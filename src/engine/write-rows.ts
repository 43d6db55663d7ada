// The statements that write records with their record history: the INSERT (or upsert) of one record
// or of many of the same shape, the wrapper that adds the history and answers the written rows, and
// the server fields a type sets along with an update (TypeDef.changeSets).
// Shared by the record-by-record writes (./write.ts), the batches of add and integrate (./write-batch.ts) and
// the bulk edits (./bulk-edit.ts).

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { Params, ident } from '../db/sql.ts';
import { preparedShape } from '../db/prepared.ts';
import { rowScope, selectList, type TypeContext } from './context.ts';
import { withHistory } from './history.ts';
import type { FieldDef } from './registry.ts';

type Row = Record<string, unknown>;
type Obj = Record<string, unknown>;

function auditColumns(principal: Principal, params: Params): { cols: string[]; vals: string[] } {
  const p = params.add(principal.userId);
  return { cols: ['created_by', 'last_update_by'], vals: [p, p] };
}

/**
 * A write statement (alias `t`, no RETURNING) with its record history in the same statement;
 * answers the written rows as API records (`rows`) or their number (`count`, column `n`).
 * `ordinal`: the order of the history rows and of the answer (withHistory); `changing`: the fields
 * the history compares, server fields set on purpose among them (HistorySource.changing).
 */
export function written(
  stmt: string,
  tc: TypeContext,
  principal: Principal,
  params: Params,
  result: 'rows' | 'count',
  ordinal?: string,
  changing?: readonly string[],
): string {
  const kind = stmt.trimStart().startsWith('DELETE') ? 'delete' : 'write';
  const select = result === 'rows' ? selectList(tc, undefined, 'w') : 'count(*)::int AS n';
  return withHistory(stmt, { tc, principal, params, kind, changing }, select, undefined, ordinal);
}

/**
 * Removes the soft-deleted row that holds the business key a record is moved onto (`/update/SX` to
 * another seller): as an add of that key replaces such a row, a move replaces it — the row, deleted
 * and invisible, is gone (its history stays, ending with its delete). `values` are the moved
 * record's stored key values by column.
 */
export async function purgeDeletedHolder(
  tx: Queryable,
  tc: TypeContext,
  principal: Principal,
  values: ReadonlyMap<string, unknown>,
): Promise<void> {
  const { type } = tc;
  if (type.deleteMode !== 'soft') return;
  const params = new Params();
  const where = [`partition_id = ${params.add(principal.partitionId)}`, 'deleted_at IS NOT NULL'];
  if (type.fixed) where.push(`${ident(type.fixed.column)} = ${params.add(type.fixed.value)}`);
  for (const c of type.uniqueColumns) where.push(`${ident(c)} = ${params.add(values.get(c))}`);
  await tx.query(`DELETE FROM ${ident(type.table)} WHERE ${where.join(' AND ')}`, params.values);
}

/**
 * INSERT of records that all set the same fields (`rows`: their prepared values) in one statement.
 * On a business-key conflict: `revive-deleted` replaces a soft-deleted row (live rows stay
 * untouched: no row comes back, a duplicate); `merge` updates the given columns of the existing row
 * if the principal may edit it (integrate). Answers the rows written, in no particular order.
 */
export async function insertRows(
  tx: Queryable,
  tc: TypeContext,
  principal: Principal,
  rows: readonly Map<FieldDef, unknown>[],
  onConflict: 'revive-deleted' | 'merge',
): Promise<Row[]> {
  const { type } = tc;
  const params = new Params();
  const cols = ['partition_id'];
  const same = [params.add(principal.partitionId)];
  if (type.fixed) {
    cols.push(type.fixed.column);
    same.push(params.add(type.fixed.value));
  }
  const audit = auditColumns(principal, params);
  cols.push(...audit.cols);
  same.push(...audit.vals);
  const fields = [...(rows[0]?.keys() ?? [])];
  cols.push(...fields.map((f) => f.column));
  const tuples = rows.map(
    (values) => `(${[...same, ...fields.map((f) => params.add(values.get(f)))].join(', ')})`,
  );
  const target = ['partition_id', ...type.uniqueColumns].map(ident).join(', ');
  const bump = `version = t.version + 1, last_update_at = now(), last_update_by = EXCLUDED.last_update_by`;
  let conflict: string;
  if (onConflict === 'merge') {
    const sets = fields.filter((f) => !f.key).map((f) => `${ident(f.column)} = EXCLUDED.${ident(f.column)}`);
    if (type.deleteMode === 'soft') sets.push('deleted_at = NULL');
    const editable = rowScope(tc, principal, params, 't', { forEdit: true, includeDeleted: true });
    conflict = `ON CONFLICT (${target}) DO UPDATE SET ${[...sets, bump].join(', ')} WHERE ${editable}`;
  } else if (type.deleteMode === 'soft') {
    // Re-adding a soft-deleted record replaces it whole: unspecified fields become NULL.
    const replace = tc.type.fields
      .filter((f) => !f.system && !f.key)
      .map((f) => `${ident(f.column)} = EXCLUDED.${ident(f.column)}`);
    conflict = `ON CONFLICT (${target}) DO UPDATE SET ${[...replace, 'deleted_at = NULL', bump].join(', ')}
                WHERE t.deleted_at IS NOT NULL`;
  } else {
    conflict = 'ON CONFLICT DO NOTHING';
  }
  const insert = `INSERT INTO ${ident(type.table)} AS t (${cols.map(ident).join(', ')}) VALUES ${tuples.join(', ')}
     ${conflict}`;
  const sql = written(insert, tc, principal, params, 'rows');
  // One record: prepared, the same text for every record of the same shape, and its plan (an upsert
  // by key and the history row) does not depend on the values. Many: a text per count, not kept.
  const r = await tx.query<Row>(rows.length === 1 ? preparedShape(sql) : sql, params.values);
  return r.rows;
}

/** `values` with the server fields the type sets along with this change (TypeDef.changeSets). */
export async function withChangeSets(
  tx: Queryable,
  principal: Principal,
  tc: TypeContext,
  old: Obj,
  data: Obj,
  values: Map<FieldDef, unknown>,
): Promise<Map<FieldDef, unknown>> {
  const sets = await tc.type.changeSets?.(tx, principal, old, data);
  if (sets === undefined) return values;
  const out = new Map(values);
  for (const [name, v] of Object.entries(sets)) {
    const f = tc.type.fields.find((x) => x.name === name && x.system === true);
    if (!f) throw new Error(`${tc.type.code} changeSets: ${name} is not a server field`);
    out.set(f, v);
  }
  return out;
}
