// The scope rules of the spec: what an authorization request (default and requested scope) or a
// refresh (a narrower scope) grants, as permissions in catalogue order. Pure: no database, no HTTP.
// The authorization endpoint (authorize.ts) and the refresh grant (token.ts) both apply them.

import { PERMISSIONS, isKnownPermission, type Permission } from '../../access/catalogue.ts';

export interface ScopeResult {
  readonly scope: readonly Permission[] | null;
}

export function permissionNames(text: string): Set<Permission> {
  // Rule 5: names that are not permissions are ignored. Space (RFC 6749 §3.3) or comma (the
  // spec's defaultScope) separate them.
  return new Set(text.split(/[\s,]+/).filter(isKnownPermission));
}

/** Catalogue order: the same scope always reads the same way, in tokens and on the consent page. */
export const ordered = (names: ReadonlySet<string>): Permission[] => PERMISSIONS.filter((p) => names.has(p));

/**
 * The spec's scope rules: 1. default only → default; 2. request only → request; 3. neither → no
 * scope (a normal session); 4. both → intersection; 5. unknown names ignored — a scope that names
 * no known permission counts as not given. (6, the user's own permissions, is applied per request:
 * a scope only restricts.) Two scopes with nothing in common intersect to an empty scope: a token
 * that may use no permission, never one that may use every permission.
 */
export function effectiveScope(requested: string | undefined, defaultScope: string | null): ScopeResult {
  const known = (text: string | null | undefined): Set<Permission> | null => {
    const names = text === undefined || text === null ? null : permissionNames(text);
    return names === null || names.size === 0 ? null : names;
  };
  const req = known(requested);
  const def = known(defaultScope);
  if (req === null && def === null) return { scope: null };
  const names = req === null ? def! : def === null ? req : new Set([...req].filter((p) => def.has(p)));
  return { scope: ordered(names) };
}

export const scopeText = (scope: readonly string[] | null): string | undefined =>
  scope === null ? undefined : scope.join(' ');
