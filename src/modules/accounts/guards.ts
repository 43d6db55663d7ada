// The rules that keep user management below administration. USER_EDIT (USERADMIN) manages accounts
// and hands out roles (the interface counts USERADMIN among the administrators of users), but a user
// who is not an ADMIN
// - grants or revokes no role ADMIN — directly, inside a business role, by assigning, unassigning or
//   deleting a business role, or by copying roles (copyroles, copyuser);
// - changes no assignment of his own: not his roles, groups or business roles, nor the content of a
//   business role he holds (he cannot raise himself; another manager's change leaves its history);
// - changes neither the password, the record, the existence nor the api tokens of a user who holds
//   ADMIN.
// (Granting only roles whose permissions he holds was tried and dropped: a plain USERADMIN could then
// hand out USERADMIN and USERAUDIT only, which is not a user manager's job.)

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { AppError } from '../../http/errors.ts';
import { administrators, namedOf, rolesOf } from './store.ts';

/** Granting or revoking these roles: ADMIN only by an ADMIN. */
export function guardRoles(principal: Principal, roles: readonly string[], via = ''): void {
  if (!principal.admin && roles.includes('ADMIN')) {
    throw new AppError('FORBIDDEN', `Only an ADMIN may grant or revoke the role ADMIN${via}`);
  }
}

/** Assigning, unassigning or deleting these business roles: guardRoles over the roles they bundle. */
export async function guardBusinessRoles(
  q: Queryable,
  principal: Principal,
  businessRoleIds: readonly number[],
): Promise<void> {
  if (principal.admin || businessRoleIds.length === 0) return;
  const roles = await rolesOf(q, principal.partitionId, 'businessRoleRoles', businessRoleIds);
  guardRoles(principal, [...roles.values()].flat(), ' (through a business role)');
}

/** A non-ADMIN changes no assignment of his own (roles, groups, business roles). */
export function guardNotSelf(principal: Principal, userIds: readonly number[]): void {
  if (!principal.admin && userIds.includes(principal.userId)) {
    throw new AppError(
      'FORBIDDEN',
      'You cannot change your own roles, groups or business roles; another user manager or an ADMIN can',
    );
  }
}

/** A non-ADMIN changes the content of no business role he holds himself. */
export async function guardNotOwnBusinessRole(
  q: Queryable,
  principal: Principal,
  businessRoleId: number,
): Promise<void> {
  if (principal.admin) return;
  const mine = (await namedOf(q, principal.partitionId, 'userBusinessRoles', [principal.userId])).get(
    principal.userId,
  );
  if (mine?.some((b) => b.id === businessRoleId)) {
    throw new AppError(
      'FORBIDDEN',
      'You cannot change a business role you hold; another user manager or an ADMIN can',
    );
  }
}

/**
 * A non-ADMIN deletes no user group he is in, directly or through a business role he holds: the
 * delete would unassign it from him (docs/permissions.md: no assignment of his own).
 */
export async function guardNotOwnGroup(q: Queryable, principal: Principal, groupId: number): Promise<void> {
  if (principal.admin) return;
  const pid = principal.partitionId;
  const direct = (await namedOf(q, pid, 'userGroups', [principal.userId])).get(principal.userId) ?? [];
  const held = (await namedOf(q, pid, 'userBusinessRoles', [principal.userId])).get(principal.userId) ?? [];
  const viaRoles =
    held.length === 0
      ? []
      : [
          ...(
            await namedOf(
              q,
              pid,
              'businessRoleGroups',
              held.map((b) => b.id),
            )
          ).values(),
        ].flat();
  if ([...direct, ...viaRoles].some((g) => g.id === groupId)) {
    throw new AppError(
      'FORBIDDEN',
      'You cannot delete a user group you are in (directly or through a business role you hold); another user manager or an ADMIN can',
    );
  }
}

/** Changing the password, the record, the existence or the tokens of these users needs ADMIN if one is an ADMIN. */
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
