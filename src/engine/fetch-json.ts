// `/fetch/{TC}` answered as JSON text. The page's rows are what `runFetch` answers — the same plan,
// filter, order and count — but each row arrives as one text, the database's text of the record of its
// outputs (`ROW(...)::text`), and the server writes the API's JSON object (or array) from it with a
// writer made once per select list (src/engine/record-json.ts), all rows as bytes into the answer's
// buffer (src/http/answer-bytes.ts). The server neither parses a row's fields through the driver
// nor builds and serializes an object (or a string) per row.
// The record's text is the cheapest form the database writes: the bench's `equals` page in pgbench
// (one client, eight alternating runs, min and median ms) with `ROW(...)::text` 0.91 and 1.10, with
// `json_build_array(...)::text` (the form before) 1.13 and 1.27, the outputs as columns 0.93 and 1.05
// (which the driver then parses field by field); row_to_json, with the conversions it needed in SQL,
// cost more still. The page's statement is prepared (`preparedPage`).
//
// Each value must say what the JavaScript path says, value by value. A field's text is what the
// driver reads too (the type's output function), so:
// - text, numeric and date → a JSON string of the text (the driver answers numeric and date as text);
// - integer and smallint, json and jsonb → the text as it is; boolean `t`/`f` → true/false;
// - bigint → the number while exact in JavaScript, else its text (`parseInt8`, as the driver);
// - text arrays → `to_json` in SQL, then as they are;
// - timestamptz → `YYYY-MM-DDTHH:MI:SS.mssZ` in UTC (a JavaScript Date's JSON), by to_char;
// - custom attributes typed by their meta (text columns) → `outputValue` of the text, as `toRecord`.
// An output whose SQL type is not one of these (found once per select list with `pg_typeof`, so an
// expression of the registry is covered by what it really is) makes the fetch take the JavaScript
// path, as does `distinctResults`.

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { notNullColumns } from '../db/columns.ts';
import { Params, ident, isoUtcSql } from '../db/sql.ts';
import { preparedPage, preparedShape } from '../db/prepared.ts';
import { AppError } from '../http/errors.ts';
import { requireAccess } from './access-check.ts';
import { pathAddress } from './addressing.ts';
import { compileSort } from './criteria.ts';
import {
  loadTypeContext,
  outputNames,
  outputSql,
  outputValue,
  rowScope,
  typedMetaExists,
  typedPerRow,
  type TypeContext,
} from './context.ts';
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
import {
  recordWriter,
  writeArray,
  type FieldWrite,
  type JsonWrite,
  type RecordWriter,
} from './record-json.ts';
import type { FieldDef, TypeDef } from './registry.ts';

export interface JsonPage {
  /** Writes the JSON array of the rows (objects, or arrays for `valueFields`) in page order. */
  readonly writeData: JsonWrite;
  readonly startRow: number;
  readonly endRow: number;
  readonly totalRows: number;
}

/** One output: its SQL (a field of the row's record) and how its text becomes JSON. */
interface RowOutput {
  readonly sql: string;
  readonly write: FieldWrite;
}

/** An output's field of the record, for its SQL type; undefined when there is none here. */
function rowOutput(sqlType: string, field: FieldDef | undefined, e: string): RowOutput | undefined {
  if (field?.custom === true && field.type !== 'string') {
    if (sqlType !== 'text') return undefined;
    const type = field.type;
    // Dates, date-times and json are answered as the stored text.
    if (type !== 'integer' && type !== 'decimal' && type !== 'boolean') return { sql: e, write: 'string' };
    return { sql: e, write: (v) => JSON.stringify(outputValue(type, v)) };
  }
  switch (sqlType) {
    case 'text':
    case 'character varying':
    case 'numeric':
    case 'date':
      return { sql: e, write: 'string' };
    case 'smallint':
    case 'integer':
    case 'json':
    case 'jsonb':
      return { sql: e, write: 'raw' };
    case 'boolean':
      return { sql: e, write: 'boolean' };
    case 'bigint':
      return { sql: e, write: 'int8' };
    case 'text[]':
      return { sql: `to_json(${e})`, write: 'raw' };
    case 'timestamp with time zone':
      return {
        sql: isoUtcSql(e),
        write: 'string',
      };
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

/** A row's record text in SQL, with what writes it as the API's JSON object or array. */
interface RowJson {
  /** The outputs over `t`, as `x` (below) reads them: `<output> AS "cN"`. */
  readonly inner: string;
  /**
   * `ROW(...)::text` over the outputs of `x`: written after ORDER BY and LIMIT (in an outer query),
   * not for every match that the sort reads.
   */
  readonly sql: string;
  readonly object: RecordWriter;
  readonly array: RecordWriter;
}

/** Rows' JSON by itemsKey (null: not written here), so that a request builds none of them again. */
const rowsOf = new Map<string, RowJson | null>();
const MAX_LISTS = 1_000;

/** The JSON of rows of `names` (or all outputs), or undefined when one has no JSON form here. */
async function rowJson(
  db: Queryable,
  tc: TypeContext,
  names: readonly string[] | undefined,
): Promise<RowJson | undefined> {
  const key = itemsKey(tc, names);
  const known = rowsOf.get(key);
  if (known !== undefined) return known ?? undefined;
  const all = outputNames(tc, names);
  const outputs: RowOutput[] = [];
  const types = await outputTypes(db, tc, all);
  for (const [i, name] of all.entries()) {
    const out = rowOutput(types[i]!, name === 'typedId' ? undefined : tc.fields.get(name), `x."c${i}"`);
    if (out === undefined) break;
    outputs.push(out);
  }
  let json: RowJson | null = null;
  if (outputs.length === all.length) {
    const writes = outputs.map((o) => o.write);
    json = {
      inner: all.map((n, i) => `${outputSql(tc, n)} AS "c${i}"`).join(', '),
      sql: `ROW(${outputs.map((o) => o.sql).join(', ')})::text`,
      object: recordWriter(
        all.map((n, i) => `${i === 0 ? '{' : ','}${JSON.stringify(n)}:`),
        writes,
        '}',
      ),
      array: recordWriter(
        all.map((_, i) => (i === 0 ? '[' : ',')),
        writes,
        ']',
      ),
    };
  }
  if (rowsOf.size >= MAX_LISTS) rowsOf.clear();
  rowsOf.set(key, json);
  return json ?? undefined;
}

/** The page as JSON text, or undefined when the plan needs the JavaScript path (see the top). */
async function runJson(db: Queryable, plan: FetchPlan): Promise<JsonPage | undefined> {
  const { tc } = plan;
  if (plan.distinct) return undefined;
  // Extension rows of several tables, some typed by their table's meta: row by row (runFetch).
  if (
    typedPerRow(tc.type) &&
    tc.metaName === undefined &&
    (await typedMetaExists(db, plan.principal, tc.type))
  ) {
    return undefined;
  }
  const json = await rowJson(db, tc, plan.names);
  if (json === undefined) return undefined;
  const { params, countParams, pageFrom, limit, offset, countSql, total, with: w } = compileParts(plan);
  // The page's order is the inner query's: the outer one only writes each row's text.
  const sql = `${w}SELECT x."__total", ${json.sql} AS "__row"
                 FROM (SELECT ${total}, ${json.inner} FROM ${pageFrom}
                        ORDER BY ${compileSort(plan.sortBy, tc.fields, 't', 'id', notNullColumns(tc.type.table))} LIMIT ${limit} OFFSET ${offset}) x`;
  const r = await db.query<{ __total: unknown; __row: string }>(
    params.planPerValue ? sql : preparedPage(sql),
    params.values,
  );
  const totalRows = await pageTotal(db, plan, r.rows, { countSql, countParams });
  const texts = r.rows.map((x) => x.__row);
  const write = plan.asArrays ? json.array : json.object;
  const writeData: JsonWrite = (out) => writeArray(out, texts, write);
  return { writeData, startRow: plan.start, endRow: plan.start + r.rows.length, totalRows };
}

/**
 * `/fetch/{TC}` for an answer: permission and plan as `fetchRecords`, then the rows as JSON
 * (`writeData`), or as records (`rows`, from `runFetch`) when the request needs the JavaScript path.
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
 * `/fetch/{TC}/{id}` as a writer of the JSON array of the record (as `fetchOne` answers it);
 * undefined when the type needs the JavaScript path: extension rows, typed by their own table's meta,
 * or an output without a JSON form here. Not found is a 404, as from `fetchOne`.
 */
export async function fetchOneJson(
  db: Queryable,
  principal: Principal,
  type: TypeDef,
  idText: string,
): Promise<JsonWrite | undefined> {
  if (type.metaPerName) return undefined;
  requireAccess(principal, type.access.fetch);
  const address = pathAddress(type, idText, 'id');
  if (!('id' in address)) return undefined; // by its business key: fetchOne (the general path)
  const { id } = address;
  const tc = await loadTypeContext(db, principal, type);
  const json = await rowJson(db, tc, undefined);
  if (json === undefined) return undefined;
  const params = new Params();
  const scope = rowScope(tc, principal, params);
  // Prepared (PostgreSQL): one text per type, a lookup by the primary key.
  const r = await db.query<{ j: string }>(
    preparedShape(
      `SELECT ${json.sql} AS j
         FROM (SELECT ${json.inner} FROM ${ident(type.table)} t WHERE ${scope} AND t.id = ${params.add(id)}) x`,
    ),
    params.values,
  );
  const row = r.rows[0];
  if (!row) throw new AppError('NOT_FOUND', `${type.label} ${idText} not found`, { field: 'id' });
  return (out) => writeArray(out, [row.j], json.object);
}
