// Account services: the login answer, users (add/update/delete/fetchusers/copyuser), passwords,
// the deletes of user groups and business roles with their cleanup, and the writes of advanced
// configuration options. Each starts with the permission, then the domain rules, then the engine
// (inside the request's one transaction, through `withinTx`) and the link tables of ./store.ts.
// Assignments, role and group reads and the audit live in ./assignments.ts.

import { can, type Principal } from '../../access/access.ts';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import { verifyPassword, dummyHash, hashPassword } from '../../auth/password.ts';
import { clearFailures, takeAttempt } from '../../auth/login-guard.ts';
import type { Config } from '../../config.ts';
import type { Db, Queryable } from '../../db/db.ts';
import {
  addRecords,
  deleteRecords,
  fetchRecords,
  integrateRecords,
  requireAccess,
  updateRecords,
  type FetchBody,
  type FetchResult,
  type UpdateItem,
} from '../../engine/crud.ts';
import { findType, type TypeDef } from '../../engine/registry.ts';
import { coerceValue } from '../../engine/values.ts';
import { AppError, notFound, prefixed, validationError } from '../../http/errors.ts';
import { RELEASE } from '../../release.ts';
import { guardAccounts, guardBusinessRoles, guardRoles } from './guards.ts';
import { checkPassword } from './password-policy.ts';
import { addressedId, addressedRecordId, userIdOf } from './refs.ts';
import * as store from './store.ts';
import { recordHistory } from '../../engine/history.ts';
import { workflowTieOf } from '../workflows/store.ts';

type Obj = Record<string, unknown>;
type Row = Record<string, unknown>;

export type PasswordSettings = Pick<Config, 'scryptCost' | 'loginMaxFailures' | 'loginLockoutMinutes'>;

function registered(code: string): TypeDef {
  const type = findType(code);
  if (!type) throw new Error(`type ${code} is not registered`);
  return type;
}

export const USER = registered('U');
export const GROUP = registered('UG');
export const BUSINESS_ROLE = registered('BR');
const OPTION = registered('ACO');

/** What `accountmanager.fetchusers` shows a caller without USER_FETCH: enough to pick a user. */
const REDUCED_FIELDS: ReadonlySet<string> = new Set(['id', 'loginName', 'firstName', 'lastName']);

/**
 * U as a caller without USER_FETCH sees it. Filters and result fields resolve against this view, so
 * a filter on `email` is an unknown field rather than a way to probe hidden values.
 */
const REDUCED_USER: TypeDef = {
  ...USER,
  fields: USER.fields.filter((f) => REDUCED_FIELDS.has(f.name)),
  access: { fetch: AUTHENTICATED, write: USER.access.write },
};

export async function loginInfo(db: Db, principal: Principal, interfaceRelease: string) {
  const r = await db.query<{
    id: number;
    loginName: string;
    firstName: string | null;
    lastName: string | null;
    email: string | null;
    activated: boolean;
  }>(
    `SELECT id, login_name AS "loginName", first_name AS "firstName", last_name AS "lastName", email, activated
       FROM users WHERE partition_id = $1 AND id = $2`,
    [principal.partitionId, principal.userId],
  );
  const user = r.rows[0];
  if (!user) throw notFound('User', 'userId');
  return {
    ...user,
    typedId: `${user.id}.U`,
    roles: principal.roles,
    extendedData: {
      // The interface release clients gate features by (INTERFACE_RELEASE); our own version apart.
      Release: interfaceRelease,
      ratecardVersion: RELEASE,
      partition: principal.partition,
      // What this credential may use: a token's permission list narrows the user's permissions.
      permissions: [...principal.permissions].filter((p) => can(principal, p)).sort(),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Users

export function fetchUsers(
  db: Db,
  principal: Principal,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  const view = can(principal, 'USER_FETCH') ? USER : REDUCED_USER;
  return fetchRecords(db, principal, view, body, maxPageSize);
}

/** Fields that look like assignments: refused with the operation to use instead. */
const ASSIGNMENT_FIELDS: Readonly<Record<string, string>> = {
  roles: 'accountmanager.assignrole',
  groups: 'accountmanager.assigngroup',
  userGroups: 'accountmanager.assigngroup',
  businessRoles: 'accountmanager.assignbusinessrole',
};

function refuseAssignments(data: Obj): void {
  for (const [field, operation] of Object.entries(ASSIGNMENT_FIELDS)) {
    if (field in data)
      throw validationError(field, `assign ${field} with /${operation}, not with a user write`);
  }
}

/**
 * `/add/U`: each record may carry `password`, which is checked against the policy, hashed with scrypt
 * and stored beside the record — never a field, never in an answer. Without one the user cannot log
 * in with Basic credentials until an administrator sets a password (changepassword/{userId}).
 */
export async function addUsers(
  db: Db,
  cfg: PasswordSettings,
  principal: Principal,
  items: readonly Obj[],
): Promise<Row[]> {
  requireAccess(principal, USER.access.write);
  const prepared: { record: Obj; hash: string | undefined }[] = [];
  for (const [i, item] of items.entries()) {
    // Errors of a batch's element name it: `1.password`.
    await prefixed(items.length > 1 ? `${i}.` : '', async () => {
      refuseAssignments(item);
      const { password, ...record } = item;
      let hash: string | undefined;
      if (password !== undefined && password !== null) {
        hash = await hashPassword(checkPassword(password, record.loginName, 'password'), cfg.scryptCost);
      }
      prepared.push({ record, hash });
    });
  }
  return db.transaction(async (tx) => {
    const rows = await addRecords(
      store.withinTx(db, tx),
      principal,
      USER,
      prepared.map((p) => p.record),
    );
    for (const [i, row] of rows.entries()) {
      const hash = prepared[i]!.hash;
      if (hash !== undefined)
        await store.setPasswordHash(tx, principal.partitionId, Number(row.id), hash, null);
    }
    return rows;
  });
}

/** `/update/U`: no roles, groups or password through here; nobody deactivates himself. */
export async function updateUsers(
  db: Db,
  principal: Principal,
  items: readonly UpdateItem[],
  returnOld: boolean,
): Promise<Row[]> {
  requireAccess(principal, USER.access.write);
  // An error of one element of a batch names it (`1.activated`), as the engine's do.
  const at = (i: number) => (items.length > 1 ? `${i}.` : '');
  for (const [i, { data }] of items.entries()) {
    await prefixed(at(i), () => {
      refuseAssignments(data);
      if ('password' in data)
        throw validationError('password', 'change passwords with /accountmanager.changepassword');
      return Promise.resolve();
    });
  }
  return db.transaction(async (tx) => {
    for (const [i, { data }] of items.entries()) {
      await prefixed(at(i), async () => {
        const id = await addressedRecordId(tx, principal, USER, data);
        if (id === undefined) return; // the engine answers the 404 or -4 of a bad address
        await guardAccounts(tx, principal, [id]);
        if (id === principal.userId && coerceValue('boolean', data.activated) === false) {
          throw validationError('activated', 'you cannot deactivate yourself');
        }
      });
    }
    return updateRecords(store.withinTx(db, tx), principal, USER, items, returnOld);
  });
}

/** `/delete/U`: nobody deletes himself; roles, memberships and tokens go with the user (cascade). */
export async function deleteUsers(db: Db, principal: Principal, items: readonly Obj[]): Promise<Row[]> {
  requireAccess(principal, USER.access.write);
  return db.transaction(async (tx) => {
    for (const [i, data] of items.entries()) {
      await prefixed(items.length > 1 ? `${i}.` : '', async () => {
        const id = await addressedRecordId(tx, principal, USER, data);
        if (id === undefined) return;
        if (id === principal.userId) throw validationError('typedId', 'you cannot delete yourself');
        await guardAccounts(tx, principal, [id]);
        // The history of workflows and delegations names their users: those are deactivated instead.
        const tie = await workflowTieOf(tx, principal.partitionId, id);
        if (tie !== undefined)
          throw new AppError(
            'CONFLICT',
            `User ${id}.U ${tie}: deactivate the user (activated false) instead; the history keeps his name`,
          );
      });
    }
    return deleteRecords(store.withinTx(db, tx), principal, USER, items);
  });
}

export interface CopyUserData {
  readonly loginName: string;
  readonly password?: string;
  readonly firstName?: string | null;
  readonly lastName?: string | null;
  readonly email?: string | null;
  readonly activated?: boolean;
}

/**
 * `copyuser/{userId}`: a new user with the source's direct roles, direct groups and business roles.
 * Name, e-mail and password are personal and never copied; the body gives the new login name and may
 * give the new user's own name, e-mail and password.
 */
export async function copyUser(
  db: Db,
  cfg: PasswordSettings,
  principal: Principal,
  sourceText: string,
  data: CopyUserData,
): Promise<Row> {
  requireAccess(principal, USER.access.write);
  const sourceId = userIdOf(sourceText, 'userId');
  const { password, ...record } = data;
  const hash =
    password === undefined
      ? undefined
      : await hashPassword(checkPassword(password, record.loginName, 'password'), cfg.scryptCost);
  return db.transaction(async (tx) => {
    const pid = principal.partitionId;
    const source = (await store.usersById(tx, pid, [sourceId], true)).get(sourceId);
    if (!source) throw notFound(`User ${sourceText}`, 'userId');
    // A copy of an administrator would be one: copying grants ADMIN.
    if (!principal.admin && (await store.administrators(tx, pid, [sourceId])).length > 0) {
      throw new AppError('FORBIDDEN', 'Only an ADMIN may copy a user who holds ADMIN');
    }
    // ... and so would a copy of any role: only what the caller may grant himself.
    guardRoles(principal, (await store.rolesOf(tx, pid, 'userRoles', [sourceId])).get(sourceId) ?? []);
    const sourceBusinessRoles = (await store.namedOf(tx, pid, 'userBusinessRoles', [sourceId])).get(sourceId);
    await guardBusinessRoles(
      tx,
      principal,
      (sourceBusinessRoles ?? []).map((b) => b.id),
    );
    const [row] = await addRecords(store.withinTx(db, tx), principal, USER, [record]);
    const id = Number(row!.id);
    if (hash !== undefined) await store.setPasswordHash(tx, pid, id, hash, null);
    for (const link of ['userRoles', 'userGroups', 'userBusinessRoles'] as const) {
      await store.copyLinks(tx, pid, link, sourceId, [id]);
    }
    const roles = (await store.rolesOf(tx, pid, 'userRoles', [id])).get(id) ?? [];
    const groups = (await store.namedOf(tx, pid, 'userGroups', [id])).get(id) ?? [];
    const businessRoles = (await store.namedOf(tx, pid, 'userBusinessRoles', [id])).get(id) ?? [];
    // The copied assignments are a change of the new user, recorded like any assignment.
    const copied = {
      roles,
      groups: groups.map((g) => g.uniqueName),
      businessRoles: businessRoles.map((b) => b.uniqueName),
    };
    const changes = Object.fromEntries(
      Object.entries(copied)
        .filter(([, list]) => list.length > 0)
        .map(([kind, list]) => [kind, { old: [], new: list }]),
    );
    let version = Number(row!.version);
    if (Object.keys(changes).length > 0) {
      version = (await store.bumpVersions(tx, pid, 'users', new Set([id]), principal.userId)).get(id)!;
      await recordHistory(tx, principal, [
        { typeCode: 'U', recordId: id, businessKey: record.loginName, action: 'UPDATE', changes, version },
      ]);
    }
    return {
      ...row,
      version,
      copiedFrom: source.typedId,
      ...copied,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Passwords

export interface PasswordChanged {
  readonly id: number;
  readonly typedId: string;
  readonly loginName: string;
  readonly passwordChanged: true;
}

async function storePassword(
  db: Db,
  principal: Principal,
  id: number,
  loginName: string,
  hash: string,
  unlock: boolean,
): Promise<PasswordChanged> {
  const done = await db.transaction(async (tx) => {
    const version = await store.setPasswordHash(tx, principal.partitionId, id, hash, {
      by: principal.userId,
    });
    if (version === undefined) return false;
    if (unlock) await clearFailures(tx, principal.partitionId, loginName);
    // Record history keeps the fact of the change, never the secret.
    await recordHistory(tx, principal, [
      {
        typeCode: 'U',
        recordId: id,
        businessKey: loginName,
        action: 'UPDATE',
        changes: { password: { old: null, new: '(changed)' } },
        version,
      },
    ]);
    return true;
  });
  if (!done) throw notFound(`User ${id}`, 'userId');
  return { id, typedId: `${id}.U`, loginName, passwordChanged: true };
}

/**
 * `changepassword/{userId}`: an administrator sets another user's password (USER_EDIT), not his own;
 * it ends the user's lock-out.
 */
export async function changeUserPassword(
  db: Db,
  cfg: PasswordSettings,
  principal: Principal,
  userText: string,
  newPassword: string,
): Promise<PasswordChanged> {
  requireAccess(principal, 'USER_EDIT');
  const id = userIdOf(userText, 'userId');
  // One's own password goes through changepassword, which asks for the current one unless the
  // request carried it: by this path a token alone (a stolen or one-time one) took the account over.
  if (id === principal.userId) {
    throw validationError(
      'userId',
      'is your own account: change your password with /accountmanager.changepassword (oldPassword needed unless authenticated by Basic)',
    );
  }
  const target = await store.loginAndHash(db, principal.partitionId, id);
  if (!target) throw notFound(`User ${userText}`, 'userId');
  await guardAccounts(db, principal, [id]);
  checkPassword(newPassword, target.loginName, 'data.newPassword');
  // A user locked out by failed logins gets in with the password his administrator set.
  const hash = await hashPassword(newPassword, cfg.scryptCost);
  return storePassword(db, principal, id, target.loginName, hash, true);
}

/**
 * `changepassword`: the caller's own. Proof of knowing the current password is needed unless the
 * request itself carried it (Basic): a stolen session token alone must not take over the account.
 * Wrong old passwords count as failed logins, so the lock-out applies here too.
 */
export async function changeOwnPassword(
  db: Db,
  cfg: PasswordSettings,
  principal: Principal,
  data: { oldPassword?: string; newPassword: string },
): Promise<PasswordChanged> {
  const pid = principal.partitionId;
  const me = await store.loginAndHash(db, pid, principal.userId);
  if (!me) throw notFound('User', 'userId');
  if (data.oldPassword === undefined && principal.via !== 'basic') {
    throw validationError(
      'data.oldPassword',
      'is required unless the request authenticates with Basic credentials',
    );
  }
  if (data.oldPassword !== undefined) {
    const attempt = await takeAttempt(db, pid, me.loginName, cfg);
    if (attempt.locked) throw new AppError('LOCKED_OUT');
    let ok = false;
    try {
      ok = await verifyPassword(data.oldPassword, me.hash ?? (await dummyHash(cfg.scryptCost)));
    } finally {
      await attempt.done(ok ? 'success' : 'failure');
    }
    if (!ok) throw validationError('data.oldPassword', 'is not your current password');
  }
  checkPassword(data.newPassword, me.loginName, 'data.newPassword');
  return storePassword(
    db,
    principal,
    principal.userId,
    me.loginName,
    await hashPassword(data.newPassword, cfg.scryptCost),
    false,
  );
}

// ---------------------------------------------------------------------------------------------
// Advanced configuration options

/**
 * The registry's rule for `externalJWTConfiguration` reads the option's name from the written data;
 * an update addressed by typedId does not carry it, so it is completed from the stored row first.
 */
async function withOptionName(q: Queryable, principal: Principal, data: Obj): Promise<Obj> {
  if (data.uniqueName !== undefined) return data;
  const id = addressedId(data, OPTION.code);
  const name =
    id === undefined
      ? undefined
      : await store.uniqueNameById(q, principal.partitionId, 'advanced_config', id);
  return name === undefined ? data : { ...data, uniqueName: name };
}

export async function updateOptions(
  db: Db,
  principal: Principal,
  items: readonly UpdateItem[],
  returnOld: boolean,
): Promise<Row[]> {
  requireAccess(principal, OPTION.access.write);
  return db.transaction(async (tx) => {
    const completed: UpdateItem[] = [];
    for (const item of items)
      completed.push({ ...item, data: await withOptionName(tx, principal, item.data) });
    return updateRecords(store.withinTx(db, tx), principal, OPTION, completed, returnOld);
  });
}

export async function integrateOptions(
  db: Db,
  principal: Principal,
  items: readonly Obj[],
  returnOld: boolean,
): Promise<Row[]> {
  requireAccess(principal, OPTION.access.write);
  return db.transaction(async (tx) => {
    const completed: Obj[] = [];
    for (const data of items) completed.push(await withOptionName(tx, principal, data));
    return integrateRecords(store.withinTx(db, tx), principal, OPTION, completed, returnOld);
  });
}
