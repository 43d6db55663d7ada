// Access checks of the generic operations: the permission a type declares for an operation, and
// record-level edit rights through user groups (the row scope in SQL is context.ts's rowScope).

import type { Principal } from '../access/access.ts';
import { can, inUserGroup } from '../access/access.ts';
import { AUTHENTICATED, PUBLIC, type RouteAccess } from '../access/catalogue.ts';
import { AppError, validationError } from '../http/errors.ts';
import type { TypeDef } from './types.ts';

type Row = Record<string, unknown>;

/** Whether the principal passes `access` (a permission they hold, or none needed). */
export function hasAccess(principal: Principal, access: RouteAccess): boolean {
  return access === AUTHENTICATED || access === PUBLIC || can(principal, access);
}

export function requireAccess(principal: Principal, access: RouteAccess): void {
  if (!hasAccess(principal, access)) throw new AppError('FORBIDDEN', `Permission ${access} required`);
}

/**
 * The principal may write (`delete`: delete) records of `type` through the general operations: the
 * type's write permission, then the type's own refusal (`writtenBy`).
 */
export function requireWrite(principal: Principal, type: TypeDef, op: 'write' | 'delete' = 'write'): void {
  requireAccess(principal, type.access.write);
  const w = type.writtenBy;
  if (w !== undefined && !(op === 'delete' && w.deletable === true))
    throw validationError('typeCode', w.message);
}

/** The principal may change this record of `type` (its `userGroupEdit` is one of theirs, or it has none). */
export function canEdit(type: TypeDef, principal: Principal, row: Row): boolean {
  return !type.userGroups || inUserGroup(principal, row.userGroupEdit);
}
