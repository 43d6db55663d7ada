// Statements worth preparing: hot, fixed SQL texts run many times per second (the logic engine's
// reads). On PostgreSQL each pooled connection parses and plans such a text once and afterwards only
// binds and executes it; the embedded database runs it as any other. Only fixed texts may be marked
// (one prepared statement per text and connection), never SQL built from request data, and none
// that reads `*` from a table whose columns could change while the server runs.

const NAMES = new Map<string, string>();

/** Most texts `preparedShape` marks (each is kept by every pooled backend that runs it). */
const MAX_SHAPES = 256;

/** Marks `sql` to be prepared per connection; answers it unchanged. */
export function prepared(sql: string): string {
  if (!NAMES.has(sql)) NAMES.set(sql, `rc_prep_${NAMES.size + 1}`);
  return sql;
}

/** A marker like `prepared` that names at most `max` texts; later ones run unprepared. */
function preparedUpTo(max: number): (sql: string) => string {
  let named = 0;
  return (sql) => {
    if (!NAMES.has(sql) && named < max) {
      named++;
      prepared(sql);
    }
    return sql;
  };
}

/** The statement name of a marked text, or undefined. */
export function preparedName(sql: string): string | undefined {
  return NAMES.get(sql);
}

/**
 * Most page statements of `/fetch` that `preparedPage` marks. Each is kept by every pooled backend
 * that runs it: ~0.2 MB of plan cache for the bench's 44-output page (pg_backend_memory_contexts),
 * so at most ~130 MB over a pool of 10.
 */
const MAX_PAGES = 64;

/**
 * Marks the page statement of a `/fetch` (src/engine/fetch-json.ts): its text depends on the
 * request's shape — the type, the outputs, the filter's fields and operators, the sort — and never on
 * its values, which are parameters. Prepared, PostgreSQL parses it once per connection and plans its
 * first five runs for their own values; after that it runs a generic plan while that plan is
 * estimated to cost no more than those did (plan_cache_mode `auto`). That estimate misjudges a filter
 * whose good plan needs its value: a `LIKE` anchored at the start got the generic plan (the partition
 * filtered, 9 ms a page instead of 2), so such a page is not marked (`Params.planPerValue`). A plain
 * prefix compiles as a range whose bounds the index scan takes from parameters (criteria/compile.ts
 * `prefixRange`), so a page filtered by it alone is marked; beside other conditions it is not
 * (`Params.prefixRanges`), and a pattern or an empty prefix stays a `LIKE`.
 * Measured on the bench's `equals` page (1,000–1,500 runs in a row, one connection): the backend's
 * CPU 0.87–1.0 ms per run unprepared, 0.59–0.65 prepared, 0.75–0.77 prepared but planned per run
 * (force_custom_plan). The risk a generic plan carries: it is made for an average value, so a rare
 * value of a skewed, indexed field may get the plan of a common one (the primary key's order, read
 * until the page is full) and read the whole partition for its page. At most MAX_PAGES texts get a
 * name; later ones run unprepared.
 */
export const preparedPage = preparedUpTo(MAX_PAGES);

/**
 * Marks a statement built per request *shape* (a single-record write: its text depends on which
 * fields the record sets, never on their values, which are parameters) whose plan does not depend on
 * the values: an upsert or update by key with its history. At most MAX_SHAPES such texts get a name;
 * later ones run unprepared. Not for filters: a fetch's page has `preparedPage`.
 */
export const preparedShape = preparedUpTo(MAX_SHAPES);
