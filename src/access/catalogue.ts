// The permission catalogue and the roles that grant permissions. `ADMIN` holds every permission.
// A route declares one permission (or AUTHENTICATED / PUBLIC); `can` in ./access.ts decides.

export const PERMISSIONS = ['USER_FETCH', 'USER_EDIT', 'PARTITION_ADMIN'] as const;

export type Permission = (typeof PERMISSIONS)[number];

/** Any authenticated user of the partition, whatever their roles. */
export const AUTHENTICATED = 'AUTHENTICATED';
/** No credentials at all (login pages, OAuth endpoints). */
export const PUBLIC = 'PUBLIC';

export type RouteAccess = Permission | typeof AUTHENTICATED | typeof PUBLIC;

/** Roles and the permissions each grants; `'*'` means all. */
export const ROLES: Readonly<Record<string, readonly Permission[] | '*'>> = {
  ADMIN: '*',
  USERADMIN: ['USER_FETCH', 'USER_EDIT'],
  USERAUDIT: ['USER_FETCH'],
  SUPPORT: ['USER_FETCH'],
};

export function isKnownPermission(name: string): name is Permission {
  return (PERMISSIONS as readonly string[]).includes(name);
}
