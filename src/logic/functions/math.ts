// Arithmetic built-ins: rounding with an explicit mode, floor/ceil, abs, min/max, sum/avg/count.
// All decimal; null arguments give null (min/max/sum/avg skip nulls, as a spreadsheet does).

import { EvalError } from '../failures.ts';
import { isRoundMode, roundTo, ROUND_MODES, type RoundMode } from '../rounding.ts';
import { compareValues, D, type Dec, type Value } from '../values.ts';
import { int, num, spread, text } from './args.ts';
import { fn, type CallSite, type FnDef } from './types.ts';

function modeArg(args: readonly Value[], i: number, site: CallSite): RoundMode {
  const m = text(args, i, site) ?? 'HALF_UP';
  if (!isRoundMode(m))
    throw new EvalError(`${site.name}: rounding mode must be one of ${Object.keys(ROUND_MODES).join(', ')}`);
  return m;
}

function extreme(
  args: readonly Value[],
  env: Parameters<FnDef['run']>[1],
  site: CallSite,
  sign: 1 | -1,
): Value {
  let best: Value = null;
  for (const v of spread(args, env)) {
    if (v === null) continue;
    if (best === null) {
      best = v;
      continue;
    }
    const c = compareValues(v, best);
    if (c === undefined) throw new EvalError(`${site.name}: values cannot be compared`);
    if (c * sign > 0) best = v;
  }
  return best;
}

function numbers(args: readonly Value[], env: Parameters<FnDef['run']>[1], site: CallSite): Dec[] {
  const out: Dec[] = [];
  const items = spread(args, env);
  for (let i = 0; i < items.length; i++) {
    const d = num(items, i, site);
    if (d !== undefined) out.push(d);
  }
  return out;
}

export const MATH: readonly FnDef[] = [
  fn({
    name: 'round',
    min: 1,
    max: 3,
    params: ['number', 'number', 'text'],
    returns: 'number',
    doc: 'Rounds to `places` decimals (default 0) by `mode`: HALF_UP (default), HALF_DOWN, HALF_EVEN, UP, DOWN, CEILING, FLOOR.',
    example: 'round(12.345, 2, "HALF_EVEN") = 12.34',
    run(args, _env, site) {
      const x = num(args, 0, site);
      const places = args.length > 1 ? int(args, 1, site, 40) : 0;
      if (x === undefined || places === undefined) return null;
      return roundTo(x, places, modeArg(args, 2, site));
    },
  }),
  fn({
    name: 'floor',
    min: 1,
    max: 2,
    params: ['number', 'number'],
    returns: 'number',
    doc: 'Rounds down (towards minus infinity) to `places` decimals (default 0).',
    example: 'floor(-2.5) = -3',
    run(args, _env, site) {
      const x = num(args, 0, site);
      const places = args.length > 1 ? int(args, 1, site, 40) : 0;
      return x === undefined || places === undefined ? null : roundTo(x, places, 'FLOOR');
    },
  }),
  fn({
    name: 'ceil',
    min: 1,
    max: 2,
    params: ['number', 'number'],
    returns: 'number',
    doc: 'Rounds up (towards plus infinity) to `places` decimals (default 0).',
    example: 'ceil(2.01) = 3',
    run(args, _env, site) {
      const x = num(args, 0, site);
      const places = args.length > 1 ? int(args, 1, site, 40) : 0;
      return x === undefined || places === undefined ? null : roundTo(x, places, 'CEILING');
    },
  }),
  fn({
    name: 'abs',
    min: 1,
    max: 1,
    params: ['number'],
    returns: 'number',
    doc: 'Absolute value.',
    example: 'abs(-3.5) = 3.5',
    run(args, _env, site) {
      return num(args, 0, site)?.abs() ?? null;
    },
  }),
  fn({
    name: 'min',
    min: 1,
    max: 1_000,
    params: ['any'],
    returns: (t) => (t.length === 1 ? 'any' : t.every((x) => x === 'number') ? 'number' : 'any'),
    doc: 'Smallest of the arguments (or of one list), nulls skipped.',
    example: 'min(3, 1.5, null) = 1.5',
    run(args, env, site) {
      return extreme(args, env, site, -1);
    },
  }),
  fn({
    name: 'max',
    min: 1,
    max: 1_000,
    params: ['any'],
    returns: (t) => (t.length === 1 ? 'any' : t.every((x) => x === 'number') ? 'number' : 'any'),
    doc: 'Largest of the arguments (or of one list), nulls skipped.',
    example: 'max(3, 1.5) = 3',
    run(args, env, site) {
      return extreme(args, env, site, 1);
    },
  }),
  fn({
    name: 'sum',
    min: 1,
    max: 1_000,
    params: ['any'],
    returns: 'number',
    doc: 'Sum of the arguments (or of one list), nulls skipped; 0 when all are null.',
    example: 'sum([0.10, 0.20]) = 0.3',
    run(args, env, site) {
      return numbers(args, env, site).reduce((a, b) => a.plus(b), new D(0));
    },
  }),
  fn({
    name: 'avg',
    min: 1,
    max: 1_000,
    params: ['any'],
    returns: 'number',
    doc: 'Average of the arguments (or of one list), nulls skipped; null when there are none.',
    example: 'avg(1, 2, 4) = 2.333333333333333333333333333333333',
    run(args, env, site) {
      const xs = numbers(args, env, site);
      if (xs.length === 0) return null;
      const total = xs.reduce((a, b) => a.plus(b), new D(0));
      // A sum past the exponents (Infinity) of values within them: their shares add up within them.
      return total.isFinite()
        ? total.div(xs.length)
        : xs.reduce((a, b) => a.plus(b.div(xs.length)), new D(0));
    },
  }),
  fn({
    name: 'count',
    min: 1,
    max: 1_000,
    params: ['any'],
    returns: 'number',
    doc: 'Number of non-null arguments (or items of one list).',
    example: 'count([1, null, 3]) = 2',
    run(args, env) {
      return new D(spread(args, env).filter((v) => v !== null).length);
    },
  }),
  fn({
    name: 'number',
    min: 1,
    max: 1,
    params: ['any'],
    returns: 'number',
    doc: 'A number from numeric text (null for null).',
    example: 'number("12.50") = 12.5',
    run(args, _env, site) {
      return num(args, 0, site) ?? null;
    },
  }),
];
