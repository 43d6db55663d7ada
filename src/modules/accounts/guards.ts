// The two rules that keep user management below administration: USER_EDIT (USERADMIN) manages
// accounts, but only an ADMIN may grant or revoke the role ADMIN — directly, inside a business
// role, or by copying it — and only an ADMIN may change the password of, update or delete a user who
// holds ADMIN. Without them a user administrator could make himself administrator or lock one out.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { AppError } from '../../http/errors.ts';
import { adminBusinessRoles, administrators } from './store.ts';

/** Granting or revoking these roles needs ADMIN. */
export function guardRoles(principal: Principal, roles: readonly string[]): void {
  if (!principal.admin && roles.includes('ADMIN')) {
    throw new AppError('FORBIDDEN', 'Only an ADMIN may grant or revoke the role ADMIN');
  }
}

/** Assigning, unassigning or deleting these business roles needs ADMIN if one bundles ADMIN. */
export async function guardBusinessRoles(
  q: Queryable,
  principal: Principal,
  businessRoleIds: readonly number[],
): Promise<void> {
  if (principal.admin) return;
  if ((await adminBusinessRoles(q, principal.partitionId, businessRoleIds)).length > 0) {
    throw new AppError('FORBIDDEN', 'Only an ADMIN may grant or revoke a business role that bundles ADMIN');
  }
}

/** Changing the password, the record or the existence of these users needs ADMIN if one is an ADMIN. */
export async function guardAccounts(
  q: Queryable,
  principal: Principal,
  userIds: readonly number[],
): Promise<void> {
  if (principal.admin) return;
  if ((await administrators(q, principal.partitionId, userIds)).length > 0) {
    throw new AppError('FORBIDDEN', "Only an ADMIN may change an administrator's account");
  }
}
