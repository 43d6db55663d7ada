// Statements worth preparing: hot, fixed SQL texts run many times per second (the logic engine's
// reads). On PostgreSQL each pooled connection parses and plans such a text once and afterwards only
// binds and executes it; the embedded database runs it as any other. Only fixed texts may be marked
// (one prepared statement per text and connection), never SQL built from request data, and none
// that reads `*` from a table whose columns could change while the server runs.

const NAMES = new Map<string, string>();

/** Most texts `preparedShape` marks (each is kept by every pooled backend that runs it). */
const MAX_SHAPES = 256;
let shapes = 0;

/** Marks `sql` to be prepared per connection; answers it unchanged. */
export function prepared(sql: string): string {
  if (!NAMES.has(sql)) NAMES.set(sql, `rc_prep_${NAMES.size + 1}`);
  return sql;
}

/** The statement name of a marked text, or undefined. */
export function preparedName(sql: string): string | undefined {
  return NAMES.get(sql);
}

/**
 * Marks a statement built per request *shape* (a single-record write: its text depends on which
 * fields the record sets, never on their values, which are parameters) whose plan does not depend on
 * the values: an upsert or update by key with its history. At most MAX_SHAPES such texts get a name;
 * later ones run unprepared. Never for filters (their best plan depends on the values).
 */
export function preparedShape(sql: string): string {
  if (!NAMES.has(sql) && shapes < MAX_SHAPES) {
    shapes++;
    NAMES.set(sql, `rc_prep_${NAMES.size + 1}`);
  }
  return sql;
}
