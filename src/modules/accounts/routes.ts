// The account manager: `/login/extended`, every `/accountmanager.*` operation on users, user groups,
// business roles and passwords, and the user writes `/add/U`, `/update/U`, `/delete/U`. These and the
// refusals below are static routes, which Fastify prefers to the general `/:typeCode` ones, so the
// general operations never see a write of U or a delete of UG/BR. Handlers are one service call;
// the rules live in ./service.ts and ./assignments.ts. Body shapes are documented in docs/permissions.md.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { withdrawIssuedSession } from '../../auth/authenticate.ts';
import { AUTHENTICATED, type RouteAccess } from '../../access/catalogue.ts';
import { ok, envelopeSchema, type Envelope } from '../../http/envelope.ts';
import { validationError } from '../../http/errors.ts';
import type { FetchBody } from '../../engine/crud.ts';
import { pageOfList } from '../../engine/paging.ts';
import { fetchBodySchema, itemsOf, recordReadBody, updateItemsOf } from '../general/routes.ts';
import { deleteBusinessRoles, deleteGroups } from './deletions.ts';
import {
  assignToBusinessRole,
  assignToUsers,
  audit,
  copyRoles,
  fetchBusinessRoleGroups,
  fetchBusinessRoleRoles,
  fetchUserBusinessRoles,
  fetchUserGroups,
  fetchUserRoles,
  type AssignKind,
} from './assignments.ts';
import {
  addUsers,
  changeOwnPassword,
  changeUserPassword,
  copyUser,
  deleteUsers,
  fetchUsers,
  integrateOptions,
  loginInfo,
  updateOptions,
  updateUsers,
  type CopyUserData,
} from './service.ts';
import {
  answer,
  assignBody,
  assignedBusinessRole,
  assignedUser,
  auditReport,
  copiedUser,
  copyRolesBody,
  copyUserBody,
  deletedBusinessRole,
  deletedGroup,
  effectiveGroup,
  effectiveRole,
  listAnswer,
  listBody,
  namedRef,
  optionRecord,
  ownPasswordBody,
  page,
  passwordChanged,
  pathParams,
  recordsBody,
  userPasswordBody,
  userRecord,
  type AssignBody,
  type CopyRolesBody,
  type OwnPasswordBody,
  type UserPasswordBody,
} from './schemas.ts';

const loginSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    typedId: { type: 'string' },
    loginName: { type: 'string' },
    firstName: { type: ['string', 'null'] },
    lastName: { type: ['string', 'null'] },
    email: { type: ['string', 'null'] },
    activated: { type: 'boolean' },
    roles: { type: 'array', items: { type: 'string' } },
    extendedData: {
      type: 'object',
      properties: {
        Release: { type: 'string' },
        ratecardVersion: { type: 'string' },
        partition: { type: 'string' },
        permissions: { type: 'array', items: { type: 'string' } },
      },
    },
  },
};

const ASSIGN: readonly { path: string; kind: AssignKind }[] = [
  { path: 'assignrole', kind: 'roles' },
  { path: 'assigngroup', kind: 'groups' },
  { path: 'assignbusinessrole', kind: 'businessRoles' },
];

/** General operations that a type refuses, and the operation to use instead. */
const REFUSED: readonly { path: string; access: RouteAccess; use: string }[] = [
  ...['', '/batch', '/batch/forcefilter'].flatMap((suffix) => [
    { path: `/delete/UG${suffix}`, access: 'USER_EDIT' as const, use: '/accountmanager.deletegroup' },
    { path: `/delete/BR${suffix}`, access: 'USER_EDIT' as const, use: '/accountmanager.deletebusinessrole' },
  ]),
  { path: '/delete/U/batch', access: 'USER_EDIT', use: '/delete/U (one user at a time)' },
  { path: '/delete/U/batch/forcefilter', access: 'USER_EDIT', use: '/delete/U (one user at a time)' },
  { path: '/integrate/U', access: 'USER_EDIT', use: '/add/U and /update/U' },
  { path: '/integrate/U/returnolddata', access: 'USER_EDIT', use: '/add/U and /update/U' },
  { path: '/resetcolumn/U/:columnName', access: 'USER_EDIT', use: '/update/U' },
];

const param = (req: FastifyRequest, name: string): string => (req.params as Record<string, string>)[name]!;

/** A list read by its path, paged as the body asks. */
function listed<T>(req: FastifyRequest, rows: readonly T[]): Envelope {
  const p = pageOfList(rows, req.body, req.server.config.maxPageSize);
  return ok(req, p.rows, p);
}

export function accountRoutes(app: FastifyInstance): void {
  const { db, config } = app;
  const route = (access: RouteAccess, summary: string, schema: object, tags = ['accounts']) => ({
    config: { access },
    schema: { summary, tags, ...schema },
  });

  // `/login` is where clients of the interface log in; it answers exactly as `/login/extended`.
  for (const path of ['/login', '/login/extended']) {
    app.post(
      path,
      {
        config: { access: AUTHENTICATED },
        schema: {
          summary: 'Log in with Basic credentials; sets the session cookie',
          tags: ['auth'],
          response: { 200: envelopeSchema(loginSchema) },
        },
      },
      async (req) => ok(req, [await loginInfo(req.server.db, req.principal!, config.interfaceRelease)]),
    );
  }

  // --- users ------------------------------------------------------------------------------------
  app.post(
    '/accountmanager.fetchusers',
    route(AUTHENTICATED, 'Users (reduced to id, loginName, firstName, lastName without USER_FETCH)', {
      body: fetchBodySchema,
      ...page(userRecord),
    }),
    async (req) => {
      const r = await fetchUsers(
        db,
        req.principal!,
        (req.body as FetchBody | null) ?? {},
        config.maxPageSize,
      );
      return ok(req, r.rows, r);
    },
  );
  app.post(
    '/add/U',
    route('USER_EDIT', 'Create users; `password` is hashed, never answered', {
      body: recordsBody,
      ...answer(userRecord),
    }),
    async (req) => ok(req, await addUsers(db, config, req.principal!, itemsOf(req.body))),
  );
  for (const returnOld of [false, true]) {
    app.post(
      `/update/U${returnOld ? '/returnolddata' : ''}`,
      route('USER_EDIT', 'Update a user (no roles, groups or password)', {
        body: recordsBody,
        ...answer(userRecord),
      }),
      async (req) => ok(req, await updateUsers(db, req.principal!, updateItemsOf(req.body), returnOld)),
    );
  }
  app.post(
    '/delete/U',
    route('USER_EDIT', 'Delete users (never oneself)', { body: recordsBody, ...answer(userRecord) }),
    async (req) => ok(req, await deleteUsers(db, req.principal!, itemsOf(req.body))),
  );
  app.post(
    '/accountmanager.copyuser/:userId',
    route('USER_EDIT', 'A new user with the roles, groups and business roles of another', {
      params: pathParams('userId'),
      body: copyUserBody,
      ...answer(copiedUser),
    }),
    async (req) =>
      ok(req, [
        await copyUser(
          db,
          config,
          req.principal!,
          param(req, 'userId'),
          (req.body as { data: CopyUserData }).data,
        ),
      ]),
  );

  // --- passwords --------------------------------------------------------------------------------
  app.post(
    '/accountmanager.changepassword',
    route(AUTHENTICATED, "The caller's password (oldPassword needed unless authenticated by Basic)", {
      body: ownPasswordBody,
      ...answer(passwordChanged),
    }),
    async (req, reply) => {
      const changed = await changeOwnPassword(db, config, req.principal!, (req.body as OwnPasswordBody).data);
      // A session issued to this request's Basic credentials was made before the change ended it.
      withdrawIssuedSession(req, reply);
      return ok(req, [changed]);
    },
  );
  app.post(
    '/accountmanager.changepassword/:userId',
    route('USER_EDIT', "Another user's password", {
      params: pathParams('userId'),
      body: userPasswordBody,
      ...answer(passwordChanged),
    }),
    async (req) =>
      ok(req, [
        await changeUserPassword(
          db,
          config,
          req.principal!,
          param(req, 'userId'),
          (req.body as UserPasswordBody).data.newPassword,
        ),
      ]),
  );

  // --- assignments ------------------------------------------------------------------------------
  for (const { path, kind } of ASSIGN) {
    app.post(
      `/accountmanager.${path}/:userId`,
      route('USER_EDIT', `Assign (and unassign) ${kind} of one user`, {
        params: pathParams('userId'),
        body: assignBody(kind, false),
        ...answer(assignedUser),
      }),
      async (req) => {
        const { data } = req.body as AssignBody;
        const users = { ids: [param(req, 'userId')], field: 'userId', path: true } as const;
        return ok(
          req,
          await assignToUsers(db, req.principal!, kind, users, { add: data[kind], unassign: data.unassign }),
        );
      },
    );
    app.post(
      `/accountmanager.${path}`,
      route('USER_EDIT', `Assign (and unassign) ${kind} of several users`, {
        body: assignBody(kind, true),
        ...answer(assignedUser),
      }),
      async (req) => {
        const { data } = req.body as AssignBody;
        const users = { ids: data.userIds ?? [], field: 'data.userIds' };
        return ok(
          req,
          await assignToUsers(db, req.principal!, kind, users, { add: data[kind], unassign: data.unassign }),
        );
      },
    );
  }
  for (const kind of ['roles', 'groups'] as const) {
    app.post(
      `/accountmanager.${kind === 'roles' ? 'assignrole' : 'assigngroup'}/BR/:businessroleId`,
      route('USER_EDIT', `Assign (and unassign) ${kind} of a business role`, {
        params: pathParams('businessroleId'),
        body: assignBody(kind, false),
        ...answer(assignedBusinessRole),
      }),
      async (req) => {
        const { data } = req.body as AssignBody;
        const lists = { add: data[kind], unassign: data.unassign };
        return ok(req, [
          await assignToBusinessRole(db, req.principal!, kind, param(req, 'businessroleId'), lists),
        ]);
      },
    );
  }
  app.post(
    '/accountmanager.copyroles',
    route('USER_EDIT', "Add a user's roles to other users", { body: copyRolesBody, ...answer(assignedUser) }),
    async (req) => ok(req, await copyRoles(db, req.principal!, (req.body as CopyRolesBody).data)),
  );

  // --- reading assignments ----------------------------------------------------------------------
  app.post(
    '/accountmanager.fetchgroups/:userId',
    route(AUTHENTICATED, "Effective user groups of a user (another user's need USER_FETCH)", {
      params: pathParams('userId'),
      body: listBody,
      ...listAnswer(effectiveGroup),
    }),
    async (req) => listed(req, await fetchUserGroups(db, req.principal!, param(req, 'userId'))),
  );
  app.post(
    '/accountmanager.fetchroles/:userId',
    route('ROLE_FETCH', 'Effective roles of a user, with where each comes from', {
      params: pathParams('userId'),
      body: listBody,
      ...listAnswer(effectiveRole),
    }),
    async (req) => listed(req, await fetchUserRoles(db, req.principal!, param(req, 'userId'))),
  );
  app.post(
    '/accountmanager.fetchbusinessroles/:userId',
    route(AUTHENTICATED, "Business roles of a user (another user's need USER_FETCH)", {
      params: pathParams('userId'),
      body: listBody,
      ...listAnswer(namedRef),
    }),
    async (req) => listed(req, await fetchUserBusinessRoles(db, req.principal!, param(req, 'userId'))),
  );
  app.post(
    '/accountmanager.fetchroles/BR/:businessroleId',
    route('ROLE_FETCH', 'Roles of a business role', {
      params: pathParams('businessroleId'),
      body: listBody,
      ...listAnswer(effectiveRole),
    }),
    async (req) =>
      listed(req, await fetchBusinessRoleRoles(db, req.principal!, param(req, 'businessroleId'))),
  );
  app.post(
    '/accountmanager.fetchgroups/BR/:businessroleId',
    route('USER_FETCH', 'User groups of a business role', {
      params: pathParams('businessroleId'),
      body: listBody,
      ...listAnswer(namedRef),
    }),
    async (req) =>
      listed(req, await fetchBusinessRoleGroups(db, req.principal!, param(req, 'businessroleId'))),
  );
  app.post(
    '/accountmanager.audit/:typeCode/:id',
    route('ROLE_FETCH', 'Roles, groups and business roles of a user (U) or business role (BR)', {
      params: pathParams('typeCode', 'id'),
      body: recordReadBody,
      ...answer(auditReport),
    }),
    async (req) => ok(req, [await audit(db, req.principal!, param(req, 'typeCode'), param(req, 'id'))]),
  );

  // --- deleting groups and business roles -------------------------------------------------------
  app.post(
    '/accountmanager.deletegroup',
    route('USER_EDIT', 'Delete user groups with their memberships', {
      body: recordsBody,
      ...answer(deletedGroup),
    }),
    async (req) => ok(req, await deleteGroups(db, req.principal!, itemsOf(req.body))),
  );
  app.post(
    '/accountmanager.deletebusinessrole',
    route('USER_EDIT', 'Delete business roles with their assignments', {
      body: recordsBody,
      ...answer(deletedBusinessRole),
    }),
    async (req) => ok(req, await deleteBusinessRoles(db, req.principal!, itemsOf(req.body))),
  );

  // --- advanced configuration options -----------------------------------------------------------
  for (const returnOld of [false, true]) {
    const suffix = returnOld ? '/returnolddata' : '';
    app.post(
      `/update/ACO${suffix}`,
      route('ADVANCEDCONFIG_EDIT', 'Update an advanced configuration option (value checked)', {
        body: recordsBody,
        ...answer(optionRecord),
      }),
      async (req) => ok(req, await updateOptions(db, req.principal!, updateItemsOf(req.body), returnOld)),
    );
    app.post(
      `/integrate/ACO${suffix}`,
      route('ADVANCEDCONFIG_EDIT', 'Upsert advanced configuration options (value checked)', {
        body: recordsBody,
        ...answer(optionRecord),
      }),
      async (req) => ok(req, await integrateOptions(db, req.principal!, itemsOf(req.body), returnOld)),
    );
  }

  // --- general operations these types refuse ----------------------------------------------------
  for (const { path, access, use } of REFUSED) {
    app.post(path, route(access, `Refused: use ${use}`, answer({}), ['general']), () =>
      Promise.reject(validationError('typeCode', `not available for this type: use ${use}`)),
    );
  }
}
