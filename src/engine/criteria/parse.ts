// Criteria stage 1, parse: JSON (AdvancedCriteria or simple criteria) → CriteriaTree. Checks the
// shape only (operators by name, nesting depth, criteria count); field names and values stay as given
// until resolve. Also the small value guards and `show` that the later stages share.

import { validationError } from '../../http/errors.ts';
import { isOperator, type Operator } from './operators.ts';
import { isObj } from '../values.ts';

/** Nesting levels and leaf count a filter may have; beyond them a -4, never a deep recursion. */
export const MAX_CRITERIA_DEPTH = 100;
export const MAX_CRITERIA = 1000;

// ---------------------------------------------------------------------------------------------
// Stage 1: parse. Checks the shape only; field names and values stay as given until resolve.

export type LogicalOperator = 'and' | 'or' | 'not';
export type TextMatchStyle = 'exact' | 'exactCase' | 'substring' | 'startsWith';
export type Scalar = string | number | boolean | null;

export type CriteriaNode =
  | {
      readonly kind: LogicalOperator;
      readonly children: readonly CriteriaNode[];
      /** strictSQLFiltering given on this nested criteria: it holds for its subtree. */
      readonly strict?: boolean;
    }
  | LeafNode
  /** One key of simple criteria: equality (or a text match) against any of `values`. */
  | {
      readonly kind: 'match';
      readonly fieldName: string;
      readonly values: readonly Scalar[];
      readonly style: TextMatchStyle;
    }
  | InvalidNode;

/**
 * A criterion whose operator is no operator, kept (parseCriteria's `lenient`) for the legacy delete
 * by filter to leave out and list: resolving it is its -4.
 */
export interface InvalidNode {
  readonly kind: 'invalid';
  readonly fieldName: string;
  readonly message: string;
}

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
export const isArray = (v: unknown): v is readonly unknown[] => Array.isArray(v);
export const isMissing = (v: unknown): v is null | undefined => v === null || v === undefined;
const isScalar = (v: unknown): v is Scalar =>
  v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** A value quoted for a message, cut short so a hostile input cannot bloat the response. */
export function show(v: unknown): string {
  // JSON.stringify writes a number out of range (1e400 parsed as Infinity) as null.
  const s = typeof v === 'number' && !Number.isFinite(v) ? String(v) : (JSON.stringify(v) ?? String(v));
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

const TEXT_MATCH_STYLES: readonly TextMatchStyle[] = ['exact', 'exactCase', 'substring', 'startsWith'];
const isTextMatchStyle = (s: string): s is TextMatchStyle =>
  (TEXT_MATCH_STYLES as readonly string[]).includes(s);
const MATCH_ALL: CriteriaNode = { kind: 'and', children: [] };

/** What parsing counts (the limits) and whether a criterion of an unknown operator is kept (`invalid`). */
interface ParseState {
  nodes: number;
  groups: number;
  readonly lenient: boolean;
}

export function parseCriteria(
  input: unknown,
  opts: {
    readonly textMatchStyle?: string;
    readonly lenient?: boolean;
    /** The request field that holds the criteria (`data`, `filterCriteria`), named when it is no object. */
    readonly field?: string;
  } = {},
): CriteriaTree {
  const style = opts.textMatchStyle ?? 'exact';
  if (!isTextMatchStyle(style)) {
    throw validationError('textMatchStyle', `must be one of ${TEXT_MATCH_STYLES.join(', ')}`);
  }
  if (isMissing(input)) return { strict: false, root: MATCH_ALL };
  if (!isObj(input)) throw validationError(opts.field ?? 'criteria', 'criteria must be an object');
  const budget: ParseState = { nodes: 0, groups: 0, lenient: opts.lenient === true };
  // Simple criteria are `{field: value}`; anything that looks like a criterion is advanced, so a
  // malformed advanced filter is reported instead of being read as fields called "operator" etc.
  const advanced =
    Object.hasOwn(input, '_constructor') ||
    Object.hasOwn(input, 'criteria') ||
    (Object.hasOwn(input, 'fieldName') && Object.hasOwn(input, 'operator'));
  if (!advanced) return { strict: false, root: parseSimple(input, style, budget) };
  return { strict: strictOf(input) ?? false, root: parseNode(input, 1, budget) };
}

/**
 * Criteria (leaves) count toward the limit; groups have a cap of their own, as many (a filter of
 * 1,000 criteria in one `or` is within "at most 1,000 criteria": its group counted too, it was not).
 */
function countNode(budget: ParseState, group = false): void {
  if (group ? ++budget.groups > MAX_CRITERIA : ++budget.nodes > MAX_CRITERIA) {
    throw validationError(
      'criteria',
      group
        ? `too many groups of criteria (at most ${MAX_CRITERIA})`
        : `too many criteria (at most ${MAX_CRITERIA})`,
    );
  }
}

function parseNode(obj: Obj, depth: number, budget: ParseState): CriteriaNode {
  if (depth > MAX_CRITERIA_DEPTH) {
    throw validationError('criteria', `criteria nested too deeply (at most ${MAX_CRITERIA_DEPTH} levels)`);
  }
  countNode(budget, Object.hasOwn(obj, 'criteria'));
  if (Object.hasOwn(obj, '_constructor') && obj._constructor !== 'AdvancedCriteria') {
    throw validationError('criteria', `unknown _constructor ${show(obj._constructor)}`);
  }
  // strictSQLFiltering on a nested criteria holds for that subtree (the top level's for all).
  const strict = depth > 1 ? strictOf(obj) : undefined;
  if (!Object.hasOwn(obj, 'criteria')) {
    const leaf = parseLeaf(obj, budget.lenient);
    return strict === undefined ? leaf : { kind: 'and', children: [leaf], strict };
  }
  knownProperties(obj, GROUP_PROPERTIES, 'criteria');
  const { operator, criteria } = obj;
  if (operator !== 'and' && operator !== 'or' && operator !== 'not') {
    throw validationError('criteria', `unknown logical operator ${show(operator)} (use and, or, not)`);
  }
  if (!isArray(criteria)) throw validationError('criteria', '"criteria" must be an array');
  const children = criteria.map((child) => {
    if (!isObj(child)) throw validationError('criteria', 'each criterion must be an object');
    return parseNode(child, depth + 1, budget);
  });
  return strict === undefined ? { kind: operator, children } : { kind: operator, children, strict };
}

function strictOf(obj: Obj): boolean | undefined {
  const strict = obj.strictSQLFiltering;
  if (strict === undefined || strict === null) return undefined;
  if (typeof strict !== 'boolean') throw validationError('strictSQLFiltering', 'must be true or false');
  return strict;
}

function parseLeaf(obj: Obj, lenient: boolean): LeafNode | InvalidNode {
  const { fieldName, operator } = obj;
  if (typeof fieldName !== 'string' || fieldName === '') {
    throw validationError('criteria', 'a criterion needs a "fieldName", or "criteria" for a group');
  }
  // (A misspelt property is refused even so: a `between` whose bounds were left out matched all.)
  knownProperties(obj, LEAF_PROPERTIES, fieldName);
  if (typeof operator !== 'string' || !isOperator(operator)) {
    const message =
      typeof operator !== 'string' ? '"operator" must be a string' : `unknown operator ${show(operator)}`;
    if (lenient) return { kind: 'invalid', fieldName, message };
    throw validationError(fieldName, message);
  }
  return { kind: 'leaf', fieldName, operator, value: obj.value, start: obj.start, end: obj.end };
}

/**
 * What a criterion or a group may hold. Anything else is refused: a misspelt property (`valu`, `values`)
 * was ignored, so the criterion tested something else than asked (`between` with `value`: every row
 * matched, and a /delete by that filter deleted them all).
 */
const COMMON_PROPERTIES = ['_constructor', 'operator', 'strictSQLFiltering'];
const LEAF_PROPERTIES: ReadonlySet<string> = new Set([
  ...COMMON_PROPERTIES,
  'fieldName',
  'value',
  'start',
  'end',
]);
const GROUP_PROPERTIES: ReadonlySet<string> = new Set([...COMMON_PROPERTIES, 'criteria']);

function knownProperties(obj: Obj, known: ReadonlySet<string>, at: string): void {
  const unknown = Object.keys(obj).find((k) => !known.has(k));
  if (unknown !== undefined) {
    throw validationError(at, `unknown property ${show(unknown)} of a criterion (${[...known].join(', ')})`);
  }
}

function parseSimple(obj: Obj, style: TextMatchStyle, budget: ParseState): CriteriaNode {
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

export function unreachable(x: never): never {
  throw new Error(`unhandled criteria node: ${JSON.stringify(x)}`);
}
