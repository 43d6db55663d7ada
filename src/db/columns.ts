// What the catalog says of the tables' columns that the SQL the server writes depends on: which are
// NOT NULL. A sort by such a column needs no NULLS clause (no row has a null to place), and without
// one it matches the column's plain btree indexes (unique business keys, primary keys), which hold
// `ASC NULLS LAST`: `ORDER BY sku ASC NULLS FIRST` could not use the (partition_id, sku) index and
// read and sorted every row of the partition (criteria/sort.ts). Read once at start-up (buildApp);
// until then, or for a table not read, every column counts as nullable (the NULLS clause stays:
// the same rows, in the same order, only slower).

import type { Queryable } from './db.ts';

let notNull = new Map<string, ReadonlySet<string>>();

const EMPTY: ReadonlySet<string> = new Set();

/** The NOT NULL columns of `table` (of the current schema), as last read. */
export function notNullColumns(table: string): ReadonlySet<string> {
  return notNull.get(table) ?? EMPTY;
}

/** Reads the NOT NULL columns of every table of the current schema. */
export async function learnColumns(q: Queryable): Promise<void> {
  const r = await q.query<{ tbl: string; cols: string[] }>(
    `SELECT c.relname AS tbl, array_agg(a.attname::text) AS cols
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
        AND a.attnum > 0 AND NOT a.attisdropped AND a.attnotnull
      GROUP BY c.relname`,
  );
  notNull = new Map(r.rows.map((row) => [row.tbl, new Set(row.cols)]));
}
