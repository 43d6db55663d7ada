// The permission catalogue and the roles that grant permissions. `ADMIN` holds every permission.
// A route declares one permission (or AUTHENTICATED / PUBLIC); `can` in ./access.ts decides.

export const PERMISSIONS = [
  'USER_FETCH',
  'USER_EDIT',
  'PARTITION_ADMIN',
  'PRODUCT_EDIT',
  'CUSTOMER_EDIT',
  'SELLER_FETCH',
  'SELLER_EDIT',
  'PRODUCTEXTENSION_FETCH',
  'PRODUCTEXTENSION_EDIT',
  'CUSTOMEREXTENSION_FETCH',
  'CUSTOMEREXTENSION_EDIT',
  'ATTRIBUTEMETA_EDIT',
  'PRODUCTCOMPETITION_FETCH',
  'PRODUCTCOMPETITION_EDIT',
] as const;

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
  DATAINTEGRATION: [
    'PRODUCT_EDIT',
    'CUSTOMER_EDIT',
    'SELLER_FETCH',
    'SELLER_EDIT',
    'PRODUCTEXTENSION_FETCH',
    'PRODUCTEXTENSION_EDIT',
    'CUSTOMEREXTENSION_FETCH',
    'CUSTOMEREXTENSION_EDIT',
    'PRODUCTCOMPETITION_FETCH',
    'PRODUCTCOMPETITION_EDIT',
  ],
  PRICESHOP_RO: [
    'PRODUCTEXTENSION_FETCH',
    'CUSTOMEREXTENSION_FETCH',
    'SELLER_FETCH',
    'PRODUCTCOMPETITION_FETCH',
  ],
  PRICESHOP_EDIT: [
    'PRODUCT_EDIT',
    'PRODUCTEXTENSION_FETCH',
    'PRODUCTEXTENSION_EDIT',
    'CUSTOMEREXTENSION_FETCH',
    'SELLER_FETCH',
    'PRODUCTCOMPETITION_FETCH',
  ],
};

export function isKnownPermission(name: string): name is Permission {
  return (PERMISSIONS as readonly string[]).includes(name);
}
