// Decimal values to JSON numbers: the limb-based conversion gives the same double as decimal.js's
// own toNumber() for every decimal of up to 15 significant digits it accepts.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  asDec,
  D,
  decOfScaled,
  decOfText,
  timesDec,
  RecordValue,
  smallDecToNumber,
  toJson,
  toValue,
  utcDay,
} from '../../src/logic/values.ts';

test('smallDecToNumber equals toNumber() on 100,000 decimals (a fixed pseudo-random series)', () => {
  let seed = 42;
  const rnd = (k: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % k;
  };
  let checked = 0;
  for (let i = 0; i < 100_000; i++) {
    const digits = 1 + rnd(16);
    let s = '';
    for (let j = 0; j < digits; j++) s += String(rnd(10));
    const point = rnd(digits + 8) - 4;
    let t =
      point <= 0
        ? `0.${'0'.repeat(-point)}${s}`
        : point >= digits
          ? s + '0'.repeat(point - digits)
          : `${s.slice(0, point)}.${s.slice(point)}`;
    if (rnd(2) === 1) t = `-${t}`;
    const v = new D(t);
    if (Math.abs(v.e) >= 15) continue;
    const got = smallDecToNumber(v);
    if (v.sd() > 15) {
      assert.equal(got, undefined, t);
      continue;
    }
    assert.ok(got !== undefined, t);
    assert.ok(got === v.toNumber(), `${t}: ${got} ≠ ${v.toNumber()}`);
    checked++;
  }
  assert.ok(checked > 50_000);
});

test('toJson: numbers up to 15 significant digits, exact text beyond', () => {
  assert.equal(toJson(new D('0.1').plus(new D('0.2'))), 0.3);
  assert.equal(toJson(new D('18.35')), 18.35);
  assert.equal(toJson(new D('-17.99')), -17.99);
  assert.equal(toJson(new D('0')), 0);
  assert.equal(toJson(new D('123456789012345')), 123456789012345);
  assert.equal(toJson(new D('1234567890123456')), '1234567890123456');
  assert.equal(toJson(new D('17.91666666666666666666666666666667')), '17.91666666666666666666666666666667');
  assert.equal(toJson(new D('1e20')), '100000000000000000000');
});

test('a record converted again answers the same JSON, shared and frozen from the second time on', () => {
  const rec = new RecordValue({
    id: 7,
    keys: ['C-1', 'P-2'],
    conditionValue: new D('0.02'),
    validFrom: '2026-01-01',
    at: new Date('2026-03-04T23:30:00Z'),
    nested: new RecordValue({ n: 1.5 }),
  });
  const first = toJson(rec) as Record<string, unknown>;
  const want = {
    id: 7,
    keys: ['C-1', 'P-2'],
    conditionValue: 0.02,
    validFrom: '2026-01-01',
    at: '2026-03-04',
    nested: { n: 1.5 },
  };
  assert.deepEqual(first, want);
  assert.equal(Object.isFrozen(first), false, 'the first conversion is the caller’s own');
  first.id = 8;
  const second = toJson(rec) as Record<string, unknown>;
  assert.deepEqual(second, want);
  assert.equal(toJson(rec), second, 'kept');
  assert.ok(Object.isFrozen(second) && Object.isFrozen(second.keys) && Object.isFrozen(second.nested));
});

test('a record as JSON: each stored field as toJson of its logic value', () => {
  const fields: Record<string, unknown> = {
    text: 'x',
    yes: true,
    none: null,
    missing: undefined,
    int: 123456789012345,
    big: 1234567890123456,
    negative: -42,
    minusZero: -0,
    fraction: 0.1 + 0.2,
    nan: Number.NaN,
    day: new Date('2026-03-04T23:30:00Z'),
    badDay: new Date('nope'),
    dec: new D('1.50'),
    list: [1, 'a', null],
    bigint: 12n,
    object: { a: 1 },
  };
  const json = toJson(new RecordValue(fields)) as Record<string, unknown>;
  for (const [k, v] of Object.entries(fields)) assert.deepEqual(json[k], toJson(toValue(v)), k);
  assert.equal(Object.is(json.minusZero, 0), true);
  assert.equal(json.big, '1234567890123456');
});

test('utcDay: the day toISOString() writes, for times on both sides of midnight and far years', () => {
  const times = [
    '2026-03-04T23:59:59.999Z',
    '2026-03-05T00:00:00.000Z',
    '2026-03-04T00:00:00.000Z',
    '1969-12-31T23:59:59.999Z',
    '1970-01-01T00:00:00.000Z',
    '0001-01-01T12:00:00.000Z',
    '+020000-06-01T00:00:00.000Z',
    '-000500-06-01T08:00:00.000Z',
  ];
  for (const t of [...times, ...times.slice().reverse()]) {
    const d = new Date(t);
    assert.equal(utcDay(d), d.toISOString().slice(0, 10), t);
  }
  assert.equal(utcDay(new Date('nope')), undefined);
});

test('decOfScaled builds the decimal the text n e-scale parses to: sign, exponent, limbs and fields', () => {
  let seed = 7;
  const rnd = (k: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % k;
  };
  const same = (n: number, scale: number) => {
    const got = decOfScaled(n, scale);
    const want = new D(`${n}e${-scale}`);
    assert.deepEqual([got.s, got.e, got.d], [want.s, want.e, want.d], `${n}e${-scale}`);
    assert.deepEqual(Object.keys(got), Object.keys(want));
    assert.equal(got.toFixed(), want.toFixed());
    assert.ok(got.times(3).eq(want.times(3)) && got.plus(1).eq(want.plus(1)));
  };
  for (let scale = -4; scale <= 24; scale++) for (let n = 1; n <= 1200; n++) same(n, scale);
  for (const n of [Number.MAX_SAFE_INTEGER, 9e15, 1e15, 1234567, 12345678, 1e7, 9999999, 99999999999999])
    for (let scale = -3; scale <= 24; scale++) same(n, scale);
  for (let i = 0; i < 50_000; i++) {
    const n = Math.floor((1 + rnd(2 ** 30)) * 10 ** rnd(7)) * 10 ** rnd(3);
    if (Number.isSafeInteger(n)) same(n, rnd(30) - 5);
  }
  // Not a positive safe integer: parsed from its text as before.
  assert.ok(decOfScaled(0, 2).isZero());
});

test('timesDec gives the decimal times() gives (sign, exponent, limbs, fields) on 200,000 pairs', () => {
  let seed = 11;
  const rnd = (k: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % k;
  };
  const decimal = () => {
    const digits = 1 + rnd(rnd(4) === 0 ? 20 : 9);
    let s = '';
    for (let j = 0; j < digits; j++) s += String(rnd(10));
    const v = new D(`${rnd(2) === 1 ? '-' : ''}${s}e${rnd(40) - 25}`);
    return v;
  };
  const same = (x: InstanceType<typeof D>, y: InstanceType<typeof D>) => {
    const got = timesDec(x, y);
    const want = x.times(y);
    const what = `${x.toString()} × ${y.toString()}`;
    assert.deepEqual([got.s, got.e, got.d], [want.s, want.e, want.d], what);
    assert.deepEqual(Object.keys(got), Object.keys(want), what);
    assert.equal(got.toFixed(), want.toFixed(), what);
  };
  for (let i = 0; i < 200_000; i++) same(decimal(), decimal());
  const edges = [
    '0',
    '-0',
    '1',
    '-1',
    '0.5',
    '1e-300',
    '1e300',
    '9e15',
    '94906265',
    '94906266',
    '0.1',
    '19.99',
  ];
  for (const a of edges) for (const b of edges) same(new D(a), new D(b));
  same(new D('123456789012345'), new D('123456789012345'));
  same(new D('1.1'), new D('3'));
});

test('decOfText: the decimal the constructor makes, one instance per text; bad text throws each time', () => {
  for (const t of ['0.05', '-12.5', '1e3', '0', '123456789012345678901234567890.5']) {
    const d = decOfText(t);
    assert.equal(d, decOfText(t), t);
    assert.ok(d instanceof D);
    assert.deepEqual([d.s, d.e, d.d], [new D(t).s, new D(t).e, new D(t).d], t);
  }
  for (const t of ['', ' 1', 'abc', '1,5']) {
    assert.throws(() => new D(t));
    assert.throws(() => decOfText(t), t);
    assert.throws(() => decOfText(t), t);
  }
});

test('asDec: numeric text parsed (the same decimal for the same text), anything else undefined', () => {
  assert.equal(asDec('12.50')?.toFixed(), '12.5');
  assert.equal(asDec('12.50'), asDec('12.50'));
  assert.equal(asDec(' -3e2 ')?.toFixed(), '-300');
  assert.equal(asDec('.5')?.toFixed(), '0.5');
  for (const bad of ['', 'x', '1,5', '1e', '--1', 'Infinity', 'NaN'])
    assert.equal(asDec(bad), undefined, bad);
  // Long texts are parsed every time, not kept.
  const long = `0.${'0'.repeat(40)}${'1'.repeat(34)}`;
  assert.equal(asDec(long)?.toFixed(), long);
  assert.notEqual(asDec(long), asDec(long));
  // More than 34 significant digits: no number (arithmetic would round them away).
  assert.equal(asDec(`1.${'1'.repeat(60)}`), undefined);
  assert.equal(asDec(`${'1'.repeat(34)}${'0'.repeat(10)}`)?.toFixed(), `${'1'.repeat(34)}${'0'.repeat(10)}`);
  for (let i = 0; i < 10_050; i++) assert.equal(asDec(String(i))?.toNumber(), i);
});

test('exponents stay within ±1,000: a huge one is not a number, never a text of a billion digits', () => {
  assert.equal(asDec('9e999999999'), undefined);
  assert.equal(asDec('1e-2000'), undefined);
  assert.equal(asDec('1e1001'), undefined);
  assert.equal(asDec('1e400')?.toFixed().length, 401);
  assert.equal(asDec('0e-5000')?.isZero(), true);
  // A product past the range is Infinity (answered as such), not a number of 10^1200 digits.
  assert.equal(new D('1e600').times('1e600').isFinite(), false);
});
