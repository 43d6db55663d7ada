// Checked tree → a tree of closures, built once per logic version. No `eval`, no `new Function`: each
// closure does one thing on logic values and counts a step, so hostile text can only ever run the
// operations this file names, within the step and time limits of `env`.

import { step, type Env } from '../env.ts';
import { EvalError } from '../failures.ts';
import {
  asDec,
  compareValues,
  D,
  listSize,
  MAX_LIST_CHARACTERS,
  MAX_LIST_DEPTH,
  MAX_LIST_VALUES,
  MAX_TEXT,
  RecordValue,
  staticTypeOf,
  timesDec,
  valuesEqual,
  type Value,
} from '../values.ts';
import type { Checked } from './check.ts';
import type { BinaryOp } from './parse.ts';

export type Closure = (env: Env) => Value;

/** Reads `rest` (a dotted field path) from a value: records by own field names, anything else null. */
function dig(v: Value, rest: readonly string[]): Value {
  let cur = v;
  for (const name of rest) {
    if (cur === null) return null;
    if (!(cur instanceof RecordValue)) throw new EvalError(`.${name}: not a record`);
    cur = cur.get(name);
  }
  return cur;
}

/**
 * A value built by a list literal or a function, within the engine's bounds: a list of at most
 * MAX_LIST_VALUES values and MAX_LIST_CHARACTERS characters of text (nested lists counted), nested
 * at most MAX_LIST_DEPTH deep, text of
 * at most MAX_TEXT characters, a number within the decimals' exponents (a sum past them is Infinity
 * in decimal.js) — else the element's CRITICAL alert.
 */
const HALF_CHARACTER =
  'the text would hold half of a character (an unpaired UTF-16 surrogate): cut it elsewhere';

function bounded(v: Value, what: string): Value {
  if (Array.isArray(v)) {
    const size = listSize(v as readonly Value[]);
    if (size.values > MAX_LIST_VALUES)
      throw new EvalError(`${what}: a list of more than ${MAX_LIST_VALUES} values (nested lists counted)`);
    if (size.characters > MAX_LIST_CHARACTERS)
      throw new EvalError(`${what}: a list of more than ${MAX_LIST_CHARACTERS} characters of text`);
    // Deeper, the answer's writer (and ==) would run out of stack: the request was refused as "nested too deeply".
    if (size.depth > MAX_LIST_DEPTH)
      throw new EvalError(`${what}: lists nested deeper than ${MAX_LIST_DEPTH} levels`);
    if (size.illFormed) throw new EvalError(`${what}: ${HALF_CHARACTER}`);
  } else if (typeof v === 'string') {
    if (v.length > MAX_TEXT) throw new EvalError(`${what}: result longer than ${MAX_TEXT} characters`);
    // Half of a character (`substring` through an emoji): no answer, grid item or rebate row can
    // store it (PostgreSQL refused the whole grid job's items as invalid JSON).
    if (!v.isWellFormed()) throw new EvalError(`${what}: ${HALF_CHARACTER}`);
  } else if (v instanceof D && !v.isFinite()) throw new EvalError(`${what}: result out of range`);
  return v;
}

function truth(v: Value, what: string): boolean {
  if (v === null) return false;
  if (typeof v === 'boolean') return v;
  throw new EvalError(`${what} must be true/false, got ${staticTypeOf(v)}`);
}

export function compile(node: Checked): Closure {
  switch (node.k) {
    case 'const': {
      const value = node.value;
      return (env) => {
        step(env);
        return value;
      };
    }
    case 'targetDate':
      return (env) => {
        step(env);
        return env.targetDate;
      };
    case 'element': {
      const { index, rest } = node;
      return (env) => {
        step(env);
        return dig(env.values[index] ?? null, rest);
      };
    }
    case 'input': {
      const { name, rest } = node;
      return (env) => {
        step(env);
        return dig(Object.hasOwn(env.inputs, name) ? (env.inputs[name] ?? null) : null, rest);
      };
    }
    case 'field': {
      const { root, rest } = node;
      return (env) => {
        step(env);
        const base = Object.hasOwn(env.roots, root) ? (env.roots[root] ?? null) : null;
        return dig(base, rest);
      };
    }
    case 'list': {
      const items = node.items.map(compile);
      return (env) => {
        step(env);
        return bounded(
          items.map((f) => f(env)),
          '[...]',
        );
      };
    }
    case 'if': {
      const [t, a, b] = [compile(node.test), compile(node.then), compile(node.else)];
      return (env) => {
        step(env);
        return truth(t(env), 'condition') ? a(env) : b(env);
      };
    }
    case 'coalesce': {
      const args = node.args.map(compile);
      return (env) => {
        step(env);
        for (const f of args) {
          const v = f(env);
          if (v !== null) return v;
        }
        return null;
      };
    }
    case 'unary': {
      const arg = compile(node.arg);
      if (node.op === 'not')
        return (env) => {
          step(env);
          const v = arg(env);
          return v === null ? null : !truth(v, 'not');
        };
      const negate = node.op === '-';
      return (env) => {
        step(env);
        const v = arg(env);
        if (v === null) return null;
        const d = asDec(v);
        if (d === undefined) throw new EvalError(`${node.op} needs a number, got ${staticTypeOf(v)}`);
        return negate ? d.neg() : d;
      };
    }
    case 'binary':
      return compileBinary(node.op, compile(node.left), compile(node.right));
    case 'call': {
      const { fn, site } = node;
      const args = node.args.map(compile);
      // The argument list as a literal for the common arities (no callback per argument, a list of
      // the exact size); a fresh list per call all the same, as a function may keep the one it gets.
      if (args.length === 1) {
        const [a] = args as [Closure];
        return (env) => {
          step(env);
          return bounded(fn.run([a(env)], env, site), fn.name);
        };
      }
      if (args.length === 2) {
        const [a, b] = args as [Closure, Closure];
        return (env) => {
          step(env);
          return bounded(fn.run([a(env), b(env)], env, site), fn.name);
        };
      }
      if (args.length === 3) {
        const [a, b, c] = args as [Closure, Closure, Closure];
        return (env) => {
          step(env);
          return bounded(fn.run([a(env), b(env), c(env)], env, site), fn.name);
        };
      }
      return (env) => {
        step(env);
        const values = args.map((f) => f(env));
        return bounded(fn.run(values, env, site), fn.name);
      };
    }
  }
}

type DecOf = NonNullable<ReturnType<typeof asDec>>;

function numbers(op: BinaryOp, a: Value, b: Value): [DecOf, DecOf] {
  const x = asDec(a);
  const y = asDec(b);
  if (x === undefined || y === undefined)
    throw new EvalError(`${op} needs numbers, got ${staticTypeOf(a)} and ${staticTypeOf(b)}`);
  return [x, y];
}

function compileBinary(op: BinaryOp, l: Closure, r: Closure): Closure {
  switch (op) {
    case 'and':
      return (env) => {
        step(env);
        return truth(l(env), 'and') && truth(r(env), 'and');
      };
    case 'or':
      return (env) => {
        step(env);
        return truth(l(env), 'or') || truth(r(env), 'or');
      };
    case '==':
      return (env) => {
        step(env);
        return valuesEqual(l(env), r(env));
      };
    case '!=':
      return (env) => {
        step(env);
        return !valuesEqual(l(env), r(env));
      };
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const test =
        op === '<'
          ? (c: number) => c < 0
          : op === '<='
            ? (c: number) => c <= 0
            : op === '>'
              ? (c: number) => c > 0
              : (c: number) => c >= 0;
      return (env) => {
        step(env);
        const a = l(env);
        const b = r(env);
        if (a === null || b === null) return false;
        const c = compareValues(a, b);
        if (c === undefined)
          throw new EvalError(`${op} cannot compare ${staticTypeOf(a)} with ${staticTypeOf(b)}`);
        return test(c);
      };
    }
    case 'in':
      return (env) => {
        step(env);
        const a = l(env);
        const list = r(env);
        if (list === null) return false;
        if (!Array.isArray(list)) throw new EvalError(`in needs a list, got ${staticTypeOf(list)}`);
        const items = list as readonly Value[];
        step(env, items.length);
        return items.some((x) => valuesEqual(a, x));
      };
    case '+': {
      const last = newLast();
      return (env) => {
        step(env);
        const a = l(env);
        const b = r(env);
        if (a === null || b === null) return null;
        if (typeof a === 'string' && typeof b === 'string') {
          if (a.length + b.length > 100_000) throw new EvalError('+: text longer than 100000 characters');
          return a + b;
        }
        if (a === last.a && b === last.b) return last.out!;
        const [x, y] = numbers(op, a, b);
        const out = x.plus(y);
        if (!out.isFinite()) throw new EvalError('+: result out of range');
        last.a = a;
        last.b = b;
        last.out = out;
        return out;
      };
    }
    case '-':
      return arith(op, l, r, (x, y) => x.minus(y));
    case '*':
      return arith(op, l, r, (x, y) => vanished(op, x, y, timesDec(x, y)));
    case '/':
      return arith(op, l, r, (x, y) => {
        if (y.isZero()) throw new EvalError('division by zero');
        return vanished(op, x, y, x.div(y));
      });
    case '%':
      return arith(op, l, r, (x, y) => {
        if (y.isZero()) throw new EvalError('division by zero');
        return x.mod(y);
      });
  }
}

/**
 * The operands and result of an operator's last numeric evaluation. Decimals are immutable and a
 * numeric text always parses to the same number, so the same two operands (the same decimal
 * instances, or equal texts) give that result again: `1 - Disc` over a bulk run whose items share
 * the discount's decimal costs one subtraction, not one per item.
 */
interface Last {
  a: Value | undefined;
  b: Value | undefined;
  out: DecOf | undefined;
}

function newLast(): Last {
  return { a: undefined, b: undefined, out: undefined };
}

/** A product or quotient of non-zero decimals that is 0 fell below the exponents' range (±1,000). */
function vanished(op: BinaryOp, x: DecOf, y: DecOf, out: DecOf): DecOf {
  if (out.isZero() && !x.isZero() && !y.isZero()) throw new EvalError(`${op}: result out of range`);
  return out;
}

function arith(op: BinaryOp, l: Closure, r: Closure, f: (x: DecOf, y: DecOf) => DecOf): Closure {
  const last = newLast();
  return (env) => {
    step(env);
    const a = l(env);
    const b = r(env);
    if (a === null || b === null) return null;
    if (a === last.a && b === last.b) return last.out!;
    const [x, y] = numbers(op, a, b);
    const out = f(x, y);
    if (!out.isFinite()) throw new EvalError(`${op}: result out of range`);
    last.a = a;
    last.b = b;
    last.out = out;
    return out;
  };
}
