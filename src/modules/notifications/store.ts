// The SQL of notifications that the generic engine does not cover: the set-based insert (one row
// per recipient), recipient resolution (login names, group members direct and through business
// roles), and the recipient-only changes (mark read, delete). Every statement is scoped by
// partition and, for changes, by the recipient's user id.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { AppError, type FieldErrors } from '../../http/errors.ts';

/** A notification as stored: every field checked and normalised (date-times as ISO 8601 UTC). */
export interface CheckedNotification {
  readonly title: string;
  readonly message: string | null;
  readonly source: string | null;
  readonly status: string;
  readonly topic: string;
  readonly actionType: string;
  readonly validFrom: string | null;
  readonly validUntil: string | null;
  readonly dueDate: string | null;
  readonly dismissible: boolean;
  readonly payload: string | null;
}

/** `field`: the body field that named the ids (a 404 names it). */
export type Selection = { readonly all: true } | { readonly ids: readonly number[]; readonly field: string };

/** Inserts one notification per user of the partition among `userIds`; answers how many. */
export function insertNotifications(
  q: Queryable,
  partitionId: number,
  userIds: readonly number[],
  n: CheckedNotification,
  sender: number | null,
): Promise<number> {
  return insertNotificationList(q, partitionId, [{ userIds, n }], sender);
}

/**
 * Many notifications in one statement: each of `list` to its own users (a user named twice in one
 * entry gets it once; ids that are not users of the partition are skipped). Answers how many.
 */
export async function insertNotificationList(
  q: Queryable,
  partitionId: number,
  list: readonly { readonly userIds: readonly number[]; readonly n: CheckedNotification }[],
  sender: number | null,
): Promise<number> {
  const entries = list
    .filter((e) => e.userIds.length > 0)
    .map((e, ord) => ({ ord, users: e.userIds, ...e.n }));
  if (entries.length === 0) return 0;
  const r = await q.query(
    `INSERT INTO notifications (partition_id, user_id, title, message, source, status, topic, action_type,
                                valid_from, valid_until, due_date, dismissible, payload, created_by,
                                last_update_by)
     SELECT u.partition_id, u.id, x.title, x.message, x.source, x.status, x.topic, x."actionType",
            x."validFrom"::timestamptz, x."validUntil"::timestamptz, x."dueDate"::timestamptz, x.dismissible,
            x.payload::jsonb, $3::bigint, $3::bigint
       FROM jsonb_to_recordset($2::jsonb) AS x(ord int, users bigint[], title text, message text, source text,
              status text, topic text, "actionType" text, "validFrom" text, "validUntil" text, "dueDate" text,
              dismissible boolean, payload text)
       JOIN users u ON u.partition_id = $1 AND u.id = ANY(x.users)
      ORDER BY x.ord, u.id`,
    [partitionId, JSON.stringify(entries), sender],
  );
  return r.rowCount;
}

export interface Recipient {
  readonly id: number;
  readonly loginName: string;
}

/**
 * The users named by login (case-insensitive) and the members of the named groups, directly or
 * through a business role (as authentication counts group membership). Unknown names are a 404
 * naming the field and the names.
 */
export async function findRecipients(
  q: Queryable,
  partitionId: number,
  logins: readonly string[],
  groups: readonly string[],
): Promise<Recipient[]> {
  const errors: FieldErrors = {};
  if (logins.length > 0) {
    const known = await q.query<{ name: string }>(
      `SELECT lower(login_name) AS name FROM users WHERE partition_id = $1 AND lower(login_name) = ANY($2::text[])`,
      [partitionId, logins.map((l) => l.toLowerCase())],
    );
    const found = new Set(known.rows.map((r) => r.name));
    const missing = logins.filter((l) => !found.has(l.toLowerCase()));
    if (missing.length > 0)
      errors['data.recipients.users'] = { errorMessage: `Unknown user(s): ${missing.join(', ')}` };
  }
  if (groups.length > 0) {
    const known = await q.query<{ name: string }>(
      `SELECT unique_name AS name FROM user_groups WHERE partition_id = $1 AND unique_name = ANY($2::text[])`,
      [partitionId, groups],
    );
    const found = new Set(known.rows.map((r) => r.name));
    const missing = groups.filter((g) => !found.has(g));
    if (missing.length > 0) {
      errors['data.recipients.groups'] = { errorMessage: `Unknown user group(s): ${missing.join(', ')}` };
    }
  }
  // Every unknown name at once, users and groups, so one answer says all that is wrong.
  const wrong = Object.values(errors).map((e) => e.errorMessage);
  if (wrong.length > 0) throw new AppError('NOT_FOUND', wrong.join('; '), { errors });
  const r = await q.query<Recipient>(
    `SELECT u.id, u.login_name AS "loginName" FROM users u
      WHERE u.partition_id = $1
        AND (lower(u.login_name) = ANY($2::text[])
             OR u.id IN (SELECT m.user_id FROM user_group_members m
                           JOIN user_groups g ON g.partition_id = m.partition_id AND g.id = m.group_id
                          WHERE m.partition_id = $1 AND g.unique_name = ANY($3::text[])
                         UNION
                         SELECT ub.user_id FROM user_business_roles ub
                           JOIN business_role_groups brg
                             ON brg.partition_id = ub.partition_id AND brg.business_role_id = ub.business_role_id
                           JOIN user_groups g ON g.partition_id = brg.partition_id AND g.id = brg.group_id
                          WHERE ub.partition_id = $1 AND g.unique_name = ANY($3::text[])))
      ORDER BY u.id`,
    [partitionId, logins.map((l) => l.toLowerCase()), groups],
  );
  return r.rows;
}

/** The notifications the list shows by default: those whose validity window holds now. */
const VALID_NOW =
  '(valid_from IS NULL OR valid_from <= now()) AND (valid_until IS NULL OR valid_until > now())';

export async function ownUnreadCount(q: Queryable, partitionId: number, userId: number): Promise<number> {
  const r = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM notifications
      WHERE partition_id = $1 AND user_id = $2 AND NOT read
        AND ${VALID_NOW}`,
    [partitionId, userId],
  );
  return r.rows[0]!.n;
}

function missingError(selection: { ids: readonly number[]; field: string }, found: readonly number[]) {
  const have = new Set(found);
  const missing = selection.ids.filter((id) => !have.has(id));
  return new AppError('NOT_FOUND', `Notification(s) ${missing.join(', ')} not found`, {
    field: selection.field,
  });
}

/**
 * Marks the caller's notifications read (or unread); answers the ids changed. 404 if one is not the
 * caller's. `all` reaches those the list shows (valid now): one scheduled for later is not read before
 * it shows.
 */
export async function markRead(
  q: Queryable,
  principal: Principal,
  selection: Selection,
  read: boolean,
): Promise<number[]> {
  const r = await q.query<{ id: number }>(
    `UPDATE notifications
        SET read = $3, read_date = CASE WHEN $3 THEN coalesce(read_date, now()) ELSE NULL END,
            version = version + CASE WHEN read = $3 THEN 0 ELSE 1 END,
            last_update_at = CASE WHEN read = $3 THEN last_update_at ELSE now() END,
            last_update_by = CASE WHEN read = $3 THEN last_update_by ELSE $2 END
      WHERE partition_id = $1 AND user_id = $2
        AND ($4::bigint[] IS NULL AND read <> $3 AND ${VALID_NOW} OR id = ANY($4::bigint[]))
     RETURNING id`,
    [principal.partitionId, principal.userId, read, 'all' in selection ? null : selection.ids],
  );
  const ids = r.rows.map((x) => x.id);
  if (!('all' in selection) && ids.length !== selection.ids.length) throw missingError(selection, ids);
  return ids;
}

/**
 * Deletes the caller's notifications: named ones must all exist and be dismissible (else 404 / -4
 * and nothing is deleted); `all` deletes every dismissible one valid now (as the list shows them).
 * Answers how many were deleted.
 */
export async function removeOwn(q: Queryable, principal: Principal, selection: Selection): Promise<number> {
  if ('all' in selection) {
    const r = await q.query(
      `DELETE FROM notifications WHERE partition_id = $1 AND user_id = $2 AND dismissible AND ${VALID_NOW}`,
      [principal.partitionId, principal.userId],
    );
    return r.rowCount;
  }
  const r = await q.query<{ id: number; dismissible: boolean }>(
    `SELECT id, dismissible FROM notifications
      WHERE partition_id = $1 AND user_id = $2 AND id = ANY($3::bigint[]) FOR UPDATE`,
    [principal.partitionId, principal.userId, selection.ids],
  );
  if (r.rows.length !== selection.ids.length) {
    throw missingError(
      selection,
      r.rows.map((x) => x.id),
    );
  }
  const fixed = r.rows.filter((x) => !x.dismissible).map((x) => x.id);
  if (fixed.length > 0) {
    // Named as the request named them (`data.id`, `data.typedId`, `data.ids`).
    throw new AppError('VALIDATION', `Notification(s) ${fixed.join(', ')} cannot be dismissed`, {
      field: selection.field,
    });
  }
  const d = await q.query(
    'DELETE FROM notifications WHERE partition_id = $1 AND user_id = $2 AND id = ANY($3::bigint[])',
    [principal.partitionId, principal.userId, selection.ids],
  );
  return d.rowCount;
}
