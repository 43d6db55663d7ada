// The two doors into SQL text: values go through `Params.add` (→ `$n`), identifiers through `ident`.
// Identifiers come only from the type registry or migrations, never from request input; `ident`
// still refuses anything that is not a plain lower-case name, so a registry mistake cannot inject.

export class Params {
  readonly values: unknown[] = [];
  /**
   * Set by a test whose good plan needs its value, not only its type: a `LIKE` anchored at the start
   * (an index range on its fixed prefix, derived while planning). A statement with one must be planned
   * per run (not prepared): PostgreSQL's generic plan for it filters the whole partition (9 ms a page
   * of `iStartsWith` on 100,000 labels, against 2 planned for its value).
   */
  planPerValue = false;
  /**
   * Prefixes compiled as index ranges with parameter bounds (criteria/compile.ts `prefixRange`): a
   * generic plan serves a page filtered by one alone; beside other conditions the page is planned per
   * run (fetch.ts `compileParts`), since the range's estimate is a guess that could pick its index
   * over a better one of the other condition.
   */
  prefixRanges = 0;

  /** Adds a value and answers its placeholder. */
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

const IDENT = /^[a-z_][a-z0-9_]*$/;

export function ident(name: string): string {
  if (!IDENT.test(name)) throw new Error(`unsafe SQL identifier: ${JSON.stringify(name)}`);
  return `"${name}"`;
}

/** The FORMAT option of a COPY (a closed set: never text from a request). */
export function copyFormat(format: 'csv' | 'text'): string {
  if (format !== 'csv' && format !== 'text') throw new Error(`unknown COPY format ${String(format)}`);
  return format;
}

/**
 * A value as one field of COPY's text format: backslash, tab, newline and carriage return escaped;
 * NULL is `\N`.
 */
export function copyTextField(v: string | null): string {
  if (v === null) return '\\N';
  return /[\\\t\n\r]/.test(v)
    ? v.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'))
    : v;
}

/** A timestamptz expression as the JSON text of a JavaScript Date (`2026-01-31T12:00:00.000Z`). */
export function isoUtcSql(expr: string): string {
  return `to_char((${expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** `a.b` with both parts checked. */
export function qualified(alias: string, column: string): string {
  return `${ident(alias)}.${ident(column)}`;
}
