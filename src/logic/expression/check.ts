// Syntax tree → checked tree: every name bound (element, input, record field, targetDate), every
// call bound to a built-in with the right number of arguments, and every type error that can be seen
// without running (`"a" * 2`, `round(x, "two")`) refused. What passes here compiles and runs; what
// fails is an `ExpressionError` at the offending token. Also collects what the expression reads, so
// that findref and the bulk prefetch work from the compiled logic, never from text search.

import { D, parseIsoDate, type StaticType, type Value } from '../values.ts';
import type { CallSite, FnDef } from '../functions/types.ts';
import { ExpressionError, type BinaryOp, type Node, type UnaryOp } from './parse.ts';
import { OPERATORS } from '../../engine/criteria/operators.ts';

export type Checked =
  | { readonly k: 'const'; readonly value: Value; readonly type: StaticType }
  | {
      readonly k: 'element';
      readonly index: number;
      readonly name: string;
      readonly rest: readonly string[];
      readonly type: StaticType;
    }
  | {
      readonly k: 'input';
      readonly name: string;
      readonly rest: readonly string[];
      readonly type: StaticType;
    }
  | {
      readonly k: 'field';
      readonly root: string;
      readonly rest: readonly string[];
      readonly type: StaticType;
    }
  | { readonly k: 'targetDate'; readonly type: StaticType }
  | {
      readonly k: 'call';
      readonly fn: FnDef;
      readonly args: readonly Checked[];
      readonly site: CallSite;
      readonly type: StaticType;
    }
  | {
      readonly k: 'if';
      readonly test: Checked;
      readonly then: Checked;
      readonly else: Checked;
      readonly type: StaticType;
    }
  | { readonly k: 'coalesce'; readonly args: readonly Checked[]; readonly type: StaticType }
  | { readonly k: 'unary'; readonly op: UnaryOp; readonly arg: Checked; readonly type: StaticType }
  | {
      readonly k: 'binary';
      readonly op: BinaryOp;
      readonly left: Checked;
      readonly right: Checked;
      readonly type: StaticType;
    }
  | { readonly k: 'list'; readonly items: readonly Checked[]; readonly type: StaticType };

/** The names an expression may use. */
export interface CheckScope {
  readonly functions: ReadonlyMap<string, FnDef>;
  /** Earlier elements (referable by bare name or `out.<name>`). */
  readonly elements?: ReadonlyMap<string, { readonly index: number; readonly type: StaticType }>;
  /** The element being checked and the later ones: named in forward-reference errors. */
  readonly currentElement?: string;
  readonly laterElements?: ReadonlySet<string>;
  /** Declared inputs (`input.<name>`) with their static types. */
  readonly inputs?: ReadonlyMap<string, StaticType>;
  /** Record roots such as `product`, `customer`, `row` (`product.attribute3`). */
  readonly roots?: ReadonlySet<string>;
  /** The fields of roots whose fields are known (`product`: a product's fields); others: any. */
  readonly rootFields?: ReadonlyMap<string, ReadonlySet<string>>;
  /** Condition mode: a bare name is a field of the record (checked against the list when given). */
  readonly recordFields?: ReadonlySet<string> | 'any';
  /** `targetDate` is a name. */
  readonly targetDate?: boolean;
}

/** What an expression reads: the basis of findref, prefetch plans and explanations. */
export interface Reads {
  readonly elements: Set<string>;
  readonly inputs: Set<string>;
  readonly fields: Set<string>;
  /** Every call with its literal arguments (table names, set names). */
  readonly calls: { readonly name: string; readonly literals: readonly (string | undefined)[] }[];
}

export function emptyReads(): Reads {
  return { elements: new Set(), inputs: new Set(), fields: new Set(), calls: [] };
}

/** Does a value of type `actual` fit where `expected` is wanted? Unknowns and null always fit. */
function fits(actual: StaticType, expected: StaticType): boolean {
  if (expected === 'any' || actual === 'any' || actual === 'null' || actual === expected) return true;
  return expected === 'date' && actual === 'text';
}

const NUMERIC_OPS: ReadonlySet<BinaryOp> = new Set(['-', '*', '/', '%']);
const ORDER_OPS: ReadonlySet<BinaryOp> = new Set(['<', '<=', '>', '>=']);

export function checkExpression(node: Node, scope: CheckScope, reads: Reads = emptyReads()): Checked {
  const c = (n: Node): Checked => checkExpression(n, scope, reads);
  switch (node.kind) {
    case 'num':
      return { k: 'const', value: new D(node.raw), type: 'number' };
    case 'str':
      return { k: 'const', value: node.value, type: 'text' };
    case 'bool':
      return { k: 'const', value: node.value, type: 'boolean' };
    case 'null':
      return { k: 'const', value: null, type: 'null' };
    case 'name':
      return checkName(node.path, node.pos, scope, reads);
    case 'list':
      return { k: 'list', items: node.items.map(c), type: 'list' };
    case 'unary': {
      const arg = c(node.arg);
      const want: StaticType = node.op === 'not' ? 'boolean' : 'number';
      if (!fits(arg.type, want))
        throw new ExpressionError(`${node.op} needs a ${want}, got ${arg.type}`, node.pos);
      return { k: 'unary', op: node.op, arg, type: want };
    }
    case 'binary':
      return checkBinary(node.op, c(node.left), c(node.right), node.pos);
    case 'cond': {
      const test = c(node.test);
      if (!fits(test.type, 'boolean'))
        throw new ExpressionError(`condition must be true/false, got ${test.type}`, node.pos);
      const then = c(node.then);
      const other = c(node.else);
      return { k: 'if', test, then, else: other, type: join(then.type, other.type) };
    }
    case 'call':
      return checkCall(node, scope, reads);
  }
}

function join(a: StaticType, b: StaticType): StaticType {
  if (a === b) return a;
  if (a === 'null') return b;
  if (b === 'null') return a;
  return 'any';
}

function checkBinary(op: BinaryOp, left: Checked, right: Checked, pos: number): Checked {
  const mk = (type: StaticType): Checked => ({ k: 'binary', op, left, right, type });
  const [a, b] = [left.type, right.type];
  if (op === 'and' || op === 'or') {
    if (!fits(a, 'boolean') || !fits(b, 'boolean'))
      throw new ExpressionError(`${op} needs true/false on both sides, got ${a} and ${b}`, pos);
    return mk('boolean');
  }
  if (op === '==' || op === '!=') return mk('boolean');
  if (op === 'in') {
    if (!fits(b, 'list')) throw new ExpressionError(`in needs a list on its right, got ${b}`, pos);
    return mk('boolean');
  }
  if (ORDER_OPS.has(op)) {
    const known = (t: StaticType): boolean => t !== 'any' && t !== 'null';
    const comparable = (t: StaticType): boolean => t === 'number' || t === 'text' || t === 'date';
    if ((known(a) && !comparable(a)) || (known(b) && !comparable(b)))
      throw new ExpressionError(`${op} compares numbers, texts or dates, got ${a} and ${b}`, pos);
    if (known(a) && known(b) && a !== b && !(fits(a, 'date') && fits(b, 'date')))
      throw new ExpressionError(`${op} cannot compare ${a} with ${b}`, pos);
    return mk('boolean');
  }
  if (op === '+') {
    if (a === 'text' || b === 'text') {
      if (!fits(a, 'text') || !fits(b, 'text'))
        throw new ExpressionError(
          `+ joins two texts or adds two numbers, got ${a} and ${b}; use concat()`,
          pos,
        );
      return mk('text');
    }
    if (!fits(a, 'number') || !fits(b, 'number'))
      throw new ExpressionError(`+ needs numbers, got ${a} and ${b}`, pos);
    return mk(a === 'number' || b === 'number' ? 'number' : 'any');
  }
  if (NUMERIC_OPS.has(op)) {
    if (!fits(a, 'number') || !fits(b, 'number'))
      throw new ExpressionError(`${op} needs numbers, got ${a} and ${b}`, pos);
    return mk('number');
  }
  throw new ExpressionError(`operator ${op} is not supported`, pos);
}

function checkName(path: readonly string[], pos: number, scope: CheckScope, reads: Reads): Checked {
  const [head, ...rest] = path as [string, ...string[]];
  if (scope.recordFields !== undefined) {
    if (scope.recordFields !== 'any' && !scope.recordFields.has(head))
      throw new ExpressionError(`unknown field ${head}`, pos);
    reads.fields.add(path.join('.'));
    return { k: 'field', root: head, rest, type: 'any' };
  }
  if (head === 'targetDate' && scope.targetDate && rest.length === 0)
    return { k: 'targetDate', type: 'date' };
  if (head === 'input') {
    const name = rest[0];
    if (name === undefined) throw new ExpressionError('input needs a name: input.<name>', pos);
    const type = scope.inputs?.get(name);
    if (type === undefined) throw new ExpressionError(`unknown input ${name}`, pos);
    reads.inputs.add(name);
    if (rest.length > 1) notARecord(`input.${name}`, type, rest[1]!, pos);
    return { k: 'input', name, rest: rest.slice(1), type: rest.length > 1 ? 'any' : type };
  }
  if (head === 'out') {
    const name = rest[0];
    if (name === undefined) throw new ExpressionError('out needs an element name: out.<name>', pos);
    return elementRef(name, rest.slice(1), pos, scope, reads);
  }
  if (scope.roots?.has(head)) {
    if (rest.length === 0) throw new ExpressionError(`${head} needs a field: ${head}.<field>`, pos);
    const known = scope.rootFields?.get(head);
    if (known !== undefined && !known.has(rest[0]!))
      throw new ExpressionError(`unknown field ${head}.${rest[0]!}`, pos);
    reads.fields.add(path.join('.'));
    return { k: 'field', root: head, rest, type: 'any' };
  }
  return elementRef(head, rest, pos, scope, reads);
}

/** `.field` of a value known not to be a record (text, number, list, ...): refused when saved. */
function notARecord(what: string, type: StaticType, field: string, pos: number): void {
  if (type !== 'record' && type !== 'any' && type !== 'null')
    throw new ExpressionError(`${what}.${field.slice(0, 100)}: ${what} is ${type}, not a record`, pos);
}

function elementRef(
  name: string,
  rest: readonly string[],
  pos: number,
  scope: CheckScope,
  reads: Reads,
): Checked {
  const el = scope.elements?.get(name);
  if (el !== undefined) {
    reads.elements.add(name);
    if (rest.length > 0) notARecord(name, el.type, rest[0]!, pos);
    return { k: 'element', index: el.index, name, rest, type: rest.length > 0 ? 'any' : el.type };
  }
  if (name === scope.currentElement) throw new ExpressionError(`element ${name} refers to itself`, pos);
  if (scope.laterElements?.has(name))
    throw new ExpressionError(`element ${name} comes later: an element can only use earlier elements`, pos);
  throw new ExpressionError(`unknown name ${name}`, pos);
}

/**
 * `filter("<field>", "<operator>", …)` of a FILTER logic: a field or operator named in quotes is
 * checked when the logic is saved, as `product("<field>")` is, rather than failing every run. The
 * filter narrows products or customers (the logic does not say which): a field of either passes.
 */
function checkFilterLiterals(
  node: Extract<Node, { kind: 'call' }>,
  literals: readonly (string | undefined)[],
  scope: CheckScope,
): void {
  const [field, operator] = literals;
  if (operator !== undefined && !Object.hasOwn(OPERATORS, operator))
    throw new ExpressionError(
      `filter: unknown operator "${operator.slice(0, 40)}"`,
      node.args[1]?.pos ?? node.pos,
    );
  const products = scope.rootFields?.get('product');
  const customers = scope.rootFields?.get('customer');
  if (field === undefined || products === undefined || customers === undefined) return;
  if (field !== 'typedId' && !products.has(field) && !customers.has(field))
    throw new ExpressionError(
      `filter: unknown field "${field.slice(0, 100)}" (of products or customers)`,
      node.args[0]?.pos ?? node.pos,
    );
}

function checkCall(node: Extract<Node, { kind: 'call' }>, scope: CheckScope, reads: Reads): Checked {
  const { name, pos } = node;
  const c = (n: Node): Checked => checkExpression(n, scope, reads);
  if (name === 'if') {
    if (node.args.length !== 3)
      throw new ExpressionError('if needs 3 arguments: if(condition, then, else)', pos);
    const [t, a, b] = node.args.map(c) as [Checked, Checked, Checked];
    if (!fits(t.type, 'boolean'))
      throw new ExpressionError(`if: condition must be true/false, got ${t.type}`, pos);
    return { k: 'if', test: t, then: a, else: b, type: join(a.type, b.type) };
  }
  if (name === 'coalesce') {
    if (node.args.length < 1) throw new ExpressionError('coalesce needs at least 1 argument', pos);
    const args = node.args.map(c);
    return { k: 'coalesce', args, type: args.map((x) => x.type).reduce(join) };
  }
  const fn = scope.functions.get(name);
  if (fn === undefined) throw new ExpressionError(`unknown function ${name}`, pos);
  const n = node.args.length;
  if (n < fn.min || n > fn.max) {
    // "1 argument", "1 to 3 arguments"; a function of any number of them names the bound missed:
    // "at least 1 argument", "at most 1000 arguments". The number named last decides the plural.
    const many = fn.max >= 1_000;
    const [want, last] =
      fn.min === fn.max
        ? [`${fn.min}`, fn.min]
        : !many
          ? [`${fn.min} to ${fn.max}`, fn.max]
          : n < fn.min
            ? [`at least ${fn.min}`, fn.min]
            : [`at most ${fn.max}`, fn.max];
    throw new ExpressionError(`${name} takes ${want} argument${last === 1 ? '' : 's'}, got ${n}`, pos);
  }
  const args = node.args.map(c);
  const literals = node.args.map((a) => (a.kind === 'str' ? a.value : undefined));
  args.forEach((a, i) => {
    const want = fn.params[Math.min(i, fn.params.length - 1)] ?? 'any';
    const wanted = typeof want === 'string' ? [want] : want;
    if (!wanted.some((w) => fits(a.type, w)))
      throw new ExpressionError(
        `${name}: argument ${i + 1} must be ${wanted.join(' or ')}, got ${a.type}`,
        node.args[i]?.pos ?? pos,
      );
  });
  for (const i of fn.literal ?? []) {
    if (literals[i] === undefined)
      throw new ExpressionError(
        `${name}: argument ${i + 1} must be a name in quotes`,
        node.args[i]?.pos ?? pos,
      );
  }
  // product("attribute3") is product.attribute3: a field named in quotes is checked the same way
  // (a field given by an expression is only known when the logic runs).
  const fields = scope.roots?.has(name) ? scope.rootFields?.get(name) : undefined;
  if (fields !== undefined && literals[0] !== undefined && !fields.has(literals[0]))
    throw new ExpressionError(`unknown field ${name}.${literals[0].slice(0, 100)}`, node.args[0]?.pos ?? pos);
  if (name === 'filter') checkFilterLiterals(node, literals, scope);
  reads.calls.push({ name, literals });
  const site: CallSite = { name, literals };
  const type = typeof fn.returns === 'function' ? fn.returns(args.map((a) => a.type)) : fn.returns;
  // A date literal is checked now, so that date("2026-02-30") is refused when the logic is saved.
  if (name === 'date' && literals[0] !== undefined) {
    const d = parseIsoDate(literals[0]);
    if (!d) throw new ExpressionError(`"${literals[0].slice(0, 40)}" is not a valid YYYY-MM-DD date`, pos);
    return { k: 'const', value: d, type: 'date' };
  }
  return { k: 'call', fn, args, site, type };
}
