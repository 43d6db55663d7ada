// The criteria compiler. A filter travels parseCriteria (JSON → CriteriaTree) → resolveCriteria
// (tree + the type's fields → ResolvedCriteria: every field bound, every value typed, every operator
// checked against the field's type) → compileCriteria (→ SQL boolean expression, values in Params).
// compileSort turns `sortBy` into ORDER BY terms. Nothing here touches HTTP or the database.

import { AppError, validationError } from '../http/errors.ts';
import { ident, qualified, type Params } from '../db/sql.ts';
import type { FieldSpec, FieldType } from './types.ts';
import { EXPECTED, coerceValue, type Value } from './values.ts';

/** Nesting levels and leaf count a filter may have; beyond them a -4, never a deep recursion. */
export const MAX_CRITERIA_DEPTH = 32;
export const MAX_CRITERIA = 1000;

// ---------------------------------------------------------------------------------------------
// Operators: one table. Each operator is a base test plus flags, so the i-, not- and …Field forms
// are derived rather than written out again; resolve and compile dispatch on the test's `kind`.

type Comparison = 'eq' | 'lt' | 'le' | 'gt' | 'ge';
type Anchor = 'whole' | 'start' | 'end' | 'anywhere';

type Test =
  | { readonly kind: 'compare'; readonly cmp: Comparison }
  | { readonly kind: 'range'; readonly inclusive: boolean }
  | { readonly kind: 'like'; readonly anchor: Anchor; readonly glob: boolean }
  | { readonly kind: 'regexp' }
  | { readonly kind: 'set' }
  | { readonly kind: 'null'; readonly blank: boolean };

interface OperatorDef {
  readonly test: Test;
  /** i-forms: case-insensitive, text fields only. */
  readonly ci: boolean;
  /** not-forms: the negation, which matches NULLs unless strict. */
  readonly negate: boolean;
  /** …Field forms: `value` names another field of the same record. */
  readonly field: boolean;
}

type Flag = 'i' | 'not' | 'field';
const op = (test: Test, ...flags: Flag[]): OperatorDef => ({
  test,
  ci: flags.includes('i'),
  negate: flags.includes('not'),
  field: flags.includes('field'),
});
const EQ: Test = { kind: 'compare', cmp: 'eq' };
const LT: Test = { kind: 'compare', cmp: 'lt' };
const LE: Test = { kind: 'compare', cmp: 'le' };
const GT: Test = { kind: 'compare', cmp: 'gt' };
const GE: Test = { kind: 'compare', cmp: 'ge' };
const BETWEEN: Test = { kind: 'range', inclusive: false };
const BETWEEN_INCL: Test = { kind: 'range', inclusive: true };
const like = (anchor: Anchor, glob = false): Test => ({ kind: 'like', anchor, glob });
const CONTAINS = like('anywhere');
const STARTS = like('start');
const ENDS = like('end');

const OPERATORS = {
  equals: op(EQ),
  notEqual: op(EQ, 'not'),
  iEquals: op(EQ, 'i'),
  iNotEqual: op(EQ, 'i', 'not'),
  greaterThan: op(GT),
  lessThan: op(LT),
  greaterOrEqual: op(GE),
  lessOrEqual: op(LE),
  between: op(BETWEEN),
  betweenInclusive: op(BETWEEN_INCL),
  iBetween: op(BETWEEN, 'i'),
  iBetweenInclusive: op(BETWEEN_INCL, 'i'),
  contains: op(CONTAINS),
  startsWith: op(STARTS),
  endsWith: op(ENDS),
  iContains: op(CONTAINS, 'i'),
  iStartsWith: op(STARTS, 'i'),
  iEndsWith: op(ENDS, 'i'),
  notContains: op(CONTAINS, 'not'),
  notStartsWith: op(STARTS, 'not'),
  notEndsWith: op(ENDS, 'not'),
  iNotContains: op(CONTAINS, 'i', 'not'),
  iNotStartsWith: op(STARTS, 'i', 'not'),
  iNotEndsWith: op(ENDS, 'i', 'not'),
  matchesPattern: op(like('whole', true)),
  containsPattern: op(like('anywhere', true)),
  startsWithPattern: op(like('start', true)),
  endsWithPattern: op(like('end', true)),
  iMatchesPattern: op(like('whole', true), 'i'),
  iContainsPattern: op(like('anywhere', true), 'i'),
  iStartsWithPattern: op(like('start', true), 'i'),
  iEndsWithPattern: op(like('end', true), 'i'),
  regexp: op({ kind: 'regexp' }),
  iregexp: op({ kind: 'regexp' }, 'i'),
  isNull: op({ kind: 'null', blank: false }),
  notNull: op({ kind: 'null', blank: false }, 'not'),
  isBlank: op({ kind: 'null', blank: true }),
  notBlank: op({ kind: 'null', blank: true }, 'not'),
  inSet: op({ kind: 'set' }),
  notInSet: op({ kind: 'set' }, 'not'),
  equalsField: op(EQ, 'field'),
  notEqualField: op(EQ, 'field', 'not'),
  iEqualsField: op(EQ, 'field', 'i'),
  iNotEqualField: op(EQ, 'field', 'i', 'not'),
  greaterThanField: op(GT, 'field'),
  lessThanField: op(LT, 'field'),
  greaterOrEqualField: op(GE, 'field'),
  lessOrEqualField: op(LE, 'field'),
  containsField: op(CONTAINS, 'field'),
  startsWithField: op(STARTS, 'field'),
  endsWithField: op(ENDS, 'field'),
  iContainsField: op(CONTAINS, 'field', 'i'),
  iStartsWithField: op(STARTS, 'field', 'i'),
  iEndsWithField: op(ENDS, 'field', 'i'),
  notContainsField: op(CONTAINS, 'field', 'not'),
  notStartsWithField: op(STARTS, 'field', 'not'),
  notEndsWithField: op(ENDS, 'field', 'not'),
  iNotContainsField: op(CONTAINS, 'field', 'i', 'not'),
  iNotStartsWithField: op(STARTS, 'field', 'i', 'not'),
  iNotEndsWithField: op(ENDS, 'field', 'i', 'not'),
} as const satisfies Record<string, OperatorDef>;

export type Operator = keyof typeof OPERATORS;
export const OPERATOR_NAMES: readonly Operator[] = Object.keys(OPERATORS) as Operator[];

const isOperator = (name: string): name is Operator => Object.hasOwn(OPERATORS, name);

// ---------------------------------------------------------------------------------------------
// Stage 1: parse. Checks the shape only; field names and values stay as given until resolve.

export type LogicalOperator = 'and' | 'or' | 'not';
export type TextMatchStyle = 'exact' | 'exactCase' | 'substring' | 'startsWith';
export type Scalar = string | number | boolean | null;

export type CriteriaNode =
  | { readonly kind: LogicalOperator; readonly children: readonly CriteriaNode[] }
  | LeafNode
  /** One key of simple criteria: equality (or a text match) against any of `values`. */
  | {
      readonly kind: 'match';
      readonly fieldName: string;
      readonly values: readonly Scalar[];
      readonly style: TextMatchStyle;
    };

export interface LeafNode {
  readonly kind: 'leaf';
  readonly fieldName: string;
  readonly operator: Operator;
  readonly value: unknown;
  readonly start: unknown;
  readonly end: unknown;
}

export interface CriteriaTree {
  /** strictSQLFiltering of the top-level criteria, inherited by every node. */
  readonly strict: boolean;
  readonly root: CriteriaNode;
}

type Obj = Readonly<Record<string, unknown>>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isArray = (v: unknown): v is readonly unknown[] => Array.isArray(v);
const isMissing = (v: unknown): v is null | undefined => v === null || v === undefined;
const isScalar = (v: unknown): v is Scalar =>
  v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** A value quoted for a message, cut short so a hostile input cannot bloat the response. */
function show(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

const TEXT_MATCH_STYLES: readonly TextMatchStyle[] = ['exact', 'exactCase', 'substring', 'startsWith'];
const isTextMatchStyle = (s: string): s is TextMatchStyle =>
  (TEXT_MATCH_STYLES as readonly string[]).includes(s);
const MATCH_ALL: CriteriaNode = { kind: 'and', children: [] };

export function parseCriteria(input: unknown, opts: { readonly textMatchStyle?: string } = {}): CriteriaTree {
  const style = opts.textMatchStyle ?? 'exact';
  if (!isTextMatchStyle(style)) {
    throw validationError('textMatchStyle', `must be one of ${TEXT_MATCH_STYLES.join(', ')}`);
  }
  if (isMissing(input)) return { strict: false, root: MATCH_ALL };
  if (!isObject(input)) throw validationError('criteria', 'criteria must be an object');
  const budget = { nodes: 0 };
  // Simple criteria are `{field: value}`; anything that looks like a criterion is advanced, so a
  // malformed advanced filter is reported instead of being read as fields called "operator" etc.
  const advanced =
    Object.hasOwn(input, '_constructor') ||
    Object.hasOwn(input, 'criteria') ||
    (Object.hasOwn(input, 'fieldName') && Object.hasOwn(input, 'operator'));
  if (!advanced) return { strict: false, root: parseSimple(input, style, budget) };
  const strict = input.strictSQLFiltering ?? false;
  if (typeof strict !== 'boolean') throw validationError('strictSQLFiltering', 'must be true or false');
  return { strict, root: parseNode(input, 1, budget) };
}

function countNode(budget: { nodes: number }): void {
  if (++budget.nodes > MAX_CRITERIA) {
    throw validationError('criteria', `too many criteria (at most ${MAX_CRITERIA})`);
  }
}

function parseNode(obj: Obj, depth: number, budget: { nodes: number }): CriteriaNode {
  if (depth > MAX_CRITERIA_DEPTH) {
    throw validationError('criteria', `criteria nested too deeply (at most ${MAX_CRITERIA_DEPTH} levels)`);
  }
  countNode(budget);
  if (Object.hasOwn(obj, '_constructor') && obj._constructor !== 'AdvancedCriteria') {
    throw validationError('criteria', `unknown _constructor ${show(obj._constructor)}`);
  }
  if (!Object.hasOwn(obj, 'criteria')) return parseLeaf(obj);
  const { operator, criteria } = obj;
  if (operator !== 'and' && operator !== 'or' && operator !== 'not') {
    throw validationError('criteria', `unknown logical operator ${show(operator)} (use and, or, not)`);
  }
  if (!isArray(criteria)) throw validationError('criteria', '"criteria" must be an array');
  const children = criteria.map((child) => {
    if (!isObject(child)) throw validationError('criteria', 'each criterion must be an object');
    return parseNode(child, depth + 1, budget);
  });
  return { kind: operator, children };
}

function parseLeaf(obj: Obj): LeafNode {
  const { fieldName, operator } = obj;
  if (typeof fieldName !== 'string' || fieldName === '') {
    throw validationError('criteria', 'a criterion needs a "fieldName", or "criteria" for a group');
  }
  if (typeof operator !== 'string') throw validationError(fieldName, '"operator" must be a string');
  if (!isOperator(operator)) throw validationError(fieldName, `unknown operator ${show(operator)}`);
  return { kind: 'leaf', fieldName, operator, value: obj.value, start: obj.start, end: obj.end };
}

function parseSimple(obj: Obj, style: TextMatchStyle, budget: { nodes: number }): CriteriaNode {
  const children = Object.entries(obj).map(([fieldName, value]): CriteriaNode => {
    countNode(budget);
    const values = isArray(value) ? value : [value];
    if (!values.every(isScalar)) {
      throw validationError(fieldName, 'a value must be text, a number, a boolean, null or an array of them');
    }
    return { kind: 'match', fieldName, values, style };
  });
  return { kind: 'and', children };
}

// ---------------------------------------------------------------------------------------------
// Stage 2: resolve. Binds fields, checks operators against field types, coerces values.

/** A value typed for its field: integers as numbers (or decimal strings past 2^53), decimals as
 * strings, dates as YYYY-MM-DD, date-times as ISO 8601 strings, booleans as booleans. */
export type { Value };

export type ResolvedLeaf =
  | {
      readonly kind: 'compare';
      readonly field: FieldSpec;
      readonly cmp: Comparison;
      readonly ci: boolean;
      readonly negate: boolean;
      readonly rhs: { readonly value: Value } | { readonly other: FieldSpec };
    }
  | {
      readonly kind: 'like';
      readonly field: FieldSpec;
      readonly anchor: Anchor;
      readonly ci: boolean;
      readonly negate: boolean;
      readonly rhs: { readonly value: string; readonly glob: boolean } | { readonly other: FieldSpec };
    }
  | { readonly kind: 'regexp'; readonly field: FieldSpec; readonly ci: boolean; readonly pattern: string }
  | {
      readonly kind: 'set';
      readonly field: FieldSpec;
      readonly negate: boolean;
      readonly values: readonly Value[];
      /** The list held null: NULLs are members too. */
      readonly withNull: boolean;
    }
  | { readonly kind: 'null'; readonly field: FieldSpec; readonly blank: boolean; readonly negate: boolean };

export type ResolvedNode =
  { readonly kind: LogicalOperator; readonly children: readonly ResolvedNode[] } | ResolvedLeaf;

declare const resolvedBrand: unique symbol;

/** Only resolveCriteria makes these (the brand), so compileCriteria never sees an unchecked field. */
export interface ResolvedCriteria {
  readonly [resolvedBrand]: true;
  readonly strict: boolean;
  readonly root: ResolvedNode;
}

export interface DroppedCriterion {
  readonly field: string;
  readonly message: string;
}

/** `dropped` lists the leaves left out in lenient mode; it is always empty in strict mode. */
export interface Resolution {
  readonly criteria: ResolvedCriteria;
  readonly dropped: readonly DroppedCriterion[];
}

export function resolveCriteria(
  tree: CriteriaTree,
  fields: ReadonlyMap<string, FieldSpec>,
  opts: { readonly lenient?: boolean } = {},
): Resolution {
  const dropped: DroppedCriterion[] = [];
  let leaves = 0;
  // Every leaf and simple-criteria key passes here: in lenient mode its validation error becomes a drop.
  const leaf = (fieldName: string, build: () => ResolvedNode): ResolvedNode[] => {
    try {
      return [build()];
    } catch (err) {
      // Past the limit the error is the limit itself, which no lenience may swallow.
      if (!opts.lenient || leaves > MAX_CRITERIA || !(err instanceof AppError) || err.code !== 'VALIDATION') {
        throw err;
      }
      const [message = err.message] = Object.values(err.errors ?? {}).map((e) => e.errorMessage);
      dropped.push({ field: fieldName, message });
      return [];
    }
  };
  const resolveOne = (node: LeafNode): ResolvedNode => {
    if (++leaves > MAX_CRITERIA) {
      throw validationError('criteria', `too many criteria (at most ${MAX_CRITERIA})`);
    }
    return resolveLeaf(node, fields);
  };
  const visit = (node: CriteriaNode): ResolvedNode[] => {
    switch (node.kind) {
      case 'and':
      case 'or':
      case 'not':
        return [{ kind: node.kind, children: node.children.flatMap(visit) }];
      case 'leaf':
        return leaf(node.fieldName, () => resolveOne(node));
      case 'match':
        return leaf(node.fieldName, () => {
          const expanded = expandMatch(node, lookup(fields, node.fieldName).type);
          return expanded.kind === 'leaf'
            ? resolveOne(expanded)
            : { kind: 'or', children: expanded.children.map(resolveOne) };
        });
      default:
        return unreachable(node);
    }
  };
  const [root = MATCH_ALL_RESOLVED] = visit(tree.root);
  return { criteria: { strict: tree.strict, root } as ResolvedCriteria, dropped };
}

const MATCH_ALL_RESOLVED: ResolvedNode = { kind: 'and', children: [] };

const STYLE_OPERATOR: Record<TextMatchStyle, Operator> = {
  exact: 'iEquals',
  exactCase: 'equals',
  substring: 'iContains',
  startsWith: 'iStartsWith',
};

/** Simple criteria as ordinary leaves: text fields compare by the textMatchStyle, others by equality.
 * A list means "any of": inSet, or an `or` of text matches, which have no set form. */
function expandMatch(
  node: Extract<CriteriaNode, { kind: 'match' }>,
  type: FieldType,
): LeafNode | { readonly kind: 'or'; readonly children: readonly LeafNode[] } {
  const style = type === 'string' ? node.style : 'exactCase';
  const leafOf = (operator: Operator, value: unknown): LeafNode => ({
    kind: 'leaf',
    fieldName: node.fieldName,
    operator,
    value,
    start: undefined,
    end: undefined,
  });
  if (style === 'exactCase' && node.values.length !== 1) return leafOf('inSet', node.values);
  // null asks for the NULLs whatever the style (`equals null`)
  const leaves = node.values.map((v) => leafOf(v === null ? 'equals' : STYLE_OPERATOR[style], v));
  return leaves.length === 1 && leaves[0] ? leaves[0] : { kind: 'or', children: leaves };
}

const ORDERED: ReadonlySet<FieldType> = new Set(['string', 'integer', 'decimal', 'date', 'datetime']);
const EQUATABLE: ReadonlySet<FieldType> = new Set([...ORDERED, 'boolean']);
const TEXT: ReadonlySet<FieldType> = new Set(['string']);
const ANY_TYPE: ReadonlySet<FieldType> = new Set([...EQUATABLE, 'json']);

function allowedTypes(test: Test): ReadonlySet<FieldType> {
  switch (test.kind) {
    case 'compare':
      return test.cmp === 'eq' ? EQUATABLE : ORDERED;
    case 'range':
      return ORDERED;
    case 'like':
    case 'regexp':
      return TEXT;
    case 'set':
      return EQUATABLE;
    case 'null':
      return ANY_TYPE;
    default:
      return unreachable(test);
  }
}

/** Fields compare with fields of the same family: integers with decimals, otherwise the same type. */
const family = (type: FieldType): string => (type === 'integer' ? 'decimal' : type);

function resolveLeaf(node: LeafNode, fields: ReadonlyMap<string, FieldSpec>): ResolvedNode {
  const { fieldName: name, operator } = node;
  const { test, ci, negate, field: byField } = OPERATORS[operator];
  const field = lookup(fields, name);
  if (
    field.elements &&
    (ci || byField || (test.kind !== 'set' && !(test.kind === 'compare' && test.cmp === 'eq')))
  ) {
    throw validationError(name, `operator "${operator}" does not apply to ${name}: use equals or inSet`);
  }
  if (!allowedTypes(test).has(field.type) || (ci && field.type !== 'string')) {
    throw validationError(name, `operator "${operator}" does not apply to ${field.type} fields`);
  }
  const value = (v: unknown): Value => coerce(name, field, v);
  const required = (v: unknown): Value => {
    if (isMissing(v)) throw validationError(name, `operator "${operator}" needs a value`);
    return value(v);
  };
  // …Field operators: the error names this criterion's field, whatever is wrong with the other.
  const other = (): FieldSpec => {
    const found = typeof node.value === 'string' ? fields.get(node.value) : undefined;
    if (!found)
      throw validationError(
        name,
        `operator "${operator}" needs another field's name, not ${show(node.value)}`,
      );
    if (family(found.type) !== family(field.type)) {
      throw validationError(name, `cannot compare with the ${found.type} field ${show(found.name)}`);
    }
    return found;
  };
  switch (test.kind) {
    case 'null':
      return { kind: 'null', field, blank: test.blank, negate };
    case 'compare':
      if (byField) return { kind: 'compare', field, cmp: test.cmp, ci, negate, rhs: { other: other() } };
      // `equals null` asks for the NULLs, `notEqual null` for the rest, in strict mode too: a test
      // that can never match would be of no use.
      if (test.cmp === 'eq' && isMissing(node.value)) return { kind: 'null', field, blank: false, negate };
      return { kind: 'compare', field, cmp: test.cmp, ci, negate, rhs: { value: required(node.value) } };
    case 'range': {
      // A range is its two comparisons; a missing bound is not checked, so no bound at all is TRUE.
      const bound = (cmp: Comparison, v: unknown): ResolvedNode[] =>
        isMissing(v) ? [] : [{ kind: 'compare', field, cmp, ci, negate: false, rhs: { value: value(v) } }];
      const low = test.inclusive ? 'ge' : 'gt';
      const high = test.inclusive ? 'le' : 'lt';
      return { kind: 'and', children: [...bound(low, node.start), ...bound(high, node.end)] };
    }
    case 'like': {
      const { anchor, glob } = test;
      const rhs = byField ? { other: other() } : { value: String(required(node.value)), glob };
      return { kind: 'like', field, anchor, ci, negate, rhs };
    }
    case 'regexp': {
      const pattern = String(required(node.value));
      checkRegexp(name, pattern);
      return { kind: 'regexp', field, ci, pattern };
    }
    case 'set': {
      if (!isArray(node.value)) throw validationError(name, `operator "${operator}" needs an array value`);
      const present = node.value.filter((v) => !isMissing(v));
      return {
        kind: 'set',
        field,
        negate,
        values: present.map(value),
        withNull: present.length < node.value.length,
      };
    }
    default:
      return unreachable(test);
  }
}

function lookup(fields: ReadonlyMap<string, FieldSpec>, name: string): FieldSpec {
  const field = fields.get(name);
  if (!field) throw validationError(name, `unknown field ${show(name)}`);
  return field;
}

/** PostgreSQL's regular expressions are not JavaScript's, but most mistakes (an unclosed group, a
 * dangling quantifier) are mistakes in both; checking here turns them into a -4 instead of a 500.
 * A leading embedded-options group such as `(?i)` is PostgreSQL-only, so it is set aside first. */
function checkRegexp(name: string, pattern: string): void {
  try {
    new RegExp(pattern.replace(/^\(\?[a-z]+\)/, ''));
  } catch {
    throw validationError(name, `${show(pattern)} is not a valid regular expression`);
  }
}

function coerce(name: string, field: FieldSpec, v: unknown): Value {
  const value = coerceValue(field.type, v);
  if (value === undefined) throw validationError(name, `${show(v)} is not ${EXPECTED[field.type]}`);
  return value;
}

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

function compileNode(node: ResolvedNode, ctx: Ctx): string {
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
      const any = `${a.sql} = ANY(${param(ctx, node.values, `${a.type}[]`)})`;
      return negated(node.withNull ? `(${any} OR ${a.sql} IS NULL)` : any, node.negate, ctx);
    }
    case 'null': {
      const a = column(node.field, ctx.alias).sql;
      // Only text can be empty; a typed value that does not parse is NULL already.
      if (node.blank && node.field.type === 'string') {
        return node.negate ? `(${a} IS NOT NULL AND ${a} <> '')` : `(${a} IS NULL OR ${a} = '')`;
      }
      return `${a} IS ${node.negate ? 'NOT ' : ''}NULL`;
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
 * `b` can only be NULL when it is a field; a value is never NULL here (resolve made it isNull). */
const NULLS_LOW: Record<Comparison, (a: string, b: string, bNullable: boolean) => string | undefined> = {
  eq: (a, b, bn) => (bn ? `(${a} IS NULL AND ${b} IS NULL)` : undefined),
  lt: (a, b, bn) => (bn ? `(${a} IS NULL AND ${b} IS NOT NULL)` : `${a} IS NULL`),
  le: (a) => `${a} IS NULL`,
  gt: (a, b, bn) => (bn ? `(${a} IS NOT NULL AND ${b} IS NULL)` : undefined),
  ge: (_a, b, bn) => (bn ? `${b} IS NULL` : undefined),
};

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
  let pattern: string;
  if ('other' in leaf.rhs) {
    // The other field's text escaped in SQL, as escapeLike does for values.
    const b = column(leaf.rhs.other, ctx.alias).sql;
    const escaped = `replace(replace(replace(${b}, '\\', '\\\\'), '%', '\\%'), '_', '\\_')`;
    pattern = `(${[pre && `'${pre}'`, escaped, post && `'${post}'`].filter((s) => s !== '').join(' || ')})`;
  } else {
    const { value, glob } = leaf.rhs;
    pattern = param(ctx, pre + (glob ? globToLike(value) : escapeLike(value)) + post, 'text');
  }
  // Case-insensitive: `lower(col) LIKE lower(pattern)`, the form the lower(col) indexes serve
  // (text_pattern_ops for prefixes, trigrams for the rest); ILIKE would use neither. A case-sensitive
  // match on an indexed column adds the lower() test it implies (lower() maps character by character,
  // so `col LIKE p` ⇒ `lower(col) LIKE lower(p)`): the index finds candidates, LIKE decides.
  const lowered = `lower(${a}) LIKE lower(${pattern}) ESCAPE '\\'`;
  const exact = `${a} LIKE ${pattern} ESCAPE '\\'`;
  const test = leaf.ci ? lowered : leaf.field.searchIndexed ? `(${lowered} AND ${exact})` : exact;
  return negated(test, leaf.negate, ctx);
}

/** Parameters carry explicit casts, so PostgreSQL never guesses a type (or an operator). */
function param(ctx: Ctx, value: unknown, type: string): string {
  return `${ctx.params.add(value)}::${type}`;
}

const SQL_TYPE: Record<FieldType, string> = {
  string: 'text',
  integer: 'bigint',
  decimal: 'numeric',
  boolean: 'boolean',
  date: 'date',
  datetime: 'timestamptz',
  json: 'jsonb',
};

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
): { readonly sql: string; readonly type: string } {
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
      };
    if (field.type === 'boolean')
      return { sql: `(CASE jsonb_typeof(${v}) WHEN 'boolean' THEN ${v}::boolean END)`, type: 'boolean' };
    const typed = SAFE_CAST[field.type];
    return typed ? { sql: `${typed.fn}(${text})`, type: typed.type } : { sql: text, type: 'text' };
  }
  const cast = field.storedAsText ? SAFE_CAST[field.type] : undefined;
  return cast ? { sql: `${cast.fn}(${col})`, type: cast.type } : { sql: col, type: SQL_TYPE[field.type] };
}

// ---------------------------------------------------------------------------------------------
// Sorting

/**
 * ORDER BY terms for `sortBy` (a field name or an array of them, `-name` descending), by the
 * field's declared type, NULLs lowest as in the criteria (first ascending, last descending). The
 * tie-breaker column (the primary key) always comes last, so pages never overlap or skip.
 */
export function compileSort(
  sortBy: unknown,
  fields: ReadonlyMap<string, FieldSpec>,
  alias?: string,
  tieBreaker = 'id',
): string {
  const names = isMissing(sortBy) ? [] : isArray(sortBy) ? sortBy : [sortBy];
  const terms = names.map((entry) => {
    if (typeof entry !== 'string')
      throw validationError('sortBy', 'must be a field name or an array of them');
    const desc = entry.startsWith('-');
    const name = desc ? entry.slice(1) : entry;
    const field = fields.get(name);
    if (!field) throw validationError('sortBy', `unknown field ${show(name)}`);
    if (field.type === 'json') throw validationError('sortBy', `cannot sort by the json field ${show(name)}`);
    return `${column(field, alias).sql} ${desc ? 'DESC NULLS LAST' : 'ASC NULLS FIRST'}`;
  });
  const tie = alias === undefined ? ident(tieBreaker) : qualified(alias, tieBreaker);
  return [...terms, `${tie} ASC`].join(', ');
}

// ---------------------------------------------------------------------------------------------
// Safe casts for typed values kept in text columns (custom attributes). A stored value that does
// not parse is NULL, never an error that would fail the whole query. A regular expression screens
// the obvious non-values first, so the exception block (a subtransaction) runs only for candidates
// such as 2024-02-30 or 1e999999. Only ISO forms are read, which keeps each function's result
// independent of DateStyle and TimeZone, so IMMUTABLE is honest; a date-time without an offset is
// UTC, as in toDatetime above. Runs on PostgreSQL 15+ and PGlite; migration 002_safe_casts.sql creates them.

function unreachable(x: never): never {
  throw new Error(`unhandled criteria node: ${JSON.stringify(x)}`);
}
