// Data change request types (src/modules/dcr/): DCR types (DCRT, written with the general
// operations by DCRTYPE_EDIT), DCRs (DCR: read with /fetch/DCR, created and changed only by
// /dcrmanager.*), their items (DCRI) and mass changes (DCRM), both served by /dcrmanager.fetch and
// .fetchmassop with the engine's filter and paging.

import { AUTHENTICATED } from '../access/catalogue.ts';
import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import type { FieldDef, FieldType, TypeDef } from './types.ts';
import { AppError, validationError, type FieldErrors } from '../http/errors.ts';
import { MAX_KEY_SIZE } from './registry-condrec.ts';
import { SYSTEM, key, text } from './registry-fields.ts';
import { valueCodeOf, type TableKind } from './registry-lookup.ts';

/**
 * Type codes whose staged changes (DCR items, import changes) are written by the engine's bulk
 * loader in one merge (src/modules/dcr/write.ts): the import target types, and DCR target types.
 */
export const DCR_TARGET_TYPES: readonly string[] = [
  'P',
  'C',
  'SL',
  'PX',
  'CX',
  'SX',
  'PBOME',
  'PCOMP',
  'PDESC',
  'PR',
  'PXREF',
  'LTV',
  'MLTV',
  'MLTV2',
  'MLTV3',
  'MLTV4',
  'MLTV5',
  'MLTV6',
  'JLTV',
  'JLTV2',
];

/**
 * Condition record items (`CRCI`, `CRCI1`..`CRCI12`): DCR target types written item by item through
 * the engine's single-record writes (their overlap check and history are the database's, per item).
 */
export const CONDITION_RECORD_ITEM_TARGETS: readonly string[] = [
  'CRCI',
  ...Array.from({ length: MAX_KEY_SIZE }, (_, i) => `CRCI${i + 1}`),
];

export const isConditionRecordItemCode = (code: string): boolean =>
  CONDITION_RECORD_ITEM_TARGETS.includes(code);

/** Every type code a DCR type may name. */
export const DCR_TYPE_TARGETS: readonly string[] = [...DCR_TARGET_TYPES, ...CONDITION_RECORD_ITEM_TARGETS];

/** Lookup value types: their DCR type names the table. */
export const isLookupValueCode = (code: string): boolean => /^(LTV|JLTV2?|MLTV[2-6]?)$/.test(code);

export const DCR_STATUSES = ['DRAFT', 'SUBMITTED', 'APPROVED', 'DENIED', 'APPLIED', 'FAILED'] as const;
export const CHANGE_TYPES = ['ADD', 'UPDATE', 'DELETE'] as const;

/**
 * The writable fields of a target type code (not keys, not server fields): given by registry.ts once
 * it has every type (it imports this file, so not the other way).
 */
let writableFieldsOf: ((code: string) => ReadonlySet<string> | undefined) | undefined;
export function setDcrTargetFields(fn: (code: string) => ReadonlySet<string> | undefined): void {
  writableFieldsOf = fn;
}

function dcrTypeRules(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const t = data.targetType;
  if (t !== undefined && !(typeof t === 'string' && DCR_TYPE_TARGETS.includes(t))) {
    return { targetType: { errorMessage: `must be one of ${DCR_TYPE_TARGETS.join(', ')}` } };
  }
  if (
    typeof t === 'string' &&
    isLookupValueCode(t) &&
    (typeof data.lookupTable !== 'string' || data.lookupTable === '')
  ) {
    return { lookupTable: { errorMessage: `is required for ${t} (the uniqueName of the lookup table)` } };
  }
  // Only a type of lookup values names a table: on any other it was stored and never used.
  if (
    typeof t === 'string' &&
    !isLookupValueCode(t) &&
    data.lookupTable !== undefined &&
    data.lookupTable !== null &&
    data.lookupTable !== ''
  ) {
    return {
      lookupTable: {
        errorMessage: `names a lookup table, which only a DCR type of lookup values has (not ${t})`,
      },
    };
  }
  // A number or boolean is its text, as the text field stores it (12 is the name "12": refused here,
  // not stored to fail every DCR of the type).
  const fields =
    typeof data.fields === 'number' || typeof data.fields === 'boolean' ? String(data.fields) : data.fields;
  if (typeof fields === 'string') {
    const bad = fields
      .split(',')
      .map((s) => s.trim())
      .find((s) => s !== '' && !/^[A-Za-z][A-Za-z0-9_]*$/.test(s));
    if (bad !== undefined) return { fields: { errorMessage: `${JSON.stringify(bad)} is not a field name` } };
    // With the target type in the same write, each name is one of its writable fields.
    const writable = typeof t === 'string' ? writableFieldsOf?.(t) : undefined;
    const unknown = fields
      .split(',')
      .map((s) => s.trim())
      .find((s) => s !== '' && writable !== undefined && !writable.has(s));
    if (unknown !== undefined) {
      return {
        fields: { errorMessage: `${JSON.stringify(unknown)} is not a writable field of ${String(t)}` },
      };
    }
  }
  return undefined;
}

/**
 * The lookup table a DCR type of lookup values names exists and holds values of its target type:
 * checked when the type is written (it was only when a DCR of it got its first item).
 */
async function knownLookupTable(
  q: Queryable,
  principal: Principal,
  data: Readonly<Record<string, unknown>>,
): Promise<void> {
  const { targetType: t, lookupTable: name } = data;
  if (typeof t !== 'string' || !isLookupValueCode(t) || typeof name !== 'string') return;
  const r = await q.query<{ type: TableKind }>(
    'SELECT type FROM lookup_tables WHERE partition_id = $1 AND unique_name = $2',
    [principal.partitionId, name],
  );
  const kind = r.rows[0]?.type;
  if (kind === undefined)
    throw validationError('lookupTable', `unknown lookup table ${JSON.stringify(name)}`);
  if (valueCodeOf(kind) !== t) {
    throw validationError('lookupTable', `${name} holds ${valueCodeOf(kind)} values, not ${t}`);
  }
}

/**
 * An update or upsert of a DCR type. Its target (`targetType`, `lookupTable`) does not change while a
 * DCR not yet applied uses the type (its items were proposed for that target: a 409, as a delete).
 * When only one of `targetType` and `fields` is sent, the rules run over the record as it will be, so
 * `fields` is checked against the stored target type (and the stored fields against a new one).
 */
async function dcrTypeChange(
  q: Queryable,
  principal: Principal,
  old: Readonly<Record<string, unknown>>,
  data: Readonly<Record<string, unknown>> | undefined,
): Promise<void> {
  if (data === undefined) return;
  const retargeted = (['targetType', 'lookupTable'] as const).find(
    (f) => f in data && (data[f] ?? null) !== (old[f] ?? null),
  );
  if (retargeted !== undefined) {
    const r = await q.query<{ name: string }>(
      `SELECT unique_name AS name FROM dcrs
        WHERE partition_id = $1 AND dcr_type = $2 AND status <> 'APPLIED' ORDER BY id LIMIT 1`,
      [principal.partitionId, old.uniqueName],
    );
    if (r.rows[0] !== undefined) {
      throw new AppError(
        'CONFLICT',
        `DCR type ${String(old.uniqueName)} is used by ${r.rows[0].name} (not yet applied): its ${retargeted} stays`,
        { field: retargeted },
      );
    }
  }
  if ('targetType' in data || 'lookupTable' in data) {
    await knownLookupTable(q, principal, {
      targetType: 'targetType' in data ? data.targetType : old.targetType,
      lookupTable: 'lookupTable' in data ? data.lookupTable : old.lookupTable,
    });
  }
  // The rules over the record as it will be, when the write sends some of the fields: `fields`
  // against the stored target type (and the stored fields against a new one), a `lookupTable`
  // against the stored target type (and a stored one against a new target type).
  if (!['targetType', 'fields', 'lookupTable'].some((f) => f in data)) return;
  const problem = dcrTypeRules({
    targetType: 'targetType' in data ? data.targetType : old.targetType,
    fields: 'fields' in data ? data.fields : old.fields,
    lookupTable: 'lookupTable' in data ? data.lookupTable : old.lookupTable,
  });
  if (problem === undefined) return;
  const [field, { errorMessage }] = Object.entries(problem)[0]!;
  throw new AppError('VALIDATION', `${field}: ${errorMessage}`, { errors: problem });
}

const sys = (name: string, column: string, type: FieldType = 'string'): FieldDef => ({
  name,
  column,
  type,
  system: true,
});

const DCR_MANAGER = '/dcrmanager.* (items and mass changes of data change requests)';

export const DCR_TYPES: readonly TypeDef[] = [
  {
    code: 'DCRT',
    label: 'DCR type',
    table: 'dcr_types',
    fields: [
      key('uniqueName', 'unique_name'),
      text('label', 'label'),
      text('targetType', 'target_type', { required: true, maxLength: 20 }),
      text('lookupTable', 'lookup_table', { maxLength: 255 }),
      text('fields', 'fields', { maxLength: 10_000 }),
      ...SYSTEM,
    ],
    businessKey: ['uniqueName'],
    uniqueColumns: ['unique_name'],
    deleteMode: 'hard',
    massEditable: false,
    bulkLoadable: false,
    userGroups: false,
    access: { fetch: AUTHENTICATED, write: 'DCRTYPE_EDIT' },
    validate: dcrTypeRules,
    beforeInsert: knownLookupTable,
    beforeChange: dcrTypeChange,
  },
  {
    code: 'DCR',
    label: 'Data change request',
    table: 'dcrs',
    fields: [
      sys('uniqueName', 'unique_name'),
      sys('label', 'label'),
      sys('dcrType', 'dcr_type'),
      sys('targetType', 'target_type'),
      sys('lookupTable', 'lookup_table'),
      sys('status', 'status'),
      sys('workflowStatus', 'workflow_status'),
      sys('submitDate', 'submitted_at', 'datetime'),
      sys('applyDate', 'applied_at', 'datetime'),
      sys('jstId', 'job_id', 'integer'),
      sys('messages', 'messages', 'json'),
      ...SYSTEM,
    ],
    businessKey: ['uniqueName'],
    uniqueColumns: ['unique_name'],
    deleteMode: 'hard',
    massEditable: false,
    bulkLoadable: false,
    userGroups: false,
    // /delete/DCR removes a DCR with its items (the service refuses nothing else of the generic ops).
    access: { fetch: 'DCR_EDIT', write: 'DCR_EDIT' },
    writtenBy: { message: 'DCRs are created and changed with /dcrmanager.*', deletable: true },
    noHistory: 'data change requests keep no record history',
  },
  {
    code: 'DCRI',
    label: 'DCR item',
    table: 'dcr_items',
    fields: [
      sys('dcrId', 'dcr_id', 'integer'),
      sys('changeType', 'change_type'),
      sys('targetId', 'target_id', 'integer'),
      sys('targetVersion', 'target_version', 'integer'),
      sys('targetKey', 'target_key', 'json'),
      sys('values', 'proposed', 'json'),
      sys('originalValues', 'original', 'json'),
      ...SYSTEM,
    ],
    businessKey: [],
    uniqueColumns: [],
    deleteMode: 'hard',
    massEditable: false,
    bulkLoadable: false,
    userGroups: false,
    access: { fetch: 'DCR_EDIT', write: 'DCR_EDIT' },
    managerOnly: DCR_MANAGER,
    noHistory: 'data change requests keep no record history',
  },
  {
    code: 'DCRM',
    label: 'DCR mass change',
    table: 'dcr_massops',
    fields: [
      sys('dcrId', 'dcr_id', 'integer'),
      sys('label', 'label'),
      sys('filterCriteria', 'filter', 'json'),
      sys('massEditRecords', 'operations', 'json'),
      ...SYSTEM,
    ],
    businessKey: [],
    uniqueColumns: [],
    deleteMode: 'hard',
    massEditable: false,
    bulkLoadable: false,
    userGroups: false,
    access: { fetch: 'DCR_EDIT', write: 'DCR_EDIT' },
    managerOnly: DCR_MANAGER,
    noHistory: 'data change requests keep no record history',
  },
];
