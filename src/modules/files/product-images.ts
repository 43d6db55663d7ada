// Product images (`productimages.*`): one image per product, its type judged by the file's first
// bytes; reading needs the product's fetch rights, setting it its edit rights (permission and user
// group). A slot's file is taken over without copying; a replaced image's file is removed from the
// blob store after commit. Record history under PIMG.

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import type { BlobStore } from '../../db/blob-store.ts';
import { Params, ident } from '../../db/sql.ts';
import { loadTypeContext, rowScope } from '../../engine/context.ts';
import { requireAccess } from '../../engine/crud.ts';
import { recordHistory, recordViewGroup } from '../../engine/history.ts';
import { findType, type TypeDef } from '../../engine/registry.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import { findFilledSlotOrFail, takeSlotFile } from './slots.ts';

/** The image type of a file by its first bytes (PNG, JPEG, GIF, WebP), or undefined. */
export function imageTypeOf(head: Buffer): string | undefined {
  if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return 'image/png';
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  const ascii = head.subarray(0, 12).toString('latin1');
  if (ascii.startsWith('GIF87a') || ascii.startsWith('GIF89a')) return 'image/gif';
  if (ascii.startsWith('RIFF') && ascii.slice(8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

export interface ImageRow {
  readonly partition_id: number;
  readonly product_id: number;
  readonly file_name: string;
  readonly content_type: string;
  readonly size: number;
  readonly blob_key: string;
  readonly version: number;
  readonly last_update_at: Date | string;
}

const P = (): TypeDef => findType('P')!;

/**
 * Record history of a product's image (type code PIMG, record id the product's id, business key its
 * sku): set (ADD) and replaced (UPDATE: file name, content type, size), never the blob key. A row
 * takes the product's view group, as the product's own history rows do.
 */
async function imageHistory(
  q: Queryable,
  principal: Principal,
  sku: string,
  before: ImageRow | undefined,
  after: ImageRow,
): Promise<void> {
  const fields = [
    ['fileName', (i: ImageRow) => i.file_name],
    ['contentType', (i: ImageRow) => i.content_type],
    ['size', (i: ImageRow) => Number(i.size)],
  ] as const;
  const changes: Record<string, { old: unknown; new: unknown }> = {};
  for (const [name, get] of fields) {
    const old = before === undefined ? null : get(before);
    if (before === undefined || old !== get(after)) changes[name] = { old, new: get(after) };
  }
  const group = await recordViewGroup(q, principal, P(), Number(after.product_id));
  await recordHistory(q, principal, [
    {
      typeCode: 'PIMG',
      recordId: Number(after.product_id),
      businessKey: sku,
      action: before === undefined ? 'ADD' : 'UPDATE',
      changes,
      version: Number(after.version),
      userGroupViewDetails: group,
    },
  ]);
}

/** The product of `sku` visible (or, `forEdit`, editable) to the principal. */
async function productIdOf(
  q: Queryable,
  principal: Principal,
  sku: string,
  forEdit: boolean,
): Promise<number> {
  const type = P();
  if (forEdit) requireAccess(principal, type.access.write);
  else requireAccess(principal, type.access.fetch);
  const tc = await loadTypeContext(q, principal, type);
  const p = new Params();
  const scope = rowScope(tc, principal, p, 't');
  const skuParam = p.add(sku);
  const editable = rowScope(tc, principal, p, 't', { forEdit: true });
  const r = await q.query<{ id: number; editable: boolean }>(
    `SELECT t.id, (${editable}) AS editable FROM ${ident(type.table)} t WHERE ${scope} AND t.sku = ${skuParam}`,
    p.values,
  );
  const row = r.rows[0];
  if (!row) throw notFound(`Product ${sku}`, 'sku');
  if (forEdit && !row.editable)
    throw new AppError('FORBIDDEN', `Not allowed to change product ${sku} (user group)`);
  return row.id;
}

export async function setProductImage(
  db: Db,
  blobs: BlobStore,
  principal: Principal,
  slotId: string,
  sku: string,
): Promise<ImageRow & { sku: string }> {
  const productId = await productIdOf(db, principal, sku, true);
  const slot = await findFilledSlotOrFail(db, principal, slotId);
  let head = Buffer.alloc(0);
  for await (const piece of blobs.read(principal.partitionId, slot.blob_key, { start: 0, end: 16 })) {
    head = Buffer.concat([head, piece]);
  }
  const contentType = imageTypeOf(head);
  if (contentType === undefined) {
    throw validationError(
      'slotId',
      'the file is not an image (PNG, JPEG, GIF or WebP, judged by its content)',
    );
  }
  const { row, oldKey } = await db.transaction(async (tx) => {
    await takeSlotFile(tx, principal, slotId, slot.blob_key);
    const old = await tx.query<ImageRow>(
      'SELECT * FROM product_images WHERE partition_id = $1 AND product_id = $2 FOR UPDATE',
      [principal.partitionId, productId],
    );
    const r = await tx.query<ImageRow>(
      `INSERT INTO product_images (partition_id, product_id, file_name, content_type, size, blob_key, created_by,
                                   last_update_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
       ON CONFLICT (partition_id, product_id) DO UPDATE
          SET file_name = EXCLUDED.file_name, content_type = EXCLUDED.content_type, size = EXCLUDED.size,
              blob_key = EXCLUDED.blob_key, version = product_images.version + 1, last_update_at = now(),
              last_update_by = EXCLUDED.last_update_by
       RETURNING *`,
      [
        principal.partitionId,
        productId,
        slot.file_name,
        contentType,
        slot.size,
        slot.blob_key,
        principal.userId,
      ],
    );
    await imageHistory(tx, principal, sku, old.rows[0], r.rows[0]!);
    return { row: r.rows[0]!, oldKey: old.rows[0]?.blob_key };
  });
  if (oldKey !== undefined) await blobs.delete(principal.partitionId, oldKey);
  return { ...row, sku };
}

export async function productImage(db: Db, principal: Principal, sku: string): Promise<ImageRow> {
  const productId = await productIdOf(db, principal, sku, false);
  const r = await db.query<ImageRow>(
    'SELECT * FROM product_images WHERE partition_id = $1 AND product_id = $2',
    [principal.partitionId, productId],
  );
  if (!r.rows[0]) throw notFound(`Image of product ${sku}`, 'sku');
  return r.rows[0];
}
