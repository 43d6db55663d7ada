// Record history retention (HISTORY_RETENTION_DAYS): the daily clean-up removes history rows older
// than the setting, in batches of 10,000 rows (short transactions on a large table), partition by
// partition so each DELETE uses the (partition_id, changed_at) index. 0 keeps everything.

import type { Db } from '../../db/db.ts';

/** The clean-up runs once a day per process (idempotent: nodes running it twice do no harm). */
export const HISTORY_CLEANUP_MS = 24 * 60 * 60 * 1000;
const BATCH = 10_000;

/** Removes history rows older than `days`; answers how many. */
export async function removeExpiredHistory(db: Db, days: number): Promise<number> {
  if (days <= 0) return 0;
  const partitions = await db.query<{ id: number }>('SELECT id FROM partitions ORDER BY id');
  let removed = 0;
  for (const { id } of partitions.rows) {
    for (;;) {
      const r = await db.query(
        `DELETE FROM record_history WHERE partition_id = $1 AND id IN (
           SELECT id FROM record_history
            WHERE partition_id = $1 AND changed_at < now() - make_interval(days => $2::int)
            LIMIT ${BATCH})`,
        [id, days],
      );
      removed += r.rowCount;
      if (r.rowCount < BATCH) break;
    }
  }
  return removed;
}

/** A maintenance task for the job runner: the clean-up, at most once per `HISTORY_CLEANUP_MS`. */
export function historyCleanupTask(db: Db, days: number): () => Promise<unknown> {
  let ranAt = 0;
  return async () => {
    if (days <= 0 || Date.now() - ranAt < HISTORY_CLEANUP_MS) return;
    ranAt = Date.now();
    await removeExpiredHistory(db, days);
  };
}
