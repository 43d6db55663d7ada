// The type registry: every type code declared once — its table, fields, business key, custom
// attributes, delete mode, flags and permissions. The generic operations, /fetch, metadata.describe,
// the attribute meta and the loaders all read it; adding a type is one declaration plus a migration.

import { createPublicKey } from 'node:crypto';
import type { RouteAccess } from '../access/catalogue.ts';
import { AUTHENTICATED, isKnownPermission } from '../access/catalogue.ts';
import type { Principal } from '../access/access.ts';
import type { FieldDef, FieldType, TypeDef } from './types.ts';
import { AppError, type FieldErrors } from '../http/errors.ts';
import { qualified } from '../db/sql.ts';
import { FINAL_STATUSES, type JobStatus } from '../jobs/endings.ts';
import {
  ATTRIBUTE_COUNT,
  ATTRIBUTE_TYPES,
  SYSTEM,
  defaulted,
  formatTypeAlias,
  key,
  text,
} from './registry-fields.ts';
import { masterType } from './registry-master.ts';
import { BY_CUSTOMER, BY_PRODUCT, BY_SELLER, MORE_MASTER_TYPES } from './registry-master-more.ts';
import { LOOKUP_TYPES } from './registry-lookup.ts';
import { NOTIFICATION_TYPE } from './registry-notifications.ts';
import { DCR_TYPES, setDcrTargetFields } from './registry-dcr.ts';
import { IMPORT_TYPES } from './registry-imports.ts';
import { FORMULA_TYPES, setLogicRootFields } from './registry-formulas.ts';
import { CONDITION_RECORD_TYPES, perSetItemMeta } from './registry-condrec.ts';
import { HISTORY_TYPE, setHistoryOwnedTypes } from './registry-history.ts';
import { WORKFLOW_TYPES } from './registry-workflows.ts';
import { REBATE_TYPES } from './registry-rebates.ts';
import { CALC_GRID_TYPES } from './registry-calcgrids.ts';
import { isObj } from './values.ts';

export type { FieldDef, TypeDef } from './types.ts';

// SYSTEM, text, key and attributes live in ./registry-fields.ts, shared with ./registry-lookup.ts.
export { ATTRIBUTE_COUNT, ATTRIBUTE_TYPES } from './registry-fields.ts';
const userGroupFields = [
  text('userGroupEdit', 'user_group_edit'),
  text('userGroupViewDetails', 'user_group_view_details'),
];

/** An attribute-meta row may only describe a custom attribute its owner type has. */
function attributeOfOwner(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const name = data.fieldName;
  if (name === undefined) return undefined;
  const n = typeof name === 'string' ? /^attribute([1-9]\d?)$/.exec(name) : null;
  if (n && Number(n[1]) >= 1 && Number(n[1]) <= ATTRIBUTE_COUNT) return undefined;
  return { fieldName: { errorMessage: `must be attribute1..attribute${ATTRIBUTE_COUNT}` } };
}

const fieldType = defaulted(
  text('fieldType', 'field_type', { oneOf: Object.keys(ATTRIBUTE_TYPES), maxLength: 20 }),
);

function metaType(code: string, owner: string, fetch: RouteAccess, perName: boolean): TypeDef {
  const own: FieldDef[] = [
    ...(perName ? [key('name', 'name')] : []),
    key('fieldName', 'field_name'),
    text('label', 'label'),
    // Columns with a default (TEXT, false): may be left out, never set to null (defaultOnAdd).
    fieldType,
    formatTypeAlias(fieldType),
    { name: 'requiredField', column: 'required_field', type: 'boolean', required: true, defaultOnAdd: true },
    { name: 'readOnly', column: 'read_only', type: 'boolean', required: true, defaultOnAdd: true },
    // The engine keeps an index matching the attribute's compiled SQL (src/engine/indexes.ts).
    { name: 'indexed', column: 'indexed', type: 'boolean', required: true, defaultOnAdd: true },
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

// ---------------------------------------------------------------------------------------------
// Accounts and configuration: users, user groups, business roles, advanced configuration options.
// Their roles and memberships are link tables served by the account manager (modules/accounts), which
// also owns /add/U, /update/U, /delete/U and the deletes of UG and BR: the generic routes never see
// those writes. The password hash is deliberately not a field, so no generic operation can read it.

/** Login names travel in Basic credentials as `<partition>/<login>:<password>`. */
export const LOGIN_NAME = /^[^\s:/]+$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

function userRules(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const errors: FieldErrors = {};
  if (typeof data.loginName === 'string' && !LOGIN_NAME.test(data.loginName)) {
    errors.loginName = {
      errorMessage: data.loginName === '' ? 'is required' : 'must not contain spaces, ":" or "/"',
    };
  }
  // A number or boolean would be stored as its text ("true"): checked as that text, so refused.
  const email =
    typeof data.email === 'number' || typeof data.email === 'boolean' ? String(data.email) : data.email;
  if (typeof email === 'string' && email !== '' && !EMAIL.test(email)) {
    errors.email = { errorMessage: 'is not an e-mail address' };
  }
  // The column is NOT NULL: an empty value would otherwise reach the database as NULL.
  if ('activated' in data && (data.activated === null || data.activated === '')) {
    errors.activated = { errorMessage: 'must be true or false' };
  }
  return Object.keys(errors).length > 0 ? errors : undefined;
}

/** The option whose value the external-JWT authentication reads (auth/external-jwt.ts). */
export const EXTERNAL_JWT_OPTION = 'externalJWTConfiguration';
const SYSTEM_NAME = /^[A-Za-z0-9]+$/;

/**
 * `{entries: {<system>: {publicKey: <PEM RSA public key>, permissions: null | [names]}}}`; the reason
 * it is not, or undefined. Checked on write, so a broken trust relation is refused when it is
 * configured rather than found when the first external call fails.
 */
export function externalJwtConfigProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'must be a JSON text';
  let config: unknown;
  try {
    config = JSON.parse(value);
  } catch {
    return 'must be valid JSON';
  }
  const entries = isObj(config) ? config.entries : undefined;
  if (!isObj(entries)) return 'must be {"entries": {<system>: {publicKey, permissions}}}';
  for (const [system, entry] of Object.entries(entries)) {
    const at = `entries.${system}`;
    if (!SYSTEM_NAME.test(system)) return `${at}: system names are letters A-Z, a-z and digits only`;
    if (!isObj(entry)) return `${at} must be {publicKey, permissions}`;
    const extra = Object.keys(entry).find((k) => k !== 'publicKey' && k !== 'permissions');
    if (extra !== undefined) return `${at}.${extra} is not a known setting`;
    if (typeof entry.publicKey !== 'string') return `${at}.publicKey must be a PEM public key`;
    try {
      if (createPublicKey(entry.publicKey).asymmetricKeyType !== 'rsa')
        return `${at}.publicKey must be an RSA key`;
    } catch {
      return `${at}.publicKey is not a PEM public key`;
    }
    const permissions = entry.permissions;
    if (permissions === undefined || permissions === null) continue;
    if (!Array.isArray(permissions)) return `${at}.permissions must be null or a list of permission names`;
    for (const p of permissions as unknown[]) {
      if (typeof p !== 'string' || !isKnownPermission(p)) {
        return `${at}.permissions: unknown permission ${JSON.stringify(p)}`;
      }
    }
  }
  return undefined;
}

/** A value written together with its option's name (add, update by name); see also the ACO routes. */
function advancedConfigRules(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  // No value (null) means no trust relation at all, like a missing option.
  if (data.uniqueName !== EXTERNAL_JWT_OPTION || data.value === undefined || data.value === null) {
    return undefined;
  }
  const problem = externalJwtConfigProblem(data.value);
  return problem === undefined ? undefined : { value: { errorMessage: problem } };
}

function accountType(
  t: Pick<TypeDef, 'code' | 'label' | 'table' | 'access' | 'bulkLoadable' | 'validate'> & {
    own: readonly FieldDef[];
  },
): TypeDef {
  const { own, ...rest } = t;
  return {
    ...rest,
    fields: [...own, ...SYSTEM],
    businessKey: [own[0]!.name],
    uniqueColumns: [own[0]!.column],
    deleteMode: 'hard',
    massEditable: false,
    userGroups: false,
  };
}

const ACCOUNT_TYPES: readonly TypeDef[] = [
  accountType({
    code: 'U',
    label: 'User',
    table: 'users',
    own: [
      // The unique index is on lower(login_name): adds conflict case-insensitively (ON CONFLICT DO
      // NOTHING of hard-deleted types needs no target); U takes no upserts, which would need one.
      { ...key('loginName', 'login_name'), caseless: true },
      text('firstName', 'first_name', { maxLength: 255 }),
      text('lastName', 'last_name', { maxLength: 255 }),
      text('email', 'email', { maxLength: 320 }),
      { name: 'activated', column: 'activated', type: 'boolean' },
    ],
    bulkLoadable: false,
    access: { fetch: 'USER_FETCH', write: 'USER_EDIT' },
    validate: userRules,
  }),
  accountType({
    code: 'UG',
    label: 'User group',
    table: 'user_groups',
    own: [key('uniqueName', 'unique_name'), text('label', 'label')],
    // The interface lists UG among the file bulk-load codes.
    bulkLoadable: true,
    access: { fetch: AUTHENTICATED, write: 'USER_EDIT' },
  }),
  accountType({
    code: 'BR',
    label: 'Business role',
    table: 'business_roles',
    own: [key('uniqueName', 'unique_name'), text('label', 'label')],
    bulkLoadable: false,
    access: { fetch: AUTHENTICATED, write: 'USER_EDIT' },
  }),
  {
    ...accountType({
      code: 'ACO',
      label: 'Advanced configuration option',
      table: 'advanced_config',
      own: [key('uniqueName', 'unique_name'), text('value', 'value', { maxLength: 1_000_000 })],
      bulkLoadable: false,
      access: { fetch: 'ADVANCEDCONFIG_EDIT', write: 'ADVANCEDCONFIG_EDIT' },
      validate: advancedConfigRules,
    }),
    beforeInsert: (_q, principal, data) => Promise.resolve(guardTrustOption(principal, data.uniqueName)),
    // Deletes too: removing the trust is a change of who may sign in.
    beforeChange: (_q, principal, old) => Promise.resolve(guardTrustOption(principal, old.uniqueName)),
  },
];

/**
 * `externalJWTConfiguration` decides which keys may sign in as any user, ADMIN included: whoever
 * writes it can become anyone. Only an ADMIN on a credential restricted to nothing writes it (an
 * ADMIN_WO_USER_MGMT, or an api token restricted to ADVANCEDCONFIG_EDIT, made himself ADMIN so).
 */
function guardTrustOption(principal: Principal, name: unknown): void {
  if (name !== EXTERNAL_JWT_OPTION || (principal.admin && principal.restriction === null)) return;
  throw new AppError(
    'FORBIDDEN',
    `${EXTERNAL_JWT_OPTION} decides who may sign in as any user: only an ADMIN, on a credential without restrictions, changes it`,
  );
}

// ---------------------------------------------------------------------------------------------
// Jobs (JST, src/jobs/): written only by the job runner and the asynchronous operations, so every
// field is a system field and the general add/update/integrate are refused. Any user may fetch JST,
// but only their own jobs unless admin (`ownedRows`: every read of the engine, the jobs' routes and
// a job's attachments included).

const jobField = (name: string, column: string, type: FieldType = 'string'): FieldDef => ({
  name,
  column,
  type,
  system: true,
});

const JOB_TYPE: TypeDef = {
  code: 'JST',
  label: 'Job status tracker',
  table: 'jobs',
  fields: [
    jobField('jobName', 'job_name'),
    jobField('trackerType', 'tracker_type'),
    jobField('targetObject', 'target_object'),
    jobField('status', 'status'),
    jobField('progress', 'progress', 'integer'),
    jobField('processingStart', 'processing_start', 'datetime'),
    jobField('processingEnd', 'processing_end', 'datetime'),
    jobField('processingNode', 'processing_node'),
    jobField('cancelRequested', 'cancel_requested', 'boolean'),
    jobField('messages', 'messages', 'json'),
    jobField('calculationResults', 'calculation_results', 'json'),
    jobField('parameters', 'parameters', 'json'),
    ...SYSTEM,
  ],
  businessKey: [],
  uniqueColumns: [],
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  userGroups: false,
  // Deleting job records is partition housekeeping; writing them is the runner's alone.
  access: { fetch: AUTHENTICATED, write: 'PARTITION_ADMIN' },
  ownedRows: (principal, add, alias) =>
    principal.admin ? undefined : `${qualified(alias, 'created_by')} = ${add(principal.userId)}`,
  noHistory: 'jobs keep no record history',
  writtenBy: {
    message: 'jobs are created by asynchronous operations, not written directly',
    deletable: true,
  },
  // A job that has not ended is what a record waits for (a DCR to apply, a grid being calculated):
  // deleted, it would leave that record waiting for ever. It is cancelled first, which settles the
  // record (src/jobs/endings.ts).
  beforeChange: (_q, _principal, old, data) => {
    if (data === undefined && !FINAL_STATUSES.includes(old.status as JobStatus)) {
      const id = String(old.id);
      throw new AppError(
        'CONFLICT',
        `Job ${id}.JST is ${String(old.status)}: cancel it (/admin.canceljst/${id}) before deleting it`,
      );
    }
    return Promise.resolve();
  },
};

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
    writesAtOnce: true,
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
    writesAtOnce: true,
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
    writesAtOnce: true,
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
    scopedBy: BY_PRODUCT,
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
    scopedBy: BY_CUSTOMER,
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
      scopedBy: BY_SELLER,
    }),
    updateNeedsVersion: true,
    movableKeys: ['sellerId'],
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
    // Products are open to every user; so is their structure (its product's user groups apply).
    // Changing it is product editing.
    access: { fetch: AUTHENTICATED, write: 'PRODUCT_EDIT' },
    scopedBy: BY_PRODUCT,
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
    scopedBy: BY_PRODUCT,
  }),
  // PDESC, CDESC, PR, PXREF and the to-do items: the rest of the interface's file-load list.
  ...MORE_MASTER_TYPES,
  ...ACCOUNT_TYPES,
  ...LOOKUP_TYPES,
  JOB_TYPE,
  NOTIFICATION_TYPE,
  ...DCR_TYPES,
  ...IMPORT_TYPES,
  ...FORMULA_TYPES,
  ...CONDITION_RECORD_TYPES,
  // Custom attributes of condition record items, per set (every CRCIn and CRCIH read them under
  // owner CRCI, with the item's set).
  perSetItemMeta(metaType('CRCIAM', 'CRCI', AUTHENTICATED, false)),
  HISTORY_TYPE,
  ...WORKFLOW_TYPES,
  ...REBATE_TYPES,
  ...CALC_GRID_TYPES,
];

const BY_CODE: ReadonlyMap<string, TypeDef> = new Map(TYPES.map((t) => [t.code, t]));

// A logic saved with `product.<field>` (customer, seller, row) names a field the record has.
const namesOf = (code: string) => new Set(BY_CODE.get(code)!.fields.map((f) => f.name));
// A DCR type names fields its target type can write (not keys, not server fields).
setDcrTargetFields((code) => {
  const t = BY_CODE.get(code);
  return t && new Set(t.fields.filter((f) => f.system !== true && f.key !== true).map((f) => f.name));
});
setLogicRootFields(
  new Map([
    ['product', namesOf('P')],
    ['customer', namesOf('C')],
    ['seller', namesOf('SL')],
    // REBATE logics: the rebate record group calculated (row is null in other logics).
    ['row', namesOf('RRG')],
  ]),
);

setHistoryOwnedTypes(TYPES);

export function findType(code: string): TypeDef | undefined {
  return BY_CODE.get(code);
}

/** The type of a type code a request names (path or body field `typeCode`), else a 404 naming it. */
export function requireType(code: string): TypeDef {
  const type = findType(code);
  if (!type) throw new AppError('NOT_FOUND', `Unknown type code ${code}`, { field: 'typeCode' });
  return type;
}

export function allTypes(): readonly TypeDef[] {
  return TYPES;
}

/** The type whose attributes an attribute-meta type describes (`PAM` → `P`). */
export function ownerOfMeta(meta: TypeDef): TypeDef | undefined {
  return meta.fixed ? BY_CODE.get(meta.fixed.value) : undefined;
}
