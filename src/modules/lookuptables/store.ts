// SQL of the lookup table manager that the generic engine does not cover: finding a table (by id
// or unique name) for the per-table types, copying a table with its values, and the existing ranges
// a bulk load is checked against. Every query is scoped by partition_id first; column names come
// from the registry declarations only.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { Params, ident } from '../../db/sql.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { loadTypeContext } from '../../engine/context.ts';
import { withHistory } from '../../engine/history.ts';
import type { LookupTable } from '../../engine/registry-lookup.ts';

const TABLE_COLUMNS = `id, unique_name AS "uniqueName", type, value_type AS "valueType"`;

/**
 * The row lock a read of a table may take, inside the caller's transaction: `FOR KEY SHARE` by a
 * write of its values (its valueType holds until the write commits), `FOR UPDATE` by a change of its
 * valueType, which waits for those writes (tables.ts `writingValues`, `updateTables`).
 */
export type TableLock = 'FOR KEY SHARE' | 'FOR UPDATE';

const locking = (lock: TableLock | undefined) => (lock === undefined ? '' : ` ${lock}`);

/** A table of the principal's partition by id, or undefined. */
export async function tableById(
  q: Queryable,
  principal: Principal,
  id: number,
  lock?: TableLock,
): Promise<LookupTable | undefined> {
  const r = await q.query<LookupTable>(
    `SELECT ${TABLE_COLUMNS} FROM lookup_tables WHERE partition_id = $1 AND id = $2${locking(lock)}`,
    [principal.partitionId, id],
  );
  return r.rows[0];
}

/** A table of the principal's partition by unique name, or undefined. */
export async function tableByName(
  q: Queryable,
  principal: Principal,
  uniqueName: string,
  lock?: TableLock,
): Promise<LookupTable | undefined> {
  const r = await q.query<LookupTable>(
    `SELECT ${TABLE_COLUMNS} FROM lookup_tables WHERE partition_id = $1 AND unique_name = $2${locking(lock)}`,
    [principal.partitionId, uniqueName],
  );
  return r.rows[0];
}

/** Tables by id, for a bulk load naming them in a column (ids not found are simply absent). */
export async function tablesByIds(
  q: Queryable,
  principal: Principal,
  ids: readonly number[],
): Promise<LookupTable[]> {
  const r = await q.query<LookupTable>(
    `SELECT ${TABLE_COLUMNS} FROM lookup_tables WHERE partition_id = $1 AND id = ANY($2::bigint[])`,
    [principal.partitionId, ids],
  );
  return r.rows;
}

/** Whether the table holds any value (a table's value type may change only while it is empty). */
export async function hasValues(q: Queryable, principal: Principal, values: TypeDef): Promise<boolean> {
  const params = new Params();
  const r = await q.query(
    `SELECT 1 FROM ${ident(values.table)} WHERE partition_id = ${params.add(principal.partitionId)}
        AND table_ref = ${params.add(values.fixed!.value)} LIMIT 1`,
    params.values,
  );
  return r.rows.length > 0;
}

/**
 * Copies the table `from` as `uniqueName`/`label` with all its values, inside the caller's
 * transaction; answers the new table's id. The value columns are the declaration's own (non-system)
 * columns, so every stored value is copied as it is, without a round trip through JS.
 */
export async function copyTable(
  tx: Queryable,
  principal: Principal,
  from: LookupTable,
  tables: TypeDef,
  values: TypeDef,
  uniqueName: string,
  label: string | null | undefined,
): Promise<{ id: number; copiedValues: number }> {
  // Both inserts record their rows' history (ADD) in the same statement (src/engine/history.ts).
  const tp = new Params();
  const tableInsert = `INSERT INTO lookup_tables AS t
            (partition_id, unique_name, label, type, value_type, status, valid_after, format_type,
             created_by, last_update_by)
     SELECT partition_id, ${tp.add(uniqueName)}, CASE WHEN ${tp.add(label !== undefined)}::boolean
            THEN ${tp.add(label ?? null)}::text ELSE label END, type, value_type, status,
            valid_after, format_type, ${tp.add(principal.userId)}::bigint, ${tp.add(principal.userId)}::bigint
       FROM lookup_tables WHERE partition_id = ${tp.add(principal.partitionId)} AND id = ${tp.add(from.id)}`;
  const tablesCtx = await loadTypeContext(tx, principal, tables);
  const t = await tx.query<{ id: number }>(
    withHistory(tableInsert, { tc: tablesCtx, principal, params: tp, kind: 'add' }, 'w.id'),
    tp.values,
  );
  const id = t.rows[0]!.id;
  const columns = values.fields.filter((f) => !f.system).map((f) => ident(f.column));
  const list = [...new Set(columns)].join(', ');
  const vp = new Params();
  const uid = `${vp.add(principal.userId)}::bigint`;
  const valueInsert = `INSERT INTO ${ident(values.table)} AS t (partition_id, table_ref, created_by, last_update_by, ${list})
     SELECT partition_id, ${vp.add(String(id))}, ${uid}, ${uid}, ${list} FROM ${ident(values.table)}
      WHERE partition_id = ${vp.add(principal.partitionId)} AND table_ref = ${vp.add(String(from.id))} ORDER BY id`;
  const valuesCtx = await loadTypeContext(tx, principal, values);
  const v = await tx.query<{ n: number }>(
    withHistory(valueInsert, { tc: valuesCtx, principal, params: vp, kind: 'add' }, 'count(*)::int AS n'),
    vp.values,
  );
  return { id, copiedValues: v.rows[0]!.n };
}

export interface StoredRange {
  readonly name: string;
  readonly lowerBound: string | null;
  readonly upperBound: string | null;
  /** Only when asked for (a load joining on `value`). */
  readonly value?: string | null;
}

/**
 * Every range of a RANGE table, in lower-bound order (for the overlap check of a bulk load), with
 * its `value` too when `withValue`.
 */
export async function rangesOf(
  q: Queryable,
  principal: Principal,
  table: LookupTable,
  withValue = false,
): Promise<StoredRange[]> {
  const r = await q.query<StoredRange>(
    `SELECT name, lower_bound AS "lowerBound", upper_bound AS "upperBound"${withValue ? ', value' : ''}
       FROM lookup_values
      WHERE partition_id = $1 AND table_ref = $2 ORDER BY lower_bound ASC NULLS FIRST`,
    [principal.partitionId, String(table.id)],
  );
  return r.rows;
}
