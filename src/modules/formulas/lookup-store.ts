// Lookup tables as the logic engine reads them: table metadata by name, and the rows of one or
// several tables for many keys at once (set-based: one statement per table and pass, the single-key
// kinds of several tables in one, never one per item). Every statement is scoped by partition_id first.

import type { Queryable } from '../../db/db.ts';
import { prepared } from '../../db/prepared.ts';

type Row = Record<string, unknown>;

export interface TableMeta {
  readonly id: number;
  readonly uniqueName: string;
  readonly type: string;
  readonly valueType: string;
  /** The table's record version and the version of its values (read-cache.ts), where read. */
  readonly version?: number;
  readonly valuesVersion?: number;
}

export async function tablesByName(
  q: Queryable,
  partitionId: number,
  names: readonly string[],
): Promise<TableMeta[]> {
  const r = await q.query<TableMeta>(
    `SELECT id, unique_name AS "uniqueName", type, value_type AS "valueType" FROM lookup_tables
      WHERE partition_id = $1 AND unique_name = ANY($2::text[])`,
    [partitionId, names],
  );
  return r.rows;
}

const MATRIX_KEYS: Readonly<Record<string, number>> = {
  // JSON values under two keys live with the matrix values (key1, key2).
  JSON2: 2,
  MATRIX2: 2,
  MATRIX3: 3,
  MATRIX4: 4,
  MATRIX5: 5,
  MATRIX6: 6,
};

/** How many keys a look-up in the table takes. */
export function keyCount(type: string): number {
  return MATRIX_KEYS[type] ?? 1;
}

/**
 * A key tuple as one text (a map key): one key is itself, several are each prefixed by their length,
 * so that a key holding any character (U+001F included) is no other tuple.
 */
export function tupleKey(parts: readonly string[]): string {
  if (parts.length === 1) return parts[0]!;
  let out = '';
  for (const p of parts) out += `${p.length}:${p}`;
  return out;
}

/** The tuple of `count` keys that `tupleKey` made `key` of; undefined when it holds another count. */
export function tupleOf(key: string, count: number): string[] | undefined {
  if (count === 1) return [key];
  const parts: string[] = [];
  for (let at = 0; at < key.length;) {
    const colon = key.indexOf(':', at);
    const n = colon < 0 ? NaN : Number(key.slice(at, colon));
    if (!Number.isSafeInteger(n) || colon + 1 + n > key.length) return undefined;
    parts.push(key.slice(colon + 1, colon + 1 + n));
    at = colon + 1 + n;
  }
  return parts.length === count ? parts : undefined;
}

/**
 * Rows of one lookup table for many keys (each key a tuple of texts), with `k` = the key tuple as
 * `tupleKey` writes it: one statement per table.
 */
export async function lookupRows(
  q: Queryable,
  partitionId: number,
  table: TableMeta,
  keys: readonly (readonly string[])[],
): Promise<Row[]> {
  const ref = String(table.id);
  const firsts = keys.map((k) => k[0] ?? '');
  switch (table.type) {
    case 'RANGE': {
      const r = await q.query<Row>(
        prepared(`SELECT k.x AS k, v.* FROM unnest($3::text[]) AS k(x)
          CROSS JOIN LATERAL (
            SELECT v.id, v.name, v.lower_bound, v.upper_bound, v.value, v.version FROM lookup_values v
             WHERE v.partition_id = $1 AND v.table_ref = $2
               AND (v.lower_bound IS NULL OR v.lower_bound <= rc_try_numeric(k.x))
               AND (v.upper_bound IS NULL OR rc_try_numeric(k.x) < v.upper_bound)
             ORDER BY v.lower_bound DESC NULLS LAST LIMIT 1) v`),
        [partitionId, ref, firsts],
      );
      return r.rows;
    }
    case 'SIMPLE_REAL_KEY':
    case 'SIMPLE_INT_KEY':
    case 'SIMPLE_DATE_KEY': {
      const cast = table.type === 'SIMPLE_DATE_KEY' ? 'rc_try_date' : 'rc_try_numeric';
      const r = await q.query<Row>(
        prepared(`SELECT k.x AS k, v.id, v.name, v.value, v.json_value, v.version FROM unnest($3::text[]) AS k(x)
           JOIN lookup_values v ON v.partition_id = $1 AND v.table_ref = $2 AND ${cast}(v.name) = ${cast}(k.x)`),
        [partitionId, ref, firsts],
      );
      return r.rows;
    }
    case 'SIMPLE':
    case 'JSON': {
      const r = await q.query<Row>(
        prepared(`SELECT v.name AS k, v.id, v.name, v.value, v.json_value, v.version FROM lookup_values v
          WHERE v.partition_id = $1 AND v.table_ref = $2 AND v.name = ANY($3::text[])`),
        [partitionId, ref, firsts],
      );
      return r.rows;
    }
    case 'MATRIX': {
      const r = await q.query<Row>(
        prepared(`SELECT v.name AS k, v.* FROM lookup_matrix_values v
          WHERE v.partition_id = $1 AND v.table_ref = $2 AND v.name = ANY($3::text[])`),
        [partitionId, ref, firsts],
      );
      return r.rows;
    }
    default: {
      const n = keyCount(table.type);
      const cols = Array.from({ length: n }, (_, i) => i);
      const params: unknown[] = [partitionId, ref, ...cols.map((i) => keys.map((k) => k[i] ?? ''))];
      // Each row answers the position of the tuple it was found by (its `k` made here from the tuple).
      const r = await q.query<Row>(
        prepared(`SELECT k.at, v.*
           FROM unnest(${cols.map((i) => `$${i + 3}::text[]`).join(', ')}) WITH ORDINALITY AS k(${cols.map((i) => `k${i + 1}`).join(', ')}, at)
           JOIN lookup_matrix_values v ON v.partition_id = $1 AND v.table_ref = $2
            AND ${cols.map((i) => `v.key${i + 1} = k.k${i + 1}`).join(' AND ')}`),
        params,
      );
      for (const row of r.rows) {
        row.k = tupleKey(keys[Number(row.at) - 1]!);
        delete row.at;
      }
      return r.rows;
    }
  }
}

/** Lookup kinds whose rows are lookup_values rows under one key (combinable in one statement). */
const SINGLE_KEY_KINDS = new Set([
  'SIMPLE',
  'JSON',
  'SIMPLE_REAL_KEY',
  'SIMPLE_INT_KEY',
  'SIMPLE_DATE_KEY',
  'RANGE',
]);

/**
 * lookupRows for several tables at once: the single-key kinds (SIMPLE, typed keys, JSON, RANGE) in
 * one statement (a UNION ALL of each table's look-up, tagged), matrix kinds one statement each.
 * Answers the rows per request, in order.
 */
export async function lookupRowsMany(
  q: Queryable,
  partitionId: number,
  requests: readonly { readonly table: TableMeta; readonly keys: readonly (readonly string[])[] }[],
): Promise<Row[][]> {
  const out: Row[][] = requests.map(() => []);
  const single = requests.flatMap((r, i) => (SINGLE_KEY_KINDS.has(r.table.type) ? [i] : []));
  for (const [i, r] of requests.entries())
    if (!SINGLE_KEY_KINDS.has(r.table.type) || single.length === 1)
      out[i] = await lookupRows(q, partitionId, r.table, r.keys);
  if (single.length < 2) return out;
  const params: unknown[] = [partitionId];
  const branches = single.map((i) => {
    const { table, keys } = requests[i]!;
    params.push(
      String(table.id),
      keys.map((k) => k[0] ?? ''),
    );
    const ref = `$${params.length - 1}`;
    const ks = `$${params.length}::text[]`;
    switch (table.type) {
      case 'RANGE':
        return `(SELECT ${i} AS rc_t, k.x AS k, v.id, v.name, v.lower_bound, v.upper_bound, v.value, NULL::jsonb AS json_value, v.version
           FROM unnest(${ks}) AS k(x) CROSS JOIN LATERAL (
             SELECT v.id, v.name, v.lower_bound, v.upper_bound, v.value, v.version FROM lookup_values v
              WHERE v.partition_id = $1 AND v.table_ref = ${ref}
                AND (v.lower_bound IS NULL OR v.lower_bound <= rc_try_numeric(k.x))
                AND (v.upper_bound IS NULL OR rc_try_numeric(k.x) < v.upper_bound)
              ORDER BY v.lower_bound DESC NULLS LAST LIMIT 1) v)`;
      case 'SIMPLE_REAL_KEY':
      case 'SIMPLE_INT_KEY':
      case 'SIMPLE_DATE_KEY': {
        const cast = table.type === 'SIMPLE_DATE_KEY' ? 'rc_try_date' : 'rc_try_numeric';
        return `(SELECT ${i} AS rc_t, k.x AS k, v.id, v.name, NULL::numeric AS lower_bound, NULL::numeric AS upper_bound, v.value, v.json_value, v.version
           FROM unnest(${ks}) AS k(x)
           JOIN lookup_values v ON v.partition_id = $1 AND v.table_ref = ${ref} AND ${cast}(v.name) = ${cast}(k.x))`;
      }
      default:
        return `(SELECT ${i} AS rc_t, v.name AS k, v.id, v.name, NULL::numeric AS lower_bound, NULL::numeric AS upper_bound, v.value, v.json_value, v.version
           FROM lookup_values v WHERE v.partition_id = $1 AND v.table_ref = ${ref} AND v.name = ANY(${ks}))`;
    }
  });
  const r = await q.query<Row>(prepared(branches.join('\nUNION ALL\n')), params);
  for (const row of r.rows) out[Number(row.rc_t)]!.push(row);
  return out;
}
