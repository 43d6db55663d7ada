// `/fetch/{TC}` answered as JSON text built by the database. The page's rows are what `runFetch`
// answers — the same plan, filter, order and count — but each row arrives as one `row_to_json` text,
// which the route joins into the envelope as it is: the server neither parses the row's fields nor
// builds and serializes an object per row (measured: most of the server's time per fetch).
//
// The text must say what the JavaScript path says, value by value. The database's JSON form of most
// types already does (text, booleans, integers, dates as YYYY-MM-DD, jsonb, text arrays); the others
// are converted in the select list:
// - numeric → its text (the driver answers NUMERIC as a string, exactly);
// - bigint → a number while exact in JavaScript, else its text (`parseInt8`);
// - timestamptz → `YYYY-MM-DDTHH:MI:SS.mssZ` in UTC (a JavaScript Date's JSON);
// - custom attributes typed integer/decimal/boolean by their meta (text columns) → a number or a
//   boolean where `toRecord` makes one, else the stored text.
// An output whose SQL type is not one of these (found once per select list with `pg_typeof`, so an
// expression of the registry is covered by what it really is) makes the fetch take the JavaScript
// path, as do `distinctResults` and more than 100 `valueFields`.

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { Params, ident } from '../db/sql.ts';
import { preparedShape } from '../db/prepared.ts';
import { notFound } from '../http/errors.ts';
import { requireAccess } from './access-check.ts';
import { parseId } from './addressing.ts';
import { compileSort } from './criteria.ts';
import { loadTypeContext, outputNames, outputSql, rowScope, safeAlias, type TypeContext } from './context.ts';
import {
  compileFetch,
  compileParts,
  pageTotal,
  prepareFetch,
  runFetch,
  type FetchBody,
  type FetchPlan,
  type FetchResult,
} from './fetch.ts';
import type { FieldDef, TypeDef } from './registry.ts';

export interface JsonPage {
  /** Each row as JSON text (an object, or an array for `valueFields`), in page order. */
  readonly rowsJson: readonly string[];
  readonly startRow: number;
  readonly endRow: number;
  readonly totalRows: number;
}

/** What `Number(text)` of a stored custom attribute makes a finite number of (ASCII spacing). */
const NUMBER_TEXT = String.raw`^[ \t\n\r\f\v]*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]{1,3})?[ \t\n\r\f\v]*$`;
/** JavaScript's largest finite number is about 1.8e308: beyond it Number() is Infinity (kept as text). */
const FINITE = '1e308';

/** The JSON form of one output, as the JavaScript path makes it; undefined when there is none here. */
function jsonSql(sqlType: string, field: FieldDef | undefined, e: string): string | undefined {
  if (field?.custom === true && field.type !== 'string') {
    if (sqlType !== 'text') return undefined;
    if (field.type === 'boolean') {
      return `CASE ${e} WHEN 'true' THEN 'true'::json WHEN 'false' THEN 'false'::json ELSE to_json(${e}) END`;
    }
    if (field.type === 'integer' || field.type === 'decimal') {
      // Number('') and Number('  ') are 0 in JavaScript.
      return `CASE WHEN ${e} ~ '${NUMBER_TEXT}' THEN
                     CASE WHEN abs(${e}::numeric) < ${FINITE} THEN to_json(${e}::numeric) ELSE to_json(${e}) END
                   WHEN ${e} ~ '^[ \\t\\n\\r\\f\\v]*$' THEN '0'::json
                   ELSE to_json(${e}) END`;
    }
    return e; // date, datetime, json: the stored text
  }
  switch (sqlType) {
    case 'text':
    case 'character varying':
    case 'boolean':
    case 'smallint':
    case 'integer':
    case 'date':
    case 'json':
    case 'jsonb':
    case 'text[]':
      return e;
    case 'bigint':
      return `CASE WHEN ${e} BETWEEN -9007199254740991 AND 9007199254740991 THEN to_json(${e}) ELSE to_json(${e}::text) END`;
    case 'numeric':
      return `(${e})::text`;
    case 'timestamp with time zone':
      return `to_char((${e}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
    default:
      return undefined;
  }
}

/** The SQL type of each output (`pg_typeof` over an empty result, so an empty table answers too). */
async function outputTypes(
  db: Queryable,
  tc: TypeContext,
  names: readonly string[],
): Promise<readonly string[]> {
  const list = names.map((n, i) => `${outputSql(tc, n)} AS "c${i}"`).join(', ');
  const r = await db.query<Record<string, string>>(
    `SELECT ${names.map((_, i) => `pg_typeof(x."c${i}")::text AS "c${i}"`).join(', ')}
       FROM (SELECT 1) one LEFT JOIN (SELECT ${list} FROM ${ident(tc.type.table)} t LIMIT 0) x ON true`,
  );
  return names.map((_, i) => r.rows[0]![`c${i}`]!);
}

/** Most arguments json_build_array takes. */
const MAX_ARRAY_FIELDS = 100;

/** Letters of the field types in `itemsKey` (custom attributes are typed per partition). */
const TYPE_LETTER: Readonly<Record<string, string>> = {
  string: 's',
  integer: 'i',
  decimal: 'n',
  boolean: 'b',
  date: 'd',
  datetime: 't',
  json: 'j',
};

/**
 * What the select list of a context's outputs depends on: the type, the outputs asked for, the
 * types of its custom attributes and the fields the database adds (`extraFields`: calculation grid
 * results, after the registry's fields in the context).
 */
function itemsKey(tc: TypeContext, names: readonly string[] | undefined): string {
  let sig = '';
  let n = 0;
  for (const f of tc.fields.values()) {
    if (n++ >= tc.type.fields.length) sig += `|${f.name}:${f.type}:${f.jsonKey ?? ''}`;
    else if (f.custom) sig += TYPE_LETTER[f.type] ?? '?';
  }
  return `${tc.type.code}\u0000${names === undefined ? '*' : names.join(',')}\u0000${sig}`;
}

/** Select lists by itemsKey (null: no JSON form), so that a request builds none of them again. */
const itemsOf = new Map<string, readonly string[] | null>();
const MAX_LISTS = 1_000;

/**
 * `<json form> AS "name"` for each output (`names`, or all of them), or undefined when one has no
 * JSON form here.
 */
async function jsonItems(
  db: Queryable,
  tc: TypeContext,
  names: readonly string[] | undefined,
): Promise<readonly string[] | undefined> {
  const key = itemsKey(tc, names);
  const known = itemsOf.get(key);
  if (known !== undefined) return known ?? undefined;
  const all = outputNames(tc, names);
  const types = await outputTypes(db, tc, all);
  let items: string[] | null = [];
  for (const [i, name] of all.entries()) {
    const json = jsonSql(
      types[i]!,
      name === 'typedId' ? undefined : tc.fields.get(name),
      outputSql(tc, name),
    );
    if (json === undefined) {
      items = null;
      break;
    }
    items.push(`${json} AS "${safeAlias(name)}"`);
  }
  if (itemsOf.size >= MAX_LISTS) itemsOf.clear();
  itemsOf.set(key, items);
  return items ?? undefined;
}

/** The page as JSON texts, or undefined when the plan needs the JavaScript path (see the top). */
async function runJson(db: Queryable, plan: FetchPlan): Promise<JsonPage | undefined> {
  const { tc } = plan;
  if (plan.distinct) return undefined;
  const names = outputNames(tc, plan.names);
  if (plan.asArrays && names.length > MAX_ARRAY_FIELDS) return undefined;
  const items = await jsonItems(db, tc, plan.names);
  if (items === undefined) return undefined;
  const { params, countParams, from, limit, offset, countSql, total } = compileParts(plan);
  const row = plan.asArrays
    ? `json_build_array(${names.map((n) => `x."${safeAlias(n)}"`).join(', ')})::text`
    : 'row_to_json(x)::text';
  // The page's order is the inner query's: the outer one only turns each row into its text.
  const sql = `SELECT ${total}, ${row} AS "__json"
                 FROM (SELECT ${items.join(', ')} FROM ${from}
                        ORDER BY ${compileSort(plan.sortBy, tc.fields, 't', 'id')} LIMIT ${limit} OFFSET ${offset}) x`;
  const r = await db.query<{ __total: unknown; __json: string }>(sql, params.values);
  const totalRows = await pageTotal(db, plan, r.rows, { countSql, countParams });
  const rowsJson = r.rows.map((x) => x.__json);
  return { rowsJson, startRow: plan.start, endRow: plan.start + rowsJson.length, totalRows };
}

/**
 * `/fetch/{TC}` for an answer: permission and plan as `fetchRecords`, then the rows as JSON texts
 * (`rowsJson`), or as records (`rows`, from `runFetch`) when the request needs the JavaScript path.
 */
export async function fetchForAnswer(
  db: Queryable,
  principal: Principal,
  type: TypeDef,
  body: FetchBody,
  maxPageSize: number,
): Promise<JsonPage | FetchResult> {
  const plan = await prepareFetch(db, principal, type, body, maxPageSize);
  return (await runJson(db, plan)) ?? runFetch(db, plan, compileFetch(plan));
}

/**
 * `/fetch/{TC}/{id}` as one JSON text (the record as `fetchOne` answers it); undefined when the
 * type needs the JavaScript path: extension rows, typed by their own table's meta, or an output
 * without a JSON form here. Not found is a 404, as from `fetchOne`.
 */
export async function fetchOneJson(
  db: Queryable,
  principal: Principal,
  type: TypeDef,
  idText: string,
): Promise<string | undefined> {
  if (type.metaPerName) return undefined;
  requireAccess(principal, type.access.fetch);
  const id = parseId(type, idText, 'id');
  const tc = await loadTypeContext(db, principal, type);
  const items = await jsonItems(db, tc, undefined);
  if (items === undefined) return undefined;
  const params = new Params();
  const scope = rowScope(tc, principal, params);
  // Prepared (PostgreSQL): one text per type, a lookup by the primary key.
  const r = await db.query<{ j: string }>(
    preparedShape(
      `SELECT row_to_json(x)::text AS j
         FROM (SELECT ${items.join(', ')} FROM ${ident(type.table)} t WHERE ${scope} AND t.id = ${params.add(id)}) x`,
    ),
    params.values,
  );
  const row = r.rows[0];
  if (!row) throw notFound(`${type.label} ${idText}`);
  return row.j;
}
