// Rounding policies (type RP): round to a step (0.01, 0.05, 1 ...) by a mode, then optionally move
// the price onto an ending such as .99, .95 or 9.90 — to the nearest such price, or up, or down.
// Pure decimal arithmetic; the explanation shows the policy and the value before and after.

import { D, decOfScaled, placesOfDec, scaledInteger, SPLIT, splitDec, type Dec } from './values.ts';

/** The rounding modes of policies and of round(x, places, mode), as decimal.js rounding constants. */
export const ROUND_MODES = {
  HALF_UP: D.ROUND_HALF_UP,
  HALF_DOWN: D.ROUND_HALF_DOWN,
  HALF_EVEN: D.ROUND_HALF_EVEN,
  UP: D.ROUND_UP,
  DOWN: D.ROUND_DOWN,
  CEILING: D.ROUND_CEIL,
  FLOOR: D.ROUND_FLOOR,
} as const;
export type RoundMode = keyof typeof ROUND_MODES;

export function isRoundMode(m: string): m is RoundMode {
  return Object.hasOwn(ROUND_MODES, m);
}

/** `places` decimals; negative places round left of the point, as spreadsheets do (-2: hundreds). */
export function roundTo(x: Dec, places: number, mode: RoundMode): Dec {
  if (places >= 0) return x.toDecimalPlaces(places, ROUND_MODES[mode]);
  const unit = new D(10).pow(-places);
  return x.div(unit).toDecimalPlaces(0, ROUND_MODES[mode]).mul(unit);
}

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

interface Ending {
  readonly e: Dec;
  readonly m: Dec;
  readonly inverse: Dec;
  /** Digits before the point (M = 10^whole) and decimal places of E, for the integer path. */
  readonly whole: number;
  readonly places: number | undefined;
}

const ENDINGS = new Map<string, Ending>();

/** The ending as (value E, block M): candidates are k·M + E. `.99` → (0.99, 1); `9.90` → (9.9, 10). */
function endingOf(ending: string): Ending {
  let found = ENDINGS.get(ending);
  if (!found) {
    const whole = ending.includes('.') ? ending.slice(0, ending.indexOf('.')) : ending;
    const e = new D(ending.startsWith('.') ? `0${ending}` : ending);
    found = {
      e,
      m: new D(10).pow(whole.length),
      // M is a power of ten: y / M is y × 10^-n, exact, and far cheaper than a division.
      inverse: new D(`1e-${whole.length}`),
      whole: whole.length,
      places: placesOfDec(e),
    };
    if (ENDINGS.size < 1_000) ENDINGS.set(ending, found);
  }
  return found;
}

/**
 * Decimal places of a positive step that is a power of ten up to 1 (0.01 → 2, 1 → 0), else
 * undefined (0.05, 100, a negative step). By the step's digits: decimal.js's first limb of 0.01 is
 * 100000, not 1.
 */
const POWER_STEPS = new WeakMap<Dec, number | null>();
export function placesOfStep(step: Dec): number | undefined {
  let places = POWER_STEPS.get(step);
  if (places === undefined) {
    places = step.s > 0 && splitDec(step) && SPLIT.digits === 1 && SPLIT.power <= 0 ? 0 - SPLIT.power : null;
    POWER_STEPS.set(step, places);
  }
  return places ?? undefined;
}

export function roundToStep(x: Dec, step: Dec, mode: RoundMode): Dec {
  // A step of 0.01 (or 0.1, 1) is rounding to that many decimal places: the same value, no division.
  const places = placesOfStep(step);
  if (places !== undefined) return x.toDecimalPlaces(places, ROUND_MODES[mode]);
  return x.div(step).toDecimalPlaces(0, ROUND_MODES[mode]).times(step);
}

export function applyEnding(y: Dec, ending: string, rule: EndingRule): Dec {
  const found = endingOf(ending);
  // A positive price of a few digits (every price): the same candidates in exact integer arithmetic,
  // one decimal built instead of about ten.
  if (y.s > 0 && !y.isZero()) {
    const fast = endingByIntegers(y, found, rule);
    if (fast !== undefined) return fast;
  }
  return endingByDecimals(y, found, rule);
}

/** applyEnding for y > 0 on integers at a common scale, or undefined when they would not be exact. */
function endingByIntegers(y: Dec, ending: Ending, rule: EndingRule): Dec | undefined {
  const yPlaces = placesOfDec(y);
  if (yPlaces === undefined) return undefined;
  const Y = scaledInteger(y, yPlaces);
  return Y === undefined ? undefined : endingOnIntegers(Y, yPlaces, ending, rule);
}

/** The ending applied to y = Y × 10^-yScale (Y > 0 a safe integer), or undefined when not exact. */
function endingOnIntegers(Y: number, yScale: number, { e, whole, places }: Ending, rule: EndingRule) {
  if (places === undefined) return undefined;
  const scale = Math.max(yScale, places);
  if (scale + whole > 15 || scale - yScale > 15) return undefined;
  const y = Y * 10 ** (scale - yScale);
  const E = scaledInteger(e, scale);
  if (E === undefined) return undefined;
  const M = 10 ** (whole + scale);
  if (y + E + 2 * M > Number.MAX_SAFE_INTEGER) return undefined;
  // y ≥ 0: y - y % M is floor(y / M) · M, exactly.
  const inBlock = y - (y % M) + E;
  const below = inBlock > y ? inBlock - M : inBlock;
  const up = below === y ? below : below + M;
  let out: number;
  if (rule === 'UP' || below < 0) out = up;
  else if (rule === 'DOWN') out = below;
  else out = up - y <= y - below ? up : below;
  return decOfScaled(out, scale);
}

/**
 * x > 0 rounded to `places` decimals by a decimal.js rounding mode, as an integer at that scale
 * (x.toDecimalPlaces(places, mode) × 10^places), or undefined when x has more than 15 digits or the
 * result would not be a positive safe integer.
 */
export function roundedInteger(x: Dec, places: number, mode: number): number | undefined {
  if (!splitDec(x) || SPLIT.digits === 0) return undefined;
  const m = SPLIT.digits;
  const p = SPLIT.power;
  if (-p <= places) {
    if (p + places > 15) return undefined;
    const n = m * 10 ** (p + places);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  const drop = -p - places;
  if (drop > 15) return undefined;
  const unit = 10 ** drop;
  const rem = m % unit;
  const q = (m - rem) / unit;
  const twice = 2 * rem;
  const away =
    rem !== 0 &&
    (mode === D.ROUND_UP ||
      mode === D.ROUND_CEIL ||
      (mode === D.ROUND_HALF_UP && twice >= unit) ||
      (mode === D.ROUND_HALF_DOWN && twice > unit) ||
      (mode === D.ROUND_HALF_EVEN && (twice > unit || (twice === unit && q % 2 === 1))));
  const n = away ? q + 1 : q;
  return n > 0 ? n : undefined;
}

/** applyEnding in decimal arithmetic (any value: negative, zero, many digits). */
export function endingByDecimals(y: Dec, ending: string | Ending, rule: EndingRule): Dec {
  const { e, m, inverse } = typeof ending === 'string' ? endingOf(ending) : ending;
  // The candidates k·M + E just below (or at) y and just above it.
  const inBlock = y.times(inverse).floor().times(m).plus(e);
  const below = inBlock.gt(y) ? inBlock.minus(m) : inBlock;
  const up = below.eq(y) ? below : below.plus(m);
  const down = below.gte(0) ? below : undefined;
  if (rule === 'UP') return up;
  // No price with the ending at or below y without going negative: the one above — the least
  // that is not negative (E itself when y is below zero: -3 with 9.90 is 9.90, not -0.10).
  if (down === undefined) return up.gte(0) ? up : e;
  if (rule === 'DOWN') return down;
  // Ties go up: 10.49 between 9.99 and 10.99 is 0.50 from each.
  return up.minus(y).lte(y.minus(down)) ? up : down;
}

/** The policy applied to x: step rounding, then the price ending if any. */
export function applyPolicy(x: Dec, p: RoundingPolicy): Dec {
  // A positive price, a power-of-ten step and an ending (the usual policy): both steps on one
  // integer, one decimal built at the end.
  const places = p.priceEnding ? placesOfStep(p.step) : undefined;
  if (places !== undefined && x.s > 0) {
    const Y = roundedInteger(x, places, ROUND_MODES[p.mode]);
    const fast =
      Y === undefined ? undefined : endingOnIntegers(Y, places, endingOf(p.priceEnding!), p.endingRule);
    if (fast !== undefined) return fast;
  }
  const stepped = roundToStep(x, p.step, p.mode);
  return p.priceEnding ? applyEnding(stepped, p.priceEnding, p.endingRule) : stepped;
}
