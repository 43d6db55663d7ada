// A query pipeline → a plan → ONE SQL statement. Stages: `planQuery` resolves every source (with
// its permission and row scope) and every name against the registry — field names of the main
// source as they are (`sku`), of a joined source prefixed by its alias (`px.attribute1`) — and
// checks the limits; `compileQuery` (./compile.ts) turns the plan into SQL in which every identifier comes from the
// registry or is generated (`s0`, `f3`, `r1`), and every value is a parameter. Names a client
// chooses (aliases, output names) never reach the SQL text. Filters and havings go through the
// criteria compiler of /fetch (every operator, typed custom attributes); sorting through its sort;
// joins, groups and aggregates read a typed attribute through that compiler's expression (`valueSql`).
// Errors name the element by its path inside `data` (./paths.ts).
//
// Shape of the statement: the sources joined into one flat row (`q`, pulled up by PostgreSQL into
// the outer query), filtered, projected or grouped (`g`, with the having), then one page plus the
// total: `WITH g AS (...) SELECT count, page FROM (count of g) LEFT JOIN LATERAL (page of g)`.
//
// `null` is absent for every optional name: the pipeline's own fields are dropped before
// validation (src/http/null-absent.ts); inside join, select and aggregates elements (arrays the
// route's schema leaves open) it is treated as absent here.

import type { Principal } from '../../access/access.ts';
import type { Config } from '../../config.ts';
import type { Queryable } from '../../db/db.ts';
import { qualified } from '../../db/sql.ts';
import {
  compileSort,
  parseCriteria,
  resolveCriteria,
  typedColumn,
  type ResolvedCriteria,
} from '../../engine/criteria.ts';
import type { FieldSpec, FieldType } from '../../engine/types.ts';
import { validationError } from '../../http/errors.ts';
import { resolveSource, type Source } from './sources.ts';
import { isObj } from '../../engine/values.ts';
import { criteriaKey, renaming } from './paths.ts';

type Obj = Record<string, unknown>;

export const AGGREGATES = ['sum', 'avg', 'min', 'max', 'count', 'countDistinct'] as const;
export type AggregateFn = (typeof AGGREGATES)[number];

export interface QueryBody {
  readonly source?: unknown;
  readonly join?: unknown;
  readonly filter?: unknown;
  readonly select?: unknown;
  readonly groupBy?: unknown;
  readonly aggregates?: unknown;
  readonly having?: unknown;
  readonly sortBy?: unknown;
  readonly startRow?: unknown;
  readonly endRow?: unknown;
  readonly valueFields?: unknown;
}

export type QueryLimits = Pick<Config, 'queryMaxRows' | 'queryMaxJoins'>;

/** A field of the flat row: where it comes from, and how the later stages see it (`q.fN`). */
interface FlatField {
  readonly source: number;
  readonly original: FieldSpec;
  readonly spec: FieldSpec;
}

export interface OutputColumn {
  readonly name: string;
  readonly type: FieldType;
  /** For fields: the source field it shows (`px.attribute1`); absent for aggregates. */
  readonly field?: string;
  readonly aggregate?: AggregateFn;
}

export interface Output extends OutputColumn {
  /** SQL over the flat row `q` (no parameters). */
  readonly expr: string;
  /** The value comes straight from a text column holding a typed value: converted by type. */
  readonly raw: boolean;
  readonly storedAsText: boolean;
  /** A decimal column of its own SQL type (`conditionValue`): its exact text, as `/fetch` answers it. */
  readonly asText?: boolean;
  /** A record's `typedId`: the value is its id (sorted and compared as the id), answered `<id>.<of>`. */
  readonly typedId?: { readonly of: string; readonly aliases?: readonly string[] };
  /**
   * A DATETIME attribute's typed value (a group's, a least or greatest): answered as the text such an
   * attribute holds when written in UTC (`2024-01-15T10:00:00Z`), not as the driver's Date
   * (`…00.000Z`), so that a group shows what `/fetch` and a select show for its records.
   */
  readonly utcText?: boolean;
}

/** Whether a field is a decimal column of its own SQL type (not a typed custom attribute). */
const nativeDecimal = (f: FlatField): boolean => f.spec.type === 'decimal' && f.spec.storedAsText !== true;

interface JoinPlan {
  readonly left: boolean;
  readonly on: readonly (readonly [FlatField, FieldSpec])[];
}

export interface Plan {
  readonly sources: readonly Source[];
  readonly joins: readonly JoinPlan[];
  readonly flat: ReadonlyMap<string, FlatField>;
  readonly filter: ResolvedCriteria | undefined;
  readonly outputs: readonly Output[];
  readonly grouped: boolean;
  readonly groupExprs: readonly string[];
  readonly having: ResolvedCriteria | undefined;
  readonly sortBy: unknown;
  readonly start: number;
  readonly end: number;
  readonly valueFields: readonly string[] | undefined;
}

const ALIAS = /^[a-z][a-z0-9_]{0,29}$/;
const OUTPUT_NAME = /^[A-Za-z_][A-Za-z0-9_.]{0,99}$/;

/** An element of `join`, `select` or `aggregates` names only the members it has (-4 naming another). */
function onlyMembers(o: Obj, members: readonly string[], at: string): Obj {
  const unknown = Object.keys(o).find((k) => !members.includes(k));
  if (unknown !== undefined) throw validationError(`${at}.${unknown}`, `unknown (${members.join(', ')})`);
  return o;
}

function list(v: unknown, field: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw validationError(field, 'must be an array');
  return v;
}

function fieldOf(flat: ReadonlyMap<string, FlatField>, name: unknown, field: string): [string, FlatField] {
  if (typeof name !== 'string') throw validationError(field, 'must be a field name');
  const f = flat.get(name);
  if (!f) throw validationError(field, `unknown field ${JSON.stringify(name)}`);
  return [name, f];
}

function outputName(v: unknown, field: string): string {
  if (typeof v !== 'string' || !OUTPUT_NAME.test(v)) {
    throw validationError(field, 'must be a name of letters, digits, "_" and "." (at most 100)');
  }
  return v;
}

function aggregateType(fn: AggregateFn, f: FlatField | undefined, field: string): FieldType {
  const type = f?.spec.type;
  // A typedId names a record: it is counted, not added up or ordered as a number.
  if (f?.spec.typedIdOf !== undefined && fn !== 'count' && fn !== 'countDistinct') {
    throw validationError(field, `${fn} does not apply to typedId: use count or countDistinct`);
  }
  switch (fn) {
    case 'count':
    case 'countDistinct':
      return 'integer';
    case 'sum':
    case 'avg':
      if (type !== 'integer' && type !== 'decimal') {
        throw validationError(
          field,
          `${fn} needs a numeric field (${type ?? 'none'} given; set the attribute's type in its meta)`,
        );
      }
      return fn === 'sum' ? type : 'decimal';
    case 'min':
    case 'max':
      if (type === undefined || type === 'json' || type === 'boolean') {
        throw validationError(field, `${fn} needs a text, number or date field`);
      }
      return type;
    default: {
      const never: never = fn;
      return never;
    }
  }
}

function aggregateSql(fn: AggregateFn, expr: string | undefined): string {
  switch (fn) {
    case 'count':
      return expr === undefined ? 'count(*)' : `count(${expr})`;
    case 'countDistinct':
      return `count(DISTINCT ${expr})`;
    case 'sum':
    case 'avg':
    case 'min':
    case 'max':
      return `${fn}(${expr})`;
    default: {
      const never: never = fn;
      return never;
    }
  }
}

// A number kept as text is read by the criteria compiler's own expression (`typedColumn`: the safe
// cast rc_try_numeric, what /fetch filters and sorts by), so a value is a number here exactly where
// it is one there (`1e00001` is 10). The cast's exception block costs a subtransaction per value,
// which dominated grouped aggregates and exhausted PGlite's memory at 100,000 rows: the common forms
// take `::numeric` inline first — blanks numeric input skips, ASCII digits, at most 1,000 characters,
// an exponent of at most four digits after its zeros (so at most 11,000 digits either side of the
// point: far within numeric's range, the cast cannot fail) — the same value the safe cast gives them.
// Rejected: a pattern of our own alone, which read `1e00001` as NULL, so it was not counted, summed,
// grouped or joined as /fetch compares it.
const PLAIN_NUMBER = String.raw`'^[ \t\n\r\f\v]*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?0*[0-9]{1,4})?[ \t\n\r\f\v]*$'`;

/** A field's typed value for joins, groups and aggregates: as the criteria compiler reads it. */
export function valueSql(spec: FieldSpec, alias: string): string {
  const typed = typedColumn(spec, alias).sql;
  if (spec.storedAsText === true && (spec.type === 'decimal' || spec.type === 'integer')) {
    const col = qualified(alias, spec.column);
    return `(CASE WHEN length(${col}) <= 1000 AND ${col} ~ ${PLAIN_NUMBER} THEN ${col}::numeric ELSE ${typed} END)`;
  }
  return typed;
}

function addSourceFields(flat: Map<string, FlatField>, source: Source, index: number, prefix: string): void {
  // `typedId` first, as /fetch answers it: the id, filtered, sorted and grouped as the record it names.
  const id = source.tc.fields.get('id');
  if (id !== undefined) {
    const { code, typedIdAliases } = source.tc.type;
    const name = `${prefix}typedId`;
    const spec: FieldSpec = {
      name,
      column: `f${flat.size}`,
      type: id.type,
      typedIdOf: code,
      ...(typedIdAliases === undefined ? {} : { typedIdAliases }),
    };
    flat.set(name, { source: index, original: id, spec });
  }
  for (const f of source.tc.fields.values()) {
    const name = prefix + f.name;
    const spec: FieldSpec = {
      name,
      column: `f${flat.size}`,
      type: f.type,
      ...(f.storedAsText ? { storedAsText: true } : {}),
    };
    flat.set(name, { source: index, original: f, spec });
  }
}

function planJoins(
  raw: readonly unknown[],
  resolved: readonly Source[],
  flat: Map<string, FlatField>,
): JoinPlan[] {
  const aliases = new Set<string>();
  return raw.map((j, i) => {
    const at = `join[${i}]`;
    const spec = j as Obj;
    const alias = spec.as;
    if (typeof alias !== 'string' || !ALIAS.test(alias) || aliases.has(alias)) {
      throw validationError(`${at}.as`, 'must be a unique lower-case alias (a-z, 0-9, _; at most 30)');
    }
    aliases.add(alias);
    const type = spec.type ?? 'inner';
    if (type !== 'inner' && type !== 'left') throw validationError(`${at}.type`, 'must be inner or left');
    const source = resolved[i + 1]!;
    if (!isObj(spec.on) || Object.keys(spec.on).length === 0) {
      throw validationError(
        `${at}.on`,
        'must map fields to fields of the joined source, e.g. {"sku": "sku"}',
      );
    }
    const on = Object.entries(spec.on).map(([leftName, rightName]) => {
      const [, left] = fieldOf(flat, leftName, `${at}.on`);
      const rn = typeof rightName === 'string' ? rightName.replace(new RegExp(`^${alias}\\.`), '') : '';
      const right = source.tc.fields.get(rn);
      if (!right)
        throw validationError(`${at}.on`, `unknown field ${JSON.stringify(rightName)} of ${source.code}`);
      const fam = (t: FieldType) => (t === 'integer' ? 'decimal' : t);
      if (fam(left.spec.type) !== fam(right.type) || right.type === 'json') {
        throw validationError(
          `${at}.on`,
          `${leftName} (${left.spec.type}) cannot be joined to ${rn} (${right.type})`,
        );
      }
      return [left, right] as const;
    });
    addSourceFields(flat, source, i + 1, `${alias}.`);
    return { left: type === 'left', on };
  });
}

function rowRange(body: QueryBody, limits: QueryLimits): { start: number; end: number } {
  const int = (v: unknown, name: string): number | undefined => {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
      throw validationError(name, 'must be a whole number ≥ 0');
    return v;
  };
  const start = int(body.startRow, 'startRow') ?? 0;
  const end = int(body.endRow, 'endRow') ?? start + Math.min(300, limits.queryMaxRows);
  if (end < start) throw validationError('endRow', 'must not be less than startRow');
  if (end - start > limits.queryMaxRows) {
    throw validationError(
      'endRow',
      `a page holds at most ${limits.queryMaxRows} rows (setting QUERY_MAX_ROWS)`,
    );
  }
  return { start, end };
}

/**
 * `filter` or `having` (`at`) resolved against `fields`; its errors are named under `at`
 * (`filter.nosuch`). `typedId` is a field of each source (`typedId`, `px.typedId`) that names a record
 * of that source, as on /fetch: another type's typedId is a -4.
 */
function criteriaOf(
  input: unknown,
  fields: ReadonlyMap<string, FieldSpec>,
  at: 'filter' | 'having',
): ResolvedCriteria | undefined {
  if (input === undefined || input === null) return undefined;
  return renaming(
    criteriaKey(at),
    () => resolveCriteria(parseCriteria(input, { field: at }), fields).criteria,
  );
}

/** A list that, given, names at least one field (as /fetch refuses `resultFields: []`). */
function nonEmpty(v: unknown, field: string): void {
  if (Array.isArray(v) && v.length === 0) throw validationError(field, 'must name at least one field');
}

/** Plans a pipeline: sources, permissions, names, types and limits are all checked here. */
export async function planQuery(
  q: Queryable,
  principal: Principal,
  body: QueryBody,
  limits: QueryLimits,
): Promise<Plan> {
  const joinsRaw = list(body.join, 'join');
  if (joinsRaw.length > limits.queryMaxJoins) {
    throw validationError('join', `at most ${limits.queryMaxJoins} joins (setting QUERY_MAX_JOINS)`);
  }
  joinsRaw.forEach((j, i) => {
    if (!isObj(j)) throw validationError(`join[${i}]`, 'must be an object {source, as, on, type?}');
    onlyMembers(j, ['source', 'as', 'on', 'type'], `join[${i}]`);
  });
  const sources: Source[] = [await resolveSource(q, principal, body.source, 'source')];
  for (const [i, j] of joinsRaw.entries()) {
    sources.push(await resolveSource(q, principal, (j as Obj).source, `join[${i}].source`));
  }
  const flat = new Map<string, FlatField>();
  addSourceFields(flat, sources[0]!, 0, '');
  const joins = planJoins(joinsRaw, sources, flat);
  const flatSpecs = new Map([...flat].map(([n, f]) => [n, f.spec]));
  const filter = criteriaOf(body.filter, flatSpecs, 'filter');

  const groupBy = list(body.groupBy, 'groupBy').map((g, i) => fieldOf(flat, g, `groupBy[${i}]`));
  const aggRaw = list(body.aggregates, 'aggregates');
  const grouped = groupBy.length > 0 || aggRaw.length > 0;
  const outputs: Output[] = [];
  const seen = new Set<string>();
  const push = (o: Output, at: string) => {
    if (seen.has(o.name)) throw validationError(at, `the output name ${o.name} is used twice`);
    seen.add(o.name);
    outputs.push(o);
  };
  nonEmpty(body.select, 'select');
  const selectRaw = list(body.select, 'select');
  // [output name, field name, field, where the request names it]
  const selected = selectRaw.map((s, i): [string, string, FlatField, string] => {
    const at = `select[${i}]`;
    if (isObj(s)) {
      onlyMembers(s, ['field', 'as'], at);
      const [name, f] = fieldOf(flat, s.field, `${at}.field`);
      if (s.as === undefined || s.as === null) return [name, name, f, at];
      return [outputName(s.as, `${at}.as`), name, f, `${at}.as`];
    }
    const [name, f] = fieldOf(flat, s, at);
    return [name, name, f, at];
  });
  if (grouped) {
    const groupNames = new Set(groupBy.map(([n]) => n));
    selected.forEach(([, name], i) => {
      if (!groupNames.has(name)) throw validationError(`select[${i}]`, `${name} is not in groupBy`);
    });
    // Each group field under each name select gives it (`{field, as}` twice: two outputs), else its own.
    groupBy.forEach(([name, f], i) => {
      const named = selected.filter(([, n]) => n === name).map(([alias, , , at]) => [alias, at] as const);
      const expr = valueSql(f.spec, 'q');
      for (const [alias, at] of named.length > 0 ? named : [[name, `groupBy[${i}]`] as const]) {
        push({ ...fieldOutput(alias, name, f, expr), raw: false, storedAsText: false }, at);
      }
    });
    aggRaw.forEach((a, i) => {
      const at = `aggregates[${i}]`;
      if (!isObj(a)) throw validationError(at, 'must be an object {fn, field?, as?}');
      onlyMembers(a, ['fn', 'field', 'as'], at);
      const fn = a.fn;
      if (typeof fn !== 'string' || !(AGGREGATES as readonly string[]).includes(fn)) {
        throw validationError(`${at}.fn`, `must be one of ${AGGREGATES.join(', ')}`);
      }
      const agg = fn as AggregateFn;
      let f: FlatField | undefined;
      let fieldName: string | undefined;
      if (a.field !== undefined && a.field !== null) [fieldName, f] = fieldOf(flat, a.field, `${at}.field`);
      else if (agg !== 'count') throw validationError(`${at}.field`, `${agg} needs a field`);
      const type = aggregateType(agg, f, `${at}.field`);
      const name =
        a.as === undefined || a.as === null
          ? fieldName === undefined
            ? agg
            : `${agg}_${fieldName}`
          : outputName(a.as, `${at}.as`);
      const expr = aggregateSql(agg, f === undefined ? undefined : valueSql(f.spec, 'q'));
      // The sum, average, least or greatest of a decimal column of its own SQL type (conditionValue)
      // is answered as that column is: its exact text ("1.10", not 1.1).
      const asText = f !== undefined && nativeDecimal(f) && agg !== 'count' && agg !== 'countDistinct';
      // The least or greatest of a DATETIME attribute reads as its records do (see Output.utcText).
      const utcText = f !== undefined && (agg === 'min' || agg === 'max') && datetimeText(f);
      const o: Output = { name, type, aggregate: agg, expr, raw: false, storedAsText: false, asText };
      push(utcText ? { ...o, utcText } : o, a.as === undefined || a.as === null ? at : `${at}.as`);
    });
  } else {
    const shown: [string, string, FlatField, string][] =
      selected.length > 0 ? selected : [...flat].map(([n, f]) => [n, n, f, 'select']);
    for (const [name, field, f, at] of shown) {
      const text = f.spec.storedAsText === true;
      const o = fieldOutput(name, field, f, qualified('q', f.spec.column));
      // A selected DATETIME attribute is its stored text already (no utcText).
      push({ ...o, raw: text, storedAsText: text, utcText: false }, at);
    }
  }
  if (body.having !== undefined && body.having !== null && !grouped) {
    throw validationError('having', 'needs groupBy or aggregates');
  }
  const having = criteriaOf(body.having, outputFields(outputs), 'having');
  // The sort is checked here too, so that /queryapi.meta, which plans without compiling, refuses it.
  compileSort(body.sortBy, outputFields(outputs), 'g', 'r0');
  nonEmpty(body.valueFields, 'valueFields');
  const valueFields =
    body.valueFields === undefined || body.valueFields === null
      ? undefined
      : list(body.valueFields, 'valueFields').map((v, i) => {
          if (typeof v !== 'string' || !seen.has(v))
            throw validationError(`valueFields[${i}]`, `unknown output ${JSON.stringify(v)}`);
          return v;
        });
  return {
    sources,
    joins,
    flat,
    filter,
    outputs,
    grouped,
    groupExprs: groupBy.map(([, f]) => valueSql(f.spec, 'q')),
    having,
    sortBy: body.sortBy,
    ...rowRange(body, limits),
    valueFields,
  };
}

/** Whether a field is a DATETIME attribute kept as text (see Output.utcText). */
const datetimeText = (f: FlatField): boolean => f.spec.type === 'datetime' && f.spec.storedAsText === true;

/** The output of a field (selected or grouped) over `expr`, typed as /fetch answers that field. */
function fieldOutput(
  name: string,
  field: string,
  f: FlatField,
  expr: string,
): Omit<Output, 'raw' | 'storedAsText'> {
  const base = { name, field, expr, asText: nativeDecimal(f), utcText: datetimeText(f) };
  const of = f.spec.typedIdOf;
  if (of === undefined) return { ...base, type: f.spec.type };
  const aliases = f.spec.typedIdAliases;
  return { ...base, type: 'string', typedId: { of, ...(aliases === undefined ? {} : { aliases }) } };
}

/** The outputs as fields of the projected row (`rN`), for the having, the sort and the page. */
export function outputFields(outputs: readonly Output[]): Map<string, FieldSpec> {
  return new Map(
    outputs.map((o, i): [string, FieldSpec] => {
      const spec: FieldSpec = { name: o.name, column: `r${i}`, type: o.type };
      if (o.storedAsText) return [o.name, { ...spec, storedAsText: true }];
      // A typedId is the id it names: sorted as the id, compared with `<id>.<TC>` or plain ids.
      if (o.typedId !== undefined) {
        const { of, aliases } = o.typedId;
        return [
          o.name,
          {
            ...spec,
            type: 'integer',
            typedIdOf: of,
            ...(aliases === undefined ? {} : { typedIdAliases: aliases }),
          },
        ];
      }
      return [o.name, spec];
    }),
  );
}
