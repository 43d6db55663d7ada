// Master data as the logic engine reads it: products, customers and sellers by business key or
// typedId (only those the principal may see), their extension rows (PX/CX) for many owners at once,
// and the attribute meta that types their custom fields, so a row becomes a logic record (recordOf).
// Every statement is scoped by partition_id first.

import { inUserGroup, type Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { prepared, preparedShape } from '../../db/prepared.ts';
import { ident } from '../../db/sql.ts';
import { requireAccess } from '../../engine/access-check.ts';
import { findType } from '../../engine/registry.ts';
import { RecordValue, decOfText, parseIsoDate } from '../../logic/values.ts';

type Row = Record<string, unknown>;

/** Attribute types by field name from the attribute meta of an owner type (P, C, PX/CX per table name). */
export async function attributeTypes(
  q: Queryable,
  partitionId: number,
  owner: string,
  name?: string,
): Promise<Map<string, string>> {
  const r = await q.query<{ field: string; type: string | null }>(
    prepared(`SELECT field_name AS field, field_type AS type FROM attribute_meta
      WHERE partition_id = $1 AND owner_type = $2 AND ($3::text IS NULL OR name = $3::text)`),
    [partitionId, owner, name ?? null],
  );
  return new Map(r.rows.filter((x) => x.type !== null).map((x) => [x.field, x.type!]));
}

const META_CACHE = new Map<string, Map<string, string>>();

/**
 * attributeTypes, cached by the partition's attribute-meta version the principal authenticated with
 * (every meta change bumps it, so a cached entry is never stale); uncached without a version.
 */
export async function attributeTypesOf(
  q: Queryable,
  principal: Pick<Principal, 'partitionId' | 'metaVersion'>,
  owner: string,
  name?: string,
): Promise<Map<string, string>> {
  if (principal.metaVersion === undefined) return attributeTypes(q, principal.partitionId, owner, name);
  const key = `${principal.partitionId}:${principal.metaVersion}:${owner}:${name ?? ''}`;
  let hit = META_CACHE.get(key);
  if (!hit) {
    hit = await attributeTypes(q, principal.partitionId, owner, name);
    if (META_CACHE.size >= 1_000) META_CACHE.clear();
    META_CACHE.set(key, hit);
  }
  return hit;
}

/** A stored attribute text as its attribute meta types it (numbers as decimals, dates as dates). */
export function typedAttribute(v: unknown, type: string | undefined): unknown {
  if (typeof v !== 'string' || type === undefined) return v;
  switch (type) {
    case 'NUMERIC':
    case 'MONEY':
    case 'PERCENT':
    case 'INTEGER':
      return typedNumber(v);
    case 'DATE':
      return parseIsoDate(v.slice(0, 10)) ?? v;
    case 'BOOLEAN':
      return v === 'true' ? true : v === 'false' ? false : v;
    default:
      return v;
  }
}

/** A numeric attribute's text as a decimal (the text itself when it is not one). */
function typedNumber(v: string): unknown {
  try {
    return decOfText(v.trim());
  } catch {
    return v;
  }
}

interface FieldOf {
  readonly name: string;
  readonly column: string;
  readonly custom: boolean;
  readonly datetime: boolean;
}

const FIELD_LISTS = new Map<string, readonly FieldOf[]>();

/** The fields of a registered type (API name, column, custom or not), listed once per type. */
export function fieldsOf(code: string) {
  let list = FIELD_LISTS.get(code);
  if (!list) {
    list = findType(code)!.fields.map((f) => ({
      name: f.name,
      column: f.column,
      custom: f.custom === true,
      datetime: f.type === 'datetime',
    }));
    FIELD_LISTS.set(code, list);
  }
  return list;
}

/** A database row of a registered type → a logic record under API field names, typed by its meta. */
export function recordOf(
  code: string,
  row: Row,
  meta: ReadonlyMap<string, string>,
  /** The type's fields the row can hold (masterFields of the columns read): fewer to look at. */
  fields: readonly FieldOf[] = fieldsOf(code),
): RecordValue {
  // A plain object: fields are only ever read with Object.hasOwn, so its prototype is never reached;
  // dates and time stamps stay as the driver gave them (toValue makes days of them when read).
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    let v = row[f.column];
    if (v === undefined || v === null) continue;
    // A time stamp read as epoch milliseconds (extensionRows): the Date the driver makes of its text
    // (whole milliseconds; ±infinity an invalid Date, read as null like the driver's ±Infinity).
    if (f.datetime && typeof v === 'number') v = new Date(Math.floor(v));
    out[f.name] = f.custom && meta.size > 0 ? typedAttribute(v, meta.get(f.name)) : v;
  }
  return new RecordValue(out, {
    source: code,
    typedId: `${String(row.id)}.${code}`,
    version: Number(row.version),
  });
}

/** Visible to the principal: no view group, or one of theirs (admins see all). */
export function visible(principal: Principal, row: Row): boolean {
  return inUserGroup(principal, row.user_group_view_details);
}

/** A product or customer by business key or typedId (`12.P`), if it exists and the principal may see it. */
export async function masterRecord(
  q: Queryable,
  principal: Principal,
  code: 'P' | 'C',
  key: string,
): Promise<Row | undefined> {
  const table = code === 'P' ? 'products' : 'customers';
  const keyColumn = code === 'P' ? 'sku' : 'customer_id';
  const byId = new RegExp(`^(\\d{1,15})\\.${code}$`).exec(key);
  const r = await q.query<Row>(
    prepared(
      `SELECT * FROM ${ident(table)} WHERE partition_id = $1 AND ${byId ? 'id = $2::bigint' : `${ident(keyColumn)} = $2`}`,
    ),
    [principal.partitionId, byId ? byId[1] : key],
  );
  const row = r.rows[0];
  return row && visible(principal, row) ? row : undefined;
}

/**
 * A seller by sellerId or typedId, if the principal sees it; a 403 without SELLER_FETCH (as /fetch/SL
 * answers, a token's permission list included).
 */
export async function sellerRecord(
  q: Queryable,
  principal: Principal,
  key: string,
): Promise<Row | undefined> {
  requireAccess(principal, findType('SL')!.access.fetch);
  const byId = /^(\d{1,15})\.SL$/.exec(key);
  const r = await q.query<Row>(
    `SELECT * FROM sellers WHERE partition_id = $1 AND ${byId ? 'id = $2::bigint' : 'seller_id = $2'}`,
    [principal.partitionId, byId ? byId[1] : key],
  );
  const row = r.rows[0];
  return row && visible(principal, row) ? row : undefined;
}

/**
 * Keys as the parameter of `= ANY($n::text[])`: the array's text `{"a","b"}` joined at once when no
 * key holds a double quote or backslash (the only characters special inside its quotes), else the
 * list itself (the driver writes its text, escaping each key with two replaces).
 */
export function textArrayParam(keys: readonly string[]): string | readonly string[] {
  for (const k of keys) if (k.includes('"') || k.includes('\\')) return keys;
  return keys.length === 0 ? '{}' : `{"${keys.join('","')}"}`;
}

/**
 * Extension rows (PX/CX) of one table for many owners: one statement, the columns of the type's
 * fields, time stamps as epoch milliseconds (a float8: the driver parses a number far faster than a
 * time stamp's text), which recordOf makes into the same Date the driver would have made.
 *
 * With `customRead`, of the custom attribute columns only those are read, and `rc_more` counts the
 * row's other custom columns that are not null: a row with none (rc_more 0) is the same record as the
 * whole row, as recordOf leaves null fields out.
 */
export async function extensionRows(
  q: Queryable,
  partitionId: number,
  owner: 'product' | 'customer',
  name: string,
  ownerKeys: readonly string[],
  customRead?: ReadonlySet<string>,
): Promise<Row[]> {
  const [table, keyColumn, code] =
    owner === 'product' ? ['product_extensions', 'sku', 'PX'] : ['customer_extensions', 'customer_id', 'CX'];
  const fields = fieldsOf(code);
  const read =
    customRead === undefined ? fields : fields.filter((f) => !f.custom || customRead.has(f.column));
  const columns = read.map((f) =>
    f.datetime
      ? `(extract(epoch FROM ${ident(f.column)}) * 1000)::float8 AS ${ident(f.column)}`
      : ident(f.column),
  );
  const rest = fields.filter((f) => !read.includes(f));
  if (rest.length > 0)
    columns.push(`num_nonnulls(${rest.map((f) => ident(f.column)).join(', ')}) AS rc_more`);
  const sql = `SELECT ${columns.join(', ')} FROM ${ident(table)}
      WHERE partition_id = $1 AND name = $2 AND ${ident(keyColumn)} = ANY($3::text[]) AND deleted_at IS NULL`;
  // All columns: one fixed text. Some: a text per set of columns the rows held (not per value; a run's
  // sets only grow), prepared as a shape: unprepared, each read planned its 5,000 keys afresh (PG CPU
  // 0.56 s against 0.42 s per 100,000 rows prepared).
  const r = await q.query<Row>(rest.length === 0 ? prepared(sql) : preparedShape(sql), [
    partitionId,
    name,
    textArrayParam(ownerKeys),
  ]);
  return r.rows;
}

/** The fields extensionRows(…, customRead) reads: the type's own ones and those custom columns. */
export function extensionFields(code: 'PX' | 'CX', customRead: ReadonlySet<string>): readonly FieldOf[] {
  return fieldsOf(code).filter((f) => !f.custom || customRead.has(f.column));
}

const CUSTOM_COLUMNS = new Map<string, readonly string[]>();

/** The custom columns of a type (the attribute columns an extension row may hold), listed once. */
export function customColumns(code: 'PX' | 'CX'): readonly string[] {
  let list = CUSTOM_COLUMNS.get(code);
  if (!list) {
    list = fieldsOf(code)
      .filter((f) => f.custom)
      .map((f) => f.column);
    CUSTOM_COLUMNS.set(code, list);
  }
  return list;
}

/**
 * Products or customers by business key, many at once (those the principal may see). With `fields`
 * (API field names), only those columns are read besides the key, id, version and view group: a
 * bulk run reads what its logic reads, not the 40 columns of each record.
 */
export async function masterRecords(
  q: Queryable,
  principal: Principal,
  code: 'P' | 'C',
  keys: readonly string[],
  fields?: ReadonlySet<string>,
): Promise<Map<string, Row>> {
  const [table, keyColumn] = code === 'P' ? ['products', 'sku'] : ['customers', 'customer_id'];
  const read = columnsRead(code, fields);
  const columns = read === undefined ? '*' : read.map(ident).join(', ');
  const r = await q.query<Row>(
    `SELECT ${columns} FROM ${ident(table)} WHERE partition_id = $1 AND ${ident(keyColumn)} = ANY($2::text[])`,
    [principal.partitionId, textArrayParam(keys)],
  );
  return new Map(r.rows.filter((row) => visible(principal, row)).map((row) => [String(row[keyColumn]), row]));
}

/** The columns masterRecords reads for these fields (undefined: all of them). */
function columnsRead(code: 'P' | 'C', fields: ReadonlySet<string> | undefined): string[] | undefined {
  if (fields === undefined) return undefined;
  const keyColumn = code === 'P' ? 'sku' : 'customer_id';
  return [
    ...new Set([
      'id',
      'version',
      keyColumn,
      'user_group_view_details',
      ...fieldsOf(code)
        .filter((f) => fields.has(f.name))
        .map((f) => f.column),
    ]),
  ];
}

/**
 * The fields of a type that rows of masterRecords(…, fields) can hold, in the type's order: recordOf
 * of such a row looks at these only (the same record as looking at all of them, whose other
 * columns are absent).
 */
export function masterFields(code: 'P' | 'C', fields: ReadonlySet<string> | undefined): readonly FieldOf[] {
  const read = columnsRead(code, fields);
  if (read === undefined) return fieldsOf(code);
  const columns = new Set(read);
  return fieldsOf(code).filter((f) => columns.has(f.column));
}
