// SQL of the lookup table manager that the generic engine does not cover: finding a table (by id
// or unique name) for the per-table types, copying a table with its values, the existing ranges a
// bulk load is checked against, and the key look-ups of the logic API. Every query is scoped by
// partition_id first; column names come from the registry declarations only.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { Params, ident } from '../../db/sql.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { loadTypeContext } from '../../engine/context.ts';
import { withHistory } from '../../engine/history.ts';
import type { LookupTable, TableKind } from '../../engine/registry-lookup.ts';

const TABLE_COLUMNS = `id, unique_name AS "uniqueName", type, value_type AS "valueType"`;

/** A table of the principal's partition by id, or undefined. */
export async function tableById(
  q: Queryable,
  principal: Principal,
  id: number,
): Promise<LookupTable | undefined> {
  const r = await q.query<LookupTable>(
    `SELECT ${TABLE_COLUMNS} FROM lookup_tables WHERE partition_id = $1 AND id = $2`,
    [principal.partitionId, id],
  );
  return r.rows[0];
}

/** A table of the principal's partition by unique name, or undefined. */
export async function tableByName(
  q: Queryable,
  principal: Principal,
  uniqueName: string,
): Promise<LookupTable | undefined> {
  const r = await q.query<LookupTable>(
    `SELECT ${TABLE_COLUMNS} FROM lookup_tables WHERE partition_id = $1 AND unique_name = $2`,
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
}

/** Every range of a RANGE table, in lower-bound order (for the overlap check of a bulk load). */
export async function rangesOf(
  q: Queryable,
  principal: Principal,
  table: LookupTable,
): Promise<StoredRange[]> {
  const r = await q.query<StoredRange>(
    `SELECT name, lower_bound AS "lowerBound", upper_bound AS "upperBound" FROM lookup_values
      WHERE partition_id = $1 AND table_ref = $2 ORDER BY lower_bound ASC NULLS FIRST`,
    [principal.partitionId, String(table.id)],
  );
  return r.rows;
}

// ---------------------------------------------------------------------------------------------
// Look-ups for logics

/** The SQL comparison of the key `name` with a parameter, by the key type of the table kind. */
const NAME_MATCH: Readonly<Partial<Record<TableKind, string>>> = {
  SIMPLE_REAL_KEY: 'rc_try_numeric(v.name) = $3::numeric',
  SIMPLE_INT_KEY: 'rc_try_numeric(v.name) = $3::numeric',
  SIMPLE_DATE_KEY: 'rc_try_date(v.name) = $3::date',
};

/** The stored value of a SIMPLE or JSON table's key, or undefined when there is none. */
export async function simpleValue(
  q: Queryable,
  principal: Principal,
  table: LookupTable,
  key: string | number,
): Promise<{ value: string | null; json: unknown } | undefined> {
  const match = NAME_MATCH[table.type] ?? 'v.name = $3::text';
  const r = await q.query<{ value: string | null; json: unknown }>(
    `SELECT v.value, v.json_value AS json FROM lookup_values v
      WHERE v.partition_id = $1 AND v.table_ref = $2 AND ${match} LIMIT 1`,
    [principal.partitionId, String(table.id), key],
  );
  return r.rows[0];
}

/** The value of the range holding `x` (lower bound included, upper excluded), if any. */
export async function rangeValue(
  q: Queryable,
  principal: Principal,
  table: LookupTable,
  x: string | number,
): Promise<{ value: string | null } | undefined> {
  // Ranges never overlap, so the range with the greatest lower bound not above x is the only
  // candidate: one index probe on (partition_id, table_ref, lower_bound).
  const r = await q.query<{ value: string | null }>(
    `SELECT v.value FROM lookup_values v
      WHERE v.partition_id = $1 AND v.table_ref = $2
        AND (v.lower_bound IS NULL OR v.lower_bound <= $3::numeric)
        AND (v.upper_bound IS NULL OR $3::numeric < v.upper_bound)
      ORDER BY v.lower_bound DESC NULLS LAST LIMIT 1`,
    [principal.partitionId, String(table.id), x],
  );
  return r.rows[0];
}

/** The attributes of the matrix row with the given keys (`name` for MATRIX, key1..keyN else). */
export async function matrixRow(
  q: Queryable,
  principal: Principal,
  table: LookupTable,
  keys: readonly string[],
): Promise<Record<string, string | null> | undefined> {
  const params = new Params();
  const where = [
    `v.partition_id = ${params.add(principal.partitionId)}`,
    `v.table_ref = ${params.add(String(table.id))}`,
  ];
  if (table.type === 'MATRIX') where.push(`v.name = ${params.add(keys[0])}::text`);
  else keys.forEach((k, i) => where.push(`${ident(`key${i + 1}`)} = ${params.add(k)}::text`));
  const r = await q.query<Record<string, string | null>>(
    `SELECT v.* FROM lookup_matrix_values v WHERE ${where.join(' AND ')} LIMIT 1`,
    params.values,
  );
  return r.rows[0];
}

/** The JSON value of a JSON2 table under key1, key2, or undefined when there is none. */
export async function jsonRow(
  q: Queryable,
  principal: Principal,
  table: LookupTable,
  keys: readonly string[],
): Promise<{ json: unknown } | undefined> {
  const r = await q.query<{ json: unknown }>(
    `SELECT v.json_value AS json FROM lookup_matrix_values v
      WHERE v.partition_id = $1 AND v.table_ref = $2 AND v.key1 = $3::text AND v.key2 = $4::text LIMIT 1`,
    [principal.partitionId, String(table.id), keys[0], keys[1]],
  );
  return r.rows[0];
}
