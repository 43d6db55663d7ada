// Notifications: what a user finds in the notification center. `notifyUsers` is the door other
// modules use (workflows, jobs) inside their own transaction; the four operations of the interface
// (send, list, setread, delete) sit on top. A notification belongs to exactly one recipient: every
// read and change is restricted to `user_id = <caller>`, admins included (there is no admin door).

import type { Principal } from '../../access/access.ts';
import { can } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { fetchRecords, type FetchBody, type FetchResult } from '../../engine/crud.ts';
import { OPERATORS, isOperator } from '../../engine/criteria/operators.ts';
import { NOTIFICATION_LEVELS, NOTIFICATION_TYPE } from '../../engine/registry-notifications.ts';
import { optionalText } from '../../engine/value-check.ts';
import { coerceValue, unstorableIn } from '../../engine/values.ts';
import { AppError, validationError } from '../../http/errors.ts';
import {
  findRecipients,
  insertNotificationList,
  insertNotifications,
  markRead,
  ownUnreadCount,
  removeOwn,
  type CheckedNotification,
  type Selection,
} from './store.ts';

export type { CheckedNotification } from './store.ts';

export interface NotificationInput {
  title: string;
  message?: string;
  source?: string;
  status?: 'INFO' | 'WARNING' | 'ERROR' | 'SUCCESS';
  topic?: string;
  actionType?: string;
  validFrom?: string;
  validUntil?: string;
  dueDate?: string;
  dismissible?: boolean;
  payload?: unknown;
}

const maxLengthOf = (name: string): number =>
  NOTIFICATION_TYPE.fields.find((f) => f.name === name)?.maxLength ?? 1000;

function inputText(input: Record<string, unknown>, name: string, prefix: string): string | null {
  return optionalText(input[name], prefix + name, maxLengthOf(name));
}

function optionalDatetime(input: Record<string, unknown>, name: string, prefix: string): string | null {
  const v = input[name];
  if (v === undefined || v === null || v === '') return null;
  const d = coerceValue('datetime', v);
  if (typeof d !== 'string') throw validationError(prefix + name, 'must be an ISO 8601 date-time');
  return d;
}

/** Checks a notification (from a client or another module); -4 naming the field at fault. */
export function checkNotification(raw: unknown, prefix = ''): CheckedNotification {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw validationError(prefix.replace(/\.$/, '') || 'notification', 'must be an object');
  }
  const input = raw as Record<string, unknown>;
  const known = new Set(['title', ...NOTIFICATION_TYPE.fields.filter((f) => !f.system).map((f) => f.name)]);
  for (const k of Object.keys(input)) {
    if (!known.has(k)) throw validationError(prefix + k, 'unknown field');
  }
  const title = inputText(input, 'title', prefix);
  if (title === null || title.trim() === '') throw validationError(prefix + 'title', 'is required');
  // Empty text is no value: the default, as for topic and actionType (and as validFrom '' is none).
  const status = inputText(input, 'status', prefix) || 'INFO';
  if (!(NOTIFICATION_LEVELS as readonly string[]).includes(status)) {
    throw validationError(prefix + 'status', `must be one of ${NOTIFICATION_LEVELS.join(', ')}`);
  }
  const validFrom = optionalDatetime(input, 'validFrom', prefix);
  const validUntil = optionalDatetime(input, 'validUntil', prefix);
  if (validFrom !== null && validUntil !== null && Date.parse(validUntil) < Date.parse(validFrom)) {
    throw validationError(prefix + 'validUntil', 'must not be before validFrom');
  }
  const dismissible = input.dismissible;
  if (dismissible !== undefined && dismissible !== null && typeof dismissible !== 'boolean') {
    throw validationError(prefix + 'dismissible', 'must be true or false');
  }
  const bad = unstorableIn(input.payload);
  if (bad !== undefined)
    throw validationError(`${prefix}payload${bad.path === '' ? '' : `.${bad.path}`}`, bad.problem);
  const payload =
    input.payload === undefined || input.payload === null ? null : JSON.stringify(input.payload);
  if (payload !== null && payload.length > 1_000_000) {
    throw validationError(prefix + 'payload', 'at most 1,000,000 characters of JSON');
  }
  return {
    title,
    message: inputText(input, 'message', prefix) || null,
    source: inputText(input, 'source', prefix) || null,
    status,
    topic: inputText(input, 'topic', prefix) || 'SYSTEM_NOTIFICATION',
    actionType: inputText(input, 'actionType', prefix) || 'INFO_MESSAGE',
    validFrom,
    validUntil,
    dueDate: optionalDatetime(input, 'dueDate', prefix),
    dismissible: dismissible ?? true,
    payload,
  };
}

/**
 * One notification per user id, in one INSERT ... SELECT on the caller's transaction. Ids that are
 * not users of the partition are skipped (a notification can never reach another partition), and
 * a user named twice gets one notification. `senderUserId` becomes `createdBy` (none: the system).
 */
export async function notifyUsers(
  q: Queryable,
  partitionId: number,
  userIds: readonly number[],
  input: NotificationInput,
  senderUserId?: number,
): Promise<void> {
  if (userIds.length === 0) return;
  await insertNotifications(q, partitionId, userIds, checkNotification(input), senderUserId ?? null);
}

/** `notifyUsers` for many notifications at once (one statement): each to its own users. */
export async function notifyEach(
  q: Queryable,
  partitionId: number,
  list: readonly { readonly userIds: readonly number[]; readonly input: NotificationInput }[],
  senderUserId?: number,
): Promise<void> {
  const checked = list.map((e) => ({ userIds: e.userIds, n: checkNotification(e.input) }));
  await insertNotificationList(q, partitionId, checked, senderUserId ?? null);
}

export interface SendBody {
  readonly data: {
    readonly notification: unknown;
    readonly recipients?: { readonly users?: readonly string[]; readonly groups?: readonly string[] };
  };
}

export interface SendResult {
  readonly sent: number;
  readonly recipients: string[];
}

/** `/notification.send`: to the caller, or (with NOTIFICATION_SEND) to users and group members. */
export async function sendNotification(db: Db, principal: Principal, body: SendBody): Promise<SendResult> {
  const checked = checkNotification(body.data.notification, 'data.notification.');
  const users = body.data.recipients?.users ?? [];
  const groups = body.data.recipients?.groups ?? [];
  // Only a request without recipients notifies the caller: lists given empty name nobody.
  const toSelf = body.data.recipients === undefined;
  if (!toSelf && users.length === 0 && groups.length === 0) {
    throw validationError(
      'data.recipients',
      'name at least one user or group (leave recipients out to notify yourself)',
    );
  }
  return db.transaction(async (tx) => {
    const recipients = toSelf
      ? [{ id: principal.userId, loginName: principal.loginName }]
      : await findRecipients(tx, principal.partitionId, users, groups);
    if (recipients.some((r) => r.id !== principal.userId) && !can(principal, 'NOTIFICATION_SEND')) {
      throw new AppError('FORBIDDEN', 'Permission NOTIFICATION_SEND required to notify other users');
    }
    const ids = recipients.map((r) => r.id);
    const sent = await insertNotifications(tx, principal.partitionId, ids, checked, principal.userId);
    return { sent, recipients: recipients.map((r) => r.loginName).sort() };
  });
}

/** Whether a criteria tree names one of `fields` anywhere (simple criteria keys or leaves). */
function mentions(criteria: unknown, fields: readonly string[]): boolean {
  if (Array.isArray(criteria)) return criteria.some((c) => mentions(c, fields));
  if (typeof criteria !== 'object' || criteria === null) return false;
  const node = criteria as Record<string, unknown>;
  if (typeof node.fieldName === 'string' && fields.includes(node.fieldName)) return true;
  // A field-comparison operator (`lessThanField`) names its other field as its value.
  const op =
    typeof node.operator === 'string' && isOperator(node.operator) ? OPERATORS[node.operator] : undefined;
  if (op?.field === true && fields.includes(node.value as string)) return true;
  if (node._constructor === undefined && node.fieldName === undefined && node.criteria === undefined) {
    return Object.keys(node).some((k) => fields.includes(k));
  }
  return mentions(node.criteria, fields);
}

const WINDOW_FIELDS = ['validFrom', 'validUntil'];

/** The caller's own notifications, and (unless the filter speaks of validity) only valid ones now. */
function ownScope(principal: Principal, body: FetchBody): Record<string, unknown> {
  const criteria: unknown[] = [{ fieldName: 'userId', operator: 'equals', value: principal.userId }];
  if (!mentions(body.data, WINDOW_FIELDS)) {
    const now = new Date().toISOString();
    criteria.push(
      {
        _constructor: 'AdvancedCriteria',
        operator: 'or',
        criteria: [
          { fieldName: 'validFrom', operator: 'isNull' },
          { fieldName: 'validFrom', operator: 'lessOrEqual', value: now },
        ],
      },
      {
        _constructor: 'AdvancedCriteria',
        operator: 'or',
        criteria: [
          { fieldName: 'validUntil', operator: 'isNull' },
          { fieldName: 'validUntil', operator: 'greaterThan', value: now },
        ],
      },
    );
  }
  return { _constructor: 'AdvancedCriteria', operator: 'and', criteria };
}

export interface ListResult extends FetchResult {
  readonly unreadCount: number;
}

/** `/notification.list`: the engine's filter, sort and paging over the caller's notifications. */
export async function listNotifications(
  db: Db,
  principal: Principal,
  body: FetchBody,
  maxPageSize: number,
): Promise<ListResult> {
  // Newest first unless asked otherwise; distinct rows sort by their own fields (the engine's rule).
  // An empty sortBy asks for no order: the default one.
  const asked = Array.isArray(body.sortBy) && body.sortBy.length === 0 ? undefined : body.sortBy;
  const sorted: FetchBody =
    body.distinctResults === true ? body : { ...body, sortBy: asked ?? ['-createDate', '-id'] };
  const r = await fetchRecords(
    db,
    principal,
    NOTIFICATION_TYPE,
    sorted,
    maxPageSize,
    ownScope(principal, body),
  );
  return { ...r, unreadCount: await ownUnreadCount(db, principal.partitionId, principal.userId) };
}

const ID_TEXT = /^(\d{1,15})(?:\.NTF)?$/;

function idOf(v: unknown, field: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return v;
  const m = typeof v === 'string' ? ID_TEXT.exec(v.trim()) : null;
  if (!m) throw validationError(field, `${JSON.stringify(v)} is not a notification id or typedId`);
  return Number(m[1]);
}

export interface TargetData {
  readonly id?: unknown;
  readonly typedId?: unknown;
  readonly ids?: readonly unknown[];
  readonly all?: boolean;
  readonly read?: boolean;
}

/** `{id}`, `{typedId}`, `{ids: [...]}` (ids or typedIds) or `{all: true}`. */
export function selectionOf(data: TargetData): Selection {
  const given = ['id', 'typedId', 'ids', 'all'].filter((k) => data[k as keyof TargetData] !== undefined);
  if (given.length !== 1) throw validationError('data', 'give exactly one of id, typedId, ids, all');
  if (data.all !== undefined) {
    if (data.all !== true) throw validationError('data.all', 'must be true');
    return { all: true };
  }
  if (data.ids !== undefined) {
    if (data.ids.length === 0) throw validationError('data.ids', 'must name at least one notification');
    return { ids: [...new Set(data.ids.map((v, i) => idOf(v, `data.ids[${i}]`)))], field: 'data.ids' };
  }
  const field = data.id !== undefined ? 'data.id' : 'data.typedId';
  return { ids: [idOf(data.id ?? data.typedId, field)], field };
}

async function ownRecords(q: Queryable, principal: Principal, ids: readonly number[]): Promise<unknown[]> {
  const r = await fetchRecords(q, principal, NOTIFICATION_TYPE, { endRow: ids.length }, ids.length, {
    _constructor: 'AdvancedCriteria',
    operator: 'and',
    criteria: [
      { fieldName: 'userId', operator: 'equals', value: principal.userId },
      { fieldName: 'id', operator: 'inSet', value: ids },
    ],
  });
  return r.rows;
}

/**
 * `/notification.setread`: marks the caller's notifications read (or unread with `read: false`).
 * Named ids that are not the caller's are a 404 and nothing changes; `all` answers a count.
 */
export async function setRead(db: Db, principal: Principal, data: TargetData): Promise<unknown[]> {
  const selection = selectionOf(data);
  const read = data.read ?? true;
  return db.transaction(async (tx) => {
    const changed = await markRead(tx, principal, selection, read);
    if ('all' in selection) return [{ updated: changed.length }];
    return ownRecords(tx, principal, selection.ids);
  });
}

/** `/notification.delete`: the caller's own, dismissible notifications; answers the deleted ones. */
export async function deleteNotifications(
  db: Db,
  principal: Principal,
  data: TargetData,
): Promise<unknown[]> {
  const selection = selectionOf(data);
  return db.transaction(async (tx) => {
    const before = 'all' in selection ? [] : await ownRecords(tx, principal, selection.ids);
    const removed = await removeOwn(tx, principal, selection);
    if ('all' in selection) return [{ deleted: removed }];
    return before;
  });
}
