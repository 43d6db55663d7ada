// The company-parameter types: lookup tables (`LT`) and their value families — `LTV` (simple and
// range tables), `MLTV` and `MLTV2`..`MLTV6` (matrix tables), `JLTV` (JSON tables) and `JLTV2`
// (JSON tables with two keys, `key1` and `key2`, stored beside the matrix values). All are
// `managerOnly`: the general operations refuse them (but the general fetch reads tables, `LT`) and
// /lookuptablemanager.* serves them. A table's values go through the generic engine with a
// per-table TypeDef (`valueTypeOf`): the declaration here plus the table's `fixed` scope, its key
// and value types, and the permission of the operation.

import { Decimal } from 'decimal.js';
import { AUTHENTICATED, type Permission } from '../access/catalogue.ts';
import type { FieldErrors } from '../http/errors.ts';
import type { FieldDef, TypeDef } from './types.ts';
import { SYSTEM, attributes, key, text } from './registry-fields.ts';
import type { FieldType } from './types.ts';
import { coerceValue } from './values.ts';

export const TABLE_KINDS = [
  'SIMPLE',
  'SIMPLE_REAL_KEY',
  'SIMPLE_INT_KEY',
  'SIMPLE_DATE_KEY',
  'RANGE',
  'MATRIX',
  'MATRIX2',
  'MATRIX3',
  'MATRIX4',
  'MATRIX5',
  'MATRIX6',
  'JSON',
  'JSON2',
] as const;
export type TableKind = (typeof TABLE_KINDS)[number];

export const VALUE_TYPES = ['STRING', 'REAL', 'INT', 'DATE'] as const;
export type ValueType = (typeof VALUE_TYPES)[number];

export const TABLE_STATUSES = ['ACTIVE', 'INACTIVE'] as const;

/** How a value of each value type is checked and compared (it is stored as text). */
const FIELD_TYPE: Readonly<Record<ValueType, FieldType>> = {
  STRING: 'string',
  REAL: 'decimal',
  INT: 'integer',
  DATE: 'date',
};

/** What a lookup needs to know of a table. */
export interface LookupTable {
  readonly id: number;
  readonly uniqueName: string;
  readonly type: TableKind;
  readonly valueType: ValueType;
}

/** Key fields of the values of a kind; the migration derives `number_of_key_fields` the same way. */
export function keyCountOf(kind: TableKind): number {
  if (kind === 'JSON2') return 2;
  const m = /^MATRIX([2-6])$/.exec(kind);
  return m ? Number(m[1]) : 1;
}

/** The value type code of a table kind. */
export function valueCodeOf(kind: TableKind): string {
  switch (kind) {
    case 'SIMPLE':
    case 'SIMPLE_REAL_KEY':
    case 'SIMPLE_INT_KEY':
    case 'SIMPLE_DATE_KEY':
    case 'RANGE':
      return 'LTV';
    case 'MATRIX':
      return 'MLTV';
    case 'MATRIX2':
    case 'MATRIX3':
    case 'MATRIX4':
    case 'MATRIX5':
    case 'MATRIX6':
      return `MLTV${keyCountOf(kind)}`;
    case 'JSON':
      return 'JLTV';
    case 'JSON2':
      return 'JLTV2';
    default: {
      const never: never = kind;
      return never;
    }
  }
}

export const isMatrix = (kind: TableKind): boolean => kind.startsWith('MATRIX');

/** The type a SIMPLE_*_KEY table gives its key `name`. */
const KEY_TYPE: Partial<Record<TableKind, FieldType>> = {
  SIMPLE_REAL_KEY: 'decimal',
  SIMPLE_INT_KEY: 'integer',
  SIMPLE_DATE_KEY: 'date',
};

// ---------------------------------------------------------------------------------------------
// Declarations

const MANAGER =
  '/lookuptablemanager.* (lookup tables and their values are served by the lookup table manager)';

/**
 * A table's values are listed with their table, under both names conventions.md gives it
 * ("`lookupTableId`/`tableId`"); the id is generated from the scoping column.
 */
const VALUE_SYSTEM: readonly FieldDef[] = [
  { name: 'lookupTableId', column: 'lookup_table_id', type: 'integer', system: true },
  { name: 'tableId', column: 'lookup_table_id', type: 'integer', system: true },
  ...SYSTEM,
];

/**
 * No table has id 0: the bare declarations (type list, metadata.describe) scope to no rows, so even
 * a mistaken generic use of them could never read or write another table's values.
 */
const NO_TABLE = { column: 'table_ref', value: '0' } as const;

const LOOKUP_TABLE: TypeDef = {
  code: 'LT',
  label: 'Lookup table',
  table: 'lookup_tables',
  fields: [
    key('uniqueName', 'unique_name'),
    text('label', 'label'),
    // Fixed at creation (the service refuses a change): values are typed and stored by it.
    text('type', 'type', { required: true, oneOf: TABLE_KINDS, maxLength: 20 }),
    // Defaulted on add (STRING, ACTIVE: the columns' defaults, as lookuptablemanager.add applies them).
    text('valueType', 'value_type', {
      required: true,
      defaultOnAdd: true,
      oneOf: VALUE_TYPES,
      maxLength: 10,
    }),
    text('status', 'status', { required: true, defaultOnAdd: true, oneOf: TABLE_STATUSES, maxLength: 10 }),
    { name: 'validAfter', column: 'valid_after', type: 'date' },
    text('formatType', 'format_type', { maxLength: 100 }),
    { name: 'numberOfKeyFields', column: 'number_of_key_fields', type: 'integer', system: true },
    ...SYSTEM,
  ],
  businessKey: ['uniqueName'],
  uniqueColumns: ['unique_name'],
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  updateNeedsVersion: true,
  userGroups: false,
  // Any user may read company parameters (logics of every user read them); the manager routes
  // override `write` with the permission of each operation.
  access: { fetch: AUTHENTICATED, write: 'LOOKUPTABLE_UPDATE' },
  managerOnly: MANAGER,
  // Tables (not their values) are read by /fetch/LT too, as by /lookuptablemanager.fetch.
  generalFetch: true,
};

/** A text column holding a value of `type` (checked on write, compared and returned typed). */
function typedText(name: string, column: string, type: FieldType, extra: Partial<FieldDef> = {}): FieldDef {
  return { ...text(name, column, { maxLength: 4000, ...extra }), type, storedAsText: true, custom: true };
}

/** The open ends of a range: a missing lower bound is -infinity, a missing upper one +infinity. */
export const LOWEST_BOUND = new Decimal(-Infinity);
export const HIGHEST_BOUND = new Decimal(Infinity);

/**
 * A RANGE bound as an exact decimal (as doubles, 9007199254740992 < 9007199254740993 was false, and
 * 1e400 < 1e401: both Infinity); `open` when not given (or no number: its field check refuses it).
 */
export function rangeBound(v: unknown, open: Decimal): Decimal {
  const d = v === null || v === undefined ? undefined : coerceValue('decimal', v);
  return d === undefined ? open : new Decimal(String(d));
}

/** lowerBound < upperBound (a missing bound is unbounded). */
function boundsInOrder(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  if (rangeBound(data.lowerBound, LOWEST_BOUND).lt(rangeBound(data.upperBound, HIGHEST_BOUND)))
    return undefined;
  const lower = String(coerceValue('decimal', data.lowerBound));
  return { upperBound: { errorMessage: `must be greater than lowerBound (${lower})` } };
}

function valueType(
  t: Pick<TypeDef, 'code' | 'label' | 'table' | 'businessKey' | 'uniqueColumns' | 'massEditable'> & {
    own: readonly FieldDef[];
  },
): TypeDef {
  const { own, ...rest } = t;
  return {
    ...rest,
    // A value's key names it within its table: its history keeps the table too (`12|A`), so that
    // values of the same name in two tables are told apart by the key.
    historyKey: ['lookupTableId', ...t.businessKey],
    fields: [...own, ...VALUE_SYSTEM],
    fixed: NO_TABLE,
    deleteMode: 'hard',
    bulkLoadable: true,
    userGroups: false,
    access: { fetch: AUTHENTICATED, write: 'LOOKUPTABLE_UPDATE' },
    managerOnly: MANAGER,
  };
}

const MATRIX_UNIQUE = ['table_ref', 'name', 'key1', 'key2', 'key3', 'key4', 'key5', 'key6'];

const matrixKeys = (n: number): FieldDef[] =>
  Array.from({ length: n }, (_, i) => key(`key${i + 1}`, `key${i + 1}`));

const VALUE_TYPES_DECLARED: readonly TypeDef[] = [
  valueType({
    code: 'LTV',
    label: 'Lookup table value',
    table: 'lookup_values',
    own: [
      key('name', 'name'),
      { name: 'lowerBound', column: 'lower_bound', type: 'decimal' },
      { name: 'upperBound', column: 'upper_bound', type: 'decimal' },
      typedText('value', 'value', 'string'),
    ],
    businessKey: ['name'],
    uniqueColumns: ['table_ref', 'name'],
    massEditable: true,
  }),
  valueType({
    code: 'MLTV',
    label: 'Matrix lookup table value',
    table: 'lookup_matrix_values',
    own: [key('name', 'name'), ...attributes()],
    businessKey: ['name'],
    uniqueColumns: MATRIX_UNIQUE,
    massEditable: true,
  }),
  ...[2, 3, 4, 5, 6].map((n) =>
    valueType({
      code: `MLTV${n}`,
      label: `Matrix lookup table value (${n} keys)`,
      table: 'lookup_matrix_values',
      own: [...matrixKeys(n), ...attributes()],
      businessKey: matrixKeys(n).map((f) => f.name),
      uniqueColumns: MATRIX_UNIQUE,
      massEditable: true,
    }),
  ),
  valueType({
    code: 'JLTV',
    label: 'JSON lookup table value',
    table: 'lookup_values',
    own: [key('name', 'name'), { name: 'value', column: 'json_value', type: 'json' }],
    businessKey: ['name'],
    uniqueColumns: ['table_ref', 'name'],
    massEditable: false,
  }),
  valueType({
    code: 'JLTV2',
    label: 'JSON lookup table value (2 keys)',
    table: 'lookup_matrix_values',
    own: [...matrixKeys(2), { name: 'value', column: 'json_value', type: 'json' }],
    businessKey: ['key1', 'key2'],
    uniqueColumns: MATRIX_UNIQUE,
    massEditable: false,
  }),
];

export const LOOKUP_TYPES: readonly TypeDef[] = [LOOKUP_TABLE, ...VALUE_TYPES_DECLARED];

const VALUE_BY_CODE: ReadonlyMap<string, TypeDef> = new Map(VALUE_TYPES_DECLARED.map((t) => [t.code, t]));

/** The `LT` declaration with the given write permission (each manager operation has its own). */
export function tableTypeFor(write: Permission): TypeDef {
  return { ...LOOKUP_TABLE, access: { ...LOOKUP_TABLE.access, write } };
}

/** The declaration of a value type code (`LTV`, `MLTV`, `MLTV2`..`MLTV6`, `JLTV`, `JLTV2`), if it is one. */
export function valueDeclaration(code: string): TypeDef | undefined {
  return VALUE_BY_CODE.get(code);
}

/**
 * The values of one table as a type of their own, for the generic engine: scoped to the table
 * through `fixed` (the engine adds `table_ref = <id>` to every read and write), with the table's key
 * and value types, and `write` (when given) as the permission the engine checks on writes.
 */
export function valueTypeOf(table: LookupTable, write?: Permission): TypeDef {
  const base = VALUE_BY_CODE.get(valueCodeOf(table.type))!;
  const valueFieldType = FIELD_TYPE[table.valueType];
  const keyType = KEY_TYPE[table.type];
  const range = table.type === 'RANGE';
  const fields = base.fields
    .filter((f) => range || (f.name !== 'lowerBound' && f.name !== 'upperBound'))
    .map((f): FieldDef => {
      if (f.name === 'name' && keyType !== undefined) {
        return { ...f, type: keyType, storedAsText: true, custom: true };
      }
      if (f.custom && f.name !== 'name' && base.code !== 'JLTV') return { ...f, type: valueFieldType };
      return f;
    });
  return {
    ...base,
    label: `Value of lookup table ${table.uniqueName}`,
    fields,
    fixed: { column: 'table_ref', value: String(table.id) },
    access: write === undefined ? base.access : { ...base.access, write },
    ...(range ? { validate: boundsInOrder } : {}),
  };
}
