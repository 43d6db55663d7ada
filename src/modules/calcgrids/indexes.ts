// Opt-in indexes on results. `addgrid` may name up to five elements in `indexedResults`; each gets an
// index on calc_grid_items (partition_id, grid_id, <the typed expression the criteria compiler emits
// for `result.<name>`>), so filters and sorts on that result within a grid of a million items use an
// index instead of reading every item. The expression comes from the compiler itself (typedColumn
// without an alias), so the index always matches the compiled criteria. Like the attribute indexes
// (src/engine/indexes.ts) the table is shared: one index per element name and type serves every grid
// and partition with such an element; it is created if missing (blocking writes to the items table
// while it is built) and never dropped by the server.

import { createHash } from 'node:crypto';
import type { Queryable } from '../../db/db.ts';
import { typedColumn } from '../../engine/criteria.ts';
import type { FieldType } from '../../engine/types.ts';
import { validationError } from '../../http/errors.ts';

export const MAX_INDEXED_RESULTS = 5;

/** The element names of `indexedResults`, checked against the logic's result types. */
export function parseIndexedResults(raw: unknown, types: Readonly<Record<string, string>>): string[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw) || raw.length > MAX_INDEXED_RESULTS)
    throw validationError('indexedResults', `must list at most ${MAX_INDEXED_RESULTS} element names`);
  return raw.map((name: unknown, i) => {
    if (typeof name !== 'string' || !Object.hasOwn(types, name))
      throw validationError(`indexedResults.${i}`, `${JSON.stringify(name)} is not an element of the logic`);
    return name;
  });
}

export function resultIndexSql(name: string, type: FieldType): string {
  const expr = typedColumn({ name: `result.${name}`, column: 'results', type, jsonKey: name }, undefined).sql;
  const index = `rcg_${createHash('sha256').update(`${type}:${name}`).digest('hex').slice(0, 24)}`;
  return `CREATE INDEX IF NOT EXISTS ${index} ON calc_grid_items (partition_id, grid_id, (${expr}))`;
}

export async function createResultIndexes(
  q: Queryable,
  names: readonly string[],
  types: Readonly<Record<string, string>>,
): Promise<void> {
  for (const name of names) await q.query(resultIndexSql(name, (types[name] ?? 'string') as FieldType));
}
