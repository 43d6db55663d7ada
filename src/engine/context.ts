// A type as one partition sees it: the registry declaration plus the comparison types that the
// partition's attribute meta gives its custom attributes. Also the pieces of SQL every generic
// operation shares: the row scope (partition, fixed column, soft delete, user groups), the select
// list, and the mapping of a stored row to the API record.

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { Params, ident, qualified } from '../db/sql.ts';
import { AppError } from '../http/errors.ts';
import { jsonKeyLiteral } from './criteria.ts';
import { ATTRIBUTE_TYPES, type FieldDef, type TypeDef } from './registry.ts';
import { filterIdOf, metaNameText } from './top-equality.ts';
import type { FieldType } from './types.ts';

export interface TypeContext {
  readonly type: TypeDef;
  /** Every field by API name, custom attributes typed by the attribute meta. */
  readonly fields: ReadonlyMap<string, FieldDef>;
  /** For `metaPerName` types: the table whose meta types the attributes (none: not typed). */
  readonly metaName?: string;
}

/** Whose types: a partition, and the version of its attribute meta when the request knows it. */
export interface ContextOwner {
  readonly partitionId: number;
  /** `partitions.meta_version` as read with the request's credentials (a trigger bumps it). */
  readonly metaVersion?: number;
}

// Attribute types per (partition, meta version, type, extension table). A key names the version it
// was read at, so an entry can never be stale; old versions just stop being asked for. Not request
// state: the same answer the database would give for that version.
const MAX_CACHED = 2_000;
interface AttributeType {
  readonly type: FieldType;
  /** The attribute meta asks for an index (src/engine/indexes.ts keeps it). */
  readonly indexed: boolean;
}
const cache = new Map<string, ReadonlyMap<string, AttributeType>>();

async function attributeTypes(
  q: Queryable,
  owner: ContextOwner,
  type: TypeDef,
  extName: string,
): Promise<ReadonlyMap<string, AttributeType>> {
  const key =
    owner.metaVersion === undefined
      ? undefined
      : `${owner.partitionId}:${owner.metaVersion}:${type.metaOwner ?? type.code}:${extName}`;
  const hit = key === undefined ? undefined : cache.get(key);
  if (hit) return hit;
  const r = await q.query<{ field: string; ftype: string; indexed: boolean }>(
    `SELECT field_name AS field, field_type AS ftype, indexed FROM attribute_meta
      WHERE partition_id = $1 AND owner_type = $2 AND name = $3`,
    [owner.partitionId, type.metaOwner ?? type.code, extName],
  );
  const typed = new Map<string, AttributeType>();
  for (const row of r.rows) {
    const t = ATTRIBUTE_TYPES[row.ftype];
    if (t !== undefined) typed.set(row.field, { type: t, indexed: row.indexed === true });
  }
  if (key !== undefined) {
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(key, typed);
  }
  return typed;
}

const typedAnywhere = new Map<string, boolean>();

/**
 * Whether the attribute meta of any table of `type` (a `metaPerName` type) types an attribute as
 * other than text: only then do rows of several tables need typing row by row (`rowContexts`).
 */
export async function typedMetaExists(q: Queryable, owner: ContextOwner, type: TypeDef): Promise<boolean> {
  const metaOwner = type.metaOwner ?? type.code;
  const key =
    owner.metaVersion === undefined ? undefined : `${owner.partitionId}:${owner.metaVersion}:${metaOwner}`;
  const hit = key === undefined ? undefined : typedAnywhere.get(key);
  if (hit !== undefined) return hit;
  const r = await q.query<{ ftype: string }>(
    `SELECT DISTINCT field_type AS ftype FROM attribute_meta WHERE partition_id = $1 AND owner_type = $2`,
    [owner.partitionId, metaOwner],
  );
  const typed = r.rows.some((row) => {
    const t = ATTRIBUTE_TYPES[row.ftype];
    return t !== undefined && t !== 'string';
  });
  if (key !== undefined) {
    if (typedAnywhere.size >= MAX_CACHED) typedAnywhere.clear();
    typedAnywhere.set(key, typed);
  }
  return typed;
}

/** Loads the attribute meta of `type` (for extension types: of the extension table `name`). */
export async function loadTypeContext(
  q: Queryable,
  owner: ContextOwner,
  type: TypeDef,
  extName?: string,
  /** The request's criteria: the record they name by id may type the extra fields (extraFields). */
  criteria?: unknown,
): Promise<TypeContext> {
  const typed =
    type.attributeMeta !== undefined && (!type.metaPerName || extName !== undefined)
      ? await attributeTypes(q, owner, type, type.metaPerName ? extName! : '')
      : new Map<string, AttributeType>();
  const fields = new Map<string, FieldDef>();
  for (const f of type.fields) {
    const t = f.custom ? typed.get(f.name) : undefined;
    if (t === undefined) fields.set(f.name, f);
    else if (t.indexed && t.type === 'string')
      fields.set(f.name, { ...f, type: t.type, searchIndexed: true });
    else if (t.indexed && t.type !== 'json') fields.set(f.name, { ...f, type: t.type, indexCovers: true });
    else fields.set(f.name, { ...f, type: t.type });
  }
  if (type.extraFields) {
    const idOf = (field: string) => (criteria === undefined ? undefined : filterIdOf(criteria, field));
    for (const f of await type.extraFields(q, owner.partitionId, idOf))
      if (!fields.has(f.name)) fields.set(f.name, f);
  }
  return type.metaPerName && extName !== undefined ? { type, fields, metaName: extName } : { type, fields };
}

/**
 * Rows of several tables answered at once are typed row by row for the extension tables (PX, CX,
 * SX: meta per table `name`). Condition record items and rebate record groups (meta per set or
 * rebate type, `metaNameField`) answer text across sets, typed when one set or type is asked for.
 */
export function typedPerRow(type: TypeDef): boolean {
  return type.metaPerName === true && type.metaNameField === undefined;
}

/**
 * The context that types each row of `rows`: `tc` itself, or for an extension type (`typedPerRow`)
 * whose context names no table (rows of several tables), the context of the table each row names —
 * loaded once per distinct name among the rows.
 */
export async function rowContexts(
  q: Queryable,
  owner: ContextOwner,
  tc: TypeContext,
  rows: readonly Readonly<Record<string, unknown>>[],
): Promise<(row: Readonly<Record<string, unknown>>) => TypeContext> {
  if (!typedPerRow(tc.type) || tc.metaName !== undefined) return () => tc;
  const names = new Set<string>();
  for (const row of rows) {
    const n = metaNameOf(tc.type, row);
    if (n !== undefined) names.add(n);
  }
  const byName = new Map<string, TypeContext>();
  for (const n of names) byName.set(n, await loadTypeContext(q, owner, tc.type, n));
  return (row) => byName.get(metaNameOf(tc.type, row) ?? '') ?? tc;
}

/**
 * The rows a principal may see (or, with `forEdit`, change): this partition, the type's fixed
 * column, not soft-deleted, and — for types with user groups — a group the principal belongs to.
 */
export function rowScope(
  tc: TypeContext,
  principal: Principal,
  params: Params,
  alias = 't',
  opts: { forEdit?: boolean; includeDeleted?: boolean; everyGroup?: boolean } = {},
): string {
  const { type } = tc;
  const parts = [`${qualified(alias, 'partition_id')} = ${params.add(principal.partitionId)}`];
  if (type.fixed) parts.push(`${qualified(alias, type.fixed.column)} = ${params.add(type.fixed.value)}`);
  if (type.deleteMode === 'soft' && !opts.includeDeleted)
    parts.push(`${qualified(alias, 'deleted_at')} IS NULL`);
  const current = type.userGroups && type.scopedBy?.currentGroups === true;
  // everyGroup: whether a row exists at all (a business key taken), whatever groups hide it.
  const grouped = !principal.admin && opts.everyGroup !== true;
  if (type.userGroups && grouped) {
    const groups = params.add(principal.groups);
    const allowed = (a: string, column: string) => {
      const col = qualified(a, column);
      return `(${col} IS NULL OR ${col} = '' OR ${col} = ANY(${groups}::text[]))`;
    };
    const own = opts.forEdit
      ? `${allowed(alias, 'user_group_view_details')} AND ${allowed(alias, 'user_group_edit')}`
      : allowed(alias, 'user_group_view_details');
    if (current) {
      // The parent's groups as they are now; the row's own copy only when the parent is gone.
      const by = type.scopedBy;
      const p = `${alias}_parent`;
      const parent = opts.forEdit
        ? `${allowed(p, 'user_group_view_details')} AND ${allowed(p, 'user_group_edit')}`
        : allowed(p, 'user_group_view_details');
      parts.push(`coalesce((SELECT ${parent} FROM ${ident(by.table)} ${ident(p)}
         WHERE ${qualified(p, 'partition_id')} = ${qualified(alias, 'partition_id')}
           AND ${qualified(p, by.parentColumn)} = ${qualified(alias, by.column)}), ${own})`);
    } else parts.push(own);
  }
  if (type.scopedBy && !current && grouped)
    parts.push(parentScope(type.scopedBy, principal, params, alias, opts));
  const owned = type.ownedRows?.(principal, (v) => params.add(v), alias);
  if (owned !== undefined) parts.push(owned);
  return parts.join(' AND ');
}

/**
 * No record of the parent table that this row describes is hidden from (or not editable by) the
 * principal. `partition` is the SQL of the row's partition id (default: its `partition_id`; a
 * staging row of a load has none).
 */
export function parentScope(
  by: NonNullable<TypeDef['scopedBy']>,
  principal: Principal,
  params: Params,
  alias: string,
  opts: { forEdit?: boolean },
  partition = qualified(alias, 'partition_id'),
): string {
  // NOT EXISTS of a hidden parent rather than EXISTS of a visible one: a row whose parent is not
  // stored (yet) stays the concern of its own type's access, as for any row keyed by text.
  const p = `${alias}_parent`;
  const groups = params.add(principal.groups);
  const allowed = (column: string) => {
    const col = qualified(p, column);
    return `(${col} IS NULL OR ${col} = '' OR ${col} = ANY(${groups}::text[]))`;
  };
  const visible = opts.forEdit
    ? `${allowed('user_group_view_details')} AND ${allowed('user_group_edit')}`
    : allowed('user_group_view_details');
  return `NOT EXISTS (SELECT 1 FROM ${ident(by.table)} ${ident(p)}
     WHERE ${qualified(p, 'partition_id')} = ${partition}
       AND ${qualified(p, by.parentColumn)} = ${qualified(alias, by.column)} AND NOT (${visible}))`;
}

/**
 * Whether the principal may change every stored parent record (`scopedBy`) that `values` (the rows'
 * values of the scoped field) name; parents not stored (yet) do not count. True for a type without
 * a parent, and for admins.
 */
export async function parentsEditable(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  values: readonly unknown[],
): Promise<boolean> {
  const by = type.scopedBy;
  if (!by || principal.admin) return true;
  // Parents named by text (a sku) or by id (a condition record set); a value that names none is
  // not stored, which does not count.
  const byId = type.fields.find((f) => f.column === by.column)?.type === 'integer';
  const names = (v: unknown): boolean =>
    byId
      ? (typeof v === 'number' && Number.isSafeInteger(v)) || (typeof v === 'string' && /^\d{1,15}$/.test(v))
      : typeof v === 'string';
  const keys = [...new Set(values.filter(names).map(String))];
  if (keys.length === 0) return true;
  const p = new Params();
  const rows = `(SELECT unnest(${p.add(keys)}::${byId ? 'bigint' : 'text'}[]) AS ${ident(by.column)}) r`;
  const allowed = parentScope(
    by,
    principal,
    p,
    'r',
    { forEdit: true },
    `${p.add(principal.partitionId)}::bigint`,
  );
  const r = await q.query<{ ok: boolean }>(`SELECT bool_and(${allowed}) AS ok FROM ${rows}`, p.values);
  return r.rows[0]?.ok === true;
}

/**
 * A new record that describes a parent record (`scopedBy`, e.g. a customer's description) may be
 * written only by one who may change that parent (its user groups), as every stored row of the type
 * is scoped; a parent not stored (yet) does not stop it. The loader applies the same `parentScope`
 * in its SQL.
 */
export async function requireParentEditable(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  data: Readonly<Record<string, unknown>>,
): Promise<void> {
  const by = type.scopedBy;
  if (!by) return;
  const field = type.fields.find((f) => f.column === by.column)!.name;
  const value = data[field];
  if (!(await parentsEditable(q, principal, type, [value]))) {
    // Named by the field that names the parent (`sku`), as a load's row error is.
    throw new AppError(
      'FORBIDDEN',
      `Not allowed to change the record ${JSON.stringify(value)} this ${type.label} describes (user group)`,
      { field },
    );
  }
}

/** For `metaPerName` types: the meta name a record carries (its `name`, or `metaNameField`). */
export function metaNameOf(
  type: TypeDef,
  record: Readonly<Record<string, unknown>> | undefined,
): string | undefined {
  if (!type.metaPerName || record === undefined) return undefined;
  return metaNameText(record[type.metaNameField ?? 'name'], metaNameIsId(type));
}

/** The field naming a type's meta holds an id (an integer): meta names are its digits. */
export function metaNameIsId(type: TypeDef): boolean {
  const field = type.metaNameField ?? 'name';
  return type.fields.find((f) => f.name === field)?.type === 'integer';
}

export { metaNameText } from './top-equality.ts';

const TYPE_CODE = /^[A-Z][A-Z0-9]*$/;

/** `<id>.<TC>` computed in SQL, so fetches need no per-row mapping for it. */
export function typedIdSql(type: TypeDef, alias = 't'): string {
  if (!TYPE_CODE.test(type.code)) throw new Error(`bad type code ${type.code}`);
  return `(${qualified(alias, 'id')}::text || '.${type.code}')`;
}

/** The output fields of a fetch: those given, or all of them (typedId first, no jsonKey fields). */
export function outputNames(tc: TypeContext, names?: readonly string[]): readonly string[] {
  return names ?? ['typedId', ...[...tc.fields.values()].filter((f) => !f.jsonKey).map((f) => f.name)];
}

/** The SQL expression of one output field (`typedId` or a field name) over the row alias. */
export function outputSql(tc: TypeContext, name: string, alias = 't'): string {
  if (name === 'typedId') return typedIdSql(tc.type, alias);
  const f = tc.fields.get(name)!;
  if (f.readSql !== undefined) return f.readSql(alias);
  if (f.jsonKey !== undefined) return `(${qualified(alias, f.column)} -> ${jsonKeyLiteral(f.jsonKey)})`;
  return qualified(alias, f.column);
}

/** `"t"."col" AS "apiName"` for the given fields (all of them by default), typedId included. */
export function selectList(tc: TypeContext, names?: readonly string[], alias = 't'): string {
  return outputNames(tc, names)
    .map((name) => `${outputSql(tc, name, alias)} AS "${safeAlias(name)}"`)
    .join(', ');
}

/** API names are registry constants (or `result.<element>`); only plain names become a quoted alias. */
function safeAlias(name: string): string {
  if (!/^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)?$/.test(name))
    throw new Error(`bad field name ${name}`);
  return name;
}

/** Custom attributes come back typed as their meta says; everything else as the driver parsed it. */
export function toRecord(tc: TypeContext, row: Record<string, unknown>): Record<string, unknown> {
  for (const f of tc.fields.values()) {
    if (!f.custom || f.type === 'string') continue;
    const v = row[f.name];
    if (typeof v !== 'string') continue;
    row[f.name] = outputValue(f.type, v);
  }
  return row;
}

/** Digits of a decimal's text between its first and last non-zero digit (`0.0120` → 2). */
function significantDigits(text: string): number {
  const e = text.search(/[eE]/);
  const digits = (e < 0 ? text : text.slice(0, e)).replace(/[^0-9]/g, '');
  let start = 0;
  let end = digits.length;
  while (start < end && digits.charCodeAt(start) === 48) start++;
  while (end > start && digits.charCodeAt(end - 1) === 48) end--;
  return end - start;
}

/**
 * A number as text, as rc_try_numeric reads one (migration 002_safe_casts.sql): around it only the
 * spaces PostgreSQL's numeric input skips (JavaScript's \s takes no-break spaces and BOMs too).
 */
const NUMERIC_TEXT = /^[ \t\n\r\f\v]*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?[ \t\n\r\f\v]*$/;

/** Whether a number's text (NUMERIC_TEXT) is a whole number: no non-zero digit after its point. */
function isWholeNumber(text: string): boolean {
  const m = /(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?\s*$/.exec(text)!;
  const digits = m[1]! + (m[2] ?? '');
  const point = m[1]!.length + Number(m[3] ?? 0);
  return !/[1-9]/.test(digits.slice(Math.max(0, point)));
}

/** The least normal double: below it a double holds fewer than 15 significant digits. */
const MIN_NORMAL = 2.2250738585072014e-308;

/**
 * Stored text as the database's boolean cast (rc_try_boolean, PostgreSQL's boolin) reads it — what
 * filters compare — or undefined: blanks around it, any case, a prefix of true/false/yes/no, on, of(f),
 * 1 or 0. Text stored before the meta typed the attribute BOOLEAN is then answered as the value the
 * filters see (`yes` is true, `maybe` stays text).
 */
export function storedBoolean(stored: string): boolean | undefined {
  const s = stored.replace(/^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g, '').toLowerCase();
  if (s === '') return undefined;
  const prefixOf = (word: string) => word.startsWith(s);
  switch (s.charAt(0)) {
    case 't':
      return prefixOf('true') ? true : undefined;
    case 'y':
      return prefixOf('yes') ? true : undefined;
    case 'f':
      return prefixOf('false') ? false : undefined;
    case 'n':
      return prefixOf('no') ? false : undefined;
    case 'o':
      return s === 'on' ? true : s === 'of' || s === 'off' ? false : undefined;
    case '1':
      return s === '1' ? true : undefined;
    case '0':
      return s === '0' ? false : undefined;
    default:
      return undefined;
  }
}

/** A custom attribute's stored text as its meta types it (what `toRecord` answers). */
export function outputValue(type: FieldType, stored: string): unknown {
  switch (type) {
    // A JSON number while a double keeps the value exactly (a safe integer; a decimal of at most 15
    // significant digits, which prints back as the same decimal); else the exact text, so that what
    // a client reads and writes back is what was stored.
    // Only what the filters read as a number (rc_try_numeric's form) is one: Number() also takes
    // '' and blanks (0), '0x1F', '0b11', '0o7' and no-break spaces, which filters see as NULL.
    // A value that underflows a double (1e-400 is 0, 1e-320 a subnormal of fewer digits) stays text;
    // so does text of no whole number that a double rounds to one (1.00000000000000001).
    case 'integer': {
      const n = NUMERIC_TEXT.test(stored) ? Number(stored) : NaN;
      return Number.isSafeInteger(n) && isWholeNumber(stored) ? n : stored;
    }
    case 'decimal': {
      const n = NUMERIC_TEXT.test(stored) ? Number(stored) : NaN;
      const digits = significantDigits(stored);
      return Number.isFinite(n) && digits <= 15 && (n === 0 ? digits === 0 : Math.abs(n) >= MIN_NORMAL)
        ? n
        : stored;
    }
    case 'boolean':
      return stored === 'true' ? true : stored === 'false' ? false : (storedBoolean(stored) ?? stored);
    case 'string':
    case 'date':
    case 'datetime':
    case 'json':
      return stored;
    default: {
      const never: never = type;
      return never;
    }
  }
}
