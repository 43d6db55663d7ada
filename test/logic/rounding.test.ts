// Rounding policies on their own: step rounding by mode, then price endings by rule.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  applyEnding,
  applyPolicy,
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
  ];
  for (const [y, ending, rule, want] of cases)
    assert.equal(applyEnding(new D(y), ending, rule).toFixed(), want, `${y} ${ending} ${rule}`);
});

test('a policy rounds to its step by its mode before the ending', () => {
  const p = (step: string, mode: RoundingPolicy['mode'], priceEnding: string | null): RoundingPolicy => ({
    id: 1,
    uniqueName: 'p',
    currency: 'EUR',
    channel: null,
    customerGroup: null,
    step: new D(step),
    mode,
    priceEnding,
    endingRule: 'NEAREST',
    version: 0,
  });
  assert.equal(applyPolicy(new D('17.8749'), p('0.05', 'HALF_UP', null)).toFixed(), '17.85');
  assert.equal(applyPolicy(new D('17.825'), p('0.05', 'DOWN', null)).toFixed(), '17.8');
  assert.equal(applyPolicy(new D('17.825'), p('1', 'CEILING', null)).toFixed(), '18');
  assert.equal(applyPolicy(new D('14.725'), p('0.01', 'HALF_UP', '.99')).toFixed(), '14.99');
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
