// Rounding policies on their own: step rounding by mode, then price endings by rule.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  applyEnding,
  applyPolicy,
  endingByDecimals,
  placesOfStep,
  roundedInteger,
  ROUND_MODES,
  roundToStep,
  type RoundingPolicy,
} from '../../src/logic/rounding.ts';
import { D } from '../../src/logic/values.ts';

test('price endings go to the nearest (ties up), up or down', () => {
  const cases: [string, string, 'NEAREST' | 'UP' | 'DOWN', string][] = [
    ['17.23', '.99', 'NEAREST', '16.99'],
    ['14.73', '.99', 'NEAREST', '14.99'],
    ['10.49', '.99', 'NEAREST', '10.99'],
    ['17.99', '.99', 'UP', '17.99'],
    ['17.99', '.99', 'DOWN', '17.99'],
    ['123.4', '9.90', 'NEAREST', '119.9'],
    ['123.4', '9.90', 'UP', '129.9'],
    ['123.4', '9.90', 'DOWN', '119.9'],
    ['5', '.95', 'UP', '5.95'],
    ['0.50', '.99', 'DOWN', '0.99'],
    // Below zero no price with the ending lies at or below without going negative: the least one.
    ['-3', '9.90', 'DOWN', '9.9'],
    ['-3', '9.90', 'NEAREST', '9.9'],
    ['-3', '.95', 'NEAREST', '0.95'],
    ['-0.01', '.99', 'DOWN', '0.99'],
    ['0', '.95', 'NEAREST', '0.95'],
  ];
  for (const [y, ending, rule, want] of cases)
    assert.equal(applyEnding(new D(y), ending, rule).toFixed(), want, `${y} ${ending} ${rule}`);
});

/** A rounding policy record of the step, mode and price ending given. */
function policy(
  step: string,
  mode: RoundingPolicy['mode'],
  priceEnding: string | null,
  endingRule: RoundingPolicy['endingRule'] = 'NEAREST',
): RoundingPolicy {
  return {
    id: 1,
    uniqueName: 'p',
    currency: 'EUR',
    channel: null,
    customerGroup: null,
    step: new D(step),
    mode,
    priceEnding,
    endingRule,
    version: 0,
  };
}

test('a policy rounds to its step by its mode before the ending', () => {
  assert.equal(applyPolicy(new D('17.8749'), policy('0.05', 'HALF_UP', null)).toFixed(), '17.85');
  assert.equal(applyPolicy(new D('17.825'), policy('0.05', 'DOWN', null)).toFixed(), '17.8');
  assert.equal(applyPolicy(new D('17.825'), policy('1', 'CEILING', null)).toFixed(), '18');
  assert.equal(applyPolicy(new D('14.725'), policy('0.01', 'HALF_UP', '.99')).toFixed(), '14.99');
});

test('a power-of-ten step rounds to places: the same as dividing by the step, in every mode', () => {
  const modes = ['HALF_UP', 'HALF_EVEN', 'UP', 'DOWN', 'CEILING', 'FLOOR'] as const;
  const values = ['12.345', '-12.345', '0.005', '-0.005', '99.995', '1234.5', '2.5', '-2.5', '0', '7'];
  for (const step of ['0.01', '0.1', '1', '0.001', '0.05', '0.25', '10'])
    for (const mode of modes)
      for (const x of values) {
        const s = new D(step);
        const byDivision = new D(x).div(s).toDecimalPlaces(0, ROUND_MODES[mode]).times(s);
        assert.equal(
          roundToStep(new D(x), s, mode).toFixed(),
          byDivision.toFixed(),
          `${x} step ${step} ${mode}`,
        );
      }
});

test('price endings on integers (positive prices) equal the decimal arithmetic, on 60,000 values', () => {
  // A fixed pseudo-random series: prices of 0 to 6 decimal places and up to 13 digits, every ending
  // kind (below one, with whole digits, whole only, more places than the price) and rule.
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  const endings = ['.99', '.95', '9.90', '99', '.5', '0', '.999', '5', '0.01', '.00'];
  const rules = ['NEAREST', 'UP', 'DOWN'] as const;
  for (let i = 0; i < 20_000; i++) {
    const places = next() % 7;
    const digits = 1 + (next() % 13);
    const text = String(next() * 1e6 + next()).slice(0, digits);
    const y = new D(`${text}e-${places}`);
    const ending = endings[next() % endings.length]!;
    for (const rule of rules) {
      const want = endingByDecimals(y, ending, rule);
      const got = applyEnding(y, ending, rule);
      assert.ok(got.eq(want), `${y.toFixed()} ${ending} ${rule}: ${got.toFixed()} ≠ ${want.toFixed()}`);
      assert.equal(got.toFixed(), want.toFixed());
    }
  }
  // Past the integer path's reach (too many digits, zero, negative): the decimal path, unchanged.
  for (const y of ['123456789012345.678', '0', '-3.20', '0.0000001'])
    for (const rule of rules)
      assert.equal(
        applyEnding(new D(y), '.99', rule).toFixed(),
        endingByDecimals(new D(y), '.99', rule).toFixed(),
      );
});

test('a policy on integers (positive prices, power-of-ten steps) equals step rounding then the decimal ending', () => {
  let seed = 777;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  const modes = ['HALF_UP', 'HALF_DOWN', 'HALF_EVEN', 'UP', 'DOWN', 'CEILING', 'FLOOR'] as const;
  const endings = ['.99', '.95', '9.90', '99', '.5', '0', '.999'];
  const steps = ['0.01', '0.1', '1', '0.001', '0.05'];
  // Exact halves at the step first, then a fixed pseudo-random series of prices.
  const halves = ['13.475', '13.485', '0.005', '2.5', '9.995', '0.0049', '17.8749'];
  for (let i = 0; i < 20_000; i++) {
    const x =
      i < halves.length
        ? new D(halves[i]!)
        : new D(`${String(next() * 1e6 + next()).slice(0, 1 + (next() % 14))}e-${next() % 8}`);
    const ending = endings[next() % endings.length]!;
    const p = policy(
      steps[next() % steps.length]!,
      modes[next() % modes.length]!,
      ending,
      (['NEAREST', 'UP', 'DOWN'] as const)[next() % 3],
    );
    const want = endingByDecimals(roundToStep(x, p.step, p.mode), ending, p.endingRule);
    assert.equal(
      applyPolicy(x, p).toFixed(),
      want.toFixed(),
      `${x.toFixed()} ${JSON.stringify({ ...p, step: p.step.toFixed() })}`,
    );
  }
});

test('step rounding on integers equals toDecimalPlaces in every mode, exact halves included', () => {
  let seed = 4242;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  const halves = ['13.475', '13.485', '0.005', '2.5', '3.5', '9.995', '0.125', '0.135', '1234567.5'];
  for (let i = 0; i < 20_000; i++) {
    const x =
      i < halves.length * 4
        ? new D(halves[i % halves.length]!)
        : new D(`${String(next() * 1e6 + next()).slice(0, 1 + (next() % 15))}e-${next() % 9}`);
    // The halves at the places that make them ties (and one fewer), the series at any.
    const places = i < halves.length * 4 ? Math.max(0, (x.decimalPlaces() - 1 - (i % 2)) | 0) : next() % 8;
    for (const [name, mode] of Object.entries(ROUND_MODES)) {
      const got = roundedInteger(x, places, mode);
      const want = x.toDecimalPlaces(places, mode).times(new D(10).pow(places));
      if (got === undefined)
        assert.ok(want.isZero() || !want.lt(2 ** 53), `${x.toFixed()} ${places} ${name}`);
      else assert.equal(String(got), want.toFixed(), `${x.toFixed()} to ${places} places ${name}`);
    }
  }
});

test('power-of-ten steps are known by their digits (0.01 is a limb of 100000 in decimal.js)', () => {
  const cases: [string, number | undefined][] = [
    ['0.01', 2],
    ['0.1', 1],
    ['1', 0],
    ['0.0000001', 7],
    ['1e-12', 12],
    ['0.010', 2],
    ['0.05', undefined],
    ['0.25', undefined],
    ['10', undefined],
    ['100', undefined],
    ['-0.01', undefined],
    ['0.11', undefined],
  ];
  for (const [step, places] of cases) assert.equal(placesOfStep(new D(step)), places, step);
});
