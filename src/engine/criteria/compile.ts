// Criteria stage 3, compile: ResolvedCriteria → an SQL boolean expression, every value through
// params.add (with an explicit cast), every column through ident. Also a field as a typed SQL
// expression (`typedColumn`, through the safe casts for typed values kept in text columns).

import { ident, qualified, type Params } from '../../db/sql.ts';
import { SQL_TYPE, type FieldSpec, type FieldType } from '../types.ts';
import type { Anchor, Comparison } from './operators.ts';
import { unreachable } from './parse.ts';
import type { ResolvedCriteria, ResolvedLeaf, ResolvedNode } from './resolve.ts';

// ---------------------------------------------------------------------------------------------
// Stage 3: compile. Every value goes through params.add, every column through ident.

interface Ctx {
  readonly params: Params;
  readonly alias: string | undefined;
  readonly strict: boolean;
}

export function compileCriteria(resolved: ResolvedCriteria, params: Params, alias?: string): string {
  return compileNode(resolved.root, { params, alias, strict: resolved.strict });
}

function compileNode(node: ResolvedNode, outer: Ctx): string {
  // A nested criteria's strictSQLFiltering holds for its subtree.
  const ctx = 'strict' in node && node.strict !== undefined ? { ...outer, strict: node.strict } : outer;
  switch (node.kind) {
    case 'and':
      return join(node.children, ' AND ', 'TRUE', ctx);
    case 'or':
      return join(node.children, ' OR ', 'FALSE', ctx);
    case 'not': {
      if (node.children.length === 0) return 'TRUE';
      // NOT over a NULL is NULL, which would hide rows that match none of the children; in
      // non-strict mode a NULL child therefore counts as false.
      const parts = node.children.map((c) =>
        ctx.strict ? compileNode(c, ctx) : `coalesce(${compileNode(c, ctx)}, false)`,
      );
      return `NOT (${parts.join(' OR ')})`;
    }
    case 'compare':
      return compileCompare(node, ctx);
    case 'like':
      return compileLike(node, ctx);
    case 'regexp': {
      const a = column(node.field, ctx.alias).sql;
      return `${a} ${node.ci ? '~*' : '~'} ${param(ctx, node.pattern, 'text')}`;
    }
    case 'set': {
      const a = column(node.field, ctx.alias);
      if (node.field.elements)
        return negated(`${a.sql} && ${param(ctx, node.values, 'text[]')}`, node.negate, ctx);
      // `= ANY($n)` rather than `IN (...)`: one parameter however long the list, the same statement
      // text for every length, and an empty list is simply false.
      const list = param(ctx, node.values, `${a.type}[]`);
      // Case-insensitive: `lower(col)`, the form the lower(col) indexes serve, against the values
      // lowered by the database too (JavaScript's lower case is not PostgreSQL's for every letter).
      const any = node.ci
        ? `lower(${a.sql}) = ANY(ARRAY(SELECT lower(v) FROM unnest(${list}) v))`
        : `${a.sql} = ANY(${list})`;
      // A null in the list: by default NULLs are members; in strict mode it is SQL's `IN (..., NULL)`,
      // true for a member only and unknown otherwise, so `notInSet` with a null matches nothing.
      const nulls = ctx.strict ? 'NULL' : isNullSql(a);
      return negated(node.withNull ? `(${any} OR ${nulls})` : any, node.negate, ctx);
    }
    case 'null': {
      const a = column(node.field, ctx.alias);
      // Only text can be empty: a text field's or the stored text of a typed attribute (a value
      // stored before its meta typed it that does not parse is neither null nor blank).
      const text = a.stored ?? (node.field.type === 'string' ? a.sql : undefined);
      if (node.blank && text !== undefined) {
        return node.negate ? `(${text} IS NOT NULL AND ${text} <> '')` : `(${isNullSql(a)} OR ${text} = '')`;
      }
      return node.negate ? `${a.stored ?? a.sql} IS NOT NULL` : isNullSql(a);
    }
    default:
      return unreachable(node);
  }
}

function join(children: readonly ResolvedNode[], op: string, empty: string, ctx: Ctx): string {
  const parts = children.map((c) => compileNode(c, ctx));
  if (parts.length <= 1) return parts[0] ?? empty;
  return `(${parts.join(op)})`;
}

/** Negation; outside strict mode a NULL test counts as "no match", so its negation matches
 * (`notEqual x` finds the NULLs, as do notInSet and the not-text operators). */
function negated(test: string, negate: boolean, ctx: Ctx): string {
  if (!negate) return test;
  return ctx.strict ? `NOT (${test})` : `NOT coalesce(${test}, false)`;
}

const SQL_CMP: Record<Comparison, string> = { eq: '=', lt: '<', le: '<=', gt: '>', ge: '>=' };

/** Outside strict mode NULL sorts lowest (and equals NULL): what a comparison adds for NULL sides.
 * `b` can only be NULL when it is a field; a value is never NULL here (resolve made it isNull). A
 * typed attribute's stored text that does not parse sorts with the NULLs (lowest) and compares so. */
const NULLS_LOW: Record<Comparison, (a: string, b: string, bNullable: boolean) => string | undefined> = {
  eq: (a, b, bn) => (bn ? `(${a} IS NULL AND ${b} IS NULL)` : undefined),
  lt: (a, b, bn) => (bn ? `(${a} IS NULL AND ${b} IS NOT NULL)` : `${a} IS NULL`),
  le: (a) => `${a} IS NULL`,
  gt: (a, b, bn) => (bn ? `(${a} IS NOT NULL AND ${b} IS NULL)` : undefined),
  ge: (_a, b, bn) => (bn ? `${b} IS NULL` : undefined),
};

/**
 * Whether a field is NULL: a typed attribute kept as text is when its stored text is, not when it
 * merely does not parse as its type (a value stored before its meta typed it: the record answers it,
 * so `isNull` must not find it, nor a delete by that filter remove it). The cast's own test comes
 * first, so an index on the cast still finds the candidates.
 */
function isNullSql(a: { readonly sql: string; readonly stored?: string }): string {
  return a.stored === undefined ? `${a.sql} IS NULL` : `(${a.sql} IS NULL AND ${a.stored} IS NULL)`;
}

function compileCompare(leaf: Extract<ResolvedLeaf, { kind: 'compare' }>, ctx: Ctx): string {
  const a = column(leaf.field, ctx.alias);
  if (leaf.field.elements) {
    // Resolve lets only `equals` / `notEqual` with a value through (see FieldSpec.elements).
    const v = 'value' in leaf.rhs ? leaf.rhs.value : null;
    return negated(`${param(ctx, v, 'text')} = ANY(${a.sql})`, leaf.negate, ctx);
  }
  const byField = 'other' in leaf.rhs;
  const b = 'other' in leaf.rhs ? column(leaf.rhs.other, ctx.alias).sql : param(ctx, leaf.rhs.value, a.type);
  const [l, r] = leaf.ci ? [`lower(${a.sql})`, `lower(${b})`] : [a.sql, b];
  const test = `${l} ${SQL_CMP[leaf.cmp]} ${r}`;
  const nulls = ctx.strict ? undefined : NULLS_LOW[leaf.cmp](a.sql, b, byField);
  return negated(nulls === undefined ? test : `(${test} OR ${nulls})`, leaf.negate, ctx);
}

const LIKE_AFFIXES: Record<Anchor, readonly [string, string]> = {
  whole: ['', ''],
  start: ['', '%'],
  end: ['%', ''],
  anywhere: ['%', '%'],
};

/** `%`, `_` and `\` match themselves (the pattern escapes them for `ESCAPE '\'`). */
const escapeLike = (s: string): string => s.replace(/[\\%_]/g, '\\$&');
/** `*` any run, `?` one character, everything else itself. */
const globToLike = (s: string): string =>
  s.replace(/[\\%_*?]/g, (c) => (c === '*' ? '%' : c === '?' ? '_' : `\\${c}`));

function compileLike(leaf: Extract<ResolvedLeaf, { kind: 'like' }>, ctx: Ctx): string {
  const a = column(leaf.field, ctx.alias).sql;
  const [pre, post] = LIKE_AFFIXES[leaf.anchor];
  const { rhs } = leaf;
  // Case-insensitive: `lower(col) LIKE lower(pattern)`, the form the lower(col) indexes serve
  // (text_pattern_ops for prefixes, trigrams for the rest); ILIKE would use neither. A case-sensitive
  // match on an indexed column adds the lower() test it implies (lower() maps character by character,
  // so `col LIKE p` ⇒ `lower(col) LIKE lower(p)`): the index finds candidates, LIKE decides. A plain
  // prefix value makes that lower() test a range (`prefixRange`).
  const usesLower = leaf.ci || leaf.field.searchIndexed === true;
  let range: string | undefined;
  if (!('other' in rhs)) {
    if (usesLower && leaf.anchor === 'start' && !rhs.glob && rangedPrefix(rhs.value)) {
      range = prefixRange(a, param(ctx, rhs.value, 'text'));
      ctx.params.prefixRanges++;
    } else if (pre === '') {
      ctx.params.planPerValue = true;
    }
  }
  if (range !== undefined && leaf.ci) return negated(range, leaf.negate, ctx);
  let pattern: string;
  if ('other' in rhs) {
    // The other field's text escaped in SQL, as escapeLike does for values.
    const b = column(rhs.other, ctx.alias).sql;
    const escaped = `replace(replace(replace(${b}, '\\', '\\\\'), '%', '\\%'), '_', '\\_')`;
    pattern = `(${[pre && `'${pre}'`, escaped, post && `'${post}'`].filter((s) => s !== '').join(' || ')})`;
  } else {
    pattern = param(ctx, pre + (rhs.glob ? globToLike(rhs.value) : escapeLike(rhs.value)) + post, 'text');
  }
  const lowered = range ?? `lower(${a}) LIKE lower(${pattern}) ESCAPE '\\'`;
  const exact = `${a} LIKE ${pattern} ESCAPE '\\'`;
  const test = leaf.ci ? lowered : usesLower ? `(${lowered} AND ${exact})` : exact;
  return negated(test, leaf.negate, ctx);
}

/**
 * Whether `lower(col)` starting with `lower(prefix)` compiles as a range (`prefixRange`): a prefix that
 * is not empty and ends in an ASCII character below DEL, whose successor `chr()` gives in every
 * database encoding (a prefix ending otherwise stays a `LIKE`, planned for its value).
 */
const rangedPrefix = (prefix: string): boolean =>
  prefix !== '' && prefix.charCodeAt(prefix.length - 1) < 0x7f;

/**
 * `lower(col)` starts with `lower(p)`, as the byte range [lower(p), lower(p) with its last character
 * incremented) — exactly the strings with that prefix, since the pattern operators (`~>=~`, `~<~`,
 * those of the text_pattern_ops indexes) compare bytes and that character is one byte. Unlike
 * `LIKE lower($n)`, whose pattern the planner must see to derive the range, these bounds are ones an
 * index scan takes from parameters: a prepared page keeps the prefix index in its generic plan.
 */
function prefixRange(col: string, p: string): string {
  const low = `lower(${p})`;
  const high = `(left(${low}, -1) || chr(ascii(right(${low}, 1)) + 1))`;
  return `(lower(${col}) ~>=~ ${low} AND lower(${col}) ~<~ ${high})`;
}

/** Parameters carry explicit casts, so PostgreSQL never guesses a type (or an operator). */
function param(ctx: Ctx, value: unknown, type: string): string {
  return `${ctx.params.add(value)}::${type}`;
}

/** The safe cast of a text column holding a typed value (see migration 002_safe_casts.sql). Integers go
 * through numeric so that a stored "10.0" is still ten. */
const SAFE_CAST: Record<FieldType, { readonly fn: string; readonly type: string } | undefined> = {
  string: undefined,
  json: undefined,
  integer: { fn: 'rc_try_numeric', type: 'numeric' },
  decimal: { fn: 'rc_try_numeric', type: 'numeric' },
  boolean: { fn: 'rc_try_boolean', type: 'boolean' },
  date: { fn: 'rc_try_date', type: 'date' },
  datetime: { fn: 'rc_try_timestamptz', type: 'timestamptz' },
};

/**
 * A field as a typed SQL expression (a typed custom attribute through its safe cast), for modules
 * that compose SQL over registry fields themselves (the query API's joins, groups and aggregates).
 * Without an alias: the expression an index must have to serve the compiled criteria.
 */
export function typedColumn(
  field: FieldSpec,
  alias: string | undefined,
): { readonly sql: string; readonly type: string } {
  return column(field, alias);
}

/** A key of a jsonb map as an SQL literal; only plain names (logic element names) are accepted. */
export function jsonKeyLiteral(key: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,99}$/.test(key)) throw new Error(`bad json key ${JSON.stringify(key)}`);
  return `'${key}'`;
}

/** A field as a typed SQL expression, with the SQL type its parameters are cast to. */
function column(
  field: FieldSpec,
  alias: string | undefined,
): { readonly sql: string; readonly type: string; readonly stored?: string } {
  if (field.elements && field.readSql !== undefined && alias !== undefined)
    return { sql: field.readSql(alias), type: 'text' };
  const col = alias === undefined ? ident(field.column) : qualified(alias, field.column);
  if (field.jsonKey !== undefined) {
    const key = jsonKeyLiteral(field.jsonKey);
    const text = `(${col} ->> ${key})`;
    const v = `(${col} -> ${key})`;
    // JSON numbers and booleans convert directly (inline, ~5× cheaper than the plpgsql safe cast);
    // anything else of another JSON type is NULL, a number kept as text goes through the safe cast.
    if (field.type === 'decimal' || field.type === 'integer')
      return {
        sql: `(CASE jsonb_typeof(${v}) WHEN 'number' THEN ${v}::numeric WHEN 'string' THEN rc_try_numeric(${text}) END)`,
        type: 'numeric',
        stored: text,
      };
    if (field.type === 'boolean')
      return {
        sql: `(CASE jsonb_typeof(${v}) WHEN 'boolean' THEN ${v}::boolean END)`,
        type: 'boolean',
        stored: text,
      };
    const typed = SAFE_CAST[field.type];
    return typed
      ? { sql: `${typed.fn}(${text})`, type: typed.type, stored: text }
      : { sql: text, type: 'text' };
  }
  const cast = field.storedAsText ? SAFE_CAST[field.type] : undefined;
  return cast
    ? { sql: `${cast.fn}(${col})`, type: cast.type, stored: col }
    : { sql: col, type: SQL_TYPE[field.type] };
}

// ---------------------------------------------------------------------------------------------
// Safe casts for typed values kept in text columns (custom attributes). A stored value that does
// not parse is NULL, never an error that would fail the whole query. A regular expression screens
// the obvious non-values first, so the exception block (a subtransaction) runs only for candidates
// such as 2024-02-30 or 1e999999. Only ISO forms are read, which keeps each function's result
// independent of DateStyle and TimeZone, so IMMUTABLE is honest; a date-time without an offset is
// UTC, as in toDatetime above. Runs on PostgreSQL 15+ and PGlite; migration 002_safe_casts.sql creates them.
