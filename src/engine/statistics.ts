// Planner statistics and table upkeep after bulk writes. A bulk load can change a large part of a
// table within seconds; until the table is analyzed the planner keeps planning with the old row counts
// (a fresh table "has" no rows, so every filter looks cheap as a sequential scan). Until it is
// vacuumed, its new pages are not marked all-visible, so no count is answered by an index alone (an
// index-only scan reads the heap for every row of a page not so marked), and the trigram (GIN)
// indexes keep up to 4 MB of new entries in their pending list, which every search reads in full
// (iContains on 100,000 loaded labels: 9 ms a query before, 1 ms after). PostgreSQL's autovacuum
// catches up within a minute or so; PGlite has none. So the loaders report what they wrote:
// - once a table has been quiet for `QUIET_MS` with no load running on it (a load of many calls is
//   analyzed once, at its end) and the writes are a large part of it (autovacuum's rule: at least
//   10 % and 1,000 rows), it is vacuumed and analyzed (`VACUUM (ANALYZE)`) in the background, outside
//   any request's transaction;
// - while a load runs, each time the rows it wrote have doubled, only the columns its statements
//   look rows up by (the partition and the key: `keyColumns`) are analyzed, so that the load's next
//   chunks are not planned as if its partition were empty (a plan that took a partition-leading
//   index of another column read the whole partition once per key), from a tenth of the sample.
// Losing a pending VACUUM (the process stops) costs only speed until autovacuum or the next load;
// nothing depends on it.

import type { Db } from '../db/db.ts';
import { ident } from '../db/sql.ts';

const QUIET_MS = 500;
const MIN_ROWS = 1_000;
const MIN_SHARE = 0.1;
/** The statistics target of a load's key-column analysis (ANALYZE samples 300 rows per unit). */
const KEY_STATISTICS_TARGET = 10;

interface Pending {
  rows: number;
  quietMs: number;
  timer: NodeJS.Timeout | undefined;
  /** Rows written when the key columns were last analyzed (0: not yet). */
  keysAt: number;
}

const pending = new WeakMap<Db, Map<string, Pending>>();
/** Loads running per table: a table is not analyzed while one writes to it. */
const running = new WeakMap<Db, Map<string, number>>();

/**
 * Counts `rows` written into `table` by a bulk operation; vacuums and analyzes the table once writes settle,
 * and its `keyColumns` whenever the rows written since the last full analysis have doubled.
 */
export function wroteRows(
  db: Db,
  table: string,
  rows: number,
  opts: { quietMs?: number; keyColumns?: readonly string[] } = {},
): void {
  if (rows <= 0) return;
  ident(table);
  let tables = pending.get(db);
  if (!tables) pending.set(db, (tables = new Map<string, Pending>()));
  const p = tables.get(table) ?? { rows: 0, quietMs: QUIET_MS, timer: undefined, keysAt: 0 };
  tables.set(table, p);
  p.rows += rows;
  p.quietMs = opts.quietMs ?? QUIET_MS;
  if (opts.keyColumns !== undefined && p.rows >= MIN_ROWS && p.rows >= 2 * p.keysAt) {
    p.keysAt = p.rows;
    const columns = [...new Set(['partition_id', ...opts.keyColumns])].map(ident).join(', ');
    // From a sample of 3,000 rows instead of 30,000: the row count and the keys' distinct counts are
    // what the load's plans need (products, 270,000 rows: 99–262 → 13 ms; the row count within
    // 0.1 %); the full analysis after the load gives every column its full statistics.
    void db
      .transaction(async (tx) => {
        await tx.query(`SET LOCAL default_statistics_target = ${KEY_STATISTICS_TARGET}`);
        await tx.query(`ANALYZE ${ident(table)} (${columns})`);
      })
      .catch(() => {
        // As for the full analysis: the statistics stay as they were.
      });
  }
  arm(db, tables, table, p);
}

/**
 * Marks a bulk load of `table` as running until the answered function is called. While one runs,
 * a settled timer does not analyze (ANALYZE of a 100,000-row table took ~0.5 s of CPU beside each
 * 10,000-row call of a load); the load's end arms it again, so a load of many calls is analyzed
 * once, after its last call.
 */
export function loadRunning(db: Db, table: string): () => void {
  let counts = running.get(db);
  if (!counts) running.set(db, (counts = new Map<string, number>()));
  counts.set(table, (counts.get(table) ?? 0) + 1);
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    const left = (counts.get(table) ?? 1) - 1;
    if (left > 0) {
      counts.set(table, left);
      return;
    }
    counts.delete(table);
    const tables = pending.get(db);
    const p = tables?.get(table);
    if (tables && p && p.timer === undefined) arm(db, tables, table, p);
  };
}

function arm(db: Db, tables: Map<string, Pending>, table: string, p: Pending): void {
  if (p.timer) clearTimeout(p.timer);
  p.timer = setTimeout(() => {
    p.timer = undefined;
    if ((running.get(db)?.get(table) ?? 0) > 0) return; // its end arms the timer again
    tables.delete(table);
    void vacuumIfLarge(db, table, p.rows).catch(() => {
      // A closed database or a dropped table: the statistics simply stay as they were.
    });
  }, p.quietMs);
  p.timer.unref();
}

async function vacuumIfLarge(db: Db, table: string, rows: number): Promise<void> {
  if (rows < MIN_ROWS) return;
  const r = await db.query<{ n: number }>(
    `SELECT reltuples::float8 AS n FROM pg_class WHERE oid = $1::regclass`,
    [table],
  );
  const known = r.rows[0]?.n ?? -1;
  // reltuples is -1 before the first ANALYZE (or VACUUM) of a table.
  if (known >= 0 && rows < known * MIN_SHARE) return;
  // SKIP_LOCKED: a table another VACUUM or an index build holds is left to the next load (or autovacuum).
  await db.query(`VACUUM (ANALYZE, SKIP_LOCKED) ${ident(table)}`);
}
