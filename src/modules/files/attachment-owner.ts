// The owner record of an attachment (`<id>.<TypeCode>` of a registered type) and the rights on it,
// through the engine: view rights are the engine's fetchOne of the owner (its type's fetch
// permission and user groups), edit rights the owner type's `access.write` plus the engine's row
// scope for edits (`userGroupEdit`).

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { Params, ident } from '../../db/sql.ts';
import { loadTypeContext, rowScope } from '../../engine/context.ts';
import { fetchOne, requireAccess } from '../../engine/crud.ts';
import { findType, type TypeDef } from '../../engine/registry.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import { itemHidden } from '../dcr/service.ts';

export interface Owner {
  readonly type: TypeDef;
  readonly id: number;
  /**
   * The type code its attachments are kept under: one per record, whichever code addresses it (an
   * item's `CRCI2` and `CRCI` typedIds name one item and one list of files).
   */
  readonly code: string;
}

/** `<id>.<TypeCode>` of a registered type. */
export function parseOwner(typedId: string): Owner {
  const m = /^(\d{1,15})\.([A-Za-z][A-Za-z0-9]*)$/.exec(typedId.trim());
  if (!m) throw validationError('typedId', `${JSON.stringify(typedId)} is not a typedId (<id>.<TypeCode>)`);
  const type = findType(m[2]!);
  if (!type) throw notFound(`Type ${m[2]}`, 'typedId');
  if (type.noAttachments)
    throw validationError('typedId', `${type.label} records (${type.code}) take no attachments`);
  return { type, id: Number(m[1]), code: type.historyCode ?? type.code };
}

/**
 * Owners hidden by a rule of their module beyond the engine's row scope: a DCR item of a record
 * hidden from the user does not exist for him (src/modules/dcr), nor do its attachments.
 */
const HIDDEN_BY_MODULE: Readonly<
  Record<string, (q: Queryable, principal: Principal, id: number) => Promise<boolean>>
> = {
  DCRI: itemHidden,
};

async function requireNotHidden(q: Queryable, principal: Principal, owner: Owner): Promise<void> {
  const hidden = HIDDEN_BY_MODULE[owner.type.code];
  if (hidden !== undefined && (await hidden(q, principal, owner.id)))
    throw notFound(`${owner.type.label} ${owner.id}.${owner.type.code}`, 'typedId');
}

/**
 * View rights on the owner: the engine's fetchOne (404 when invisible), its 404 naming the path's
 * `typedId` as the writes do (`Product 1.P not found`), not the engine's `id`.
 */
export async function requireView(db: Db, principal: Principal, owner: Owner): Promise<void> {
  try {
    await fetchOne(db, principal, owner.type, String(owner.id));
  } catch (e) {
    if (e instanceof AppError && e.code === 'NOT_FOUND')
      throw notFound(`${owner.type.label} ${owner.id}.${owner.type.code}`, 'typedId');
    throw e;
  }
  await requireNotHidden(db, principal, owner);
}

/** Edit rights on the owner: the type's write permission and the engine's row scope for edits. */
export async function requireEdit(q: Queryable, principal: Principal, owner: Owner): Promise<void> {
  requireAccess(principal, owner.type.access.write);
  const tc = await loadTypeContext(q, principal, owner.type);
  const p = new Params();
  const scope = rowScope(tc, principal, p, 't');
  const id = p.add(owner.id);
  const editable = rowScope(tc, principal, p, 't', { forEdit: true });
  const r = await q.query<{ editable: boolean }>(
    `SELECT (${editable}) AS editable FROM ${ident(owner.type.table)} t WHERE ${scope} AND t.id = ${id}`,
    p.values,
  );
  if (!r.rows[0]) throw notFound(`${owner.type.label} ${owner.id}.${owner.type.code}`, 'typedId');
  await requireNotHidden(q, principal, owner);
  if (!r.rows[0].editable) {
    throw new AppError('FORBIDDEN', `Not allowed to change ${owner.id}.${owner.type.code} (user group)`);
  }
}
