// Criteria stage 2, resolve: CriteriaTree + the type's fields → ResolvedCriteria. Binds every field,
// checks each operator against the field's type and coerces every value, so an unknown field or a
// wrong operator fails here with the field's name and never reaches SQL. Lenient mode drops bad leaves.

import { AppError, validationError } from '../../http/errors.ts';
import type { FieldSpec, FieldType } from '../types.ts';
import { coerceValue, notOfType, type Value } from '../values.ts';
import { OPERATORS, type Anchor, type Comparison, type Operator, type Test } from './operators.ts';
import { notePatternField } from './patterns.ts';
import {
  MAX_CRITERIA,
  isArray,
  isMissing,
  show,
  unreachable,
  type CriteriaNode,
  type CriteriaTree,
  type LeafNode,
  type LogicalOperator,
  type TextMatchStyle,
} from './parse.ts';

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
      /** Case-insensitive membership (a simple criteria list of text, textMatchStyle `exact`). */
      readonly ci?: boolean;
    }
  | { readonly kind: 'null'; readonly field: FieldSpec; readonly blank: boolean; readonly negate: boolean };

export type ResolvedNode =
  | {
      readonly kind: LogicalOperator;
      readonly children: readonly ResolvedNode[];
      /** strictSQLFiltering of a nested criteria, for its subtree. */
      readonly strict?: boolean;
    }
  | ResolvedLeaf;

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
  opts: {
    readonly lenient?: boolean;
    readonly typeCode?: string;
    /** Other codes whose typedIds the type takes (its `typedIdAliases`). */
    readonly typedIdAliases?: readonly string[];
  } = {},
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
    return resolveLeaf(node, fields, opts.typeCode, opts.typedIdAliases);
  };
  const visit = (node: CriteriaNode): ResolvedNode[] => {
    switch (node.kind) {
      case 'and':
      case 'or':
      case 'not':
        return [
          node.strict === undefined
            ? { kind: node.kind, children: node.children.flatMap(visit) }
            : { kind: node.kind, children: node.children.flatMap(visit), strict: node.strict },
        ];
      case 'leaf':
        return leaf(node.fieldName, () => resolveOne(node));
      case 'match':
        return leaf(node.fieldName, () => {
          const expanded = expandMatch(
            node,
            lookup(fields, node.fieldName, opts.typeCode, opts.typedIdAliases),
          );
          if (expanded.kind === 'leaf') return resolveOne(expanded);
          if (expanded.kind === 'ciSet') return { ...(resolveOne(expanded.leaf) as SetLeaf), ci: true };
          return { kind: 'or', children: expanded.children.map(resolveOne) };
        });
      case 'invalid':
        // Left out (and listed) in lenient mode, else the request's -4.
        return leaf(node.fieldName, () => {
          throw validationError(node.fieldName, node.message);
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

type SetLeaf = Extract<ResolvedLeaf, { kind: 'set' }>;

/** Simple criteria as ordinary leaves: text fields compare by the textMatchStyle, others (and fields
 * of elements) by equality.
 * A list means "any of": one criterion however long — inSet (`ciSet`: its case-insensitive form for
 * the default style `exact`) — or, for `substring` and `startsWith`, an `or` of text matches, which
 * have no set form (each value counts toward the filter's criteria). */
function expandMatch(
  node: Extract<CriteriaNode, { kind: 'match' }>,
  field: FieldSpec,
):
  | LeafNode
  | { readonly kind: 'ciSet'; readonly leaf: LeafNode }
  | { readonly kind: 'or'; readonly children: readonly LeafNode[] } {
  // A field of elements (a text[]) matches an element exactly, whatever the style.
  const style = field.type === 'string' && !field.elements ? node.style : 'exactCase';
  const leafOf = (operator: Operator, value: unknown): LeafNode => ({
    kind: 'leaf',
    fieldName: node.fieldName,
    operator,
    value,
    start: undefined,
    end: undefined,
  });
  if (style === 'exactCase' && node.values.length !== 1) return leafOf('inSet', node.values);
  if (style === 'exact' && node.values.length !== 1)
    return { kind: 'ciSet', leaf: leafOf('inSet', node.values) };
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

function resolveLeaf(
  node: LeafNode,
  fields: ReadonlyMap<string, FieldSpec>,
  typeCode: string | undefined,
  aliases: readonly string[] | undefined,
): ResolvedNode {
  const { fieldName: name, operator } = node;
  const { test, ci: caseless, negate, field: byField } = OPERATORS[operator];
  const field = lookup(fields, name, typeCode, aliases);
  // Only text has case: `iEquals`, `iBetween`, ... on numbers, dates and booleans compare as
  // `equals`, `between`, ... (the text-only operators stay refused on them below).
  const ci = caseless && field.type === 'string';
  if (
    (field.elements || field.typedIdOf !== undefined) &&
    (caseless || byField || (test.kind !== 'set' && !(test.kind === 'compare' && test.cmp === 'eq')))
  ) {
    const use = field.elements ? 'equals or inSet' : 'equals, notEqual, inSet or notInSet';
    throw validationError(name, `operator "${operator}" does not apply to ${name}: use ${use}`);
  }
  if (!allowedTypes(test).has(field.type)) {
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
        isMissing(node.value)
          ? `operator "${operator}" needs another field's name as its value`
          : `operator "${operator}" needs another field's name, not ${show(node.value)}`,
      );
    if (family(found.type) !== family(field.type)) {
      throw validationError(name, `cannot compare with the ${found.type} field ${show(found.name)}`);
    }
    return found;
  };
  // A range takes `start` and `end`, the others `value`: the wrong one was ignored (a `between` with
  // `value` had no bound at all and matched every row; a /delete by that filter deleted them all).
  const ranged = test.kind === 'range';
  const stray = ranged
    ? isMissing(node.value)
      ? undefined
      : 'value'
    : !isMissing(node.start)
      ? 'start'
      : !isMissing(node.end)
        ? 'end'
        : undefined;
  if (stray !== undefined) {
    const takes = ranged ? '"start" and "end"' : '"value"';
    throw validationError(name, `operator "${operator}" takes ${takes}, not "${stray}"`);
  }
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
      const children = [...bound(low, node.start), ...bound(high, node.end)];
      // With both bounds, a NULL (the lowest value outside strict mode) fails the lower one, so the
      // upper one need not let it through: compiled strictly, the range is the two comparisons alone
      // (same rows, same NULL answer), which a range scan of an index serves, count by the index alone.
      return children.length === 2 ? { kind: 'and', children, strict: true } : { kind: 'and', children };
    }
    case 'like': {
      const { anchor, glob } = test;
      const rhs = byField ? { other: other() } : { value: String(required(node.value)), glob };
      return { kind: 'like', field, anchor, ci, negate, rhs };
    }
    case 'regexp': {
      const pattern = String(required(node.value));
      checkRegexp(name, pattern);
      notePatternField(name);
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

function lookup(
  fields: ReadonlyMap<string, FieldSpec>,
  name: string,
  typeCode?: string,
  aliases?: readonly string[],
): FieldSpec {
  const field =
    fields.get(name) ?? (name === 'typedId' ? typedIdField(fields, typeCode, aliases) : undefined);
  if (!field) throw validationError(name, `unknown field ${show(name)}`);
  return field;
}

/** `typedId` (every record answers it, no type stores it) filters and sorts as the id it names. */
function typedIdField(
  fields: ReadonlyMap<string, FieldSpec>,
  typeCode = '',
  aliases: readonly string[] = [],
): FieldSpec | undefined {
  const id = fields.get('id');
  return id === undefined
    ? undefined
    : { ...id, name: 'typedId', typedIdOf: typeCode, typedIdAliases: aliases };
}

/** Most characters of a `regexp` / `iregexp` pattern. */
export const MAX_REGEXP = 1_000;

const TYPED_ID = /^(\d{1,15})(?:\.([A-Za-z0-9]+))?$/;

/** PostgreSQL's regular expressions are not JavaScript's, but most mistakes (an unclosed group, a
 * dangling quantifier) are mistakes in both; checking here turns them into a -4 instead of a 500.
 * A leading embedded-options group such as `(?i)` is PostgreSQL-only, so it is set aside first. */
function checkRegexp(name: string, pattern: string): void {
  // Longer patterns are refused by PostgreSQL as "too complex" only once a row is tested (so the
  // answer would depend on the data): a limit of our own, the same on both databases.
  if (pattern.length > MAX_REGEXP) {
    throw validationError(name, `a regular expression has at most ${MAX_REGEXP} characters`);
  }
  try {
    new RegExp(pattern.replace(/^\(\?[a-z]+\)/, ''));
  } catch {
    throw validationError(name, `${show(pattern)} is not a valid regular expression`);
  }
}

function coerce(name: string, field: FieldSpec, v: unknown): Value {
  if (field.typedIdOf !== undefined) {
    const m = TYPED_ID.exec(typeof v === 'string' ? v.trim() : typeof v === 'number' ? String(v) : '');
    if (
      m &&
      (m[2] === undefined ||
        field.typedIdOf === '' ||
        m[2] === field.typedIdOf ||
        field.typedIdAliases?.includes(m[2]) === true)
    )
      return Number(m[1]);
    const of = field.typedIdOf === '' ? '' : ` of type ${field.typedIdOf}`;
    throw validationError(name, `${show(v)} is not an id or typedId${of}`);
  }
  const value = coerceValue(field.type, v);
  if (value === undefined) throw validationError(name, notOfType(field.type, v, show(v)));
  return value;
}
