// Logic text → syntax tree. jsep does the parsing (a small, dependency-free parser that only parses);
// this file configures its operators, records where every token starts (for line/column in errors),
// refuses what the language does not have (member calls, `a[b]`, `this`, bitwise operators,
// prototype names) and enforces the size limits *before* anything recursive runs on hostile text.

import jsep from 'jsep';
import { D } from '../values.ts';

/** Size limits of one expression (hostile text is refused here, at save time). */
export const PARSE_LIMITS = {
  maxLength: 16_000,
  maxNesting: 64,
  maxNodes: 2_000,
  maxDepth: 256,
  maxStringLiteral: 4_000,
  maxNumberDigits: 40,
} as const;

export type BinaryOp =
  '+' | '-' | '*' | '/' | '%' | '==' | '!=' | '<' | '<=' | '>' | '>=' | 'and' | 'or' | 'in';
export type UnaryOp = '-' | '+' | 'not';

/** A syntax-tree node; `pos` is the offset of its first character in the text. */
export type Node =
  | { readonly kind: 'num'; readonly raw: string; readonly pos: number }
  | { readonly kind: 'str'; readonly value: string; readonly pos: number }
  | { readonly kind: 'bool'; readonly value: boolean; readonly pos: number }
  | { readonly kind: 'null'; readonly pos: number }
  | { readonly kind: 'name'; readonly path: readonly string[]; readonly pos: number }
  | { readonly kind: 'call'; readonly name: string; readonly args: readonly Node[]; readonly pos: number }
  | { readonly kind: 'unary'; readonly op: UnaryOp; readonly arg: Node; readonly pos: number }
  | {
      readonly kind: 'binary';
      readonly op: BinaryOp;
      readonly left: Node;
      readonly right: Node;
      readonly pos: number;
    }
  | {
      readonly kind: 'cond';
      readonly test: Node;
      readonly then: Node;
      readonly else: Node;
      readonly pos: number;
    }
  | { readonly kind: 'list'; readonly items: readonly Node[]; readonly pos: number };

/** A problem in logic text at an offset; callers turn it into a -4 naming element, line and column. */
export class ExpressionError extends Error {
  readonly pos: number;
  constructor(message: string, pos: number) {
    super(message);
    this.name = 'ExpressionError';
    this.pos = pos;
  }
}

/** Names no expression may use: they lead to prototypes in JavaScript. */
export function isForbiddenName(name: string): boolean {
  return name.startsWith('__') || name === 'constructor' || name === 'prototype';
}

export function lineColumn(text: string, pos: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  const end = Math.min(Math.max(pos, 0), text.length);
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      start = i + 1;
    }
  }
  return { line, column: end - start + 1 };
}

// ---- jsep configuration (module-global, done once) ----
for (const op of ['|', '^', '&', '<<', '>>', '>>>', '===', '!==', '??', '**']) jsep.removeBinaryOp(op);
jsep.removeUnaryOp('~');
jsep.addBinaryOp('or', 1);
jsep.addBinaryOp('and', 2);
jsep.addBinaryOp('in', 7);
jsep.addUnaryOp('not');
jsep.removeLiteral('this');

interface JsepThis {
  index: number;
  readonly code: number;
  gobbleNumericLiteral(): jsep.Expression;
}
type PosExpr = jsep.Expression & { start?: number };

// Token starts: `gobble-token` runs at the start of every token, `after-token` at its end (numbers
// are parsed here so that their start is known too; jsep returns them without `after-token`).
let starts: number[] = [];
jsep.hooks.add('gobble-token', function startToken(this: JsepThis, env: { node?: jsep.Expression }) {
  const c = this.code;
  if ((c >= 48 && c <= 57) || c === 46) {
    const start = this.index;
    const node: PosExpr = this.gobbleNumericLiteral();
    node.start = start;
    env.node = node;
    return;
  }
  starts.push(this.index);
} as unknown as jsep.HookCallback);
jsep.hooks.add('after-token', function endToken(env: { node?: PosExpr | false }) {
  const node = env.node;
  if (node && node.start !== undefined) return;
  const start = starts.pop();
  if (node && start !== undefined) node.start = start;
} as unknown as jsep.HookCallback);

const WORD_CHAR = /[A-Za-z0-9_$.]/;

/** Whether the operator word `not` stands at `i` (not part of a longer name). */
function notAt(text: string, i: number): boolean {
  return (
    text.startsWith('not', i) &&
    (i === 0 || !WORD_CHAR.test(text[i - 1]!)) &&
    (i + 3 >= text.length || !WORD_CHAR.test(text[i + 3]!))
  );
}

/** Refuses text that is too long or nested too deeply before jsep's recursive descent sees it. */
function precheck(text: string): void {
  if (text.length > PARSE_LIMITS.maxLength)
    throw new ExpressionError(`expression longer than ${PARSE_LIMITS.maxLength} characters`, 0);
  let depth = 0;
  let quote = 0;
  let unaryRun = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (quote !== 0) {
      if (c === 92) i++;
      else if (c === quote) quote = 0;
      continue;
    }
    if (c === 34 || c === 39) quote = c;
    else if (c === 40 || c === 91) {
      if (++depth > PARSE_LIMITS.maxNesting)
        throw new ExpressionError(`nesting deeper than ${PARSE_LIMITS.maxNesting} levels`, i);
    } else if (c === 41 || c === 93) depth--;
    // `- - - - x` (and `not not x`) recurses like brackets do
    const word = c === 110 && notAt(text, i);
    if (word) i += 2;
    if (word || c === 45 || c === 43 || c === 33) {
      if (++unaryRun > PARSE_LIMITS.maxNesting)
        throw new ExpressionError(`more than ${PARSE_LIMITS.maxNesting} signs in a row`, i);
    } else if (c !== 32 && c !== 9 && c !== 10 && c !== 13) unaryRun = 0;
  }
}

/** Parses one expression. Throws `ExpressionError` with the offset of the problem. */
export function parseExpression(text: string): Node {
  if (typeof text !== 'string') throw new ExpressionError('expression must be text', 0);
  if (text.trim() === '') throw new ExpressionError('expression is empty', 0);
  precheck(text);
  starts = [];
  let tree: jsep.Expression;
  try {
    tree = jsep(text);
  } catch (err) {
    if (err instanceof RangeError) throw new ExpressionError('expression nested too deeply', 0);
    const e = err as { description?: string; index?: number; message?: string };
    throw new ExpressionError(e.description ?? e.message ?? 'syntax error', e.index ?? 0);
  }
  const counter = { nodes: 0 };
  return convert(tree, text, counter, 0);
}

const BINARY: Readonly<Record<string, BinaryOp>> = {
  '+': '+',
  '-': '-',
  '*': '*',
  '/': '/',
  '%': '%',
  '==': '==',
  '!=': '!=',
  '<': '<',
  '<=': '<=',
  '>': '>',
  '>=': '>=',
  and: 'and',
  '&&': 'and',
  or: 'or',
  '||': 'or',
  in: 'in',
};
const UNARY: Readonly<Record<string, UnaryOp>> = { '-': '-', '+': '+', not: 'not', '!': 'not' };

function posOf(e: PosExpr, fallback: number): number {
  if (e.start !== undefined) return e.start;
  if (e.type === 'BinaryExpression' || e.type === 'MemberExpression') {
    const inner = (e.type === 'BinaryExpression' ? e.left : e.object) as PosExpr;
    return posOf(inner, fallback);
  }
  if (e.type === 'ConditionalExpression') return posOf(e.test as PosExpr, fallback);
  return fallback;
}

function convert(e: PosExpr, text: string, counter: { nodes: number }, depth: number): Node {
  const pos = posOf(e, 0);
  if (++counter.nodes > PARSE_LIMITS.maxNodes)
    throw new ExpressionError(`expression has more than ${PARSE_LIMITS.maxNodes} parts`, pos);
  if (depth > PARSE_LIMITS.maxDepth)
    throw new ExpressionError(`expression nested deeper than ${PARSE_LIMITS.maxDepth} levels`, pos);
  const sub = (x: jsep.Expression): Node => convert(x, text, counter, depth + 1);
  switch (e.type) {
    case 'Literal': {
      const raw = typeof e.raw === 'string' ? e.raw : '';
      if (typeof e.value === 'number') {
        if (raw.replace(/[^0-9]/g, '').length > PARSE_LIMITS.maxNumberDigits)
          throw new ExpressionError(`number literal longer than ${PARSE_LIMITS.maxNumberDigits} digits`, pos);
        const form = /^(\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.exec(raw);
        if (!form) throw new ExpressionError(`malformed number ${raw}`, pos);
        // Read as a decimal from its text (1e309 is one, though no JavaScript number): within the
        // decimals' exponents (±1,000), neither overflowing nor vanishing to 0.
        const d = new D(raw);
        if (!d.isFinite() || (d.isZero() && /[1-9]/.test(form[1]!)))
          throw new ExpressionError(`number literal ${raw} out of range (exponents within ±1000)`, pos);
        // Decimals keep 34 significant digits: a literal with more would not mean what it says.
        if (d.sd() > D.precision)
          throw new ExpressionError(
            `number literal ${raw} has more than ${D.precision} significant digits`,
            pos,
          );
        return { kind: 'num', raw, pos };
      }
      if (typeof e.value === 'string') {
        if (e.value.length > PARSE_LIMITS.maxStringLiteral)
          throw new ExpressionError(
            `text literal longer than ${PARSE_LIMITS.maxStringLiteral} characters`,
            pos,
          );
        return { kind: 'str', value: e.value, pos };
      }
      if (typeof e.value === 'boolean') return { kind: 'bool', value: e.value, pos };
      if (e.value === null) return { kind: 'null', pos };
      throw new ExpressionError(`unsupported literal ${raw}`, pos);
    }
    case 'Identifier':
      return { kind: 'name', path: [checkName(e.name as string, pos)], pos };
    case 'MemberExpression': {
      if (e.computed)
        throw new ExpressionError('indexing with [...] is not supported; use a field name', pos);
      if (e.optional) throw new ExpressionError('?. is not supported; values are null-safe already', pos);
      const object = sub(e.object as jsep.Expression);
      const prop = e.property as PosExpr;
      if (object.kind !== 'name' || prop.type !== 'Identifier')
        throw new ExpressionError('field access needs a name on both sides of the dot', pos);
      return { kind: 'name', path: [...object.path, checkName(prop.name as string, posOf(prop, pos))], pos };
    }
    case 'CallExpression': {
      const callee = e.callee as PosExpr;
      if (callee.type !== 'Identifier')
        throw new ExpressionError('only named functions can be called, such as round(x, 2)', pos);
      const name = checkName(callee.name as string, pos);
      return { kind: 'call', name, args: (e.arguments as jsep.Expression[]).map(sub), pos };
    }
    case 'UnaryExpression': {
      const name = typeof e.operator === 'string' ? e.operator : '';
      const op = Object.hasOwn(UNARY, name) ? UNARY[name] : undefined;
      if (op === undefined) throw new ExpressionError(`operator ${name} is not supported`, pos);
      return { kind: 'unary', op, arg: sub(e.argument as jsep.Expression), pos };
    }
    case 'BinaryExpression': {
      const name = typeof e.operator === 'string' ? e.operator : '';
      const op = Object.hasOwn(BINARY, name) ? BINARY[name] : undefined;
      if (op === undefined) throw new ExpressionError(`operator ${name} is not supported`, pos);
      return {
        kind: 'binary',
        op,
        left: sub(e.left as jsep.Expression),
        right: sub(e.right as jsep.Expression),
        pos,
      };
    }
    case 'ConditionalExpression':
      return {
        kind: 'cond',
        test: sub(e.test as jsep.Expression),
        then: sub(e.consequent as jsep.Expression),
        else: sub(e.alternate as jsep.Expression),
        pos,
      };
    case 'ArrayExpression': {
      const items = e.elements as (jsep.Expression | null)[];
      if (items.some((x) => x === null)) throw new ExpressionError('empty list item', pos);
      return { kind: 'list', items: (items as jsep.Expression[]).map(sub), pos };
    }
    case 'Compound':
      throw new ExpressionError('one expression expected; combine values with operators or functions', pos);
    default:
      throw new ExpressionError(`unsupported syntax (${e.type})`, pos);
  }
}

function checkName(name: string, pos: number): string {
  if (isForbiddenName(name)) throw new ExpressionError(`the name ${name} is not allowed`, pos);
  return name;
}
