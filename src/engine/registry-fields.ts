// Field declarations shared by the type registry (./registry.ts) and its lookup-table part
// (./registry-lookup.ts): the server-maintained fields of every record, text and key fields, and
// the custom attributes. A file of its own so both can import them without an import cycle
// (registry.ts imports registry-lookup.ts; this file imports only types).

import type { FieldDef, FieldType } from './types.ts';

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

export const SYSTEM: readonly FieldDef[] = [
  { name: 'id', column: 'id', type: 'integer', system: true },
  { name: 'version', column: 'version', type: 'integer', system: true },
  { name: 'createDate', column: 'created_at', type: 'datetime', system: true },
  { name: 'createdBy', column: 'created_by', type: 'integer', system: true },
  { name: 'lastUpdateDate', column: 'last_update_at', type: 'datetime', system: true },
  { name: 'lastUpdateBy', column: 'last_update_by', type: 'integer', system: true },
];

export const text = (name: string, column: string, extra: Partial<FieldDef> = {}): FieldDef => ({
  name,
  column,
  type: 'string',
  maxLength: 1000,
  ...extra,
});
export const key = (name: string, column: string): FieldDef =>
  text(name, column, { required: true, key: true, maxLength: 255 });

/**
 * A field over a NOT NULL column with a default (a status, a flag): may be left out of an add (the
 * default applies), never set to null or blank (a -4 naming it, not the database's refusal).
 */
export const defaulted = (f: FieldDef): FieldDef => ({ ...f, required: true, defaultOnAdd: true });

/**
 * `formatType`, the other name conventions.md gives attribute meta's `fieldType` ("`fieldType`/
 * `formatType`"): the same column, answered under both names; a write of it is a write of
 * `fieldType` (FieldDef `aliasOf`).
 */
export const formatTypeAlias = (fieldType: FieldDef): FieldDef => ({
  ...fieldType,
  name: 'formatType',
  required: false,
  defaultOnAdd: false,
  system: true,
  aliasOf: fieldType.name,
});

export const ATTRIBUTE_COUNT = 30;
export const attributes = (n = ATTRIBUTE_COUNT): FieldDef[] =>
  Array.from({ length: n }, (_, i) => ({
    name: `attribute${i + 1}`,
    column: `attribute${i + 1}`,
    type: 'string',
    custom: true,
    storedAsText: true,
    maxLength: 4000,
  }));
