// SQL of the account manager that the generic engine does not cover: the link tables (roles, group
// memberships and business roles of users; roles and groups of business roles), the password hash,
// and the look-ups behind ids and names. Every statement is scoped by partition_id; table and column
// names come only from the LINKS constant below, through `ident`.

import type { Db, Queryable, Tx } from '../../db/db.ts';
import { ident } from '../../db/sql.ts';
import { inTransaction } from '../../db/views.ts';

/**
 * The engine's operations open their own transaction on a `Db`. Inside a request that already holds
 * one (a user and its password hash, a group and its memberships), this hands them the open
 * transaction instead, so the whole request commits or rolls back as one.
 */
export function withinTx(db: Db, tx: Tx): Db {
  return inTransaction(db, tx);
}

// ---------------------------------------------------------------------------------------------
// Link tables

/** Each link table: its owner column (a user or a business role) and its member column. */
const LINKS = {
  userRoles: { table: 'user_roles', owner: 'user_id', member: 'role', memberType: 'text' },
  userGroups: { table: 'user_group_members', owner: 'user_id', member: 'group_id', memberType: 'bigint' },
  userBusinessRoles: {
    table: 'user_business_roles',
    owner: 'user_id',
    member: 'business_role_id',
    memberType: 'bigint',
  },
  businessRoleRoles: {
    table: 'business_role_roles',
    owner: 'business_role_id',
    member: 'role',
    memberType: 'text',
  },
  businessRoleGroups: {
    table: 'business_role_groups',
    owner: 'business_role_id',
    member: 'group_id',
    memberType: 'bigint',
  },
} as const;

export type Link = keyof typeof LINKS;
/** A role name, or the id of a group or business role. */
export type Member = string | number;

const castOf = (link: Link): string => (LINKS[link].memberType === 'text' ? 'text[]' : 'bigint[]');

/** Links every owner to every member; answers the owners that gained a link (already linked: no-op). */
export async function addLinks(
  q: Queryable,
  partitionId: number,
  link: Link,
  owners: readonly number[],
  members: readonly Member[],
): Promise<Set<number>> {
  if (owners.length === 0 || members.length === 0) return new Set();
  const l = LINKS[link];
  const r = await q.query<{ owner: number }>(
    `INSERT INTO ${ident(l.table)} (partition_id, ${ident(l.owner)}, ${ident(l.member)})
     SELECT $1::bigint, o.v, m.v FROM unnest($2::bigint[]) AS o(v) CROSS JOIN unnest($3::${castOf(link)}) AS m(v)
     ON CONFLICT DO NOTHING RETURNING ${ident(l.owner)} AS owner`,
    [partitionId, owners, members],
  );
  return new Set(r.rows.map((row) => Number(row.owner)));
}

/** Removes the links of the owners to the members; answers the owners that lost a link. */
export async function removeLinks(
  q: Queryable,
  partitionId: number,
  link: Link,
  owners: readonly number[],
  members: readonly Member[],
): Promise<Set<number>> {
  if (owners.length === 0 || members.length === 0) return new Set();
  const l = LINKS[link];
  const r = await q.query<{ owner: number }>(
    `DELETE FROM ${ident(l.table)}
      WHERE partition_id = $1 AND ${ident(l.owner)} = ANY($2::bigint[]) AND ${ident(l.member)} = ANY($3::${castOf(link)})
      RETURNING ${ident(l.owner)} AS owner`,
    [partitionId, owners, members],
  );
  return new Set(r.rows.map((row) => Number(row.owner)));
}

/**
 * Removes every link whose `side` is `id` (a deleted group or business role as the member, a deleted
 * business role as the owner); answers how many.
 */
export async function removeAllLinksOf(
  q: Queryable,
  partitionId: number,
  link: Link,
  side: 'member' | 'owner',
  id: Member,
): Promise<number> {
  const l = LINKS[link];
  const r = await q.query(
    `DELETE FROM ${ident(l.table)} WHERE partition_id = $1 AND ${ident(l[side])} = $2`,
    [partitionId, id],
  );
  return r.rowCount;
}

/** The owners linked to `member` (the users or business roles holding a group, say). */
export async function ownersOf(
  q: Queryable,
  partitionId: number,
  link: Link,
  member: Member,
): Promise<number[]> {
  const l = LINKS[link];
  const r = await q.query<{ owner: number }>(
    `SELECT ${ident(l.owner)} AS owner FROM ${ident(l.table)} WHERE partition_id = $1 AND ${ident(l.member)} = $2`,
    [partitionId, member],
  );
  return r.rows.map((row) => Number(row.owner));
}

/** Copies every link of `from` to each of `to` (copyroles, copyuser); answers the owners that gained one. */
export async function copyLinks(
  q: Queryable,
  partitionId: number,
  link: Link,
  from: number,
  to: readonly number[],
): Promise<Set<number>> {
  if (to.length === 0) return new Set();
  const l = LINKS[link];
  const r = await q.query<{ owner: number }>(
    `INSERT INTO ${ident(l.table)} (partition_id, ${ident(l.owner)}, ${ident(l.member)})
     SELECT s.partition_id, o.v, s.${ident(l.member)} FROM ${ident(l.table)} s CROSS JOIN unnest($3::bigint[]) AS o(v)
      WHERE s.partition_id = $1 AND s.${ident(l.owner)} = $2
     ON CONFLICT DO NOTHING RETURNING ${ident(l.owner)} AS owner`,
    [partitionId, from, to],
  );
  return new Set(r.rows.map((row) => Number(row.owner)));
}

/** Owners that changed get a new version, like any other change of a record; answers the new versions. */
export async function bumpVersions(
  q: Queryable,
  partitionId: number,
  table: 'users' | 'business_roles',
  ids: ReadonlySet<number>,
  by: number,
): Promise<Map<number, number>> {
  if (ids.size === 0) return new Map();
  const r = await q.query<{ id: number; version: number }>(
    `UPDATE ${ident(table)} SET version = version + 1, last_update_at = now(), last_update_by = $3
      WHERE partition_id = $1 AND id = ANY($2::bigint[]) RETURNING id, version`,
    [partitionId, [...ids], by],
  );
  return new Map(r.rows.map((row) => [Number(row.id), row.version]));
}

// ---------------------------------------------------------------------------------------------
// Reading assignments

export interface NamedRow {
  readonly id: number;
  readonly typedId: string;
  readonly uniqueName: string;
  readonly label: string | null;
}

/** Direct roles of each owner (users or business roles), sorted. */
export async function rolesOf(
  q: Queryable,
  partitionId: number,
  link: 'userRoles' | 'businessRoleRoles',
  owners: readonly number[],
): Promise<Map<number, string[]>> {
  const l = LINKS[link];
  const r = await q.query<{ owner: number; role: string }>(
    `SELECT ${ident(l.owner)} AS owner, role FROM ${ident(l.table)}
      WHERE partition_id = $1 AND ${ident(l.owner)} = ANY($2::bigint[]) ORDER BY role COLLATE "C"`,
    [partitionId, owners],
  );
  return groupBy(owners, r.rows, (row) => row.role);
}

const NAMED_TABLE = {
  userGroups: 'user_groups',
  userBusinessRoles: 'business_roles',
  businessRoleGroups: 'user_groups',
} as const;
const CODE_OF = { user_groups: 'UG', business_roles: 'BR' } as const;

/** Groups or business roles of each owner (by link), as records, sorted by name. */
export async function namedOf(
  q: Queryable,
  partitionId: number,
  link: keyof typeof NAMED_TABLE,
  owners: readonly number[],
): Promise<Map<number, NamedRow[]>> {
  const l = LINKS[link];
  const table = NAMED_TABLE[link];
  const r = await q.query<NamedRow & { owner: number }>(
    `SELECT k.${ident(l.owner)} AS owner, n.id, n.id::text || '.${CODE_OF[table]}' AS "typedId",
            n.unique_name AS "uniqueName", n.label
       FROM ${ident(l.table)} k JOIN ${ident(table)} n ON n.partition_id = k.partition_id AND n.id = k.${ident(l.member)}
      WHERE k.partition_id = $1 AND k.${ident(l.owner)} = ANY($2::bigint[]) ORDER BY n.unique_name COLLATE "C"`,
    [partitionId, owners],
  );
  return groupBy(owners, r.rows, ({ owner: _owner, ...row }) => row);
}

function groupBy<R extends { owner: number }, T>(
  owners: readonly number[],
  rows: readonly R[],
  map: (row: R) => T,
): Map<number, T[]> {
  const out = new Map<number, T[]>(owners.map((o) => [o, []]));
  for (const row of rows) out.get(Number(row.owner))?.push(map(row));
  return out;
}

/** What a user holds through business roles: each business role with its roles and groups. */
export interface BusinessRoleContent extends NamedRow {
  readonly roles: string[];
  readonly groups: NamedRow[];
}

export async function businessRolesWithContent(
  q: Queryable,
  partitionId: number,
  businessRoleIds: readonly number[],
): Promise<BusinessRoleContent[]> {
  const r = await q.query<NamedRow>(
    `SELECT id, id::text || '.BR' AS "typedId", unique_name AS "uniqueName", label FROM business_roles
      WHERE partition_id = $1 AND id = ANY($2::bigint[]) ORDER BY unique_name COLLATE "C"`,
    [partitionId, businessRoleIds],
  );
  const ids = r.rows.map((b) => b.id);
  const roles = await rolesOf(q, partitionId, 'businessRoleRoles', ids);
  const groups = await namedOf(q, partitionId, 'businessRoleGroups', ids);
  return r.rows.map((b) => ({ ...b, roles: roles.get(b.id) ?? [], groups: groups.get(b.id) ?? [] }));
}

/** Users holding a business role or a group directly (audit of a business role). */
export async function usersOfBusinessRole(
  q: Queryable,
  partitionId: number,
  businessRoleId: number,
): Promise<{ id: number; typedId: string; loginName: string }[]> {
  const r = await q.query<{ id: number; typedId: string; loginName: string }>(
    `SELECT u.id, u.id::text || '.U' AS "typedId", u.login_name AS "loginName"
       FROM user_business_roles ub JOIN users u ON u.partition_id = ub.partition_id AND u.id = ub.user_id
      WHERE ub.partition_id = $1 AND ub.business_role_id = $2 ORDER BY u.login_name COLLATE "C"`,
    [partitionId, businessRoleId],
  );
  return r.rows;
}

/** The users among `ids` who hold ADMIN, directly or through a business role. */
export async function administrators(
  q: Queryable,
  partitionId: number,
  ids: readonly number[],
): Promise<number[]> {
  if (ids.length === 0) return [];
  const r = await q.query<{ id: number }>(
    `SELECT user_id AS id FROM user_roles WHERE partition_id = $1 AND user_id = ANY($2::bigint[]) AND role = 'ADMIN'
     UNION
     SELECT ub.user_id FROM user_business_roles ub
       JOIN business_role_roles brr ON brr.partition_id = ub.partition_id AND brr.business_role_id = ub.business_role_id
      WHERE ub.partition_id = $1 AND ub.user_id = ANY($2::bigint[]) AND brr.role = 'ADMIN'`,
    [partitionId, ids],
  );
  return r.rows.map((row) => Number(row.id));
}

// ---------------------------------------------------------------------------------------------
// Users, groups and business roles by id or name

export interface UserRow {
  readonly id: number;
  readonly typedId: string;
  readonly loginName: string;
}

/** The users of this partition among `ids`; `lock` (in a transaction) serializes changes to them. */
export async function usersById(
  q: Queryable,
  partitionId: number,
  ids: readonly number[],
  lock = false,
): Promise<Map<number, UserRow>> {
  const r = await q.query<UserRow>(
    `SELECT id, id::text || '.U' AS "typedId", login_name AS "loginName" FROM users
      WHERE partition_id = $1 AND id = ANY($2::bigint[])${lock ? ' FOR UPDATE' : ''}`,
    [partitionId, ids],
  );
  return new Map(r.rows.map((u) => [Number(u.id), u]));
}

export async function loginAndHash(
  q: Queryable,
  partitionId: number,
  id: number,
): Promise<{ loginName: string; hash: string | null } | undefined> {
  const r = await q.query<{ loginName: string; hash: string | null }>(
    'SELECT login_name AS "loginName", password_hash AS hash FROM users WHERE partition_id = $1 AND id = $2',
    [partitionId, id],
  );
  return r.rows[0];
}

/**
 * Groups or business roles by id or unique name; `lock` (in a transaction: FOR SHARE) keeps them from
 * being deleted while they are being assigned; `'update'` (FOR UPDATE) for a row the transaction
 * then changes itself — two holders of a share lock both upgrading it deadlock.
 */
export async function namedByRef(
  q: Queryable,
  partitionId: number,
  table: 'user_groups' | 'business_roles',
  ids: readonly number[],
  names: readonly string[],
  lock: boolean | 'update' = false,
): Promise<NamedRow[]> {
  const r = await q.query<NamedRow>(
    `SELECT id, id::text || '.${CODE_OF[table]}' AS "typedId", unique_name AS "uniqueName", label FROM ${ident(table)}
      WHERE partition_id = $1 AND (id = ANY($2::bigint[]) OR unique_name = ANY($3::text[]))${lock === 'update' ? ' FOR UPDATE' : lock ? ' FOR SHARE' : ''}`,
    [partitionId, ids, names],
  );
  return r.rows.map((row) => ({ ...row, id: Number(row.id) }));
}

/** A unique name by id (an option or group addressed by typedId). */
export async function uniqueNameById(
  q: Queryable,
  partitionId: number,
  table: 'advanced_config' | 'user_groups' | 'business_roles',
  id: number,
): Promise<string | undefined> {
  const r = await q.query<{ name: string }>(
    `SELECT unique_name AS name FROM ${ident(table)} WHERE partition_id = $1 AND id = $2`,
    [partitionId, id],
  );
  return r.rows[0]?.name;
}

// ---------------------------------------------------------------------------------------------
// Passwords

/**
 * Sets a user's password hash. A change (`bumpEpoch`) also bumps the token epoch, which invalidates
 * every token issued before (as admin/partitions.ts setUserPassword does for the CLI); the first
 * password of a user being created needs neither a new epoch nor a new version.
 */
export async function setPasswordHash(
  q: Queryable,
  partitionId: number,
  id: number,
  hash: string,
  change: { by: number | null } | null,
): Promise<number | undefined> {
  const r = change
    ? await q.query<{ version: number }>(
        `UPDATE users SET password_hash = $3, token_epoch = token_epoch + 1, version = version + 1,
                last_update_at = now(), last_update_by = $4
          WHERE partition_id = $1 AND id = $2 RETURNING version`,
        [partitionId, id, hash, change.by],
      )
    : await q.query<{ version: number }>(
        'UPDATE users SET password_hash = $3 WHERE partition_id = $1 AND id = $2 RETURNING version',
        [partitionId, id, hash],
      );
  const row = r.rows[0];
  return row === undefined ? undefined : Number(row.version);
}
