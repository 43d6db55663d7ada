// The shape of the master data types (products, customers, sellers, their extensions and the
// product/customer side tables): their own fields, then attribute1..30, then the system fields;
// mass-editable, bulk-loadable, unique on the business key. A file of its own so that the registry
// (./registry.ts) and its parts (./registry-master-more.ts) share it without an import cycle.

import type { FieldDef, TypeDef } from './types.ts';
import { SYSTEM, attributes } from './registry-fields.ts';

/**
 * Business keys and label/name of products, customers and sellers: text search indexes (migration
 * 012) whose prefix index covers the column and the id (migration 052).
 */
const PREFIX_COVERED: ReadonlySet<string> = new Set([
  'products.sku',
  'products.label',
  'customers.customer_id',
  'customers.name',
  'sellers.seller_id',
  'sellers.name',
]);

/** Business keys and label/name with text search indexes (migrations 012 and 039). */
const SEARCH_INDEXED: ReadonlySet<string> = new Set([
  ...PREFIX_COVERED,
  'product_extensions.sku',
  'customer_extensions.customer_id',
  'seller_extensions.seller_id',
  'product_descriptions.sku',
  'product_descriptions.label',
  'customer_descriptions.customer_id',
  'customer_descriptions.label',
  'product_references.sku',
  'product_references.target_sku',
  'product_cross_references.sku',
  'product_cross_references.external_id',
  'to_do_items.unique_name',
  'to_do_items.label',
]);

export function masterType(
  t: Omit<TypeDef, 'fields' | 'massEditable' | 'bulkLoadable' | 'userGroups' | 'uniqueColumns'> & {
    own: readonly FieldDef[];
  },
): TypeDef {
  const { own, ...rest } = t;
  const searched = (f: FieldDef): FieldDef => {
    const at = `${t.table}.${f.column}`;
    if (!SEARCH_INDEXED.has(at)) return f;
    return PREFIX_COVERED.has(at)
      ? { ...f, searchIndexed: true, prefixCovers: true }
      : { ...f, searchIndexed: true };
  };
  const fields = [...own.map(searched), ...attributes(), ...SYSTEM];
  return {
    ...rest,
    fields,
    uniqueColumns: t.businessKey.map((k) => fields.find((f) => f.name === k)!.column),
    massEditable: true,
    bulkLoadable: true,
    userGroups: fields.some((f) => f.name === 'userGroupViewDetails'),
  };
}
