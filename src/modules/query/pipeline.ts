// A query pipeline → a plan → ONE SQL statement. Stages: `planQuery` resolves every source (with
// its permission and row scope) and every name against the registry — field names of the main
// source as they are (`sku`), of a joined source prefixed by its alias (`px.attribute1`) — and
// checks the limits; `compileQuery` (./compile.ts) turns the plan into SQL in which every identifier comes from the
// registry or is generated (`s0`, `f3`, `r1`), and every value is a parameter. Names a client
// chooses (aliases, output names) never reach the SQL text. Filters and havings go through the
// criteria compiler of /fetch (every operator, typed custom attributes); sorting through its sort.
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
import { parseCriteria, resolveCriteria, typedColumn, type ResolvedCriteria } from '../../engine/criteria.ts';
import type { FieldSpec, FieldType } from '../../engine/types.ts';
import { validationError } from '../../http/errors.ts';
import { resolveSource, type Source } from './sources.ts';
import { isObj } from '../../engine/values.ts';

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

// A number kept as text, read without rc_try_numeric: that function's exception block costs a
// subtransaction per row, which dominated grouped aggregates (and exhausted PGlite's memory at
// 100,000 rows). The pattern admits only what `::numeric` can read (exponents up to 4 digits; the
// engine writes at most 1000), anything else is NULL as with the safe cast. Filters keep
// rc_try_numeric, which the attribute indexes are built on.
const NUMBER_TEXT = String.raw`'^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d{1,4})?\s*$'`;

/** A field's typed value for joins, groups and aggregates. */
export function valueSql(spec: FieldSpec, alias: string): string {
  if (spec.storedAsText === true && (spec.type === 'decimal' || spec.type === 'integer')) {
    const col = qualified(alias, spec.column);
    return `(CASE WHEN ${col} ~ ${NUMBER_TEXT} THEN ${col}::numeric END)`;
  }
  return typedColumn(spec, alias).sql;
}

function addSourceFields(flat: Map<string, FlatField>, source: Source, index: number, prefix: string): void {
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

function criteriaOf(
  input: unknown,
  fields: ReadonlyMap<string, FieldSpec>,
  main?: Source,
): ResolvedCriteria | undefined {
  if (input === undefined || input === null) return undefined;
  // `typedId` names a record of the main source, as on /fetch: another type's typedId is a -4.
  const typed = main && { typeCode: main.tc.type.code, typedIdAliases: main.tc.type.typedIdAliases };
  return resolveCriteria(parseCriteria(input), fields, typed).criteria;
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
  const filter = criteriaOf(body.filter, flatSpecs, sources[0]);

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
  const selectRaw = list(body.select, 'select');
  const selected = selectRaw.map((s, i): [string, string, FlatField] => {
    const at = `select[${i}]`;
    if (isObj(s)) {
      onlyMembers(s, ['field', 'as'], at);
      const [name, f] = fieldOf(flat, s.field, `${at}.field`);
      return [s.as === undefined || s.as === null ? name : outputName(s.as, `${at}.as`), name, f];
    }
    const [name, f] = fieldOf(flat, s, at);
    return [name, name, f];
  });
  if (grouped) {
    const groupNames = new Set(groupBy.map(([n]) => n));
    selected.forEach(([, name], i) => {
      if (!groupNames.has(name)) throw validationError(`select[${i}]`, `${name} is not in groupBy`);
    });
    // Each group field under each name select gives it (`{field, as}` twice: two outputs), else its own.
    for (const [name, f] of groupBy) {
      const aliases = selected.filter(([, n]) => n === name).map(([alias]) => alias);
      const expr = valueSql(f.spec, 'q');
      for (const alias of aliases.length > 0 ? aliases : [name]) {
        push(
          {
            name: alias,
            type: f.spec.type,
            field: name,
            expr,
            raw: false,
            storedAsText: false,
            asText: nativeDecimal(f),
          },
          'groupBy',
        );
      }
    }
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
      push({ name, type, aggregate: agg, expr, raw: false, storedAsText: false, asText }, `${at}.as`);
    });
  } else {
    const shown: [string, string, FlatField][] =
      selected.length > 0 ? selected : [...flat].map(([n, f]) => [n, n, f]);
    for (const [name, field, f] of shown) {
      const expr = qualified('q', f.spec.column);
      const text = f.spec.storedAsText === true;
      push(
        { name, type: f.spec.type, field, expr, raw: text, storedAsText: text, asText: nativeDecimal(f) },
        'select',
      );
    }
  }
  if (body.having !== undefined && body.having !== null && !grouped) {
    throw validationError('having', 'needs groupBy or aggregates');
  }
  const having = criteriaOf(body.having, outputFields(outputs));
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

/** The outputs as fields of the projected row (`rN`), for the having, the sort and the page. */
export function outputFields(outputs: readonly Output[]): Map<string, FieldSpec> {
  return new Map(
    outputs.map((o, i) => [
      o.name,
      { name: o.name, column: `r${i}`, type: o.type, ...(o.storedAsText ? { storedAsText: true } : {}) },
    ]),
  );
}
