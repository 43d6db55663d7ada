// The custom attributes of looked-up condition record items, typed by their set's attribute meta
// (its CRCIAM rows) exactly as `/fetch/CRCI` of that set answers them: `outputValue` of the engine
// (src/engine/context.ts) on the stored text, for the field type ATTRIBUTE_TYPES gives the meta's
// `fieldType`; an attribute without meta stays text. The look-up reads the set's meta with the set
// (META_SELECT), on the items' snapshot.
//
// Two writers of the same answer, which must agree value by value:
// - JavaScript (findConditionRecords, wildcard sets): `typedAttributes`, outputValue itself;
// - the database (the clients' JSON text): `attributeJsonSql`, which writes what
//   JSON.stringify(outputValue(type, text)) writes wherever SQL can tell it — booleans always (the
//   database's own cast reads the spellings outputValue reads as booleans);
//   numbers in the forms the engine stores (`[-+]digits[.digits][e±ddd]`) that JavaScript writes
//   without an exponent (0, or 1e-6 ≤ |x| < 1e21, within 15 significant digits: the digits of the
//   decimal itself), or that stay text (more than 15 significant digits, not an integer for INTEGER
//   meta, beyond 2^53 − 1, no digit at all). Anything else — a number JavaScript writes with an
//   exponent, text with spaces, hex, ... (text stored before its meta said NUMERIC) — the database
//   marks (`\u0001` and the type's letter before the JSON string: no JSON text of the database holds
//   that character, it escapes control characters), and `retypeMarked` answers it by outputValue.
// test/modules/conditionrecords-attributes.test.ts compares the two over thousands of texts.

import { outputValue } from '../../engine/context.ts';
import { ATTRIBUTE_COUNT, ATTRIBUTE_TYPES } from '../../engine/registry-fields.ts';
import type { FieldType } from '../../engine/types.ts';

export const ATTRS = Array.from({ length: ATTRIBUTE_COUNT }, (_, i) => `attribute${i + 1}`);

/** The attribute types of a set's meta that are not text, by attribute (none: the map is empty). */
export type AttributeTypes = ReadonlyMap<string, FieldType>;

const NO_TYPES: AttributeTypes = new Map();

/** Field types of the meta's `field_type` (SQL): ATTRIBUTE_TYPES' non-text ones, else NULL. */
const fieldTypeSql = (column: string) =>
  `CASE ${column} ${Object.entries(ATTRIBUTE_TYPES)
    .filter(([, t]) => t !== 'string')
    .map(([meta, t]) => `WHEN '${meta}' THEN '${t}'`)
    .join(' ')} END`;

/**
 * The meta of set `cs` (a lateral subquery: one row): `attr_types`, each typed attribute and its
 * field type (`attribute3=decimal,...`, for `typesOf`); NULL when none is typed.
 */
export const META_SELECT = `SELECT string_agg(am.field_name || '=' || ${fieldTypeSql('am.field_type')}, ',') AS attr_types
    FROM attribute_meta am
   WHERE am.partition_id = cs.partition_id AND am.owner_type = 'CRCI' AND am.name = cs.id::text`;

/** The types META_SELECT's `attr_types` names (attributes of other names are not the items'). */
export function typesOf(text: unknown): AttributeTypes {
  if (typeof text !== 'string' || text === '') return NO_TYPES;
  const types = new Map<string, FieldType>();
  for (const entry of text.split(',')) {
    const [name = '', type] = entry.split('=');
    if (ATTRS.includes(name) && type !== undefined) types.set(name, type as FieldType);
  }
  return types;
}

/** The non-empty attributes of a row (columns `attribute1`..), typed by `types`. */
export function typedAttributes(
  row: Readonly<Record<string, unknown>>,
  types: AttributeTypes,
): Record<string, unknown> {
  const attributes: Record<string, unknown> = {};
  for (const a of ATTRS) {
    const v = row[a];
    if (v === null || v === undefined) continue;
    const type = types.size === 0 ? undefined : types.get(a);
    attributes[a] = type === undefined || typeof v !== 'string' ? v : outputValue(type, v);
  }
  return attributes;
}

/** Decimal text as the engine takes it (values.ts DECIMAL_RE), with an exponent a cast always takes. */
const DECIMAL_TEXT = `'^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]{1,3})?$'`;
/** The same without an exponent. */
const PLAIN_TEXT = `'^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)$'`;
/** The largest integer JavaScript holds exactly (Number.MAX_SAFE_INTEGER). */
const MAX_SAFE = '9007199254740991';
const MARK = '\u0001';
/** A marked value: the mark, the type's letter, a JSON string. */
const MARKED = new RegExp(`${MARK}([di])("(?:[^"\\\\]|\\\\.)*")`, 'g');
const MARKED_TYPES: Readonly<Record<string, FieldType>> = { d: 'decimal', i: 'integer' };

const jsonText = (x: string) => `to_json(${x})::text`;
const marked = (letter: 'd' | 'i', x: string) => `chr(1) || '${letter}' || ${jsonText(x)}`;
/** significantDigits (context.ts) of decimal text: its mantissa's digits, zeros at both ends off. */
const significant = (x: string) =>
  `length(btrim(regexp_replace(split_part(lower(${x}), 'e', 1), '[^0-9]', '', 'g'), '0'))`;
/**
 * Text without any digit but with a visible ASCII character: Number() of it is NaN or ±Infinity (it
 * is not blank), so outputValue answers it as it is for decimals and integers alike.
 */
const noNumber = (x: string) => `(${x} !~ '[0-9]' AND ${x} ~ '[!-~]')`;

/**
 * outputValue('decimal', x) as JSON text: a number while within 15 significant digits. The common
 * case first (~0.7 µs a value rather than ~1.5, PostgreSQL 15): plain decimal text of at most 15
 * characters (so of at most 15 digits, below 1e15) and not below 1e-6 (no six zeros after the point).
 */
function decimalJson(x: string): string {
  const n = `(${x})::numeric`;
  return `CASE WHEN length(${x}) <= 15 AND strpos(${x}, '.000000') = 0 AND ${x} ~ ${PLAIN_TEXT}
      THEN trim_scale(${n})::text
    WHEN ${x} ~ ${DECIMAL_TEXT} THEN
      CASE WHEN length(${x}) > 15 AND ${significant(x)} > 15 THEN ${jsonText(x)}
           WHEN ${n} = 0 THEN '0'
           WHEN abs(${n}) >= 0.000001 AND abs(${n}) < 1e21 THEN trim_scale(${n})::text
           ELSE ${marked('d', x)} END
    WHEN ${noNumber(x)} THEN ${jsonText(x)}
    ELSE ${marked('d', x)} END`;
}

/**
 * outputValue('integer', x) as JSON text: a number while Number(x) is a safe integer. Integer text
 * of at most 15 digits (the common case) is one. Decimal text of an integral value is that integer
 * while within 2^53 − 1 (and text beyond, where the double is too); of other values it is text while
 * it has at most 15 significant digits (its double is then no integer, unless it underflows to 0).
 */
function integerJson(x: string): string {
  const n = `(${x})::numeric`;
  return `CASE WHEN ${x} ~ '^[-+]?[0-9]{1,15}$' THEN (${x})::bigint::text
    WHEN ${x} ~ ${DECIMAL_TEXT} THEN
      CASE WHEN ${n} = trunc(${n}) THEN
             CASE WHEN abs(${n}) <= ${MAX_SAFE} THEN trim_scale(${n})::text ELSE ${jsonText(x)} END
           WHEN ${significant(x)} <= 15 AND abs(${n}) >= 1e-300 THEN ${jsonText(x)}
           ELSE ${marked('i', x)} END
    WHEN ${noNumber(x)} THEN ${jsonText(x)}
    ELSE ${marked('i', x)} END`;
}

/**
 * JSON text of attribute column `x` (not NULL) typed `type` (undefined: no meta, or text meta): what
 * JSON.stringify(outputValue(type, x)) writes, or the marked text `retypeMarked` finishes. The
 * statement is written for the set's types (a plain `to_json` for its untyped attributes), so the
 * database neither parses nor evaluates a choice of type per value.
 */
export function attributeJsonSql(x: string, type: FieldType | undefined): string {
  if (type === 'decimal') return decimalJson(x);
  if (type === 'integer') return integerJson(x);
  // Other spellings the boolean cast reads (outputValue: `yes`, ` TRUE `, `0`) by rc_try_boolean.
  if (type === 'boolean')
    return `CASE ${x} WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
      ELSE CASE rc_try_boolean(${x}) WHEN true THEN 'true' WHEN false THEN 'false' ELSE ${jsonText(x)} END END`;
  return jsonText(x);
}

/** The database's JSON text with its marked attributes (attributeJsonSql) written by outputValue. */
export function retypeMarked(json: string): string {
  if (!json.includes(MARK)) return json;
  return json.replace(MARKED, (_, letter: string, text: string) =>
    JSON.stringify(outputValue(MARKED_TYPES[letter]!, JSON.parse(text) as string)),
  );
}
