// The rest of the interface's file-load list: product and customer descriptions (PDESC, CDESC),
// product references (PR), product cross-references (PXREF) and to-do items. The spec names only
// their codes; fields, keys and rules are ours (README "Descriptions, product references,
// cross-references and to-do items"). All are master types (./registry-master.ts: attribute1..30,
// mass-editable, bulk-loadable), hard-deleted.

import type { Principal } from '../access/access.ts';
import { AUTHENTICATED } from '../access/catalogue.ts';
import type { Queryable } from '../db/db.ts';
import { AppError, type FieldErrors } from '../http/errors.ts';
import { key, text } from './registry-fields.ts';
import { masterType } from './registry-master.ts';
import type { FieldDef, TypeDef } from './types.ts';

/**
 * The code of to-do items, the spec's word for them. Spelled once here, as a join, because tools
 * that collect to-do notes from source would otherwise count the type code as one.
 */
export const TODO_CODE = ['TO', 'DO'].join('');

/** A BCP-47-like language tag: `de`, `en-GB`, `zh-Hant-TW`. */
const LANGUAGE_TAG = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

const longText = (name: string, column: string): FieldDef => text(name, column, { maxLength: 100_000 });

function languageRule(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const v = data.language;
  if (v === undefined || v === null || v === '') return undefined; // absent on update; required on add
  if (typeof v === 'string' && LANGUAGE_TAG.test(v)) return undefined;
  return { language: { errorMessage: `${JSON.stringify(v)} is not a language tag such as de or en-GB` } };
}

function referenceRule(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  if (data.sku === undefined || data.sku === null || data.sku !== data.targetSku) return undefined;
  return { targetSku: { errorMessage: 'must differ from sku: a product does not refer to itself' } };
}

/**
 * A description of a customer is added only by one who may change that customer (its
 * userGroupEdit, seeing it through userGroupViewDetails). A customer not stored (yet) does not stop
 * it, as for every text-keyed row. Reading and changing stored rows follow `scopedBy`.
 */
async function customerEditable(
  q: Queryable,
  principal: Principal,
  data: Readonly<Record<string, unknown>>,
): Promise<void> {
  if (principal.admin || typeof data.customerId !== 'string') return;
  const r = await q.query<{ view: string | null; edit: string | null }>(
    `SELECT user_group_view_details AS view, user_group_edit AS edit FROM customers
      WHERE partition_id = $1 AND customer_id = $2`,
    [principal.partitionId, data.customerId],
  );
  const c = r.rows[0];
  const member = (g: string | null) => g === null || g === '' || principal.groups.includes(g);
  if (c && !(member(c.view) && member(c.edit))) {
    throw new AppError('FORBIDDEN', `Not allowed to change the descriptions of customer ${data.customerId}`);
  }
}

export const TODO_STATUSES = ['OPEN', 'IN_PROGRESS', 'DONE', 'CANCELLED'] as const;

export const MORE_MASTER_TYPES: readonly TypeDef[] = [
  masterType({
    code: 'PDESC',
    label: 'Product description',
    table: 'product_descriptions',
    own: [
      key('sku', 'sku'),
      key('language', 'language'),
      text('label', 'label'),
      longText('description', 'description'),
    ],
    businessKey: ['sku', 'language'],
    deleteMode: 'hard',
    // Read like products (open to every user); changing them is product editing.
    access: { fetch: AUTHENTICATED, write: 'PRODUCT_EDIT' },
    validate: languageRule,
  }),
  masterType({
    code: 'CDESC',
    label: 'Customer description',
    table: 'customer_descriptions',
    own: [
      key('customerId', 'customer_id'),
      key('language', 'language'),
      text('label', 'label'),
      longText('description', 'description'),
    ],
    businessKey: ['customerId', 'language'],
    deleteMode: 'hard',
    // As customers: open to every user, but a row is seen (changed) only by those who see (may
    // change) its customer, so a description never shows a customer hidden by its user groups.
    access: { fetch: AUTHENTICATED, write: 'CUSTOMER_EDIT' },
    scopedBy: { table: 'customers', column: 'customer_id', parentColumn: 'customer_id' },
    beforeInsert: customerEditable,
    validate: languageRule,
  }),
  masterType({
    code: 'PR',
    label: 'Product reference',
    table: 'product_references',
    own: [
      key('sku', 'sku'),
      key('relationType', 'relation_type'),
      key('targetSku', 'target_sku'),
      text('label', 'label'),
    ],
    businessKey: ['sku', 'relationType', 'targetSku'],
    deleteMode: 'hard',
    access: { fetch: AUTHENTICATED, write: 'PRODUCT_EDIT' },
    validate: referenceRule,
  }),
  masterType({
    code: 'PXREF',
    label: 'Product cross-reference',
    table: 'product_cross_references',
    own: [
      key('sku', 'sku'),
      key('referenceType', 'reference_type'),
      key('externalId', 'external_id'),
      text('partner', 'partner', { maxLength: 255 }),
      text('label', 'label'),
    ],
    businessKey: ['sku', 'referenceType', 'externalId'],
    deleteMode: 'hard',
    access: { fetch: AUTHENTICATED, write: 'PRODUCT_EDIT' },
  }),
  masterType({
    code: TODO_CODE,
    label: 'To-do item',
    table: 'todo_items',
    own: [
      key('uniqueName', 'unique_name'),
      text('label', 'label', { required: true }),
      longText('description', 'description'),
      text('assignee', 'assignee', { maxLength: 255 }),
      { name: 'dueDate', column: 'due_date', type: 'date' },
      // Never empty; left out of an add it is OPEN (the column's default).
      text('status', 'status', { required: true, defaultOnAdd: true, oneOf: TODO_STATUSES, maxLength: 20 }),
      // 1 (highest) .. 5; the table's trigger also refuses massedit arithmetic leaving the range.
      { name: 'priority', column: 'priority', type: 'integer', oneOf: ['1', '2', '3', '4', '5'] },
      text('refTypedId', 'ref_typed_id', { maxLength: 255 }),
    ],
    businessKey: ['uniqueName'],
    deleteMode: 'hard',
    access: { fetch: AUTHENTICATED, write: 'TODO_EDIT' },
  }),
];
