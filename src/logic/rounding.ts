// Rounding policies (type RP): round to a step (0.01, 0.05, 1 ...) by a mode, then optionally move
// the price onto an ending such as .99, .95 or 9.90 — to the nearest such price, or up, or down.
// Pure decimal arithmetic; the explanation shows the policy and the value before and after.

import { roundTo, ROUND_MODES, type RoundMode } from './functions/math.ts';
import { D, type Dec } from './values.ts';

export const ENDING_RULES = ['NEAREST', 'UP', 'DOWN'] as const;
export type EndingRule = (typeof ENDING_RULES)[number];

export interface RoundingPolicy {
  readonly id: number;
  readonly uniqueName: string;
  readonly currency: string;
  readonly channel: string | null;
  readonly customerGroup: string | null;
  readonly step: Dec;
  readonly mode: RoundMode;
  readonly priceEnding: string | null;
  readonly endingRule: EndingRule;
  readonly version: number;
}

const ENDING = /^(\d*)\.(\d+)$|^(\d+)$/;

/** Why an ending is not usable, or undefined: `.99`, `.95`, `9.90`, `99` (digits, at most one point). */
export function endingProblem(ending: string): string | undefined {
  return ENDING.test(ending) && ending.length <= 12
    ? undefined
    : 'must be digits with at most one point, e.g. .99 or 9.90';
}

/** The ending as (value E, block M): candidates are k·M + E. `.99` → (0.99, 1); `9.90` → (9.9, 10). */
function endingOf(ending: string): { e: Dec; m: Dec } {
  const whole = ending.includes('.') ? ending.slice(0, ending.indexOf('.')) : ending;
  return { e: new D(ending.startsWith('.') ? `0${ending}` : ending), m: new D(10).pow(whole.length) };
}

export function roundToStep(x: Dec, step: Dec, mode: RoundMode): Dec {
  return x.div(step).toDecimalPlaces(0, ROUND_MODES[mode]).times(step);
}

export function applyEnding(y: Dec, ending: string, rule: EndingRule): Dec {
  const { e, m } = endingOf(ending);
  const base = y.div(m).floor().times(m).plus(e);
  const candidates = [base.minus(m), base, base.plus(m)].filter((c) => c.gte(0));
  const up = candidates.filter((c) => c.gte(y));
  const down = candidates.filter((c) => c.lte(y));
  const lowestUp = up.reduce<Dec | undefined>((a, c) => (a === undefined || c.lt(a) ? c : a), undefined);
  const highestDown = down.reduce<Dec | undefined>((a, c) => (a === undefined || c.gt(a) ? c : a), undefined);
  if (rule === 'UP') return lowestUp ?? y;
  if (rule === 'DOWN') return highestDown ?? lowestUp ?? y;
  if (lowestUp === undefined) return highestDown ?? y;
  if (highestDown === undefined) return lowestUp;
  // Ties go up: 10.49 between 9.99 and 10.99 is 0.50 from each.
  return lowestUp.minus(y).lte(y.minus(highestDown)) ? lowestUp : highestDown;
}

/** The policy applied to x: step rounding, then the price ending if any. */
export function applyPolicy(x: Dec, p: RoundingPolicy): Dec {
  const stepped = roundToStep(x, p.step, p.mode);
  return p.priceEnding ? applyEnding(stepped, p.priceEnding, p.endingRule) : stepped;
}

export { roundTo };
