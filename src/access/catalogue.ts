// The permission catalogue and the roles that grant permissions: one typed constant each, documented
// in docs/permissions.md (a test keeps the two in step). `ADMIN` holds every permission. A route
// declares one permission (or AUTHENTICATED / PUBLIC); `can` in ./access.ts decides. Business roles
// (type BR) are bundles of these roles stored per partition; they add no permission of their own.

/** Every permission, with what it allows (the text of docs/permissions.md). */
export const PERMISSION_CATALOGUE = {
  USER_FETCH:
    "Read users with all their fields (`/fetch/U`, full rows of `accountmanager.fetchusers`), other users' groups and business roles, the groups of a business role, audit reports (with `ROLE_FETCH`)",
  USER_EDIT:
    "Create, change and delete users, user groups and business roles; assign roles, groups and business roles; copy roles and users; change other users' passwords; list and revoke other users' api tokens",
  ROLE_FETCH: 'Read the roles of a user or of a business role (`accountmanager.fetchroles`), audit reports',
  PARTITION_ADMIN: 'Partition-wide settings of the operator kind (reserved: no operation needs it yet)',
  ADVANCEDCONFIG_EDIT:
    'Read and write the advanced configuration options (type `ACO`, e.g. `externalJWTConfiguration`)',
  PRODUCT_EDIT:
    'Create, change and delete products (`P`), bills of materials (`PBOME`), product descriptions (`PDESC`), references (`PR`) and cross-references (`PXREF`)',
  CUSTOMER_EDIT:
    "Create, change and delete customers (`C`), customer descriptions (`CDESC`; the customer's user groups apply as well) and customer assignments",
  TO_DO_EDIT: 'Create, change and delete to-do items (every user reads them)',
  SELLER_FETCH: 'Read sellers (`SL`), seller extensions (`SX`) and their attribute meta',
  SELLER_EDIT: 'Create, change and delete sellers and seller extensions',
  PRODUCTEXTENSION_FETCH: 'Read product extension rows (`PX`)',
  PRODUCTEXTENSION_EDIT: 'Create, change and delete product extension rows',
  CUSTOMEREXTENSION_FETCH: 'Read customer extension rows (`CX`)',
  CUSTOMEREXTENSION_EDIT: 'Create, change and delete customer extension rows',
  ATTRIBUTEMETA_EDIT: 'Create, change and delete attribute meta (`PAM`, `CAM`, `PXAM`, ...)',
  PRODUCTCOMPETITION_FETCH: 'Read product competition data (`PCOMP`)',
  PRODUCTCOMPETITION_EDIT: 'Create, change, delete and import product competition data',
  LOOKUPTABLE_ADD: 'Create lookup tables and add values (`lookuptablemanager.add`)',
  LOOKUPTABLE_UPDATE:
    'Change lookup tables and their values (`lookuptablemanager.update`, `.massedit`, `.findref`)',
  LOOKUPTABLE_REMOVE:
    'Delete lookup tables and values, clear value columns (`lookuptablemanager.delete`, `.resetcolumn`)',
  LOOKUPTABLE_COPY: 'Copy a lookup table with its values (`lookuptablemanager.copy`)',
  LOOKUPTABLEVALUES_INTEGRATE:
    'Create or update lookup table values by name (`lookuptablemanager.integrate`)',
  CALCULATIONGRID_FETCH: 'Read calculation grids (`CG`) and their items (`CGI1`..`CGI6`)',
  CALCULATIONGRID_EDIT:
    'Create, calculate, relabel and delete calculation grids (`calculationgridmanager.addgrid`, `.calculate`, `/update|delete/CG`); add, override (`calculationgridmanager.update`) and delete their items',
  CALCULATIONGRID_SUBMIT:
    'Accept or reject calculation grid items (`calculationgridmanager.accept`, `.reject`)',
  FORMULA_EDIT:
    'Create, change and delete pricing logics (`F`) and rounding policies (`RP`); running logics needs no permission beyond reading products',
  CONDITIONRECORD_FETCH:
    "Read condition record sets (`CRCS`), their items (`CRCI`, `CRCI1`..`CRCI12`), item history (`CRCIH`) and attribute meta (`CRCIAM`), and look items up (`conditionrecordset.lookup`); the set's `userGroupViewDetails` applies as well",
  CONDITIONRECORD_EDIT:
    "Create and delete condition record sets (`CRCS`); create, change and delete their items (`CRCI`, `CRCI1`..`CRCI12`), `/loaddata/CRCP`; the set's `userGroupEdit` applies as well",
  CONDITIONRECORDSET_UPDATE:
    'Change label and user groups of a condition record set (`conditionrecordset.update`)',
  HISTORY_FETCH:
    'Read record history across types (`/history.fetch`), of the types whose records one may fetch; the history of one record needs only the right to fetch that record',
  WORKFLOW_FETCH:
    'Read workflows and approvals (`workflowsmanager.fetch...`) and workflow definitions (`WFD`)',
  WORKFLOW_EDIT: 'Create, change and delete workflow definitions (`/add|update|delete/WFD`)',
  WORKFLOW_ADMIN:
    'See every workflow and delegation, withdraw any workflow, delegate on behalf of any user (`workflowsmanager.*`, `workflowdelegationmanager.*`)',
  NOTIFICATION_SEND:
    'Send notifications to other users and to user groups (`notification.send` with `recipients`); everyone may notify themselves',
  DCRTYPE_EDIT:
    'Create, change and delete DCR types (`DCRT`: which type and fields data change requests may change)',
  DCR_EDIT:
    "Create, read, change and submit data change requests (`/dcrmanager.*`, `/fetch/DCR`); an approved DCR writes its target type with the submitter's user groups",
  REBATETYPE_EDIT:
    'Create, change and delete rebate types (`RBT`); their attribute meta (`RBTAM`) is `ATTRIBUTEMETA_EDIT`',
  REBATERECORD_FETCH: 'Read rebate record groups (`/fetch/RRG`); their user groups apply as well',
  REBATERECORD_EDIT:
    "Create, change, delete and calculate rebate record groups (`/add|update|delete/RRG`, `/rebaterecordgroup.calculate`); the group's `userGroupEdit` applies as well",
  REBATERECORD_SUBMIT:
    'Submit rebate record groups to their workflow (`/rebaterecordgroup.submit`, `/async`, `/workflowsmanager.submit/{id}.RRG`)',
  IMPORT_EDIT:
    "Create, change and submit imports (`/importmanager.*`); the submit writes with the importing user's own rights",
} as const satisfies Record<string, string>;

export type Permission = keyof typeof PERMISSION_CATALOGUE;

export const PERMISSIONS: readonly Permission[] = Object.keys(PERMISSION_CATALOGUE) as Permission[];

/** Any authenticated user of the partition, whatever their roles. */
export const AUTHENTICATED = 'AUTHENTICATED';
/** No credentials at all (login pages, OAuth endpoints). */
export const PUBLIC = 'PUBLIC';

export type RouteAccess = Permission | typeof AUTHENTICATED | typeof PUBLIC;

export interface RoleSpec {
  /** The permissions the role grants; `'*'` means all of them. */
  readonly grants: readonly Permission[] | '*';
  /** Who the role is meant for (the text of docs/permissions.md). */
  readonly purpose: string;
}

const WORKFLOW: readonly Permission[] = ['WORKFLOW_FETCH'];

/**
 * `ADMIN_WO_USER_MGMT` is `ADMIN` without user management: no `USER_EDIT`, and no `ROLE_FETCH`
 * (the interface lists who may call fetchroles, and this role is not among them).
 */
const NOT_FOR_ADMIN_WO_USER_MGMT: readonly Permission[] = ['USER_EDIT', 'ROLE_FETCH'];

/** Every role the platform knows. Only these names can be assigned to users and business roles. */
export const ROLE_CATALOGUE = {
  ADMIN: { grants: '*', purpose: 'Administrator: every permission; sees and edits every record' },
  ADMIN_WO_USER_MGMT: {
    grants: PERMISSIONS.filter((p) => !NOT_FOR_ADMIN_WO_USER_MGMT.includes(p)),
    purpose: 'Administrator without user management',
  },
  USERADMIN: {
    grants: ['USER_FETCH', 'USER_EDIT', 'ROLE_FETCH'],
    purpose: 'Manages users, groups, business roles and passwords',
  },
  USERAUDIT: { grants: ['USER_FETCH', 'ROLE_FETCH'], purpose: 'Reviews users and their rights' },
  SUPPORT: {
    grants: [
      'USER_FETCH',
      'ROLE_FETCH',
      'WORKFLOW_FETCH',
      'CONDITIONRECORD_FETCH',
      'CONDITIONRECORDSET_UPDATE',
    ],
    purpose: 'Support staff',
  },
  PLASMA: { grants: ['ROLE_FETCH', 'LOOKUPTABLE_UPDATE'], purpose: 'Market-data (PlasmA) maintenance' },
  DATAINTEGRATION: {
    grants: [
      'PRODUCT_EDIT',
      'CUSTOMER_EDIT',
      'SELLER_FETCH',
      'SELLER_EDIT',
      'PRODUCTEXTENSION_FETCH',
      'PRODUCTEXTENSION_EDIT',
      'CUSTOMEREXTENSION_FETCH',
      'CUSTOMEREXTENSION_EDIT',
      'PRODUCTCOMPETITION_FETCH',
      'PRODUCTCOMPETITION_EDIT',
      'LOOKUPTABLEVALUES_INTEGRATE',
      'CONDITIONRECORD_FETCH',
      'CONDITIONRECORD_EDIT',
      'TO_DO_EDIT',
    ],
    purpose: 'Technical users of integrations (loads of master data, lookup values, condition records)',
  },
  PRICESHOP_RO: {
    grants: [
      'PRODUCTEXTENSION_FETCH',
      'CUSTOMEREXTENSION_FETCH',
      'SELLER_FETCH',
      'PRODUCTCOMPETITION_FETCH',
      'CONDITIONRECORD_FETCH',
      'WORKFLOW_FETCH',
    ],
    purpose: 'Reads the price shop',
  },
  PRICESHOP_EDIT: {
    grants: [
      'PRODUCT_EDIT',
      'PRODUCTEXTENSION_FETCH',
      'PRODUCTEXTENSION_EDIT',
      'CUSTOMEREXTENSION_FETCH',
      'SELLER_FETCH',
      'PRODUCTCOMPETITION_FETCH',
      'CALCULATIONGRID_FETCH',
      'CALCULATIONGRID_EDIT',
      'CALCULATIONGRID_SUBMIT',
      'CONDITIONRECORD_FETCH',
      'WORKFLOW_FETCH',
      'TO_DO_EDIT',
    ],
    purpose: 'Works in the price shop: products, extensions, calculation grids, to-do items',
  },
  PB_PRICEGRIDS_RO: {
    grants: ['WORKFLOW_FETCH', 'CALCULATIONGRID_FETCH'],
    purpose: 'Reads price grids and calculation grids',
  },
  PB_PARAMETERS: {
    grants: ['LOOKUPTABLE_ADD', 'LOOKUPTABLE_UPDATE', 'LOOKUPTABLE_REMOVE', 'LOOKUPTABLE_COPY'],
    purpose: 'Maintains company parameters (lookup tables)',
  },
  PB_LOGICS: {
    grants: ['FORMULA_EDIT'],
    purpose: 'Writes pricing logics and rounding policies',
  },
  PB_CONDITIONRECORDEDITOR: {
    grants: ['CONDITIONRECORD_FETCH', 'CONDITIONRECORD_EDIT', 'CONDITIONRECORDSET_UPDATE'],
    purpose: 'Edits condition record sets and their items',
  },
  WF_BUILDER: { grants: ['WORKFLOW_FETCH', 'WORKFLOW_EDIT'], purpose: 'Builds workflows' },
  WF_ADMIN: {
    grants: ['WORKFLOW_FETCH', 'WORKFLOW_EDIT', 'WORKFLOW_ADMIN'],
    purpose: 'Administers workflows',
  },
  RM_RAT: {
    grants: ['WORKFLOW_FETCH', 'REBATETYPE_EDIT', 'REBATERECORD_FETCH'],
    purpose: 'Rebate agreement templates: rebate types',
  },
  RM_REBATEAGREEMENTS_RO: {
    grants: ['WORKFLOW_FETCH', 'REBATERECORD_FETCH'],
    purpose: 'Reads rebate agreements and rebate record groups',
  },
  RM_REBATEAGREEMENTS: {
    grants: ['WORKFLOW_FETCH', 'REBATERECORD_FETCH', 'REBATERECORD_EDIT', 'REBATERECORD_SUBMIT'],
    purpose: 'Works on rebate agreements: rebate record groups, their calculation and submit',
  },
  CONTRACTS_RO: { grants: WORKFLOW, purpose: 'Reads contracts' },
  CM_CONTRACTMANAGER: { grants: WORKFLOW, purpose: 'Manages contracts' },
  SC_COMPENSATIONS_RO: { grants: WORKFLOW, purpose: 'Reads sales compensations' },
  SC_ADMIN: { grants: WORKFLOW, purpose: 'Administers sales compensations' },
} as const satisfies Record<string, RoleSpec>;

export type Role = keyof typeof ROLE_CATALOGUE;

export const ROLE_NAMES: readonly Role[] = Object.keys(ROLE_CATALOGUE) as Role[];

/** Roles and the permissions each grants; `'*'` means all. */
export const ROLES: Readonly<Record<string, readonly Permission[] | '*'>> = Object.fromEntries(
  ROLE_NAMES.map((r) => [r, ROLE_CATALOGUE[r].grants]),
);

export function isKnownPermission(name: string): name is Permission {
  return Object.hasOwn(PERMISSION_CATALOGUE, name);
}

export function isKnownRole(name: string): name is Role {
  return Object.hasOwn(ROLE_CATALOGUE, name);
}
