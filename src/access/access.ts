// The permission decision: effective permissions come from the user's roles (direct ones and those of
// the user's business roles, gathered by the account query in auth/authenticate.ts); an optional
// restriction (a token's permission list, an OAuth scope) can only narrow them, never widen.

import { PERMISSIONS, ROLES, type Permission } from './catalogue.ts';

export interface Principal {
  readonly partitionId: number;
  readonly partition: string;
  /** The partition's attribute-meta version at authentication (keys cached attribute types). */
  readonly metaVersion?: number;
  readonly userId: number;
  readonly loginName: string;
  readonly roles: readonly string[];
  /** Names of the user groups the user belongs to (record-level visibility). */
  readonly groups: readonly string[];
  /** Holds role ADMIN: sees and edits every record whatever its user groups. */
  readonly admin: boolean;
  readonly permissions: ReadonlySet<Permission>;
  /**
   * How the request authenticated: Basic, the session cookie or header, Authorization Bearer (an
   * OAuth or api token of ours), a one-time token, or an external system's JWT.
   */
  readonly via: 'basic' | 'cookie' | 'header' | 'bearer' | 'onetime' | 'external';
  /** When set, only these permissions may be used, on top of the user's own. */
  readonly restriction: ReadonlySet<string> | null;
  /** The api token or OAuth grant (api_tokens.id) the request authenticated with (record history). */
  readonly tokenId?: number;
  /** The external system whose JWT authenticated the request (record history). */
  readonly externalSystem?: string;
  /** The user's token epoch the credential was checked against (a one-time token keeps it). */
  readonly epoch?: number;
  /** When the request's token expires (seconds since 1970), for a token that does. */
  readonly expiresAt?: number;
}

export function permissionsOfRoles(roles: readonly string[]): ReadonlySet<Permission> {
  const out = new Set<Permission>();
  for (const role of roles) {
    // Own keys only: a stored name such as `constructor` must not reach Object.prototype.
    const granted = Object.hasOwn(ROLES, role) ? ROLES[role] : undefined;
    if (granted === '*') return new Set(PERMISSIONS);
    for (const p of granted ?? []) out.add(p);
  }
  return out;
}

/**
 * The principal is in user group `group` as records name it (`userGroupEdit`,
 * `userGroupViewDetails`): no group (null, absent or ''), one of theirs, or an admin.
 */
export function inUserGroup(principal: Principal, group: unknown): boolean {
  return principal.admin || typeof group !== 'string' || group === '' || principal.groups.includes(group);
}

export function can(principal: Principal, permission: Permission): boolean {
  if (!principal.permissions.has(permission)) return false;
  return principal.restriction === null || principal.restriction.has(permission);
}

/** For each permission the roles hold, the roles that grant it (the "where from" of audit reports). */
export function grantingRoles(roles: readonly string[]): Map<Permission, string[]> {
  const out = new Map<Permission, string[]>();
  for (const role of [...new Set(roles)].sort()) {
    for (const p of permissionsOfRoles([role])) {
      const list = out.get(p);
      if (list) list.push(role);
      else out.set(p, [role]);
    }
  }
  return out;
}
