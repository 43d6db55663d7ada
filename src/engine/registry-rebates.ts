// The rebate types (migration 031, src/modules/rebates/): rebate types (`RBT`: uniqueName, label and
// the REBATE logic their groups run), the attribute meta of rebate record groups per rebate type
// (`RBTAM`: rows of attribute_meta with owner RRG and `name` = the rebate type) and the rebate record
// groups (`RRG`, every field of the interface's table). Statuses, messages, results and actor names
// are server fields: calculate, submit and the workflow's decisions write them, the general
// operations ignore them on input. A locked group, or one in a running or approved workflow, refuses
// general changes (beforeChange); a change of what its calculation reads marks its results as not
// current (changeSets).

import { inUserGroup, type Principal } from '../access/access.ts';
import { AUTHENTICATED } from '../access/catalogue.ts';
import type { Queryable } from '../db/db.ts';
import { qualified } from '../db/sql.ts';
import { AppError, validationError, type FieldErrors } from '../http/errors.ts';
import { isForbiddenName } from '../logic/expression/parse.ts';
import {
  ATTRIBUTE_TYPES,
  SYSTEM,
  attributes,
  defaulted,
  formatTypeAlias,
  key,
  text,
} from './registry-fields.ts';
import { coerceValue, sameTypedValue, isObj } from './values.ts';
import type { FieldDef, FieldType, TypeDef } from './types.ts';

/** Custom attributes of a rebate record group (the interface: up to attribute100). */
export const RRG_ATTRIBUTE_COUNT = 100;

/** The attribute-meta field types (as in the other `*AM` types). */
const META_FIELD_TYPES = [
  'TEXT',
  'LINK',
  'NUMERIC',
  'MONEY',
  'PERCENT',
  'INTEGER',
  'DATE',
  'DATETIME',
  'BOOLEAN',
];

/** Workflow statuses of a group; DRAFT before its first submit (and after a withdrawal). */
export const RRG_WORKFLOW_STATUSES = ['DRAFT', 'SUBMITTED', 'APPROVED', 'DENIED', 'WITHDRAWN'] as const;

/** Fields a group in a running or approved workflow may still change. */
const FROZEN_EDITABLE: ReadonlySet<string> = new Set(['typedId', 'id', 'version', 'comments', 'locked']);
/** Fields a locked group takes (with `locked: false`, it takes any). */
const LOCKED_EDITABLE: ReadonlySet<string> = new Set(['typedId', 'id', 'version', 'locked']);

/** Comparison types of a group's fields: its attributes as the meta of its rebate type types them. */
async function groupFieldTypes(
  q: Queryable,
  partitionId: number,
  rebateType: unknown,
): Promise<ReadonlyMap<string, FieldType>> {
  const types = new Map(RRG_FIELDS.map((f) => [f.name, f.type]));
  if (typeof rebateType !== 'string' || rebateType === '') return types;
  const r = await q.query<{ field_name: string; field_type: string }>(
    `SELECT field_name, field_type FROM attribute_meta
      WHERE partition_id = $1 AND owner_type = 'RRG' AND name = $2`,
    [partitionId, rebateType],
  );
  for (const m of r.rows) types.set(m.field_name, ATTRIBUTE_TYPES[m.field_type] ?? 'string');
  return types;
}

/**
 * The fields of `data` that would change the group: not those it may change anyway, not its
 * business key (which addresses it), not server fields (the general operations ignore them), and
 * not a value equal to the stored one in its field's type (a client sending the record back as it
 * read it, numbers and dates typed).
 */
function changedFields(
  old: Readonly<Record<string, unknown>>,
  data: Readonly<Record<string, unknown>>,
  editable: ReadonlySet<string>,
  types: ReadonlyMap<string, FieldType>,
): string[] {
  const server = new Set(RRG_FIELDS.filter((f) => f.system === true).map((f) => f.name));
  return Object.keys(data).filter(
    (k) =>
      !editable.has(k) &&
      k !== 'uniqueName' &&
      !server.has(k) &&
      !(Object.hasOwn(old, k) && sameTypedValue(types.get(k) ?? 'string', old[k], data[k])),
  );
}

const sys = (name: string, column: string, type: FieldType = 'string'): FieldDef => ({
  name,
  column,
  type,
  system: true,
});
const date = (name: string, column: string): FieldDef => ({ name, column, type: 'date' });
const json = (name: string, column: string): FieldDef => ({ name, column, type: 'json' });
/**
 * A collection the interface types as an array (`[]`) or object (`{}`): a group that was never
 * calculated (or given none) answers it empty, not null — in the read SQL (a coalesce per row, no
 * extra query), so every read answers alike: lists, by id, resultFields/valueFields, history.
 */
const collection = (f: FieldDef, empty: '[]' | '{}'): FieldDef => ({
  ...f,
  readSql: (a) => `coalesce(${qualified(a, f.column)}, '${empty}'::jsonb)`,
});

async function rebateTypeExists(q: Queryable, partitionId: number, name: string): Promise<boolean> {
  const r = await q.query('SELECT 1 FROM rebate_types WHERE partition_id = $1 AND unique_name = $2', [
    partitionId,
    name,
  ]);
  return r.rows.length > 0;
}

/**
 * The rebate type a write names exists. The field is text, which takes a number or a boolean written
 * as its text (values.ts `coerceValue`): 12345 names the type "12345", checked as such, and "" names
 * none of them. A value the text field refuses (an object, a list) is left to its own check.
 */
async function checkRebateType(q: Queryable, principal: Principal, v: unknown, field: string) {
  const name = v === null || v === undefined ? undefined : coerceValue('string', v);
  if (typeof name !== 'string') return;
  if (!(await rebateTypeExists(q, principal.partitionId, name)))
    throw validationError(field, `there is no rebate type ${JSON.stringify(name)}`);
}

// ---- RBT ----------------------------------------------------------------------------------------

/**
 * A rebate type still used by groups is not deleted (409 naming how many); deleting an unused one
 * removes its attribute meta (RBTAM) in the same transaction.
 */
async function guardTypeDelete(
  q: Queryable,
  principal: Principal,
  old: Readonly<Record<string, unknown>>,
  data: Readonly<Record<string, unknown>> | undefined,
): Promise<void> {
  if (data !== undefined) return;
  const r = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM rebate_record_groups WHERE partition_id = $1 AND rebate_type = $2',
    [principal.partitionId, old.uniqueName],
  );
  const n = r.rows[0]?.n ?? 0;
  if (n > 0)
    throw new AppError(
      'CONFLICT',
      `Rebate type ${String(old.uniqueName)} is used by ${n} rebate record group(s)`,
    );
  await q.query(`DELETE FROM attribute_meta WHERE partition_id = $1 AND owner_type = 'RRG' AND name = $2`, [
    principal.partitionId,
    old.uniqueName,
  ]);
}

export const REBATE_TYPE: TypeDef = {
  code: 'RBT',
  label: 'Rebate type',
  table: 'rebate_types',
  fields: [
    key('uniqueName', 'unique_name'),
    text('label', 'label'),
    // The uniqueName of a logic of nature REBATE (checked when a group is calculated, as logics are
    // versioned by date and may be written after the type).
    text('formulaName', 'formula_name', { maxLength: 255 }),
    ...SYSTEM,
  ],
  businessKey: ['uniqueName'],
  uniqueColumns: ['unique_name'],
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  userGroups: false,
  access: { fetch: AUTHENTICATED, write: 'REBATETYPE_EDIT' },
  beforeChange: guardTypeDelete,
  deletesMeta: 'RBTAM',
};

// ---- RBTAM --------------------------------------------------------------------------------------

function rebateMetaRules(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const name = data.fieldName;
  if (name === undefined) return undefined;
  const n = typeof name === 'string' ? /^attribute(\d+)$/.exec(name) : null;
  if (n && Number(n[1]) >= 1 && Number(n[1]) <= RRG_ATTRIBUTE_COUNT) return undefined;
  return { fieldName: { errorMessage: `must be attribute1..attribute${RRG_ATTRIBUTE_COUNT}` } };
}

const REBATE_FIELD_TYPE = defaulted(
  text('fieldType', 'field_type', { oneOf: META_FIELD_TYPES, maxLength: 20 }),
);

export const REBATE_META_TYPE: TypeDef = {
  code: 'RBTAM',
  label: 'Attribute meta of rebate record groups (per rebate type)',
  table: 'attribute_meta',
  fields: [
    // The rebate type whose groups' attributes the row types.
    key('name', 'name'),
    key('fieldName', 'field_name'),
    text('label', 'label'),
    REBATE_FIELD_TYPE,
    formatTypeAlias(REBATE_FIELD_TYPE),
    defaulted({ name: 'requiredField', column: 'required_field', type: 'boolean' }),
    defaulted({ name: 'readOnly', column: 'read_only', type: 'boolean' }),
    defaulted({ name: 'indexed', column: 'indexed', type: 'boolean' }),
    ...SYSTEM,
  ],
  businessKey: ['name', 'fieldName'],
  uniqueColumns: ['owner_type', 'name', 'field_name'],
  fixed: { column: 'owner_type', value: 'RRG' },
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  userGroups: false,
  access: { fetch: AUTHENTICATED, write: 'ATTRIBUTEMETA_EDIT' },
  validate: rebateMetaRules,
  beforeInsert: (q, principal, data) => checkRebateType(q, principal, data.name, 'name'),
};

// ---- RRG ----------------------------------------------------------------------------------------

/** Shapes of the collections a client writes; dates in order (the check constraint's rule, named). */
function groupRules(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const errors: FieldErrors = {};
  const inputs = data.inputs;
  if (inputs !== undefined && inputs !== null) {
    if (!Array.isArray(inputs)) errors.inputs = { errorMessage: 'must be a list of {name, value}' };
    else {
      // A name given twice is refused on the later entry: the logic reads one value per input.
      const seen = new Map<string, number>();
      inputs.forEach((x: unknown, i) => {
        if (!isObj(x) || typeof x.name !== 'string' || x.name === '')
          errors[`inputs[${i}].name`] ??= { errorMessage: 'must be the name of an input of the logic' };
        // A name no logic may declare (logic.ts): stored, the group could never be calculated.
        else if (isForbiddenName(x.name))
          errors[`inputs[${i}].name`] ??= {
            errorMessage: `no logic has an input ${x.name} (names starting with __, constructor and prototype are not allowed)`,
          };
        else if (seen.has(x.name))
          errors[`inputs[${i}].name`] ??= {
            errorMessage: `repeats input ${x.name} (inputs[${seen.get(x.name)}]): give each input once`,
          };
        else if (Object.keys(x).some((k) => !['name', 'value', 'label', 'type'].includes(k)))
          errors[`inputs[${i}]`] ??= { errorMessage: 'holds name, value and optionally label and type' };
        if (isObj(x) && typeof x.name === 'string' && !seen.has(x.name)) seen.set(x.name, i);
      });
    }
  }
  const att = data.approvalRequiredEmailAttachments;
  if (att !== undefined && att !== null && !Array.isArray(att))
    errors.approvalRequiredEmailAttachments = { errorMessage: 'must be a list' };
  const ext = data.itemExtensions;
  if (ext !== undefined && ext !== null && !isObj(ext))
    errors.itemExtensions = { errorMessage: 'must be an object' };
  const from = typeof data.startDate === 'string' ? data.startDate.slice(0, 10) : undefined;
  const to = typeof data.endDate === 'string' ? data.endDate.slice(0, 10) : undefined;
  if (from !== undefined && to !== undefined && to < from)
    errors.endDate = { errorMessage: `must not be before startDate (${from})` };
  return Object.keys(errors).length > 0 ? errors : undefined;
}

/**
 * General update and delete of a group: not while locked (only `locked: false` unlocks it, with or
 * without other changes), not in a running workflow (SUBMITTED) and not once APPROVED — except its
 * `comments` and `locked`. A new rebate type must exist.
 */
async function guardGroupChange(
  q: Queryable,
  principal: Principal,
  old: Readonly<Record<string, unknown>>,
  data: Readonly<Record<string, unknown>> | undefined,
): Promise<void> {
  const name = String(old.typedId);
  if (data === undefined) {
    if (old.locked === true) throw new AppError('CONFLICT', `${name} is locked: unlock it to delete it`);
    if (old.workflowStatus === 'SUBMITTED')
      throw new AppError('CONFLICT', `${name} is in a running workflow: withdraw it to delete it`);
    return;
  }
  const frozen = old.workflowStatus === 'SUBMITTED' || old.workflowStatus === 'APPROVED';
  const locked = old.locked === true && data.locked !== false;
  const types =
    locked || frozen ? await groupFieldTypes(q, principal.partitionId, old.rebateType) : undefined;
  if (locked) {
    const refused = changedFields(old, data, LOCKED_EDITABLE, types!);
    if (refused.length > 0)
      throw new AppError('CONFLICT', `${name} is locked: send locked: false to change it (${refused[0]})`, {
        field: refused[0],
      });
  }
  const changes = frozen ? changedFields(old, data, FROZEN_EDITABLE, types!) : [];
  if (changes.length > 0) {
    throw new AppError(
      'CONFLICT',
      `${name} is ${String(old.workflowStatus)}: only comments and locked can change (${changes[0]})`,
      { field: changes[0] },
    );
  }
  await checkRebateType(q, principal, data.rebateType, 'rebateType');
}

/**
 * A change of what the group's calculation reads (the logic sees the whole group as `row`: inputs,
 * dates, attributes, rebate type, logic, ...) leaves its results of the old data: they are marked
 * as not current — `calculationStatus` 0 (not calculated), `calculatedMsg` and
 * `calculatedWithErrorsMsg` null — so that the group is calculated again before it is submitted
 * (submit refuses status 0). Only `comments` and `locked` (what a submitted group may change too) and
 * values sent back as stored leave them current. The last results stay readable; `calculationDate`
 * says when they were computed.
 */
async function staleResults(
  q: Queryable,
  principal: Principal,
  old: Readonly<Record<string, unknown>>,
  data: Readonly<Record<string, unknown>>,
): Promise<Readonly<Record<string, unknown>> | undefined> {
  // 0: not calculated (modules/rebates/calculate.ts CALCULATION_STATUS.NONE).
  if (old.calculationStatus === null || Number(old.calculationStatus) === 0) return undefined;
  const types = await groupFieldTypes(q, principal.partitionId, old.rebateType);
  if (changedFields(old, data, FROZEN_EDITABLE, types).length === 0) return undefined;
  return { calculationStatus: 0, calculatedMsg: null, calculatedWithErrorsMsg: null };
}

/** Add and integrate: the rebate type exists; an integrate onto an existing group obeys its state. */
async function guardGroupUpsert(
  q: Queryable,
  principal: Principal,
  data: Readonly<Record<string, unknown>>,
): Promise<void> {
  await checkRebateType(q, principal, data.rebateType, 'rebateType');
  if (typeof data.uniqueName !== 'string') return;
  // The whole stored group, as the general update reads it: what it sends back unchanged is no change.
  const cols = RRG_FIELDS.map((f) => `${f.readSql?.('t') ?? qualified('t', f.column)} AS "${f.name}"`).join(
    ', ',
  );
  const r = await q.query<Record<string, unknown>>(
    `SELECT t.id::text || '.RRG' AS "typedId", ${cols}
       FROM rebate_record_groups t WHERE t.partition_id = $1 AND t.unique_name = $2`,
    [principal.partitionId, data.uniqueName],
  );
  const row = r.rows[0];
  // A group hidden from the caller is not named by its state: the upsert is refused as not found.
  if (row && inUserGroup(principal, row.userGroupViewDetails))
    await guardGroupChange(q, principal, row, data);
}

export const RRG_FIELDS: readonly FieldDef[] = [
  // Identity
  key('uniqueName', 'unique_name'),
  text('name', 'name', { maxLength: 255 }),
  text('label', 'label'),
  text('sourceId', 'source_id', { maxLength: 255 }),
  text('sourceIdNoRev', 'source_id_no_rev', { maxLength: 255 }),
  text('parentTypedId', 'parent_typed_id', { maxLength: 255 }),
  // Status
  sys('status', 'status'),
  sys('workflowStatus', 'workflow_status'),
  defaulted(text('agreementStatus', 'agreement_status', { maxLength: 40 })),
  sys('approvalState', 'approval_state'),
  text('workStatus', 'work_status', { maxLength: 40 }),
  defaulted({ name: 'locked', column: 'locked', type: 'boolean' }),
  sys('hasWorkflowHistory', 'has_workflow_history', 'boolean'),
  sys('calculationStatus', 'calculation_status', 'integer'),
  // Messages
  sys('submittedMsg', 'submitted_msg'),
  sys('calculatedMsg', 'calculated_msg'),
  sys('calculatedWithErrorsMsg', 'calculated_with_errors_msg'),
  sys('ongoingCalculationMsg', 'ongoing_calculation_msg'),
  sys('alerts', 'alerts'),
  sys('warnings', 'warnings'),
  text('comments', 'comments', { maxLength: 10_000 }),
  // Dates
  date('startDate', 'start_date'),
  date('endDate', 'end_date'),
  date('payoutDate', 'payout_date'),
  date('targetDate', 'target_date'),
  sys('calculationDate', 'calculation_date', 'datetime'),
  sys('approvalDate', 'approval_date', 'datetime'),
  // Actors (createdBy, lastUpdateBy are among SYSTEM)
  sys('createdByName', 'created_by_name'),
  sys('lastUpdateByName', 'last_update_by_name'),
  sys('submittedByName', 'submitted_by_name'),
  sys('approvedByName', 'approved_by_name'),
  sys('deniedByName', 'denied_by_name'),
  // Config
  text('rebateType', 'rebate_type', { maxLength: 255 }),
  text('headerRebateType', 'header_rebate_type', { maxLength: 255 }),
  text('formulaName', 'formula_name', { maxLength: 255 }),
  text('userGroupEdit', 'user_group_edit'),
  text('userGroupViewDetails', 'user_group_view_details'),
  text('manualOverrides', 'manual_overrides', { maxLength: 10_000 }),
  text('allowedOverrides', 'allowed_overrides', { maxLength: 10_000 }),
  text('completeResultsAvailable', 'complete_results_available', { maxLength: 40 }),
  // Custom
  ...attributes(RRG_ATTRIBUTE_COUNT),
  // Collections
  collection(sys('calculationResults', 'calculation_results', 'json'), '[]'),
  collection(sys('allCalculationResults', 'all_calculation_results', 'json'), '[]'),
  collection(json('inputs', 'inputs'), '[]'),
  collection(sys('serverMessagesExtended', 'server_messages_extended', 'json'), '[]'),
  collection(json('approvalRequiredEmailAttachments', 'approval_required_email_attachments'), '[]'),
  collection(json('itemExtensions', 'item_extensions'), '{}'),
  // The job of the last asynchronous submit.
  sys('jstId', 'job_id', 'integer'),
  ...SYSTEM,
];

export const REBATE_GROUP_TYPE: TypeDef = {
  code: 'RRG',
  label: 'Rebate record group',
  table: 'rebate_record_groups',
  fields: RRG_FIELDS,
  businessKey: ['uniqueName'],
  uniqueColumns: ['unique_name'],
  attributeMeta: 'RBTAM',
  metaPerName: true,
  metaNameField: 'rebateType',
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  userGroups: true,
  access: { fetch: 'REBATERECORD_FETCH', write: 'REBATERECORD_EDIT' },
  validate: groupRules,
  beforeInsert: guardGroupUpsert,
  beforeChange: guardGroupChange,
  changeSets: staleResults,
};

export const REBATE_TYPES: readonly TypeDef[] = [REBATE_TYPE, REBATE_META_TYPE, REBATE_GROUP_TYPE];
