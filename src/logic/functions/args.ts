// Argument helpers shared by the built-in functions: typed reads with a clear run-time message, and
// the "null in, null out" rule (a missing value propagates instead of failing the element).

import { step, type Env } from '../env.ts';
import { EvalError } from '../failures.ts';
import { asDec, LogicDate, parseIsoDate, staticTypeOf, textOf, type Dec, type Value } from '../values.ts';
import type { CallSite } from './types.ts';

function describe(v: Value): string {
  const t = staticTypeOf(v);
  return t === 'text' ? `text "${textOf(v).slice(0, 40)}"` : t;
}

/** A number argument, or undefined for null; anything else is an element error. */
export function num(args: readonly Value[], i: number, site: CallSite): Dec | undefined {
  const v = args[i] ?? null;
  if (v === null) return undefined;
  const d = asDec(v);
  if (d === undefined)
    throw new EvalError(`${site.name}: argument ${i + 1} must be a number, got ${describe(v)}`);
  return d;
}

export function text(args: readonly Value[], i: number, site: CallSite): string | undefined {
  const v = args[i] ?? null;
  if (v === null) return undefined;
  if (typeof v !== 'string')
    throw new EvalError(`${site.name}: argument ${i + 1} must be text, got ${describe(v)}`);
  return v;
}

export function date(args: readonly Value[], i: number, site: CallSite): LogicDate | undefined {
  const v = args[i] ?? null;
  if (v === null) return undefined;
  if (v instanceof LogicDate) return v;
  if (typeof v === 'string') {
    const d = parseIsoDate(v.slice(0, 10));
    if (d) return d;
  }
  throw new EvalError(`${site.name}: argument ${i + 1} must be a date, got ${describe(v)}`);
}

/** A whole number within ±limit (places, day counts, substring offsets). */
export function int(args: readonly Value[], i: number, site: CallSite, limit = 100_000): number | undefined {
  const d = num(args, i, site);
  if (d === undefined) return undefined;
  if (!d.isInteger() || d.abs().gt(limit))
    throw new EvalError(`${site.name}: argument ${i + 1} must be a whole number within ±${limit}`);
  return d.toNumber();
}

/** The values of a variadic call, a single list argument being spread; each costs a step. */
export function spread(args: readonly Value[], env: Env): readonly Value[] {
  const only = args[0];
  const items = args.length === 1 && Array.isArray(only) ? (only as readonly Value[]) : args;
  step(env, items.length);
  return items;
}
