// The rest of the interface's file-load list: product and customer descriptions (PDESC, CDESC),
// product references (PR), product cross-references (PXREF) and to-do items. The spec names only
// their codes; fields, keys and rules are ours (README "Descriptions, product references,
// cross-references and to-do items"). All are master types (./registry-master.ts: attribute1..30,
// mass-editable, bulk-loadable), hard-deleted.

import { AUTHENTICATED } from '../access/catalogue.ts';
import type { FieldErrors } from '../http/errors.ts';
import { key, text } from './registry-fields.ts';
import { masterType } from './registry-master.ts';
import { coerceValue } from './values.ts';
import type { FieldDef, TypeDef } from './types.ts';

/**
 * The code of to-do items, the spec's word for them. Spelled once here, as a join, because tools
 * that collect to-do notes from source would otherwise count the type code as one.
 */
export const TO_DO_CODE = ['TO', 'DO'].join('');

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
  // Compared as stored: a JSON number or boolean is its text (`1` is the product "1").
  const sku = coerceValue('string', data.sku);
  if (sku === undefined || sku !== coerceValue('string', data.targetSku)) return undefined;
  return { targetSku: { errorMessage: 'must differ from sku: a product does not refer to itself' } };
}

/**
 * Rows that describe a product (by its sku), a customer or a seller follow that record's user
 * groups (`scopedBy`): a product hidden from a user hides its descriptions, references, extension
 * rows, ... as well.
 */
export const BY_PRODUCT = { table: 'products', column: 'sku', parentColumn: 'sku', parentCode: 'P' } as const;
export const BY_CUSTOMER = {
  table: 'customers',
  column: 'customer_id',
  parentColumn: 'customer_id',
  parentCode: 'C',
} as const;
export const BY_SELLER = {
  table: 'sellers',
  column: 'seller_id',
  parentColumn: 'seller_id',
  parentCode: 'SL',
} as const;

export const TO_DO_STATUSES = ['OPEN', 'IN_PROGRESS', 'DONE', 'CANCELLED'] as const;

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
    // Read like products (open to every user); changing them is product editing. As products: a row
    // is seen (changed) only by those who see (may change) its product.
    access: { fetch: AUTHENTICATED, write: 'PRODUCT_EDIT' },
    scopedBy: BY_PRODUCT,
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
    scopedBy: BY_CUSTOMER,
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
    scopedBy: BY_PRODUCT,
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
    scopedBy: BY_PRODUCT,
  }),
  masterType({
    code: TO_DO_CODE,
    label: 'To-do item',
    table: 'to_do_items',
    own: [
      key('uniqueName', 'unique_name'),
      text('label', 'label', { required: true }),
      longText('description', 'description'),
      text('assignee', 'assignee', { maxLength: 255 }),
      { name: 'dueDate', column: 'due_date', type: 'date' },
      // Never empty; left out of an add it is OPEN (the column's default).
      text('status', 'status', { required: true, defaultOnAdd: true, oneOf: TO_DO_STATUSES, maxLength: 20 }),
      // 1 (highest) .. 5; the table's trigger also refuses massedit arithmetic leaving the range.
      { name: 'priority', column: 'priority', type: 'integer', oneOf: ['1', '2', '3', '4', '5'] },
      text('refTypedId', 'ref_typed_id', { maxLength: 255 }),
    ],
    businessKey: ['uniqueName'],
    deleteMode: 'hard',
    access: { fetch: AUTHENTICATED, write: 'TO_DO_EDIT' },
  }),
];
