// Request and response schemas of the account routes. Response items list their properties, and the
// serializer drops anything else: a field that is not listed here (a password hash, say) cannot
// reach a client even if a query selected it by mistake.

import { envelopeSchema } from '../../http/envelope.ts';
import { UNTAKEN_LIST_FIELDS } from '../../engine/paging.ts';

const str = { type: 'string' } as const;
const strOrNull = { type: ['string', 'null'] } as const;
const int = { type: 'integer' } as const;
const intOrNull = { type: ['integer', 'null'] } as const;
const names = { type: 'array', items: str } as const;

const system = {
  version: int,
  createDate: str,
  createdBy: intOrNull,
  lastUpdateDate: str,
  lastUpdateBy: intOrNull,
} as const;

const userProps = {
  id: int,
  typedId: str,
  loginName: str,
  firstName: strOrNull,
  lastName: strOrNull,
  email: strOrNull,
  activated: { type: 'boolean' },
  ...system,
} as const;

/** A user as every answer shows it: never a password or its hash. */
export const userRecord = {
  type: 'object',
  properties: { ...userProps, oldValues: { type: 'object', properties: userProps } },
} as const;

const namedRefProps = { id: int, typedId: str, uniqueName: str, label: strOrNull } as const;
export const namedRef = { type: 'object', properties: namedRefProps } as const;
const namedProps = { ...namedRefProps, ...system } as const;

export const deletedGroup = {
  type: 'object',
  properties: { ...namedProps, removedMemberships: int, removedFromBusinessRoles: int },
} as const;

export const deletedBusinessRole = {
  type: 'object',
  properties: { ...namedProps, unassignedUsers: int, removedRoles: int, removedGroups: int },
} as const;

const optionProps = { id: int, typedId: str, uniqueName: str, value: strOrNull, ...system } as const;
export const optionRecord = {
  type: 'object',
  properties: { ...optionProps, oldValues: { type: 'object', properties: optionProps } },
} as const;

export const assignedUser = {
  type: 'object',
  properties: { id: int, typedId: str, loginName: str, roles: names, groups: names, businessRoles: names },
} as const;

export const assignedBusinessRole = {
  type: 'object',
  properties: { ...namedRefProps, roles: names, groups: names },
} as const;

export const effectiveRole = {
  type: 'object',
  properties: { role: str, direct: { type: 'boolean' }, businessRoles: names, permissions: names },
} as const;

export const effectiveGroup = {
  type: 'object',
  properties: { ...namedRefProps, direct: { type: 'boolean' }, businessRoles: names },
} as const;

export const passwordChanged = {
  type: 'object',
  properties: { id: int, typedId: str, loginName: str, passwordChanged: { type: 'boolean' } },
} as const;

export const copiedUser = {
  type: 'object',
  properties: { ...userProps, copiedFrom: str, roles: names, groups: names, businessRoles: names },
} as const;

export const auditReport = {
  type: 'object',
  properties: {
    typeCode: str,
    user: { type: 'object', properties: userProps },
    businessRole: { type: 'object', properties: namedProps },
    roles: { type: 'array', items: effectiveRole },
    groups: { type: 'array', items: effectiveGroup },
    businessRoles: {
      type: 'array',
      items: { type: 'object', properties: { ...namedRefProps, roles: names, groups: names } },
    },
    users: {
      type: 'array',
      items: { type: 'object', properties: { id: int, typedId: str, loginName: str } },
    },
    permissions: {
      type: 'array',
      items: { type: 'object', properties: { permission: str, roles: names } },
    },
  },
} as const;

/** `{response: {data: [item...]}}` as the route's 200 answer. */
export const answer = (item: object) => ({ response: { 200: envelopeSchema(item) } });
/** A paged list of `item`s (with `startRow`, `endRow`, `totalRows`). */
export const listAnswer = (item: object) => ({ response: { 200: envelopeSchema(item, true) } });
/** Rows of a fetch: objects, or arrays of values with `valueFields`. */
export const page = (item: object) => ({
  response: { 200: envelopeSchema({ anyOf: [item, { type: 'array' }] }, true) },
});

// ---------------------------------------------------------------------------------------------
// Requests

/**
 * Lists read by their path (a user's roles, ...): the paging of a fetch body, and the fields fetch
 * clients send with it; no filter (`data` empty) and no sort (the list has its own order).
 */
export const listBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string' },
    textMatchStyle: { type: 'string' },
    startRow: { type: ['integer', 'null'], minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    endRow: { type: ['integer', 'null'], minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    data: { type: ['object', 'null'], maxProperties: 0 },
    oldValues: { type: ['object', 'null'] },
    componentId: { type: 'string' },
    dataSource: { type: 'string' },
    operationId: { type: 'string' },
    ...UNTAKEN_LIST_FIELDS,
  },
} as const;

/** Records as the general operations take them: `{data: {...}}`, `{data: [...]}` or an array. */
export const recordsBody = { type: ['object', 'array'] } as const;

const idRef = {
  anyOf: [
    { type: 'integer', minimum: 1 },
    { type: 'string', maxLength: 100 },
  ],
} as const;
const refs = { type: 'array', items: idRef, maxItems: 10_000 } as const;
const roleNames = { type: 'array', items: { type: 'string', maxLength: 100 }, maxItems: 1000 } as const;

/** `{data: {<list>: [...], unassign: [...]}}`, with `userIds` when `many`. */
export function assignBody(list: 'roles' | 'groups' | 'businessRoles', many: boolean) {
  const items = list === 'roles' ? roleNames : refs;
  return {
    type: 'object',
    required: ['data'],
    additionalProperties: false,
    properties: {
      data: {
        type: 'object',
        additionalProperties: false,
        ...(many ? { required: ['userIds'] } : {}),
        properties: { ...(many ? { userIds: refs } : {}), [list]: items, unassign: items },
      },
    },
  } as const;
}

export interface AssignBody {
  readonly data: {
    readonly userIds?: unknown[];
    readonly roles?: unknown[];
    readonly groups?: unknown[];
    readonly businessRoles?: unknown[];
    readonly unassign?: unknown[];
  };
}

const password = { type: 'string', maxLength: 4096 } as const;

export const ownPasswordBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    data: {
      type: 'object',
      required: ['newPassword'],
      additionalProperties: false,
      properties: { oldPassword: password, newPassword: password },
    },
  },
} as const;
export type OwnPasswordBody = { data: { oldPassword?: string; newPassword: string } };

export const userPasswordBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    data: {
      type: 'object',
      required: ['newPassword'],
      additionalProperties: false,
      properties: { newPassword: password },
    },
  },
} as const;
export type UserPasswordBody = { data: { newPassword: string } };

export const copyRolesBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    data: {
      type: 'object',
      required: ['fromUserId', 'toUserIds'],
      additionalProperties: false,
      properties: { fromUserId: idRef, toUserIds: refs },
    },
  },
} as const;
export type CopyRolesBody = { data: { fromUserId: unknown; toUserIds: unknown[] } };

export const copyUserBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    data: {
      type: 'object',
      required: ['loginName'],
      additionalProperties: false,
      properties: {
        loginName: str,
        password,
        firstName: strOrNull,
        lastName: strOrNull,
        email: strOrNull,
        activated: { type: 'boolean' },
      },
    },
  },
} as const;

export function pathParams(...params: string[]) {
  return {
    type: 'object',
    required: params,
    properties: {
      partition: str,
      ...Object.fromEntries(params.map((p) => [p, { type: 'string', maxLength: 100 }])),
    },
  } as const;
}
