// Maintenance of the blob store (run by the job runner, runner-setup.ts): attachments of deleted
// owner records, and files that no upload slot, upload status, attachment or product image refers to.

import type { Db } from '../../db/db.ts';
import type { BlobStore } from '../../db/blob-store.ts';
import { ident } from '../../db/sql.ts';
import { findType } from '../../engine/registry.ts';

/**
 * Attachments whose owner record was deleted (hard; a soft-deleted owner may come back) are removed,
 * and so are files no row refers to any more (older than a day, so a file being written — its key is
 * recorded before its first byte — is never taken). Answers the number of files removed.
 */
export async function removeOrphanFiles(db: Db, blobs: BlobStore): Promise<number> {
  const owners = await db.query<{ owner_type: string }>('SELECT DISTINCT owner_type FROM attachments');
  for (const { owner_type } of owners.rows) {
    const type = findType(owner_type);
    if (!type) continue;
    await db.query(
      `DELETE FROM attachments a WHERE a.owner_type = $1
          AND NOT EXISTS (SELECT 1 FROM ${ident(type.table)} t WHERE t.partition_id = a.partition_id AND t.id = a.owner_id)`,
      [owner_type],
    );
  }
  const orphans = await db.query<{ partition_id: number; blob_key: string }>(
    `SELECT b.partition_id, b.blob_key FROM blobs b
      WHERE b.created_at < now() - interval '1 day'
        AND NOT EXISTS (SELECT 1 FROM upload_slots s WHERE s.partition_id = b.partition_id AND s.blob_key = b.blob_key)
        AND NOT EXISTS (SELECT 1 FROM upload_status u WHERE u.partition_id = b.partition_id AND u.blob_key = b.blob_key)
        AND NOT EXISTS (SELECT 1 FROM attachments a WHERE a.partition_id = b.partition_id AND a.blob_key = b.blob_key)
        AND NOT EXISTS (SELECT 1 FROM product_images i WHERE i.partition_id = b.partition_id AND i.blob_key = b.blob_key)
      LIMIT 1000`,
  );
  for (const o of orphans.rows) await blobs.delete(o.partition_id, o.blob_key);
  return orphans.rows.length;
}
