// Attachments of any record (`bdmanager.*`). Rights come from the owner record through the engine
// (attachment-owner.ts): reading needs view rights, attaching/changing needs edit rights. A slot's
// file is taken over without copying; a replaced or deleted file is removed from the blob store after
// commit. Product images live in product-images.ts, the orphan-file clean-up in orphan-files.ts.

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import type { BlobStore } from '../../db/blob-store.ts';
import { recordHistory, recordViewGroup } from '../../engine/history.ts';
import { findType } from '../../engine/registry.ts';
import { checkVersionValue } from '../../engine/value-check.ts';
import { unstorableIn } from '../../engine/values.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import { parseOwner, requireEdit, requireView, type Owner } from './attachment-owner.ts';
import { findFilledSlotOrFail, isFileName, iso, maxCharacters, takeSlotFile } from './slots.ts';
import type { StoredFile } from './download.ts';

export interface AttachmentRow {
  readonly partition_id: number;
  readonly id: number;
  readonly owner_type: string;
  readonly owner_id: number;
  readonly file_name: string;
  readonly content_type: string;
  readonly size: number;
  readonly blob_key: string;
  readonly metadata: unknown;
  readonly version: number;
  readonly created_at: Date | string;
  readonly created_by: number | null;
  readonly last_update_at: Date | string;
  readonly last_update_by: number | null;
}

// Record history of attachments (type code ATT, record id the attachment's id, business key the
// owner's typedId, so an auditor finds a record's attachments by it): added, changed (file name,
// metadata, or the file replaced: its name, type and size) and deleted, the fact and the visible
// fields, never the blob key. Read through /history.fetch (HISTORY_FETCH); a row takes the owner's
// view group, so whoever may not see the owner does not see its attachments there either.
const TRACKED: readonly (readonly [string, (a: AttachmentRow) => unknown])[] = [
  ['ownerTypedId', (a) => `${a.owner_id}.${a.owner_type}`],
  ['fileName', (a) => a.file_name],
  ['contentType', (a) => a.content_type],
  ['size', (a) => Number(a.size)],
  ['metadata', (a) => a.metadata ?? null],
];

async function attachmentHistory(
  q: Queryable,
  principal: Principal,
  action: 'ADD' | 'UPDATE' | 'DELETE',
  before: AttachmentRow | undefined,
  after: AttachmentRow | undefined,
): Promise<void> {
  const row = (after ?? before)!;
  const changes: Record<string, { old: unknown; new: unknown }> = {};
  for (const [name, get] of TRACKED) {
    const old = before === undefined ? null : get(before);
    const now = after === undefined ? null : get(after);
    if (JSON.stringify(old) !== JSON.stringify(now) || action !== 'UPDATE') {
      if (old !== null || now !== null) changes[name] = { old, new: now };
    }
  }
  if (action === 'UPDATE' && Object.keys(changes).length === 0) return;
  const ownerType = findType(row.owner_type);
  const group = ownerType ? await recordViewGroup(q, principal, ownerType, Number(row.owner_id)) : null;
  await recordHistory(q, principal, [
    {
      typeCode: 'ATT',
      recordId: Number(row.id),
      businessKey: `${row.owner_id}.${row.owner_type}`,
      action,
      changes,
      version: action === 'DELETE' ? Number(row.version) + 1 : Number(row.version),
      userGroupViewDetails: group,
    },
  ]);
}

export function attachmentView(a: AttachmentRow) {
  return {
    id: a.id,
    binaryDataId: a.id,
    ownerTypedId: `${a.owner_id}.${a.owner_type}`,
    fileName: a.file_name,
    contentType: a.content_type,
    size: Number(a.size),
    metadata: a.metadata ?? null,
    version: a.version,
    createDate: iso(a.created_at),
    createdBy: a.created_by,
    lastUpdateDate: iso(a.last_update_at),
    lastUpdateBy: a.last_update_by,
  };
}

export function storedFileOf(a: {
  partition_id: number;
  blob_key: string;
  size: number;
  content_type: string;
  file_name: string;
}): StoredFile {
  return {
    partitionId: a.partition_id,
    key: a.blob_key,
    size: Number(a.size),
    contentType: a.content_type,
    fileName: a.file_name,
  };
}

function attachmentId(text: string): number {
  if (!/^\d{1,15}$/.test(text.trim()))
    throw validationError('binaryDataId', `${JSON.stringify(text)} is not an id`);
  return Number(text.trim());
}

async function findAttachment(
  q: Queryable,
  principal: Principal,
  id: number,
  owner?: Owner,
  field = 'binaryDataId',
): Promise<AttachmentRow> {
  const r = await q.query<AttachmentRow>('SELECT * FROM attachments WHERE partition_id = $1 AND id = $2', [
    principal.partitionId,
    id,
  ]);
  const a = r.rows[0];
  if (!a || (owner && (a.owner_type !== owner.code || Number(a.owner_id) !== owner.id))) {
    throw notFound(`Attachment ${id}`, field);
  }
  return a;
}

export async function attach(
  db: Db,
  principal: Principal,
  ownerTypedId: string,
  slotId: string,
): Promise<AttachmentRow> {
  const owner = parseOwner(ownerTypedId);
  await requireEdit(db, principal, owner);
  const slot = await findFilledSlotOrFail(db, principal, slotId);
  return db.transaction(async (tx) => {
    await takeSlotFile(tx, principal, slotId, slot.blob_key);
    const r = await tx.query<AttachmentRow>(
      `INSERT INTO attachments (partition_id, owner_type, owner_id, file_name, content_type, size, blob_key,
                                created_by, last_update_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING *`,
      [
        principal.partitionId,
        owner.code,
        owner.id,
        slot.file_name,
        slot.content_type ?? 'application/octet-stream',
        slot.size,
        slot.blob_key,
        principal.userId,
      ],
    );
    await attachmentHistory(tx, principal, 'ADD', undefined, r.rows[0]);
    return r.rows[0]!;
  });
}

/** An attachment the principal may read; `ownerTypedId` (when given) must be its owner. */
export async function readableAttachment(
  db: Db,
  principal: Principal,
  idText: string,
  ownerTypedId?: string,
): Promise<AttachmentRow> {
  const owner = ownerTypedId === undefined ? undefined : parseOwner(ownerTypedId);
  const id = attachmentId(idText);
  if (owner !== undefined) {
    // The owner first: one the principal may not see is not found whatever the attachment id names.
    await requireView(db, principal, owner);
    return findAttachment(db, principal, id, owner);
  }
  const a = await findAttachment(db, principal, id);
  const type = findType(a.owner_type);
  if (!type) throw notFound(`Attachment ${idText}`, 'binaryDataId');
  // Named by its id alone, an attachment whose owner the principal may not see is answered as one
  // that does not exist: neither the owner's typedId nor a permission error may tell it exists.
  try {
    await requireView(db, principal, { type, id: Number(a.owner_id), code: a.owner_type });
  } catch (e) {
    if (e instanceof AppError && (e.code === 'NOT_FOUND' || e.code === 'FORBIDDEN')) {
      throw notFound(`Attachment ${idText}`, 'binaryDataId');
    }
    throw e;
  }
  return a;
}

/** true when the attachment exists and its owner is visible to the principal. */
export async function attachmentExists(db: Db, principal: Principal, idText: string): Promise<boolean> {
  try {
    await readableAttachment(db, principal, idText);
    return true;
  } catch (e) {
    if (e instanceof AppError && (e.code === 'NOT_FOUND' || e.code === 'FORBIDDEN')) return false;
    throw e;
  }
}

export interface AttachmentChange {
  readonly id?: unknown;
  readonly binaryDataId?: unknown;
  readonly fileName?: unknown;
  readonly metadata?: unknown;
}

export async function updateAttachment(
  db: Db,
  principal: Principal,
  ownerTypedId: string,
  change: AttachmentChange,
  oldVersion: unknown,
): Promise<AttachmentRow> {
  const owner = parseOwner(ownerTypedId);
  const idValue = change.binaryDataId ?? change.id;
  if (idValue === undefined || idValue === null)
    throw validationError('data.id', 'name the attachment (id or binaryDataId)');
  if (typeof idValue !== 'number' && typeof idValue !== 'string') {
    throw validationError('data.id', 'must be an id');
  }
  const id = attachmentId(String(idValue));
  if (
    change.fileName !== undefined &&
    (typeof change.fileName !== 'string' || change.fileName.trim() === '')
  ) {
    throw validationError('data.fileName', 'must be a non-empty text');
  }
  if (
    change.metadata !== undefined &&
    change.metadata !== null &&
    (typeof change.metadata !== 'object' || Array.isArray(change.metadata))
  ) {
    throw validationError('data.metadata', 'must be an object');
  }
  checkVersionValue(oldVersion, 'oldValues.version');
  const version = typeof oldVersion === 'number' ? oldVersion : undefined;
  // Text no column takes (NUL, an unpaired surrogate the driver would store as U+FFFD), in the file
  // name or anywhere in the metadata (member names too): a -4 naming it, as the general operations.
  const unstorable = unstorableIn({ fileName: change.fileName, metadata: change.metadata }, false);
  if (unstorable !== undefined) throw validationError(unstorable.path, unstorable.problem);
  // A name as an upload keeps it (cleanFileName): no directories, quotes or control characters.
  if (typeof change.fileName === 'string' && !isFileName(change.fileName)) {
    throw validationError('fileName', 'must be a file name: no / or \\, quotes or control characters');
  }
  await requireEdit(db, principal, owner);
  const field = change.binaryDataId === undefined ? 'data.id' : 'data.binaryDataId';
  await findAttachment(db, principal, id, owner, field);
  return db.transaction(async (tx) => {
    // The row, locked: deleted since the look-up above (a delete that held it commits), it is not
    // found; its version is compared here, so a version conflict is one only when a version was sent.
    const before = (
      await tx.query<AttachmentRow>(
        'SELECT * FROM attachments WHERE partition_id = $1 AND id = $2 FOR UPDATE',
        [principal.partitionId, id],
      )
    ).rows[0];
    if (!before) throw notFound(`Attachment ${id}`, field);
    if (version !== undefined && Number(before.version) !== version)
      throw new AppError('VERSION_CONFLICT', `Attachment ${id} is not at version ${version}`, {
        field: 'oldValues.version',
      });
    const r = await tx.query<AttachmentRow>(
      `UPDATE attachments
        SET file_name = coalesce($3, file_name),
            metadata = CASE WHEN $4::boolean THEN $5::jsonb ELSE metadata END,
            version = version + 1, last_update_at = now(), last_update_by = $6
      WHERE partition_id = $1 AND id = $2
     RETURNING *`,
      [
        principal.partitionId,
        id,
        typeof change.fileName === 'string' ? maxCharacters(change.fileName.trim(), 255) : null,
        change.metadata !== undefined,
        change.metadata === undefined ? null : JSON.stringify(change.metadata),
        principal.userId,
      ],
    );
    await attachmentHistory(tx, principal, 'UPDATE', before, r.rows[0]);
    return r.rows[0]!;
  });
}

export async function deleteAttachment(
  db: Db,
  blobs: BlobStore,
  principal: Principal,
  ownerTypedId: string,
  idText: string,
): Promise<AttachmentRow> {
  const owner = parseOwner(ownerTypedId);
  await requireEdit(db, principal, owner);
  const a = await findAttachment(db, principal, attachmentId(idText), owner);
  const gone = await db.transaction(async (tx) => {
    const r = await tx.query<AttachmentRow>(
      'DELETE FROM attachments WHERE partition_id = $1 AND id = $2 RETURNING *',
      [principal.partitionId, a.id],
    );
    if (!r.rows[0]) throw notFound(`Attachment ${idText}`, 'binaryDataId');
    await attachmentHistory(tx, principal, 'DELETE', r.rows[0], undefined);
    return r.rows[0];
  });
  await blobs.delete(principal.partitionId, a.blob_key);
  return gone;
}

/** Replaces the attachment's file with the slot's (`bdmanager.edit`). */
export async function replaceAttachment(
  db: Db,
  blobs: BlobStore,
  principal: Principal,
  ownerTypedId: string,
  idText: string,
  slotId: string,
): Promise<AttachmentRow> {
  const owner = parseOwner(ownerTypedId);
  await requireEdit(db, principal, owner);
  const a = await findAttachment(db, principal, attachmentId(idText), owner);
  const slot = await findFilledSlotOrFail(db, principal, slotId);
  const row = await db.transaction(async (tx) => {
    await takeSlotFile(tx, principal, slotId, slot.blob_key);
    const r = await tx.query<AttachmentRow>(
      `UPDATE attachments
          SET blob_key = $3, size = $4, content_type = $5, file_name = $6, version = version + 1,
              last_update_at = now(), last_update_by = $7
        WHERE partition_id = $1 AND id = $2 AND blob_key = $8 RETURNING *`,
      [
        principal.partitionId,
        a.id,
        slot.blob_key,
        slot.size,
        slot.content_type ?? 'application/octet-stream',
        slot.file_name,
        principal.userId,
        a.blob_key,
      ],
    );
    if (!r.rows[0]) throw new AppError('CONFLICT', `Attachment ${a.id} changed meanwhile; retry`);
    await attachmentHistory(tx, principal, 'UPDATE', a, r.rows[0]);
    return r.rows[0];
  });
  await blobs.delete(principal.partitionId, a.blob_key);
  return row;
}
