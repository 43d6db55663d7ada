// The compile and answer stages of a query pipeline (./pipeline.ts plans it): the plan as ONE SQL
// statement — the sources joined into one flat row, filtered, projected or grouped, then one page
// plus the total — and the database's rows as the API's (typed as `/fetch` types a field).

import { Params, ident, qualified } from '../../db/sql.ts';
import { compileCriteria, compileSort } from '../../engine/criteria.ts';
import { outputValue as typedOutput } from '../../engine/context.ts';
import { outputFields, valueSql, type Output, type OutputColumn, type Plan } from './pipeline.ts';

export interface CompiledQuery {
  readonly sql: string;
  readonly params: readonly unknown[];
}

/** The ORDER BY of the page: the client's sort, then columns that make every row unique. */
function orderBy(plan: Plan, alias: string): string {
  const fields = outputFields(plan.outputs);
  if (plan.grouped) {
    const groups = plan.groupExprs.length;
    const [first, ...rest] = groups > 0 ? plan.outputs.slice(0, groups).map((_, i) => `r${i}`) : ['r0'];
    // Groups in the order of their values, NULL lowest (as a sort by them puts it).
    return [
      compileSort(plan.sortBy, fields, alias, first, undefined, true),
      ...rest.map((c) => `${qualified(alias, c)} ASC NULLS FIRST`),
    ].join(', ');
  }
  const keys = plan.sources.map((_, i) => `k${i}`);
  return [
    compileSort(plan.sortBy, fields, alias, keys[0]),
    ...keys.slice(1).map((k) => `${qualified(alias, k)} ASC NULLS FIRST`),
  ].join(', ');
}

export function compileQuery(plan: Plan): CompiledQuery {
  const p = new Params();
  const flatCols = [...plan.flat.values()].map(
    (f) => `${qualified(`s${f.source}`, f.original.column)} AS ${ident(f.spec.column)}`,
  );
  const keyCols = plan.sources.map((_, i) => `${qualified(`s${i}`, 'id')} AS ${ident(`k${i}`)}`);
  const joins = plan.joins.map((j, i) => {
    const alias = `s${i + 1}`;
    const on = j.on.map(
      ([left, right]) => `${valueSql(left.original, `s${left.source}`)} = ${valueSql(right, alias)}`,
    );
    const table = ident(plan.sources[i + 1]!.tc.type.table);
    return `${j.left ? 'LEFT JOIN' : 'JOIN'} ${table} ${ident(alias)} ON ${plan.sources[i + 1]!.scope(p, alias)} AND ${on.join(' AND ')}`;
  });
  const inner =
    `SELECT ${[...flatCols, ...keyCols].join(', ')} FROM ${ident(plan.sources[0]!.tc.type.table)} "s0" ` +
    `${joins.join(' ')} WHERE ${plan.sources[0]!.scope(p, 's0')}`;
  const outs = plan.outputs.map((o, i) => `${o.expr} AS ${ident(`r${i}`)}`);
  const keys = plan.grouped
    ? []
    : plan.sources.map((_, i) => `${qualified('q', `k${i}`)} AS ${ident(`k${i}`)}`);
  const where = plan.filter === undefined ? 'TRUE' : compileCriteria(plan.filter, p, 'q');
  const group = plan.groupExprs.length > 0 ? ` GROUP BY ${plan.groupExprs.join(', ')}` : '';
  const projected = `SELECT ${[...outs, ...keys].join(', ')} FROM (${inner}) "q" WHERE ${where}${group}`;
  const having = plan.having === undefined ? 'TRUE' : compileCriteria(plan.having, p, 'p');
  const limit = p.add(plan.end - plan.start);
  const offset = p.add(plan.start);
  // The page's values as answered; the ORDER BY reads the typed ones ("r"."rN" names the column).
  const answered = plan.outputs.map((o, i) => {
    const col = qualified('r', `r${i}`);
    return `${o.utcText === true ? utcTextSql(col) : col} AS ${ident(`r${i}`)}`;
  });
  const sql =
    `WITH "g" AS (SELECT * FROM (${projected}) "p" WHERE ${having}) ` +
    `SELECT ${['"c"."n" AS "__total"', '"r"."__row"', ...answered].join(', ')} ` +
    `FROM (SELECT count(*)::int AS "n" FROM "g") "c" ` +
    `LEFT JOIN LATERAL (SELECT "g".*, true AS "__row" FROM "g" ORDER BY ${orderBy(plan, 'g')} ` +
    `LIMIT ${limit}::bigint OFFSET ${offset}::bigint) "r" ON true ORDER BY ${orderBy(plan, 'r')}`;
  return { sql, params: p.values };
}

/**
 * A timestamptz as the text a DATETIME attribute holds when written in UTC: `2024-01-15T10:00:00Z`,
 * a fraction only when it has one, without its trailing zeros (`…:00.5Z`, as `…:00.500000` is not
 * written). Microseconds kept: a JavaScript Date would drop them.
 */
function utcTextSql(expr: string): string {
  return `(regexp_replace(to_char(${expr} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '\\.?0+$', '') || 'Z')`;
}

/** A value as the API answers it: typed as `/fetch` types a field (numbers exact, else their text). */
function outputValue(o: Output, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  // As /fetch writes it (context.ts typedIdSql): the id, a dot, the type code.
  if (o.typedId !== undefined) return `${v as number | string}.${o.typedId.of}`;
  return typeof v === 'string' && o.asText !== true ? typedOutput(o.type, v) : v;
}

export interface QueryRows {
  readonly rows: unknown[];
  readonly totalRows: number;
}

/** The database's answer as the API's rows: objects by output name, or arrays of `valueFields`. */
export function toRows(plan: Plan, rows: readonly Record<string, unknown>[]): QueryRows {
  const totalRows = Number(rows[0]?.__total ?? 0);
  const index = new Map(plan.outputs.map((o, i) => [o.name, i]));
  const out = rows
    .filter((r) => r.__row === true)
    .map((r) => {
      const values = plan.outputs.map((o, i) => outputValue(o, r[`r${i}`]));
      if (plan.valueFields) return plan.valueFields.map((n) => values[index.get(n)!]);
      return Object.fromEntries(plan.outputs.map((o, i) => [o.name, values[i]]));
    });
  return { rows: out, totalRows };
}

/** The result columns of a plan, without running it: those of `valueFields`, in their order, when given. */
export function resultColumns(plan: Plan): OutputColumn[] {
  const outputs = plan.valueFields
    ? plan.valueFields.map((n) => plan.outputs.find((o) => o.name === n)!)
    : plan.outputs;
  return outputs.map((o) => ({
    name: o.name,
    type: o.type,
    ...(o.field === undefined ? {} : { field: o.field }),
    ...(o.aggregate === undefined ? {} : { aggregate: o.aggregate }),
  }));
}
