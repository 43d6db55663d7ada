// Deleting user groups and business roles (`deletegroup`, `deletebusinessrole`): their memberships go
// first, in the same transaction, and each user or business role that loses one gets a new version
// and its record history (the list before and after), as an unassign would give it.

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { deleteRecords, requireAccess } from '../../engine/crud.ts';
import { recordHistory } from '../../engine/history.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { prefixed } from '../../http/errors.ts';
import { assignmentHistory } from './assignments.ts';
import { guardBusinessRoles, guardNotOwnBusinessRole, guardNotOwnGroup } from './guards.ts';
import { addressedRecordId } from './refs.ts';
import { BUSINESS_ROLE, GROUP } from './service.ts';
import * as store from './store.ts';

type Obj = Record<string, unknown>;
type Row = Record<string, unknown>;

/** Locks the group or business role being deleted: an assignment of it waits, then finds it gone. */
async function lockNamed(q: Queryable, principal: Principal, type: TypeDef, id: number): Promise<void> {
  const table = type.code === 'UG' ? 'user_groups' : 'business_roles';
  await q.query(`SELECT 1 FROM ${table} WHERE partition_id = $1 AND id = $2 FOR UPDATE`, [
    principal.partitionId,
    id,
  ]);
}

/**
 * Removes every link to `member` (a group or business role about to be deleted) from its owners
 * (users, or business roles for their groups), with the owners' new versions and history; answers
 * how many owners held it.
 */
async function unlinkEverywhere(
  tx: Queryable,
  principal: Principal,
  link: 'userGroups' | 'userBusinessRoles' | 'businessRoleGroups',
  member: number,
): Promise<number> {
  const pid = principal.partitionId;
  const owners = await store.ownersOf(tx, pid, link, member);
  if (owners.length === 0) return 0;
  const namesOf = async (): Promise<Map<number, string[]>> =>
    new Map(
      [...(await store.namedOf(tx, pid, link, owners))].map(([id, rows]) => [
        id,
        rows.map((r) => r.uniqueName),
      ]),
    );
  const before = await namesOf();
  await store.removeAllLinksOf(tx, pid, link, 'member', member);
  const after = await namesOf();
  const ofUsers = link !== 'businessRoleGroups';
  const versions = await store.bumpVersions(
    tx,
    pid,
    ofUsers ? 'users' : 'business_roles',
    new Set(owners),
    principal.userId,
  );
  const keys = ofUsers
    ? new Map([...(await store.usersById(tx, pid, owners))].map(([id, u]) => [id, u.loginName]))
    : new Map(
        (await store.namedByRef(tx, pid, 'business_roles', owners, [])).map((b) => [b.id, b.uniqueName]),
      );
  await recordHistory(
    tx,
    principal,
    assignmentHistory(
      ofUsers ? 'U' : 'BR',
      link === 'userBusinessRoles' ? 'businessRoles' : 'groups',
      versions,
      before,
      after,
      (id) => keys.get(id) ?? String(id),
    ),
  );
  return owners.length;
}

/**
 * `deletegroup`: removes the group's memberships (of users and of business roles), then the group.
 * Records whose `userGroupEdit`/`userGroupViewDetails` name it keep the name: only administrators
 * reach them until a group of that name exists again.
 */
export async function deleteGroups(db: Db, principal: Principal, items: readonly Obj[]): Promise<Row[]> {
  requireAccess(principal, GROUP.access.write);
  return db.transaction(async (tx) => {
    const out: Row[] = [];
    for (const [i, data] of items.entries()) {
      const row = await prefixed(items.length > 1 ? `${i}.` : '', async () => {
        const id = await addressedRecordId(tx, principal, GROUP, data);
        let counts = { removedMemberships: 0, removedFromBusinessRoles: 0 };
        if (id !== undefined) {
          await guardNotOwnGroup(tx, principal, id);
          await lockNamed(tx, principal, GROUP, id);
          counts = {
            removedMemberships: await unlinkEverywhere(tx, principal, 'userGroups', id),
            removedFromBusinessRoles: await unlinkEverywhere(tx, principal, 'businessRoleGroups', id),
          };
        }
        // The engine finds (404), checks and deletes the record itself.
        const [deleted] = await deleteRecords(store.withinTx(db, tx), principal, GROUP, [data]);
        return { ...deleted, ...counts };
      });
      out.push(row);
    }
    return out;
  });
}

/** `deletebusinessrole`: unassigns it from its users, drops its roles and groups, then deletes it. */
export async function deleteBusinessRoles(
  db: Db,
  principal: Principal,
  items: readonly Obj[],
): Promise<Row[]> {
  requireAccess(principal, BUSINESS_ROLE.access.write);
  return db.transaction(async (tx) => {
    const pid = principal.partitionId;
    const out: Row[] = [];
    for (const [i, data] of items.entries()) {
      const row = await prefixed(items.length > 1 ? `${i}.` : '', async () => {
        const id = await addressedRecordId(tx, principal, BUSINESS_ROLE, data);
        let counts = { unassignedUsers: 0, removedRoles: 0, removedGroups: 0 };
        if (id !== undefined) {
          await guardBusinessRoles(tx, principal, [id]);
          // Deleting it would unassign it from him: no assignment of his own (docs/permissions.md).
          await guardNotOwnBusinessRole(tx, principal, id);
          await lockNamed(tx, principal, BUSINESS_ROLE, id);
          counts = {
            unassignedUsers: await unlinkEverywhere(tx, principal, 'userBusinessRoles', id),
            removedRoles: await store.removeAllLinksOf(tx, pid, 'businessRoleRoles', 'owner', id),
            removedGroups: await store.removeAllLinksOf(tx, pid, 'businessRoleGroups', 'owner', id),
          };
        }
        const [deleted] = await deleteRecords(store.withinTx(db, tx), principal, BUSINESS_ROLE, [data]);
        return { ...deleted, ...counts };
      });
      out.push(row);
    }
    return out;
  });
}
