// `distinctResults`: the distinct values of the selected fields, paged and counted. A typed value
// kept as text is compared by its value and answered as stored; the order always ends with every
// selected column, so that pages never overlap or skip.

import { ident, qualified } from '../db/sql.ts';
import { validationError } from '../http/errors.ts';
import { compileSort } from './criteria.ts';
import { selectList, type TypeContext } from './context.ts';

/**
 * A typed value kept as text (a custom attribute typed by its meta) as the one text of its value:
 * `10.50` and `10.5`, `2024-01-15T11:00:00+01:00` and `2024-01-15T10:00:00.000Z`, `TRUE` and `true`
 * are one value each (NULL for text that is no such value, which is then compared as it is).
 */
const CANONICAL_TEXT: Partial<Record<string, (col: string) => string>> = {
  decimal: (col) => `trim_scale(rc_try_numeric(${col}))::text`,
  integer: (col) => `trim_scale(rc_try_numeric(${col}))::text`,
  datetime: (col) =>
    `to_char(rc_try_timestamptz(${col}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
  date: (col) => `to_char(rc_try_date(${col}), 'YYYY-MM-DD')`,
  boolean: (col) => `rc_try_boolean(${col})::text`,
};

/**
 * The inner query of a distinct fetch: the stored columns behind the requested fields (typedId is
 * the id), under their own names. A typed value kept as text is compared by its value
 * (CANONICAL_TEXT) but answered as stored: of the texts of one value ("1e400", "1E+400") the first
 * in text order, never the canonical spelling (401 digits for 1e400).
 */
export function distinctFrom(
  tc: TypeContext,
  names: readonly string[],
  from: string,
  countOnly = false,
): string {
  const fields = new Map(
    names.map((n) => {
      const f = n === 'typedId' ? undefined : tc.fields.get(n)!;
      return [f?.column ?? 'id', f] as const;
    }),
  );
  const keys: string[] = [];
  const columns: string[] = [];
  let canonical = false;
  for (const [c, f] of fields) {
    const col = qualified('t', c);
    // A field read through an expression (readSql) is that expression, under its column's name.
    if (f?.readSql !== undefined) {
      keys.push(f.readSql('t'));
      columns.push(`${f.readSql('t')} AS ${ident(c)}`);
      continue;
    }
    const value = f?.storedAsText && f.jsonKey === undefined ? CANONICAL_TEXT[f.type]?.(col) : undefined;
    canonical ||= value !== undefined;
    keys.push(value === undefined ? col : `coalesce(${value}, ${col})`);
    columns.push(col);
  }
  if (countOnly) return `SELECT DISTINCT ${keys.join(', ')} FROM ${from}`;
  if (!canonical) return `SELECT DISTINCT ${columns.join(', ')} FROM ${from}`;
  return `SELECT DISTINCT ON (${keys.join(', ')}) ${columns.join(', ')} FROM ${from}
           ORDER BY ${[...keys, ...columns].join(', ')}`;
}

/**
 * DISTINCT rows carry no id of their own: the distinct columns come from an inner query, the API
 * names from the outer one, and the order defaults to the selected fields (which identify a row).
 */
export function distinctSql(
  tc: TypeContext,
  names: readonly string[],
  sortBy: unknown,
  from: string,
  limit: string,
  offset: string,
  total: string,
): string {
  // By default the selected fields but JSON ones, which sort by no rule of the API; they follow in
  // the order of their stored value, so that equal pages never overlap.
  const sortable = names.filter((n) => n !== 'typedId' && tc.fields.get(n)!.type !== 'json');
  const json = names.flatMap((n) => {
    const f = n === 'typedId' ? undefined : tc.fields.get(n)!;
    return f?.type === 'json' ? [`${qualified('d', f.column)} ASC`] : [];
  });
  const requested =
    sortBy === undefined || sortBy === null ? sortable : Array.isArray(sortBy) ? sortBy : [sortBy];
  for (const s of requested) {
    if (typeof s !== 'string' || !names.includes(s.replace(/^-/, ''))) {
      throw validationError(
        'sortBy',
        `with distinctResults, sort only by the selected fields (${JSON.stringify(s)})`,
      );
    }
  }
  const first = names[0] === 'typedId' ? 'id' : tc.fields.get(names[0]!)!.column;
  // The inner query answered the expression of a readSql field already: the outer query reads
  // (and sorts by) its column.
  const read = (n: string) => (n === 'typedId' ? undefined : tc.fields.get(n)!.readSql);
  const outer = names.some((n) => read(n) !== undefined)
    ? new Map([...tc.fields].map(([n, f]) => [n, f.readSql === undefined ? f : { ...f, readSql: undefined }]))
    : tc.fields;
  // Then every selected column as stored (distinct rows differ in one): ties of the requested sort
  // (`sortBy` on some of the fields, or values that sort alike) were ordered anyhow, each page its
  // own way, so that pages overlapped and skipped rows.
  const stored = [...new Set(names.map((n) => (n === 'typedId' ? 'id' : tc.fields.get(n)!.column)))].map(
    (c) => `${qualified('d', c)} ASC`,
  );
  const order = [compileSort(requested, outer, 'd', first), ...json, ...stored].join(', ');
  const select = names
    .map((n) =>
      read(n) === undefined
        ? selectList(tc, [n], 'd')
        : `${qualified('d', tc.fields.get(n)!.column)} AS ${ident(n)}`,
    )
    .join(', ');
  return `SELECT ${select}, ${total}
            FROM (${distinctFrom(tc, names, from)}) d
           ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`;
}
