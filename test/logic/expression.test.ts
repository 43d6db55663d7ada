// The expression language on its own (no database): decimal exactness, operators, built-ins, the
// checker's errors with line and column, hostile text and the step/time limits. Workflow conditions
// (contracts.md #3) are this language over a record's fields.

import { EvalError, elementFailure } from '../../src/logic/failures.ts';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileCondition, evaluateCondition } from '../../src/logic/condition.ts';
import { AppError } from '../../src/http/errors.ts';

const ok = (text: string, record: Record<string, unknown> = {}): boolean =>
  evaluateCondition(compileCondition(text), record);

function refused(text: string, pattern: RegExp, fields?: string[]): AppError {
  try {
    compileCondition(text, fields);
  } catch (err) {
    assert.ok(err instanceof AppError, `expected AppError for ${text.slice(0, 40)}`);
    assert.equal(err.status, -4);
    assert.equal(err.http, 400);
    assert.match(err.message, pattern);
    return err;
  }
  assert.fail(`expected ${text.slice(0, 40)} to be refused`);
}

describe('decimal arithmetic', () => {
  test('0.1 + 0.2 == 0.3 and sums of cents are exact', () => {
    assert.equal(ok('0.1 + 0.2 == 0.3'), true);
    assert.equal(ok('sum([0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01]) == 0.1'), true);
    assert.equal(ok('1 / 3 * 3 == 1'), false, '1/3 keeps 34 digits; times 3 is 0.999...');
    assert.equal(ok('round(1 / 3 * 3, 2) == 1'), true);
    assert.equal(ok('10 % 3 == 1 and -7 % 3 == -1'), true);
    assert.equal(ok('19.99 * 3 == 59.97'), true);
  });
  test('every rounding mode', () => {
    const cases: [string, string, string][] = [
      ['2.345', 'HALF_UP', '2.35'],
      ['2.345', 'HALF_DOWN', '2.34'],
      ['2.345', 'HALF_EVEN', '2.34'],
      ['2.355', 'HALF_EVEN', '2.36'],
      ['2.341', 'UP', '2.35'],
      ['2.349', 'DOWN', '2.34'],
      ['-2.341', 'CEILING', '-2.34'],
      ['-2.341', 'FLOOR', '-2.35'],
      ['-2.345', 'HALF_UP', '-2.35'],
    ];
    for (const [x, mode, want] of cases)
      assert.equal(ok(`round(${x}, 2, "${mode}") == ${want}`), true, `${x} ${mode}`);
    assert.equal(ok('round(2.5) == 3 and floor(-2.5) == -3 and ceil(2.01) == 3 and abs(-1.5) == 1.5'), true);
    // Negative places round left of the point (as spreadsheets do); they crashed the run before.
    assert.equal(
      ok(
        'round(1234.5, -2) == 1200 and round(1250, -2) == 1300 and floor(1299, -2) == 1200 and ceil(1201, -2) == 1300',
      ),
      true,
    );
    assert.equal(ok('round(-1250, -2, "HALF_EVEN") == -1200 and round(5, -1, "HALF_EVEN") == 0'), true);
  });
  test('numeric text from records compares and computes as decimals', () => {
    assert.equal(ok('amount * 2 == 25.0 and amount > 9', { amount: '12.50' }), true);
    assert.equal(ok('qty >= 10', { qty: 10 }), true);
  });
  test('one compiled expression over many records: each result from its own operands', () => {
    // An operator gives its last result again for the same operands: equal texts and the same
    // decimals repeat it, anything else computes afresh (an error is not kept as a result).
    const c = compileCondition('a / b == f and a * b == c and a - b == d and a % b == g and -a == h');
    const check = (a: unknown, b: unknown, want: boolean) =>
      assert.equal(
        evaluateCondition(c, { a, b, c: 6, d: -1, h: -2, f: '0.6666666666666666666666666666666667', g: 2 }),
        want,
      );
    check('2', '3', true);
    check('2', '3', true);
    check(2, '3', true);
    check('2.0', '3', true);
    check('3', '2', false);
    check('2', '3', true);
    assert.throws(() => check('2', '0', false), /division by zero/);
    assert.throws(() => check('2', '0', false), /division by zero/);
    check('2', '3', true);
    const sum = compileCondition('a + b == c');
    assert.equal(evaluateCondition(sum, { a: '1', b: '2', c: '12' }), true, 'two texts concatenate');
    assert.equal(evaluateCondition(sum, { a: 1, b: '2', c: 3 }), true);
    assert.equal(evaluateCondition(sum, { a: '1', b: '2', c: '12' }), true);
    assert.equal(evaluateCondition(sum, { a: 1, b: '2', c: 3 }), true);
    assert.equal(evaluateCondition(sum, { a: 1, b: '3', c: 3 }), false);
  });
});

describe('operators and built-ins', () => {
  test('logic, comparison, lists, ternary, if, coalesce', () => {
    assert.equal(ok('not (1 > 2) and (true or false) && !false'), true);
    assert.equal(ok('"b" in ["a", "b"] and not (3 in [1, 2])'), true);
    assert.equal(ok('(1 < 2 ? "x" : "y") == "x" and if(false, 1, 2) == 2'), true);
    assert.equal(ok('coalesce(missing, null, 7) == 7'), true);
    assert.equal(ok('missing == null and missing + 1 == null'), true, 'null propagates through arithmetic');
  });
  test('text and date functions', () => {
    assert.equal(
      ok('concat("EUR ", 12.50) == "EUR 12.5" and upper("eur") == "EUR" and lower("A") == "a"'),
      true,
    );
    assert.equal(ok('substring("ABC-123", 4) == "123" and substring("ABC", 0, 2) == "AB"'), true);
    assert.equal(
      ok('contains("Steel bolt", "bolt") and startsWith("MB-1", "MB") and endsWith("MB-1", "-1")'),
      true,
    );
    assert.equal(ok('addDays(date("2026-02-27"), 2) == date("2026-03-01")'), true);
    assert.equal(ok('addMonths(date("2026-01-31"), 1) == date("2026-02-28")'), true);
    assert.equal(ok('daysBetween(date("2026-03-01"), date("2026-03-31")) == 30'), true);
    assert.equal(ok('year(date("2026-03-01")) == 2026 and month(date("2026-03-01")) == 3'), true);
    assert.equal(ok('d > date("2026-01-01")', { d: '2026-05-01' }), true);
  });
  test('min, max, sum, avg, count skip nulls', () => {
    assert.equal(
      ok('min(3, 1.5, null) == 1.5 and max([3, 9, 1]) == 9 and avg(1, 2, 3) == 2 and count([1, null]) == 1'),
      true,
    );
  });
  test('dotted access on nested objects; unknown fields are null', () => {
    assert.equal(ok('customer.address.country == "DE"', { customer: { address: { country: 'DE' } } }), true);
    assert.equal(ok('customer.nothing == null', { customer: {} }), true);
  });
  test('fieldNames restricts the names', () => {
    refused('amount > 1 and other', /unknown field other/, ['amount']);
    assert.equal(evaluateCondition(compileCondition('amount > 1', ['amount']), { amount: 2 }), true);
  });
});

describe('compile errors name line and column', () => {
  test('each kind', () => {
    const e = refused('1 +\n  foo(2)', /line 2, column 3: unknown function foo/);
    assert.deepEqual(e.details, { line: 2, column: 3, problem: 'unknown function foo' });
    refused('round(1, 2, 3, 4)', /round takes 1 to 3 arguments, got 4/);
    refused('"a" * 2', /\* needs numbers, got text and number/);
    refused('round("x", 2) == 1', /round: argument 1 must be number, got text/);
    refused('length(123) == 3', /length: argument 1 must be text or list, got number/);
    refused('length(true) == 3', /length: argument 1 must be text or list, got boolean/);
    refused('1 +', /line 1, column 4: Expected expression after \+/);
    refused('1 == 1 2', /one expression expected/);
    refused('date("2026-02-30") == null', /not a valid YYYY-MM-DD date/);
    refused('1 + 2', /must be true\/false/);
    refused('a = 1', /line 1/);
    refused('a[0] == 1', /indexing/);
    refused('a.b() == 1', /only named functions/);
  });
});

describe('hostile text', () => {
  test('prototype names are refused at compile time', () => {
    for (const t of [
      '__proto__',
      'a.__proto__ == 1',
      'constructor == 1',
      'a.constructor.name == "x"',
      'prototype',
      'x.__defineGetter__',
    ])
      refused(t, /is not allowed/);
  });
  test('prototype names are not reachable through get() or data either', () => {
    assert.equal(ok('a.toString == null and a.valueOf == null', { a: {} }), true);
    assert.throws(() => ok('get(a, "__proto__") == null', { a: {} }), /not allowed/);
  });
  test('deep nesting, long sign runs, huge literals and long text are refused, the process lives', () => {
    refused('('.repeat(10_000) + '1' + ')'.repeat(10_000), /longer than|nesting deeper/);
    refused('('.repeat(100) + '1' + ')'.repeat(100) + ' == 1', /nesting deeper than 64/);
    refused('-'.repeat(1000) + '1 == 1', /signs in a row/);
    refused('not '.repeat(300) + 'true', /nested deeper|parts|signs/);
    refused(`"${'x'.repeat(5000)}" == ""`, /text literal longer/);
    refused(`${'9'.repeat(60)} > 1`, /number literal longer/);
    // Exponents within the decimals' ±1,000: 1e309 is a number (no JavaScript number is), 1e1001 not.
    assert.equal(ok('1e309 / 1e308 == 10 and 1.5e-999 > 0'), true);
    refused('1e1001 > 1', /number literal 1e1001 out of range/);
    refused('1e-1001 > 0', /number literal 1e-1001 out of range/);
    // 34 significant digits: a literal with more would not mean what it says; zeros around them count not.
    assert.equal(ok(`${'1'.repeat(34)} > 0 and 0.000${'1'.repeat(34)} > 0 and 1${'0'.repeat(38)} > 0`), true);
    refused(`1.${'2'.repeat(34)} > 0`, /more than 34 significant digits/);
    refused(`${'9'.repeat(35)} > 0`, /more than 34 significant digits/);
    // A text or record value with more is no number either (it stayed one with all its digits, and
    // `x + 0 == x` was false): compared as text, refused by arithmetic.
    assert.equal(ok('number(Y) + 0 == number(Y)', { Y: '9'.repeat(34) }), true);
    assert.throws(() => ok('number(X) > 0', { X: '9'.repeat(35) }), /number: argument 1 must be a number/);
    assert.throws(() => ok('X + 0 > 0', { X: `1.${'2'.repeat(34)}` }), /\+ needs numbers/);
    // A product or quotient below the exponents' range is out of range, not 0.
    assert.throws(() => ok('1e-999 / 1e999 == 0'), /\/: result out of range/);
    assert.throws(() => ok('1e-999 * 1e-999 == 0'), /\*: result out of range/);
    // A sum past the exponents is out of range too (decimal.js makes it Infinity), wherever it is made.
    assert.throws(() => ok('9e1000 + 9e1000 > 0'), /\+: result out of range/);
    assert.throws(() => ok('-(9e1000 + 9e1000) < 0'), /\+: result out of range/);
    assert.throws(() => ok('sum([9e1000, 9e1000]) > 0'), /sum: result out of range/);
    assert.equal(ok('avg(9e1000, 9e1000) == 9e1000 and avg([9e1000, 7e1000]) == 8e1000'), true);
    // Lists are bounded by the values they hold, nested lists counted as often as they appear.
    const L = Array.from({ length: 40_000 }, () => 1);
    assert.equal(ok('[L, L] == [L, L]', { L }), true);
    assert.throws(() => ok('[L, L, L] == [L]', { L }), /\[\.\.\.\]: a list of more than 100000 values/);
    // And by how deep lists nest: elements wrapping elements nested a result 30,000 lists deep, which
    // the answer's writer could not walk (the request was refused as "nested too deeply").
    let deep: unknown = [1];
    for (let i = 1; i < 60; i++) deep = [deep];
    assert.equal(ok('[[[[D]]]] != null', { D: deep }), true);
    assert.throws(() => ok('[[[[[D]]]]] != null', { D: deep }), /lists nested deeper than 64 levels/);
    assert.equal(ok('0 * 1e-999 == 0 and 0 / 1e999 == 0 and 1e-999 * 1 > 0'), true);
    // Chained `not` is a run of signs as `!` is; names that start with it are not.
    refused(`${'not '.repeat(65)}true`, /more than 64 signs in a row/);
    assert.equal(
      ok(`${'not '.repeat(64)}true and notes == 1 and not(nothing)`, { notes: 1, nothing: false }),
      true,
    );
    refused('1' + ' + 1'.repeat(3000) + ' > 0', /longer than|more than 2000 parts|nested deeper/);
    refused('x'.repeat(20_000), /longer than 16000/);
  });
  test('step and time limits stop an evaluation', () => {
    const c = compileCondition(`count([${Array(1500).fill('1').join(',')}]) > 0`);
    assert.equal(evaluateCondition(c, {}), true);
    assert.throws(
      () => evaluateCondition(c, {}, { maxSteps: 100, maxMs: 1000 }),
      /step limit of 100 exceeded/,
    );
    assert.throws(() => evaluateCondition(c, {}, { maxSteps: 1e9, maxMs: -1 }), /time limit exceeded/);
  });
  test('run-time errors are -4, not crashes', () => {
    assert.throws(
      () => ok('1 / zero > 0', { zero: 0 }),
      (e: unknown) => e instanceof AppError && /division by zero/.test(e.message),
    );
    assert.throws(
      () => ok('amount * 2 > 1', { amount: 'abc' }),
      (e: unknown) => e instanceof AppError && e.status === -4,
    );
  });
});

test('a decimal.js refusal is an element failure (CRITICAL), not a server error', () => {
  const failure = elementFailure(new Error('[DecimalError] Invalid argument: -2'));
  assert.ok(failure instanceof EvalError);
  assert.match(failure.message, /number operation failed: Invalid argument: -2/);
  assert.equal(elementFailure(new TypeError('x is undefined')), undefined);
});
