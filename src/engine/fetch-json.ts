// `/fetch/{TC}` answered as JSON text written by the server from the database's text. The page's
// rows are what `runFetch` answers — the same plan, filter, order and count — but every output comes
// as the text the database sends (each cast to text in the select list), in an array per row, and a
// writer made once per select list turns each row into its JSON text, which the route joins into the
// envelope as it is. No object, parsed value or generic serialization per field (measured: most of
// the server's time per fetch), and no JSON built by the database (row_to_json cost PostgreSQL more
// than the rest of the statement).
//
// The text must say what the JavaScript path says, value by value:
// - text, numeric (the driver answers NUMERIC as a string, exactly), date → a JSON string;
// - integer, smallint, json, jsonb → the text as it is; boolean → true or false;
// - bigint → a number while exact in JavaScript, else its text (`parseInt8`);
// - timestamptz → `YYYY-MM-DDTHH:MI:SS.mssZ` in UTC (a JavaScript Date's JSON), by to_char;
// - text[] → its `to_json`;
// - custom attributes typed by their meta (text columns) → `outputValue`, as `toRecord` does.
// An output whose SQL type is not one of these (found once per select list with `pg_typeof`, so an
// expression of the registry is covered by what it really is) makes the fetch take the JavaScript
// path, as does `distinctResults`.

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { Params, ident } from '../db/sql.ts';
import { preparedShape } from '../db/prepared.ts';
import { notFound } from '../http/errors.ts';
import { requireAccess } from './access-check.ts';
import { parseId } from './addressing.ts';
import { compileSort } from './criteria.ts';
import {
  loadTypeContext,
  outputNames,
  outputSql,
  outputValue,
  rowScope,
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
import type { FieldDef, TypeDef } from './registry.ts';

export interface JsonPage {
  /** Each row as JSON text (an object, or an array for `valueFields`), in page order. */
  readonly rowsJson: readonly string[];
  readonly startRow: number;
  readonly endRow: number;
  readonly totalRows: number;
}

/** How one output's text (never NULL here) becomes JSON. */
type Writer = (text: string) => string;

/** What a JSON string must escape (control characters, quote, backslash) or check (surrogates). */
// eslint-disable-next-line no-control-regex -- control characters are what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
/** Most texts need no escape: then they are only quoted (measured: half JSON.stringify's time). */
const asString: Writer = (v) => (NEEDS_ESCAPE.test(v) ? JSON.stringify(v) : `"${v}"`);
const asIs: Writer = (v) => v;
const asBoolean: Writer = (v) => (v === 'true' ? 'true' : 'false');
const asInt8: Writer = (v) => (Number.isSafeInteger(Number(v)) ? v : JSON.stringify(v));

/** One output: its SQL (text) and how its text is written. */
interface TextOutput {
  readonly sql: string;
  readonly write: Writer;
}

/** An output's text and writer, for its SQL type; undefined when there is none here. */
function textOutput(sqlType: string, field: FieldDef | undefined, e: string): TextOutput | undefined {
  if (field?.custom === true && field.type !== 'string') {
    if (sqlType !== 'text') return undefined;
    const type = field.type;
    return { sql: e, write: (v) => JSON.stringify(outputValue(type, v)) };
  }
  switch (sqlType) {
    case 'text':
    case 'character varying':
      return { sql: e, write: asString };
    case 'numeric':
    case 'date':
      return { sql: `(${e})::text`, write: asString };
    case 'smallint':
    case 'integer':
    case 'json':
    case 'jsonb':
      return { sql: `(${e})::text`, write: asIs };
    case 'boolean':
      return { sql: `(${e})::text`, write: asBoolean };
    case 'bigint':
      return { sql: `(${e})::text`, write: asInt8 };
    case 'text[]':
      return { sql: `to_json(${e})::text`, write: asIs };
    case 'timestamp with time zone':
      return { sql: `to_char((${e}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`, write: asString };
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

/** A select list of text outputs, with what writes a row of it as a JSON object or array. */
interface TextList {
  /** `<text> AS "cN"` per output. */
  readonly items: readonly string[];
  readonly object: (row: readonly (string | null)[], from: number) => string;
  readonly array: (row: readonly (string | null)[], from: number) => string;
}

/** Select lists by itemsKey (null: not written here), so that a request builds none of them again. */
const listsOf = new Map<string, TextList | null>();
const MAX_LISTS = 1_000;

/** Writes `row[from..]` between `open` and `close`, each value after its prefix. */
function rowWriter(prefixes: readonly string[], writers: readonly Writer[], close: string) {
  const n = writers.length;
  return (row: readonly (string | null)[], from: number): string => {
    let out = '';
    for (let i = 0; i < n; i++) {
      const v = row[from + i];
      out += prefixes[i]! + (v === null || v === undefined ? 'null' : writers[i]!(v));
    }
    return out + close;
  };
}

/** The text outputs of `names` (or all of them), or undefined when one has no text form here. */
async function textList(
  db: Queryable,
  tc: TypeContext,
  names: readonly string[] | undefined,
): Promise<TextList | undefined> {
  const key = itemsKey(tc, names);
  const known = listsOf.get(key);
  if (known !== undefined) return known ?? undefined;
  const all = outputNames(tc, names);
  const types = await outputTypes(db, tc, all);
  const outputs: TextOutput[] = [];
  for (const [i, name] of all.entries()) {
    const out = textOutput(
      types[i]!,
      name === 'typedId' ? undefined : tc.fields.get(name),
      outputSql(tc, name),
    );
    if (out === undefined) break;
    outputs.push(out);
  }
  let list: TextList | null = null;
  if (outputs.length === all.length) {
    const writers = outputs.map((o) => o.write);
    list = {
      items: outputs.map((o, i) => `${o.sql} AS "c${i}"`),
      object: rowWriter(
        all.map((n, i) => `${i === 0 ? '{' : ','}${JSON.stringify(n)}:`),
        writers,
        '}',
      ),
      array: rowWriter(
        all.map((_, i) => (i === 0 ? '[' : ',')),
        writers,
        ']',
      ),
    };
  }
  if (listsOf.size >= MAX_LISTS) listsOf.clear();
  listsOf.set(key, list);
  return list ?? undefined;
}

/** The page as JSON texts, or undefined when the plan needs the JavaScript path (see the top). */
async function runJson(db: Queryable, plan: FetchPlan): Promise<JsonPage | undefined> {
  const { tc } = plan;
  if (plan.distinct) return undefined;
  const list = await textList(db, tc, plan.names);
  if (list === undefined) return undefined;
  const { params, countParams, from, limit, offset, countSql, total } = compileParts(plan);
  const sql = `SELECT ${total}, ${list.items.join(', ')} FROM ${from}
                ORDER BY ${compileSort(plan.sortBy, tc.fields, 't', 'id')} LIMIT ${limit} OFFSET ${offset}`;
  const rows = await db.queryArrays(sql, params.values);
  const totalRows = await pageTotal(db, plan, rows.length > 0 ? [{ __total: rows[0]![0] }] : [], {
    countSql,
    countParams,
  });
  const write = plan.asArrays ? list.array : list.object;
  const rowsJson = rows.map((r) => write(r, 1));
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
  const list = await textList(db, tc, undefined);
  if (list === undefined) return undefined;
  const params = new Params();
  const scope = rowScope(tc, principal, params);
  // Prepared (PostgreSQL): one text per type, a lookup by the primary key.
  const rows = await db.queryArrays(
    preparedShape(
      `SELECT ${list.items.join(', ')} FROM ${ident(type.table)} t WHERE ${scope} AND t.id = ${params.add(id)}`,
    ),
    params.values,
  );
  const row = rows[0];
  if (!row) throw notFound(`${type.label} ${idText}`);
  return list.object(row, 0);
}
