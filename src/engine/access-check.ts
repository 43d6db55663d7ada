// Access checks of the generic operations: the permission a type declares for an operation, and
// record-level edit rights through user groups (the row scope in SQL is context.ts's rowScope).

import type { Principal } from '../access/access.ts';
import { can, inUserGroup } from '../access/access.ts';
import { AUTHENTICATED, PUBLIC, type RouteAccess } from '../access/catalogue.ts';
import { AppError } from '../http/errors.ts';
import type { TypeContext } from './context.ts';

type Row = Record<string, unknown>;

export function requireAccess(principal: Principal, access: RouteAccess): void {
  if (access === AUTHENTICATED || access === PUBLIC) return;
  if (!can(principal, access)) throw new AppError('FORBIDDEN', `Permission ${access} required`);
}

export function canEdit(tc: TypeContext, principal: Principal, row: Row): boolean {
  return !tc.type.userGroups || inUserGroup(principal, row.userGroupEdit);
}
