// Rows the logic engine's data port reads, as logic records: a lookup-table row (with the value a
// look-up answers) and a condition record. Typed as their table's value type declares.

import type { ConditionRecordItem } from '../conditionrecords/lookup.ts';
import type { FoundRow } from '../../logic/env.ts';
import { D, RecordValue, decOfText, parseIsoDate, toValue, type Value } from '../../logic/values.ts';
import { findType } from '../../engine/registry.ts';
import { typedAttribute } from './master-store.ts';
import type { TableMeta } from './lookup-store.ts';

type Row = Record<string, unknown>;

function typedValue(valueType: string, v: unknown): Value {
  if (typeof v === 'string' && (valueType === 'REAL' || valueType === 'INT')) {
    try {
      return decOfText(v);
    } catch {
      return v;
    }
  }
  // A DATE table's value is a date to the logic (date functions, comparisons, resultType DATE).
  if (typeof v === 'string' && valueType === 'DATE') return parseIsoDate(v) ?? v;
  return toValue(v);
}

/** A lookup-table row type's fields by column (LTV, MLTV3, JLTV, ...): the names the API answers. */
const namesByType = new Map<string, ReadonlyMap<string, string>>();

function apiNames(code: string): ReadonlyMap<string, string> {
  let names = namesByType.get(code);
  if (names === undefined) {
    names = new Map((findType(code)?.fields ?? []).map((f) => [f.column, f.name]));
    namesByType.set(code, names);
  }
  return names;
}

/** A lookup-table row as the record and value a look-up answers. */
export function foundRowOf(meta: TableMeta, r: Row): FoundRow {
  const matrix = meta.type.startsWith('MATRIX');
  const code = matrix
    ? meta.type === 'MATRIX'
      ? 'MLTV'
      : `MLTV${meta.type.slice(6)}`
    : meta.type === 'JSON'
      ? 'JLTV'
      : meta.type === 'JSON2'
        ? 'JLTV2'
        : 'LTV';
  // The row under the names `/lookuptablemanager.fetch` answers (a JSON table's `value`, `createDate`),
  // with its table's id, as lookupRow promises "the whole row".
  const names = apiNames(code);
  const fields: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  fields.lookupTableId = Number(meta.id);
  for (const [col, v] of Object.entries(r)) {
    const name = names.get(col);
    if (name === undefined || v === null) continue;
    // A RANGE row's bounds are decimals, whatever the table's value type.
    fields[name] = /^attribute\d+$|^value$/.test(col)
      ? typedValue(meta.valueType, v)
      : col === 'lower_bound' || col === 'upper_bound'
        ? typedValue('REAL', v)
        : v;
  }
  const row = new RecordValue(fields, {
    source: meta.uniqueName,
    typedId: `${String(r.id)}.${code}`,
    version: Number(r.version),
  });
  const value: Value =
    meta.type === 'JSON' || meta.type === 'JSON2'
      ? toValue(r.json_value)
      : row.get(matrix ? 'attribute1' : 'value');
  return { row, value };
}

/**
 * A condition record item as a logic record (null: none valid): its dates as dates, its attributes
 * typed by its set's attribute meta (`types`: field name → meta type, from CRCIAM): numbers as
 * decimals, DATE attributes as dates.
 */
export function conditionRecordOf(
  item: ConditionRecordItem | null,
  types: ReadonlyMap<string, string> = new Map(),
): RecordValue | null {
  if (item === null) return null;
  const fields: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  Object.assign(fields, {
    id: item.id,
    typedId: item.typedId,
    conditionRecordSetId: item.conditionRecordSetId,
    keys: item.keys,
    validFrom: parseIsoDate(item.validFrom) ?? item.validFrom,
    validTo: parseIsoDate(item.validTo) ?? item.validTo,
    conditionValue: item.conditionValue === null ? null : new D(item.conditionValue),
    unitOfMeasure: item.unitOfMeasure,
    currency: item.currency,
    priceUnit: item.priceUnit,
    version: item.version,
  });
  item.keys.forEach((k, i) => (fields[`key${i + 1}`] = k));
  // The look-up answers attributes typed as /fetch/CRCI does: a number is a decimal of at most 15
  // significant digits or a safe integer (else the text stays), which its shortest text gives back
  // exactly; text (numbers beyond a double, dates, ...) and booleans go through typedAttribute.
  for (const [a, v] of Object.entries(item.attributes))
    fields[a] = typeof v === 'number' ? decOfText(String(v)) : typedAttribute(v, types.get(a));
  return new RecordValue(fields, { source: 'CRCI', typedId: item.typedId, version: item.version });
}
