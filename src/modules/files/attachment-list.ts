// `/bdmanager.list/{typedId}`: the attachments of one record through the generic engine's fetch, so
// the body is the usual filter and paging body (criteria, sortBy, startRow/endRow, the maximum page
// size) checked and compiled as for every other list. The attachment type is declared here, not in
// the registry: it is served by the bdmanager operations only, and each list is scoped to its owner
// record (`ownedRows`), after the owner's view rights are checked.

import { AUTHENTICATED } from '../../access/catalogue.ts';
import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { qualified } from '../../db/sql.ts';
import { fetchRecords, type FetchBody, type FetchResult } from '../../engine/crud.ts';
import { SYSTEM, text } from '../../engine/registry-fields.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { parseOwner, requireView, type Owner } from './attachment-owner.ts';

/** The attachments of `owner` as a type: its fields are what a list filters, sorts and answers. */
function attachmentsOf(owner: Owner): TypeDef {
  return {
    code: 'ATT',
    label: 'Attachment',
    table: 'attachments',
    fields: [
      { name: 'binaryDataId', column: 'id', type: 'integer', system: true },
      text('fileName', 'file_name', { maxLength: 255 }),
      text('contentType', 'content_type', { maxLength: 255 }),
      { name: 'size', column: 'size', type: 'integer' },
      { name: 'metadata', column: 'metadata', type: 'json' },
      ...SYSTEM,
    ],
    businessKey: [],
    uniqueColumns: [],
    deleteMode: 'hard',
    massEditable: false,
    bulkLoadable: false,
    userGroups: false,
    access: { fetch: AUTHENTICATED, write: owner.type.access.write },
    ownedRows: (_principal, add, alias) =>
      `${qualified(alias, 'owner_type')} = ${add(owner.code)} AND ${qualified(alias, 'owner_id')} = ${add(owner.id)}`,
    managerOnly: '/bdmanager.list/{typedId} and the other bdmanager operations',
  };
}

/** The order of an attachment's fields in every bdmanager answer (attachments.ts `attachmentView`). */
const VIEW = [
  'id',
  'binaryDataId',
  'ownerTypedId',
  'fileName',
  'contentType',
  'size',
  'metadata',
  'version',
  'createDate',
  'createdBy',
  'lastUpdateDate',
  'lastUpdateBy',
] as const;

/**
 * The attachments of a record the principal may see (404 when the record is not), filtered, sorted
 * (by id unless `sortBy` says otherwise) and paged by the engine. Without resultFields / valueFields
 * each row is the attachment as the other bdmanager operations answer it.
 */
export async function listAttachments(
  db: Db,
  principal: Principal,
  ownerTypedId: string,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  const owner = parseOwner(ownerTypedId);
  await requireView(db, principal, owner);
  const r = await fetchRecords(db, principal, attachmentsOf(owner), body, maxPageSize);
  if (body.resultFields !== undefined || body.valueFields !== undefined) return r;
  const ownerId = `${owner.id}.${owner.type.code}`;
  const rows = r.rows.map((row) => {
    const rec: Record<string, unknown> = { ...(row as Record<string, unknown>), ownerTypedId: ownerId };
    return Object.fromEntries(VIEW.map((k) => [k, rec[k] ?? null]));
  });
  return { ...r, rows };
}
