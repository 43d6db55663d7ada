// The type registry: every type code declared once — its table, fields, business key, custom
// attributes, delete mode, flags and permissions. The generic operations, /fetch, metadata.describe,
// the attribute meta and the loaders all read it; adding a type is one declaration plus a migration.

import type { Permission, RouteAccess } from '../access/catalogue.ts';
import { AUTHENTICATED } from '../access/catalogue.ts';
import type { FieldSpec, FieldType } from './types.ts';
import type { FieldErrors } from '../http/errors.ts';

export interface FieldDef extends FieldSpec {
  /** Needed on add (business keys, extension table names). */
  readonly required?: boolean;
  /** Server-maintained (id, version, dates): never written by clients, silently ignored on input. */
  readonly system?: boolean;
  /** A custom attribute: text column, type from the attribute meta. */
  readonly custom?: boolean;
  /** Part of the business key: may be set on add, never changed afterwards. */
  readonly key?: boolean;
  readonly maxLength?: number;
  /** Values allowed for this field (checked on writes). */
  readonly oneOf?: readonly string[];
}

export interface TypeDef {
  readonly code: string;
  readonly label: string;
  readonly table: string;
  readonly fields: readonly FieldDef[];
  /** API names of the business key, in order. */
  readonly businessKey: readonly string[];
  /** The attribute-meta type (`PAM`) describing this type's custom attributes, if any. */
  readonly attributeMeta?: string;
  /** For extension types: attribute meta is kept per extension table (the `name` field). */
  readonly metaPerName?: boolean;
  /** Columns of the table's unique key after partition_id (the conflict target of upserts). */
  readonly uniqueColumns: readonly string[];
  /** A column every row of this type has a fixed value in (attribute-meta types share one table). */
  readonly fixed?: { readonly column: string; readonly value: string };
  readonly deleteMode: 'soft' | 'hard';
  readonly massEditable: boolean;
  readonly bulkLoadable: boolean;
  /** `/update` must carry `oldValues.version`. */
  readonly updateNeedsVersion?: boolean;
  /** Record-level visibility through `userGroupViewDetails` / `userGroupEdit`. */
  readonly userGroups: boolean;
  readonly access: { readonly fetch: RouteAccess; readonly write: Permission };
  /** Rules across fields of a written record, beyond each field's own type (answers -4 errors). */
  readonly validate?: (data: Readonly<Record<string, unknown>>) => FieldErrors | undefined;
}

const SYSTEM: readonly FieldDef[] = [
  { name: 'id', column: 'id', type: 'integer', system: true },
  { name: 'version', column: 'version', type: 'integer', system: true },
  { name: 'createDate', column: 'created_at', type: 'datetime', system: true },
  { name: 'createdBy', column: 'created_by', type: 'integer', system: true },
  { name: 'lastUpdateDate', column: 'last_update_at', type: 'datetime', system: true },
  { name: 'lastUpdateBy', column: 'last_update_by', type: 'integer', system: true },
];

const text = (name: string, column: string, extra: Partial<FieldDef> = {}): FieldDef => ({
  name,
  column,
  type: 'string',
  maxLength: 1000,
  ...extra,
});
const key = (name: string, column: string): FieldDef =>
  text(name, column, { required: true, key: true, maxLength: 255 });

export const ATTRIBUTE_COUNT = 30;
const attributes = (n = ATTRIBUTE_COUNT): FieldDef[] =>
  Array.from({ length: n }, (_, i) => ({
    name: `attribute${i + 1}`,
    column: `attribute${i + 1}`,
    type: 'string',
    custom: true,
    storedAsText: true,
    maxLength: 4000,
  }));
const userGroupFields = [
  text('userGroupEdit', 'user_group_edit'),
  text('userGroupViewDetails', 'user_group_view_details'),
];

function masterType(
  t: Omit<TypeDef, 'fields' | 'massEditable' | 'bulkLoadable' | 'userGroups' | 'uniqueColumns'> & {
    own: readonly FieldDef[];
  },
): TypeDef {
  const { own, ...rest } = t;
  const fields = [...own, ...attributes(), ...SYSTEM];
  return {
    ...rest,
    fields,
    uniqueColumns: t.businessKey.map((k) => fields.find((f) => f.name === k)!.column),
    massEditable: true,
    bulkLoadable: true,
    userGroups: fields.some((f) => f.name === 'userGroupViewDetails'),
  };
}

/** Attribute-meta field types and the comparison type each gives an attribute. */
export const ATTRIBUTE_TYPES: Readonly<Record<string, FieldType>> = {
  TEXT: 'string',
  LINK: 'string',
  NUMERIC: 'decimal',
  MONEY: 'decimal',
  PERCENT: 'decimal',
  INTEGER: 'integer',
  DATE: 'date',
  DATETIME: 'datetime',
  BOOLEAN: 'boolean',
};

/** An attribute-meta row may only describe a custom attribute its owner type has. */
function attributeOfOwner(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const name = data.fieldName;
  if (name === undefined) return undefined;
  const n = typeof name === 'string' ? /^attribute(\d+)$/.exec(name) : null;
  if (n && Number(n[1]) >= 1 && Number(n[1]) <= ATTRIBUTE_COUNT) return undefined;
  return { fieldName: { errorMessage: `must be attribute1..attribute${ATTRIBUTE_COUNT}` } };
}

function metaType(code: string, owner: string, fetch: RouteAccess, perName: boolean): TypeDef {
  const own: FieldDef[] = [
    ...(perName ? [key('name', 'name')] : []),
    key('fieldName', 'field_name'),
    text('label', 'label'),
    text('fieldType', 'field_type', { oneOf: Object.keys(ATTRIBUTE_TYPES), maxLength: 20 }),
    { name: 'requiredField', column: 'required_field', type: 'boolean' },
    { name: 'readOnly', column: 'read_only', type: 'boolean' },
  ];
  return {
    code,
    label: `Attribute meta of ${owner}`,
    table: 'attribute_meta',
    fields: [...own, ...SYSTEM],
    businessKey: perName ? ['name', 'fieldName'] : ['fieldName'],
    uniqueColumns: ['owner_type', 'name', 'field_name'],
    fixed: { column: 'owner_type', value: owner },
    deleteMode: 'hard',
    massEditable: false,
    bulkLoadable: false,
    userGroups: false,
    access: { fetch, write: 'ATTRIBUTEMETA_EDIT' },
    validate: attributeOfOwner,
  };
}

/** A decimal field (numeric column; values come back as exact decimal strings). */
const decimal = (name: string, column: string): FieldDef => ({ name, column, type: 'decimal' });

const TYPES: readonly TypeDef[] = [
  masterType({
    code: 'P',
    label: 'Product',
    table: 'products',
    own: [
      key('sku', 'sku'),
      text('label', 'label'),
      text('unitOfMeasure', 'unit_of_measure'),
      text('currency', 'currency'),
      text('formulaName', 'formula_name'),
      ...userGroupFields,
    ],
    businessKey: ['sku'],
    attributeMeta: 'PAM',
    deleteMode: 'hard',
    access: { fetch: AUTHENTICATED, write: 'PRODUCT_EDIT' },
  }),
  masterType({
    code: 'C',
    label: 'Customer',
    table: 'customers',
    own: [key('customerId', 'customer_id'), text('name', 'name'), ...userGroupFields],
    businessKey: ['customerId'],
    attributeMeta: 'CAM',
    deleteMode: 'hard',
    access: { fetch: AUTHENTICATED, write: 'CUSTOMER_EDIT' },
  }),
  masterType({
    code: 'SL',
    label: 'Seller',
    table: 'sellers',
    own: [key('sellerId', 'seller_id'), text('name', 'name'), ...userGroupFields],
    businessKey: ['sellerId'],
    attributeMeta: 'SLAM',
    deleteMode: 'hard',
    access: { fetch: 'SELLER_FETCH', write: 'SELLER_EDIT' },
  }),
  masterType({
    code: 'PX',
    label: 'Product extension',
    table: 'product_extensions',
    own: [key('name', 'name'), key('sku', 'sku')],
    businessKey: ['name', 'sku'],
    attributeMeta: 'PXAM',
    metaPerName: true,
    deleteMode: 'soft',
    access: { fetch: 'PRODUCTEXTENSION_FETCH', write: 'PRODUCTEXTENSION_EDIT' },
  }),
  masterType({
    code: 'CX',
    label: 'Customer extension',
    table: 'customer_extensions',
    own: [key('name', 'name'), key('customerId', 'customer_id')],
    businessKey: ['name', 'customerId'],
    attributeMeta: 'CXAM',
    metaPerName: true,
    deleteMode: 'soft',
    access: { fetch: 'CUSTOMEREXTENSION_FETCH', write: 'CUSTOMEREXTENSION_EDIT' },
  }),
  {
    ...masterType({
      code: 'SX',
      label: 'Seller extension',
      table: 'seller_extensions',
      own: [key('name', 'name'), key('sellerId', 'seller_id')],
      businessKey: ['name', 'sellerId'],
      attributeMeta: 'SXAM',
      metaPerName: true,
      deleteMode: 'soft',
      access: { fetch: 'SELLER_FETCH', write: 'SELLER_EDIT' },
    }),
    updateNeedsVersion: true,
  },
  metaType('PAM', 'P', AUTHENTICATED, false),
  metaType('CAM', 'C', AUTHENTICATED, false),
  metaType('SLAM', 'SL', 'SELLER_FETCH', false),
  metaType('PXAM', 'PX', AUTHENTICATED, true),
  metaType('CXAM', 'CX', AUTHENTICATED, true),
  metaType('SXAM', 'SX', 'SELLER_FETCH', true),
  masterType({
    code: 'PBOME',
    label: 'Product bill of materials entry',
    table: 'product_bom',
    own: [key('sku', 'sku'), key('componentSku', 'component_sku'), decimal('quantity', 'quantity')],
    businessKey: ['sku', 'componentSku'],
    deleteMode: 'hard',
    // Products are open to every user; so is their structure. Changing it is product editing.
    access: { fetch: AUTHENTICATED, write: 'PRODUCT_EDIT' },
  }),
  masterType({
    code: 'PCOMP',
    label: 'Product competition',
    table: 'product_competition',
    own: [
      key('sku', 'sku'),
      key('competitor', 'competitor'),
      { name: 'competitionDate', column: 'competition_date', type: 'date', required: true, key: true },
      decimal('price', 'price'),
      text('currency', 'currency'),
      text('label', 'label'),
    ],
    businessKey: ['sku', 'competitor', 'competitionDate'],
    deleteMode: 'hard',
    access: { fetch: 'PRODUCTCOMPETITION_FETCH', write: 'PRODUCTCOMPETITION_EDIT' },
  }),
];

const BY_CODE: ReadonlyMap<string, TypeDef> = new Map(TYPES.map((t) => [t.code, t]));

export function findType(code: string): TypeDef | undefined {
  return BY_CODE.get(code);
}

export function allTypes(): readonly TypeDef[] {
  return TYPES;
}

/** The type whose attributes an attribute-meta type describes (`PAM` → `P`). */
export function ownerOfMeta(meta: TypeDef): TypeDef | undefined {
  return meta.fixed ? BY_CODE.get(meta.fixed.value) : undefined;
}
