// Statements worth preparing: hot, fixed SQL texts run many times per second (the logic engine's
// reads). On PostgreSQL each pooled connection parses and plans such a text once and afterwards only
// binds and executes it; the embedded database runs it as any other. Only fixed texts may be marked
// (one prepared statement per text and connection), never SQL built from request data, and none
// that reads `*` from a table whose columns could change while the server runs.

const NAMES = new Map<string, string>();

/** Marks `sql` to be prepared per connection; answers it unchanged. */
export function prepared(sql: string): string {
  if (!NAMES.has(sql)) NAMES.set(sql, `rc_prep_${NAMES.size + 1}`);
  return sql;
}

/** The statement name of a marked text, or undefined. */
export function preparedName(sql: string): string | undefined {
  return NAMES.get(sql);
}
