// Roles, user groups and business roles of users and of business roles: assigning (adds, and an
// `unassign` list removes), reading (with where each effective role or group comes from), copying
// roles between users, and the audit report. Effective = direct ∪ through business roles; the
// authentication reads the same tables on every request, so a change applies to the next request.

import { grantingRoles, permissionsOfRoles, type Principal } from '../../access/access.ts';
import type { Permission } from '../../access/catalogue.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { fetchOne, requireAccess } from '../../engine/crud.ts';
import { requireType } from '../../engine/registry.ts';
import { recordHistory, type HistoryEntry } from '../../engine/history.ts';
import { notFound, validationError } from '../../http/errors.ts';
import { guardBusinessRoles, guardNotOwnBusinessRole, guardNotSelf, guardRoles } from './guards.ts';
import { idOf, namedRefsOf, roleNamesOf, userIdOf, userIdsOf } from './refs.ts';
import { BUSINESS_ROLE, USER } from './service.ts';
import * as store from './store.ts';
import type { BusinessRoleContent, Member, NamedRow, UserRow } from './store.ts';

export type AssignKind = 'roles' | 'groups' | 'businessRoles';

/** The lists of an assign request: what to add and what to remove (either may be empty, not both). */
export interface AssignLists {
  readonly add?: readonly unknown[] | undefined;
  readonly unassign?: readonly unknown[] | undefined;
}

const FIELD: Readonly<Record<AssignKind, string>> = {
  roles: 'data.roles',
  groups: 'data.groups',
  businessRoles: 'data.businessRoles',
};

const USER_LINK = { roles: 'userRoles', groups: 'userGroups', businessRoles: 'userBusinessRoles' } as const;

interface Resolved {
  readonly add: readonly Member[];
  readonly remove: readonly Member[];
}

/** Names or ids → role names or record ids; unknown roles are a -4, unknown records a 404. */
async function resolveMembers(
  q: Queryable,
  principal: Principal,
  kind: AssignKind,
  lists: AssignLists,
): Promise<Resolved> {
  const add = lists.add ?? [];
  const remove = lists.unassign ?? [];
  if (add.length === 0 && remove.length === 0) {
    throw validationError(FIELD[kind], `name ${kind} to assign (or to unassign in data.unassign)`);
  }
  let resolved: { add: Member[]; remove: Member[]; name: (m: Member) => string };
  if (kind === 'roles') {
    resolved = {
      add: roleNamesOf(add, FIELD[kind]),
      remove: roleNamesOf(remove, 'data.unassign'),
      name: String,
    };
    guardRoles(principal, [...resolved.add, ...resolved.remove] as string[]);
  } else {
    const code = kind === 'groups' ? 'UG' : 'BR';
    const added = await namedRefsOf(q, principal.partitionId, code, add, FIELD[kind]);
    const removed = await namedRefsOf(q, principal.partitionId, code, remove, 'data.unassign');
    const names = new Map([...added, ...removed].map((r) => [r.id, r.uniqueName]));
    resolved = {
      add: added.map((r) => r.id),
      remove: removed.map((r) => r.id),
      name: (m) => names.get(Number(m))!,
    };
    if (kind === 'businessRoles')
      await guardBusinessRoles(q, principal, [...resolved.add, ...resolved.remove] as number[]);
  }
  const both = resolved.add.find((m) => resolved.remove.includes(m));
  if (both !== undefined) {
    throw validationError('data.unassign', `${resolved.name(both)} is also in ${FIELD[kind]}`);
  }
  return resolved;
}

/** `<field>.<i>`: the entry of a list of user ids (userIdsOf, checked already) that names `id`. */
const listField = (field: string, list: readonly unknown[], id: number): string =>
  `${field}.${list.findIndex((v, i) => userIdOf(v, `${field}.${i}`) === id)}`;

/** The users, locked for the caller's transaction; a missing one is a 404. */
async function usersOrFail(
  q: Queryable,
  principal: Principal,
  ids: readonly number[],
  fieldOf: (id: number) => string,
): Promise<Map<number, UserRow>> {
  const users = await store.usersById(q, principal.partitionId, ids, true);
  const missing = ids.find((id) => !users.has(id));
  if (missing !== undefined) throw notFound(`User ${missing}`, fieldOf(missing));
  return users;
}

/** The direct assignments of `kind` of each user, as names. */
async function currentOf(
  q: Queryable,
  pid: number,
  kind: AssignKind,
  ids: readonly number[],
): Promise<Map<number, string[]>> {
  if (kind === 'roles') return store.rolesOf(q, pid, 'userRoles', ids);
  const named = await store.namedOf(q, pid, USER_LINK[kind], ids);
  return new Map([...named].map(([id, rows]) => [id, rows.map((r) => r.uniqueName)]));
}

/** Record history of changed assignments: one UPDATE per changed owner, the whole list old → new. */
export function assignmentHistory(
  typeCode: 'U' | 'BR',
  kind: AssignKind,
  versions: ReadonlyMap<number, number>,
  before: ReadonlyMap<number, readonly string[]>,
  after: ReadonlyMap<number, readonly string[]>,
  keyOf: (id: number) => string,
): HistoryEntry[] {
  return [...versions].map(([id, version]) => ({
    typeCode,
    recordId: id,
    businessKey: keyOf(id),
    action: 'UPDATE',
    changes: { [kind]: { old: before.get(id) ?? [], new: after.get(id) ?? [] } },
    version,
  }));
}

export type AssignedUser = UserRow & { readonly [K in AssignKind]?: string[] };

/** `assignrole`, `assigngroup`, `assignbusinessrole` (one user by path, or `userIds`). */
export async function assignToUsers(
  db: Db,
  principal: Principal,
  kind: AssignKind,
  users: { readonly ids: readonly unknown[]; readonly field: string; readonly path?: true },
  lists: AssignLists,
): Promise<AssignedUser[]> {
  requireAccess(principal, 'USER_EDIT');
  // One user by path is named by the path parameter itself (`userId`), not as a list entry.
  const ids = users.path ? [userIdOf(users.ids[0], users.field)] : userIdsOf(users.ids, users.field);
  guardNotSelf(principal, ids);
  const pid = principal.partitionId;
  return db.transaction(async (tx) => {
    const found = await usersOrFail(tx, principal, ids, (id) =>
      users.path ? users.field : listField(users.field, users.ids, id),
    );
    const m = await resolveMembers(tx, principal, kind, lists);
    const link = USER_LINK[kind];
    const before = await currentOf(tx, pid, kind, ids);
    const changed = new Set([
      ...(await store.removeLinks(tx, pid, link, ids, m.remove)),
      ...(await store.addLinks(tx, pid, link, ids, m.add)),
    ]);
    const versions = await store.bumpVersions(tx, pid, 'users', changed, principal.userId);
    const current = await currentOf(tx, pid, kind, ids);
    await recordHistory(
      tx,
      principal,
      assignmentHistory('U', kind, versions, before, current, (id) => found.get(id)!.loginName),
    );
    return ids.map((id) => ({ ...found.get(id)!, [kind]: current.get(id) ?? [] }));
  });
}

/** A business role named in the path: id (`5`), typedId (`5.BR`) or unique name; 404 if none. */
async function businessRoleOrFail(
  q: Queryable,
  principal: Principal,
  text: string,
  lock: boolean | 'update' = false,
): Promise<NamedRow> {
  const id = idOf(text, 'BR');
  if (id === undefined && /^\d{1,15}\.[A-Za-z0-9]+$/.test(text.trim()))
    throw validationError('businessroleId', `${JSON.stringify(text)} is not a typedId of BR`);
  const [row] =
    id === undefined
      ? await store.namedByRef(q, principal.partitionId, 'business_roles', [], [text], lock)
      : await store.namedByRef(q, principal.partitionId, 'business_roles', [id], [], lock);
  if (!row) throw notFound(`Business role ${text}`, 'businessroleId');
  return row;
}

export type AssignedBusinessRole = NamedRow & { readonly roles?: string[]; readonly groups?: string[] };

/** `assignrole/BR/{id}`, `assigngroup/BR/{id}`: the content of a business role. */
export async function assignToBusinessRole(
  db: Db,
  principal: Principal,
  kind: 'roles' | 'groups',
  businessRoleText: string,
  lists: AssignLists,
): Promise<AssignedBusinessRole> {
  requireAccess(principal, 'USER_EDIT');
  const pid = principal.partitionId;
  return db.transaction(async (tx) => {
    // Locked for update: its version is bumped below (concurrent assignments queue, not deadlock).
    const br = await businessRoleOrFail(tx, principal, businessRoleText, 'update');
    await guardNotOwnBusinessRole(tx, principal, br.id);
    const m = await resolveMembers(tx, principal, kind, lists);
    // Adding ADMIN to a business role grants it to every holder; so is removing it a revocation.
    const link = kind === 'roles' ? 'businessRoleRoles' : 'businessRoleGroups';
    const content = async (): Promise<string[]> =>
      kind === 'roles'
        ? ((await store.rolesOf(tx, pid, 'businessRoleRoles', [br.id])).get(br.id) ?? [])
        : ((await store.namedOf(tx, pid, 'businessRoleGroups', [br.id])).get(br.id) ?? []).map(
            (g) => g.uniqueName,
          );
    const before = await content();
    const changed = new Set([
      ...(await store.removeLinks(tx, pid, link, [br.id], m.remove)),
      ...(await store.addLinks(tx, pid, link, [br.id], m.add)),
    ]);
    const versions = await store.bumpVersions(tx, pid, 'business_roles', changed, principal.userId);
    const after = await content();
    await recordHistory(
      tx,
      principal,
      assignmentHistory(
        'BR',
        kind,
        versions,
        new Map([[br.id, before]]),
        new Map([[br.id, after]]),
        () => br.uniqueName,
      ),
    );
    return kind === 'roles' ? { ...br, roles: after } : { ...br, groups: after };
  });
}

/** `copyroles`: the source's direct roles are added to each target (what targets hold stays). */
export async function copyRoles(
  db: Db,
  principal: Principal,
  data: { readonly fromUserId: unknown; readonly toUserIds: readonly unknown[] },
): Promise<AssignedUser[]> {
  requireAccess(principal, 'USER_EDIT');
  const from = userIdOf(data.fromUserId, 'data.fromUserId');
  const to = userIdsOf(data.toUserIds, 'data.toUserIds');
  guardNotSelf(principal, to);
  const pid = principal.partitionId;
  return db.transaction(async (tx) => {
    const found = await usersOrFail(tx, principal, [from, ...to], (id) =>
      id === from ? 'data.fromUserId' : listField('data.toUserIds', data.toUserIds, id),
    );
    guardRoles(principal, (await store.rolesOf(tx, pid, 'userRoles', [from])).get(from) ?? []);
    const before = await store.rolesOf(tx, pid, 'userRoles', to);
    const changed = await store.copyLinks(
      tx,
      pid,
      'userRoles',
      from,
      to.filter((id) => id !== from),
    );
    const versions = await store.bumpVersions(tx, pid, 'users', changed, principal.userId);
    const roles = await store.rolesOf(tx, pid, 'userRoles', to);
    await recordHistory(
      tx,
      principal,
      assignmentHistory('U', 'roles', versions, before, roles, (id) => found.get(id)!.loginName),
    );
    return to.map((id) => ({ ...found.get(id)!, roles: roles.get(id) ?? [] }));
  });
}

// ---------------------------------------------------------------------------------------------
// Reading: effective roles and groups with their sources

export interface EffectiveRole {
  readonly role: string;
  readonly direct: boolean;
  /** Names of the business roles that bring the role. */
  readonly businessRoles: string[];
  readonly permissions: Permission[];
}

export type EffectiveGroup = NamedRow & { readonly direct: boolean; readonly businessRoles: string[] };

interface Holdings {
  readonly roles: EffectiveRole[];
  readonly groups: EffectiveGroup[];
  readonly businessRoles: BusinessRoleContent[];
}

const permissionsOf = (role: string): Permission[] => [...permissionsOfRoles([role])];

async function holdingsOf(q: Queryable, pid: number, userId: number): Promise<Holdings> {
  const directRoles = (await store.rolesOf(q, pid, 'userRoles', [userId])).get(userId) ?? [];
  const directGroups = (await store.namedOf(q, pid, 'userGroups', [userId])).get(userId) ?? [];
  const brs = (await store.namedOf(q, pid, 'userBusinessRoles', [userId])).get(userId) ?? [];
  const businessRoles = await store.businessRolesWithContent(
    q,
    pid,
    brs.map((b) => b.id),
  );

  const roles = new Map<string, { direct: boolean; businessRoles: string[] }>();
  const groups = new Map<number, { row: NamedRow; direct: boolean; businessRoles: string[] }>();
  for (const r of directRoles) roles.set(r, { direct: true, businessRoles: [] });
  for (const g of directGroups) groups.set(g.id, { row: g, direct: true, businessRoles: [] });
  for (const br of businessRoles) {
    for (const r of br.roles) {
      const e = roles.get(r) ?? { direct: false, businessRoles: [] };
      e.businessRoles.push(br.uniqueName);
      roles.set(r, e);
    }
    for (const g of br.groups) {
      const e = groups.get(g.id) ?? { row: g, direct: false, businessRoles: [] };
      e.businessRoles.push(br.uniqueName);
      groups.set(g.id, e);
    }
  }
  return {
    roles: [...roles]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([role, e]) => ({ role, ...e, permissions: permissionsOf(role) })),
    groups: [...groups.values()]
      .sort((a, b) => a.row.uniqueName.localeCompare(b.row.uniqueName))
      .map((e) => ({ ...e.row, direct: e.direct, businessRoles: e.businessRoles })),
    businessRoles,
  };
}

/** A user by path id; reading another user's assignments needs `permission`, one's own does not. */
async function readableUser(
  q: Queryable,
  principal: Principal,
  text: string,
  permission: Permission | null,
): Promise<number> {
  const id = userIdOf(text, 'userId');
  if (permission !== null && id !== principal.userId) requireAccess(principal, permission);
  if (!(await store.usersById(q, principal.partitionId, [id])).has(id))
    throw notFound(`User ${text}`, 'userId');
  return id;
}

/** `fetchgroups/{userId}`: effective groups; another user's need USER_FETCH. */
export async function fetchUserGroups(
  db: Db,
  principal: Principal,
  userText: string,
): Promise<EffectiveGroup[]> {
  const id = await readableUser(db, principal, userText, 'USER_FETCH');
  return (await holdingsOf(db, principal.partitionId, id)).groups;
}

/** `fetchroles/{userId}`: effective roles (ROLE_FETCH, declared by the route). */
export async function fetchUserRoles(
  db: Db,
  principal: Principal,
  userText: string,
): Promise<EffectiveRole[]> {
  requireAccess(principal, 'ROLE_FETCH');
  const id = await readableUser(db, principal, userText, null);
  return (await holdingsOf(db, principal.partitionId, id)).roles;
}

/** `fetchbusinessroles/{userId}`: another user's need USER_FETCH. */
export async function fetchUserBusinessRoles(
  db: Db,
  principal: Principal,
  userText: string,
): Promise<NamedRow[]> {
  const id = await readableUser(db, principal, userText, 'USER_FETCH');
  return (await store.namedOf(db, principal.partitionId, 'userBusinessRoles', [id])).get(id) ?? [];
}

/** `fetchroles/BR/{id}` (ROLE_FETCH). */
export async function fetchBusinessRoleRoles(
  db: Db,
  principal: Principal,
  text: string,
): Promise<{ role: string; permissions: Permission[] }[]> {
  requireAccess(principal, 'ROLE_FETCH');
  const br = await businessRoleOrFail(db, principal, text);
  const roles =
    (await store.rolesOf(db, principal.partitionId, 'businessRoleRoles', [br.id])).get(br.id) ?? [];
  return roles.map((role) => ({ role, permissions: permissionsOf(role) }));
}

/** `fetchgroups/BR/{id}` (USER_FETCH). */
export async function fetchBusinessRoleGroups(
  db: Db,
  principal: Principal,
  text: string,
): Promise<NamedRow[]> {
  requireAccess(principal, 'USER_FETCH');
  const br = await businessRoleOrFail(db, principal, text);
  return (await store.namedOf(db, principal.partitionId, 'businessRoleGroups', [br.id])).get(br.id) ?? [];
}

// ---------------------------------------------------------------------------------------------
// Audit

const permissionSources = (roles: readonly string[]) =>
  [...grantingRoles(roles)].map(([permission, from]) => ({ permission, roles: from }));

/**
 * `audit/U/{id}`: the user, every effective role and group with where it comes from (direct and/or
 * which business roles), the business roles with their content, and each effective permission with
 * the roles that grant it. `audit/BR/{id}`: the business role, its roles, groups, users and the
 * permissions it grants. Needs USER_FETCH and ROLE_FETCH.
 */
export async function audit(
  db: Db,
  principal: Principal,
  typeCode: string,
  idText: string,
): Promise<Record<string, unknown>> {
  requireAccess(principal, 'ROLE_FETCH');
  requireAccess(principal, 'USER_FETCH');
  const pid = principal.partitionId;
  if (typeCode === USER.code) {
    const user = await fetchOne(db, principal, USER, idText);
    const h = await holdingsOf(db, pid, Number(user.id));
    return {
      typeCode,
      user,
      roles: h.roles,
      groups: h.groups,
      businessRoles: h.businessRoles.map((b) => ({ ...b, groups: b.groups.map((g) => g.uniqueName) })),
      permissions: permissionSources(h.roles.map((r) => r.role)),
    };
  }
  if (typeCode === BUSINESS_ROLE.code) {
    const businessRole = await fetchOne(db, principal, BUSINESS_ROLE, idText);
    const [content] = await store.businessRolesWithContent(db, pid, [Number(businessRole.id)]);
    const roles = content?.roles ?? [];
    return {
      typeCode,
      businessRole,
      roles: roles.map((role) => ({ role, permissions: permissionsOf(role) })),
      groups: content?.groups ?? [],
      users: await store.usersOfBusinessRole(db, pid, Number(businessRole.id)),
      permissions: permissionSources(roles),
    };
  }
  requireType(typeCode);
  throw validationError('typeCode', `audit reports cover U and BR, not ${typeCode}`);
}
