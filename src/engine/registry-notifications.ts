// The notification type (NTF, table `notifications`, src/modules/notifications/): one row per
// recipient. Served only by the /notification.* operations (`managerOnly`), which restrict every
// read and change to the caller's own rows; the declaration gives /notification.list the engine's
// filter, sort and paging over these fields.

import { AUTHENTICATED } from '../access/catalogue.ts';
import { qualified } from '../db/sql.ts';
import type { FieldDef, TypeDef } from './types.ts';
import { SYSTEM, text } from './registry-fields.ts';

export const NOTIFICATION_LEVELS = ['INFO', 'WARNING', 'ERROR', 'SUCCESS'] as const;

const datetime = (name: string, column: string): FieldDef => ({ name, column, type: 'datetime' });

export const NOTIFICATION_TYPE: TypeDef = {
  code: 'NTF',
  label: 'Notification',
  table: 'notifications',
  fields: [
    { name: 'userId', column: 'user_id', type: 'integer', system: true },
    text('title', 'title', { required: true }),
    text('message', 'message', { maxLength: 100_000 }),
    text('source', 'source', { maxLength: 255 }),
    text('status', 'status', { oneOf: NOTIFICATION_LEVELS, maxLength: 20 }),
    text('topic', 'topic', { maxLength: 255 }),
    text('actionType', 'action_type', { maxLength: 255 }),
    datetime('validFrom', 'valid_from'),
    datetime('validUntil', 'valid_until'),
    datetime('dueDate', 'due_date'),
    { name: 'dismissible', column: 'dismissible', type: 'boolean' },
    { name: 'payload', column: 'payload', type: 'json' },
    { name: 'read', column: 'read', type: 'boolean', system: true },
    { name: 'readDate', column: 'read_date', type: 'datetime', system: true },
    ...SYSTEM,
  ],
  businessKey: [],
  uniqueColumns: [],
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  userGroups: false,
  access: { fetch: AUTHENTICATED, write: 'NOTIFICATION_SEND' },
  // Only the recipient, administrators included (there is no admin door).
  ownedRows: (principal, add, alias) => `${qualified(alias, 'user_id')} = ${add(principal.userId)}`,
  managerOnly: '/notification.send, /notification.list, /notification.setread, /notification.delete',
  noHistory: 'notifications keep no record history',
};
