// The criteria compiler: exact `{ sql, params }` per operator, the errors of each stage, and the
// same filters run against a real table to check the rows: on embedded PGlite always, and on
// PostgreSQL too when DATABASE_URL is set (in a throw-away schema).

// describe/test return promises that the runner tracks itself, hence `void` (no-floating-promises).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rawDatabases, type RawDb } from '../helpers/raw-db.ts';
import { readFileSync } from 'node:fs';
import {
  compileCriteria,
  compileSort,
  OPERATOR_NAMES,
  parseCriteria,
  resolveCriteria,
  type Operator,
} from '../../src/engine/criteria.ts';
import { Params } from '../../src/db/sql.ts';
import { AppError } from '../../src/http/errors.ts';
import type { FieldSpec, FieldType } from '../../src/engine/types.ts';

const field = (name: string, type: FieldType, column = name, storedAsText = false): [string, FieldSpec] => [
  name,
  { name, column, type, storedAsText },
];

const FIELDS: ReadonlyMap<string, FieldSpec> = new Map([
  field('id', 'integer'),
  field('name', 'string'),
  field('code', 'string'),
  field('qty', 'integer'),
  field('price', 'decimal'),
  field('d', 'date'),
  field('ts', 'datetime'),
  field('flag', 'boolean'),
  field('meta', 'json'),
  // custom attributes: text columns whose type comes from the attribute meta
  field('attr', 'decimal', 'attr', true),
  field('attrDate', 'date', 'attr_d', true),
  field('attrInt', 'integer', 'attr_i', true),
  field('attrTs', 'datetime', 'attr_ts', true),
  field('attrFlag', 'boolean', 'attr_b', true),
]);

type Opts = { textMatchStyle?: string; alias?: string; lenient?: boolean };

function compile(input: unknown, opts: Opts = {}): { sql: string; params: unknown[] } {
  const params = new Params();
  const { criteria } = resolveCriteria(parseCriteria(input, opts), FIELDS, opts);
  return { sql: compileCriteria(criteria, params, opts.alias), params: params.values };
}

const leaf = (fieldName: string, operator: unknown, value?: unknown) => ({ fieldName, operator, value });
const range = (fieldName: string, operator: string, start?: unknown, end?: unknown) => ({
  fieldName,
  operator,
  start,
  end,
});
const adv = (operator: string, ...criteria: unknown[]) => ({
  _constructor: 'AdvancedCriteria',
  operator,
  criteria,
});
const strict = (operator: string, ...criteria: unknown[]) => ({
  ...adv(operator, ...criteria),
  strictSQLFiltering: true,
});

/** Asserts a -4 whose `errors` names exactly `fieldName`. */
function rejects(fn: () => unknown, fieldName: string, message?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof AppError, `expected an AppError, got ${String(err)}`);
    assert.equal(err.status, -4);
    assert.equal(err.http, 400);
    assert.deepEqual(Object.keys(err.errors ?? {}), [fieldName]);
    if (message) assert.match(err.errors?.[fieldName]?.errorMessage ?? '', message);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------

void describe('parseCriteria', () => {
  void test('no filter: undefined, null and {} match everything', () => {
    for (const input of [undefined, null, {}]) assert.deepEqual(compile(input), { sql: 'TRUE', params: [] });
  });

  void test('builds a tree with kinds, the top-level strictSQLFiltering on the tree', () => {
    const tree = parseCriteria({
      ...adv('or', leaf('name', 'equals', 'a'), { operator: 'not', criteria: [leaf('qty', 'isNull')] }),
      strictSQLFiltering: true,
    });
    assert.deepEqual(tree, {
      strict: true,
      root: {
        kind: 'or',
        children: [
          {
            kind: 'leaf',
            fieldName: 'name',
            operator: 'equals',
            value: 'a',
            start: undefined,
            end: undefined,
          },
          {
            kind: 'not',
            children: [
              {
                kind: 'leaf',
                fieldName: 'qty',
                operator: 'isNull',
                value: undefined,
                start: undefined,
                end: undefined,
              },
            ],
          },
        ],
      },
    });
  });

  void test('a single leaf criterion may be given directly', () => {
    assert.deepEqual(compile(leaf('qty', 'greaterThan', 3)), { sql: '"qty" > $1::bigint', params: [3] });
  });

  void test('simple criteria: one match node per key, the textMatchStyle on each', () => {
    assert.deepEqual(parseCriteria({ name: 'a', qty: [1, null] }, { textMatchStyle: 'substring' }), {
      strict: false,
      root: {
        kind: 'and',
        children: [
          { kind: 'match', fieldName: 'name', values: ['a'], style: 'substring' },
          { kind: 'match', fieldName: 'qty', values: [1, null], style: 'substring' },
        ],
      },
    });
  });

  void test('malformed input is a -4 naming the criterion, or "criteria" for the structure', () => {
    rejects(() => parseCriteria('name=1'), 'criteria', /must be an object/);
    rejects(() => parseCriteria([leaf('name', 'equals', 'a')]), 'criteria');
    rejects(
      () => parseCriteria({ _constructor: 'AdvancedCriteria', operator: 5, criteria: [] }),
      'criteria',
      /logical/,
    );
    rejects(() => parseCriteria(adv('xor')), 'criteria', /unknown logical operator "xor"/);
    rejects(() => parseCriteria(adv('equals')), 'criteria', /unknown logical operator/);
    rejects(() => parseCriteria({ operator: 'and', criteria: 'x' }), 'criteria', /must be an array/);
    rejects(() => parseCriteria(adv('and', 'name')), 'criteria', /must be an object/);
    rejects(() => parseCriteria(adv('and', null)), 'criteria');
    rejects(() => parseCriteria(adv('and', { operator: 'equals', value: 1 })), 'criteria', /fieldName/);
    rejects(
      () => parseCriteria({ _constructor: 'Criteria', fieldName: 'a', operator: 'equals' }),
      'criteria',
    );
    rejects(() => parseCriteria(adv('and', leaf('name', 'like', 'a'))), 'name', /unknown operator "like"/);
    rejects(() => parseCriteria(adv('and', leaf('name', 42))), 'name', /must be a string/);
    rejects(() => parseCriteria({ fieldName: 'qty', operator: 'toString' }), 'qty', /unknown operator/);
    rejects(() => parseCriteria({ ...adv('and'), strictSQLFiltering: 'yes' }), 'strictSQLFiltering');
    rejects(() => parseCriteria({ name: { operator: 'equals' } }), 'name', /must be text/);
    rejects(() => parseCriteria({ name: [['a']] }), 'name');
    rejects(() => parseCriteria({}, { textMatchStyle: 'fuzzy' }), 'textMatchStyle');
  });
});

void describe('resolveCriteria', () => {
  void test('an unknown field is a -4 naming it', () => {
    rejects(() => compile(leaf('nope', 'equals', 1)), 'nope', /unknown field/);
    rejects(() => compile({ nope: 1 }), 'nope', /unknown field/);
    rejects(() => compile(leaf('__proto__', 'isNull')), '__proto__');
  });

  void test('an operator the field type does not allow is a -4 naming the field', () => {
    rejects(
      () => compile(leaf('qty', 'contains', '1')),
      'qty',
      /"contains" does not apply to integer fields/,
    );
    rejects(
      () => compile(leaf('qty', 'iContains', '1')),
      'qty',
      /"iContains" does not apply to integer fields/,
    );
    rejects(() => compile(leaf('flag', 'greaterThan', true)), 'flag');
    rejects(() => compile(leaf('meta', 'greaterThan', 1)), 'meta');
    rejects(() => compile(leaf('meta', 'equals', 1)), 'meta');
    rejects(() => compile(leaf('meta', 'inSet', [1])), 'meta');
    rejects(() => compile(range('flag', 'between', true, false)), 'flag');
    rejects(() => compile(leaf('d', 'regexp', '^2')), 'd');
    rejects(() => compile(leaf('attr', 'startsWith', '1')), 'attr');
    rejects(() => compile({ meta: 1 }), 'meta');
  });

  void test('a value that does not parse as the field type is a -4 naming the field', () => {
    rejects(() => compile(leaf('qty', 'equals', 'abc')), 'qty', /"abc" is not an integer/);
    rejects(() => compile(leaf('qty', 'equals', 1.5)), 'qty');
    rejects(() => compile(leaf('qty', 'equals', '1.5')), 'qty');
    rejects(() => compile(leaf('qty', 'equals', '9223372036854775808')), 'qty');
    rejects(() => compile(leaf('qty', 'equals', true)), 'qty');
    rejects(() => compile(leaf('price', 'equals', 'abc')), 'price', /not a number/);
    rejects(() => compile(leaf('price', 'equals', 'NaN')), 'price');
    rejects(() => compile(leaf('price', 'equals', '1e5000')), 'price');
    rejects(() => compile(leaf('d', 'equals', '2024-13-40')), 'd', /YYYY-MM-DD/);
    rejects(() => compile(leaf('d', 'equals', '2023-02-29')), 'd');
    rejects(() => compile(leaf('d', 'equals', '0000-01-01')), 'd');
    rejects(() => compile(leaf('ts', 'equals', '2024-01-01T24:00')), 'ts');
    rejects(() => compile(leaf('ts', 'equals', 'yesterday')), 'ts');
    rejects(() => compile(leaf('ts', 'equals', '2024-01-01T10:00+16:00')), 'ts');
    rejects(() => compile(leaf('flag', 'equals', 'yes')), 'flag', /true or false/);
    rejects(() => compile(leaf('name', 'equals', { a: 1 })), 'name');
    rejects(() => compile(leaf('name', 'equals', 'a\u0000b')), 'name', /NUL/);
    rejects(() => compile(range('qty', 'between', 1, 'x')), 'qty');
    rejects(() => compile(leaf('qty', 'inSet', [1, 'x'])), 'qty');
    rejects(() => compile({ qty: 'ten' }), 'qty');
  });

  void test('operands of the wrong shape are a -4 naming the field', () => {
    rejects(() => compile(leaf('qty', 'inSet', 1)), 'qty', /array/);
    rejects(() => compile(leaf('qty', 'notInSet', '1,2')), 'qty', /array/);
    rejects(() => compile(leaf('name', 'contains', null)), 'name', /needs a value/);
    rejects(() => compile(leaf('qty', 'greaterThan')), 'qty', /needs a value/);
    rejects(() => compile(leaf('name', 'equalsField', 'nope')), 'name', /another field's name, not "nope"/);
    rejects(() => compile(leaf('name', 'equalsField', 3)), 'name');
    rejects(() => compile(leaf('name', 'equalsField')), 'name', /needs another field's name as its value/);
    rejects(() => compile(leaf('name', 'equalsField', 'qty')), 'name', /cannot compare/);
    rejects(() => compile(leaf('d', 'lessThanField', 'ts')), 'd');
    rejects(() => compile(leaf('name', 'regexp', '(')), 'name', /regular expression/);
    rejects(() => compile(leaf('name', 'regexp', '*a')), 'name');
    // A range takes start and end, the others value: the wrong one is refused, not ignored (a
    // `between` with `value` had no bound and matched every row).
    rejects(() => compile(leaf('name', 'between', 't1')), 'name', /takes "start" and "end", not "value"/);
    rejects(() => compile({ ...range('qty', 'equals', 1), value: 1 }), 'qty', /takes "value", not "start"/);
    rejects(() => compile({ ...leaf('qty', 'lessThan', 1), end: 2 }), 'qty', /not "end"/);
    // Unknown or misspelt properties of a criterion or a group.
    rejects(
      () => compile({ fieldName: 'qty', operator: 'equals', valu: 1 }),
      'qty',
      /unknown property "valu"/,
    );
    rejects(() => compile({ ...leaf('qty', 'inSet', [1]), values: [2] }), 'qty', /unknown property "values"/);
    rejects(() => compile({ ...adv('and', leaf('qty', 'equals', 1)), bogus: 1 }), 'criteria', /"bogus"/);
    // A range with one bound, and null for what does not apply, are fine; with no bound at all,
    // nothing is checked (conventions: "a missing/null bound is not checked").
    compile(range('qty', 'between', 1));
    assert.equal(compile(range('qty', 'between')).sql, compile(adv('and')).sql);
    assert.equal(compile(range('qty', 'iBetweenInclusive', null, null)).sql, compile(adv('and')).sql);
    compile({ ...range('qty', 'between', 1, 2), value: null });
    compile({ ...leaf('qty', 'equals', 1), start: null, end: null, _constructor: 'AdvancedCriteria' });
  });

  void test('values are coerced to the field type', () => {
    const p = (name: string, value: unknown) => compile(leaf(name, 'equals', value)).params[0];
    assert.equal(p('qty', '42'), 42);
    assert.equal(p('qty', ' -7 '), -7);
    assert.equal(p('qty', '9007199254740993'), '9007199254740993'); // past 2^53 stays exact
    assert.equal(p('qty', '-9223372036854775808'), '-9223372036854775808'); // the bigint minimum
    assert.equal(p('price', 1.5), '1.5');
    assert.equal(p('price', ' 12.50 '), '12.50');
    assert.equal(p('price', '-.5e3'), '-.5e3');
    assert.equal(p('d', '2024-02-29'), '2024-02-29');
    assert.equal(p('ts', '2024-01-10'), '2024-01-10T00:00:00Z');
    assert.equal(p('ts', '2024-01-10 10:00'), '2024-01-10T10:00:00Z');
    assert.equal(p('ts', '2024-01-10T10:00:00.123456+0530'), '2024-01-10T10:00:00.123456+05:30');
    assert.equal(p('ts', '2024-01-10T10:00:00z'), '2024-01-10T10:00:00Z');
    assert.equal(p('ts', 0), '1970-01-01T00:00:00.000Z');
    assert.equal(p('flag', 'TRUE'), true);
    assert.equal(p('flag', 'false'), false);
    assert.equal(p('name', 12), '12');
    assert.equal(p('attrInt', '10'), 10);
  });

  void test('lenient mode drops invalid leaves and reports them; strict mode reports none', () => {
    const tree = parseCriteria(
      adv(
        'and',
        leaf('qty', 'equals', 1),
        leaf('nope', 'equals', 1),
        leaf('qty', 'contains', '1'),
        leaf('d', 'equals', 'soon'),
      ),
    );
    const params = new Params();
    const { criteria, dropped } = resolveCriteria(tree, FIELDS, { lenient: true });
    assert.equal(compileCriteria(criteria, params), '"qty" = $1::bigint');
    assert.deepEqual(params.values, [1]);
    assert.deepEqual(dropped, [
      { field: 'nope', message: 'unknown field "nope"' },
      { field: 'qty', message: 'operator "contains" does not apply to integer fields' },
      { field: 'd', message: '"soon" is not a date (YYYY-MM-DD)' },
    ]);
    // lenience is resolve's: a malformed structure is still refused by parse
    rejects(() => parseCriteria(adv('and', { nope2: 'x' })), 'criteria');
    assert.deepEqual(resolveCriteria(parseCriteria({ qty: 1 }), FIELDS).dropped, []);
  });

  void test('lenient mode drops unknown simple-criteria fields too, and an all-dropped filter matches everything', () => {
    const { criteria, dropped } = resolveCriteria(parseCriteria({ nope: 1, other: 2 }), FIELDS, {
      lenient: true,
    });
    assert.equal(compileCriteria(criteria, new Params()), 'TRUE');
    assert.deepEqual(
      dropped.map((d) => d.field),
      ['nope', 'other'],
    );
  });

  void test('compileCriteria only takes resolved criteria', () => {
    const tree = parseCriteria(leaf('qty', 'equals', 1));
    // @ts-expect-error a parsed tree has not been checked against the fields
    assert.throws(() => compileCriteria(tree, new Params()));
  });
});

void describe('compileCriteria: exact SQL', () => {
  const cases: Array<[string, unknown, string, unknown[], Opts?]> = [
    // comparison
    ['equals', leaf('name', 'equals', 'Apple'), '"name" = $1::text', ['Apple']],
    ['equals null is IS NULL', leaf('name', 'equals', null), '"name" IS NULL', []],
    ['notEqual null is IS NOT NULL', leaf('name', 'notEqual'), '"name" IS NOT NULL', []],
    [
      'notEqual matches NULLs',
      leaf('name', 'notEqual', 'a'),
      'NOT coalesce("name" = $1::text, false)',
      ['a'],
    ],
    ['notEqual strict', strict('and', leaf('name', 'notEqual', 'a')), 'NOT ("name" = $1::text)', ['a']],
    ['iEquals', leaf('name', 'iEquals', 'A'), 'lower("name") = lower($1::text)', ['A']],
    [
      'iNotEqual',
      leaf('name', 'iNotEqual', 'A'),
      'NOT coalesce(lower("name") = lower($1::text), false)',
      ['A'],
    ],
    ['greaterThan', leaf('price', 'greaterThan', 1.5), '"price" > $1::numeric', ['1.5']],
    ['greaterOrEqual', leaf('d', 'greaterOrEqual', '2024-01-01'), '"d" >= $1::date', ['2024-01-01']],
    ['lessThan matches NULLs', leaf('qty', 'lessThan', 5), '("qty" < $1::bigint OR "qty" IS NULL)', [5]],
    ['lessThan strict', strict('and', leaf('qty', 'lessThan', 5)), '"qty" < $1::bigint', [5]],
    [
      'lessOrEqual on a datetime',
      leaf('ts', 'lessOrEqual', '2024-01-01T10:00Z'),
      '("ts" <= $1::timestamptz OR "ts" IS NULL)',
      ['2024-01-01T10:00:00Z'],
    ],
    ['boolean', leaf('flag', 'equals', 'true'), '"flag" = $1::boolean', [true]],
    ['with an alias', leaf('qty', 'greaterThan', 1), '"t"."qty" > $1::bigint', [1], { alias: 't' }],
    // range
    [
      'between excludes both ends',
      range('d', 'between', '2024-01-01', '2024-03-01'),
      // Both bounds: NULL fails the lower one, so the upper one does not let it through.
      '("d" > $1::date AND "d" < $2::date)',
      ['2024-01-01', '2024-03-01'],
    ],
    [
      'betweenInclusive',
      strict('and', range('qty', 'betweenInclusive', 1, 9)),
      '("qty" >= $1::bigint AND "qty" <= $2::bigint)',
      [1, 9],
    ],
    [
      'iBetween',
      range('name', 'iBetween', 'a', 'M'),
      '(lower("name") > lower($1::text) AND lower("name") < lower($2::text))',
      ['a', 'M'],
    ],
    [
      'iBetweenInclusive with no start',
      range('name', 'iBetweenInclusive', null, 'm'),
      '(lower("name") <= lower($1::text) OR "name" IS NULL)',
      ['m'],
    ],
    ['between with no end', range('qty', 'between', 3), '"qty" > $1::bigint', [3]],
    // text: % _ \ are escaped
    ['contains', leaf('name', 'contains', '50%_\\'), `"name" LIKE $1::text ESCAPE '\\'`, ['%50\\%\\_\\\\%']],
    ['startsWith', leaf('name', 'startsWith', 'a_'), `"name" LIKE $1::text ESCAPE '\\'`, ['a\\_%']],
    ['endsWith', leaf('name', 'endsWith', '%'), `"name" LIKE $1::text ESCAPE '\\'`, ['%\\%']],
    ['iContains', leaf('name', 'iContains', 'A'), `lower("name") LIKE lower($1::text) ESCAPE '\\'`, ['%A%']],
    [
      'iStartsWith',
      leaf('name', 'iStartsWith', 'A'),
      // A range of the prefix (bounds an index scan takes from parameters), not LIKE.
      `(lower("name") ~>=~ lower($1::text) AND lower("name") ~<~ (left(lower($1::text), -1) || chr(ascii(right(lower($1::text), 1)) + 1)))`,
      ['A'],
    ],
    // An empty prefix, or one ending in a character outside ASCII, keeps LIKE (planned per value).
    [
      'iStartsWith empty',
      leaf('name', 'iStartsWith', ''),
      `lower("name") LIKE lower($1::text) ESCAPE '\\'`,
      ['%'],
    ],
    [
      'iStartsWith ending outside ASCII',
      leaf('name', 'iStartsWith', 'Mü'),
      `lower("name") LIKE lower($1::text) ESCAPE '\\'`,
      ['Mü%'],
    ],
    ['iEndsWith', leaf('name', 'iEndsWith', 'A'), `lower("name") LIKE lower($1::text) ESCAPE '\\'`, ['%A']],
    [
      'notContains matches NULLs',
      leaf('name', 'notContains', 'a'),
      `NOT coalesce("name" LIKE $1::text ESCAPE '\\', false)`,
      ['%a%'],
    ],
    [
      'notStartsWith strict',
      strict('and', leaf('name', 'notStartsWith', 'a')),
      `NOT ("name" LIKE $1::text ESCAPE '\\')`,
      ['a%'],
    ],
    [
      'iNotEndsWith',
      leaf('name', 'iNotEndsWith', 'a'),
      `NOT coalesce(lower("name") LIKE lower($1::text) ESCAPE '\\', false)`,
      ['%a'],
    ],
    // patterns: * and ? are wildcards, everything else literal
    [
      'matchesPattern',
      leaf('name', 'matchesPattern', 'a*b?%_'),
      `"name" LIKE $1::text ESCAPE '\\'`,
      ['a%b_\\%\\_'],
    ],
    ['containsPattern', leaf('name', 'containsPattern', 'a?'), `"name" LIKE $1::text ESCAPE '\\'`, ['%a_%']],
    [
      'startsWithPattern',
      leaf('name', 'startsWithPattern', 'a\\'),
      `"name" LIKE $1::text ESCAPE '\\'`,
      ['a\\\\%'],
    ],
    ['endsWithPattern', leaf('name', 'endsWithPattern', '*x'), `"name" LIKE $1::text ESCAPE '\\'`, ['%%x']],
    [
      'iMatchesPattern',
      leaf('name', 'iMatchesPattern', 'A*'),
      `lower("name") LIKE lower($1::text) ESCAPE '\\'`,
      ['A%'],
    ],
    ['regexp', leaf('name', 'regexp', '^a.+$'), '"name" ~ $1::text', ['^a.+$']],
    ['iregexp', leaf('name', 'iregexp', '(?i)^A'), '"name" ~* $1::text', ['(?i)^A']],
    // null and blank
    ['isNull', leaf('qty', 'isNull'), '"qty" IS NULL', []],
    ['notNull', leaf('qty', 'notNull'), '"qty" IS NOT NULL', []],
    ['isBlank on text', leaf('name', 'isBlank'), `("name" IS NULL OR "name" = '')`, []],
    ['notBlank on text', leaf('name', 'notBlank'), `("name" IS NOT NULL AND "name" <> '')`, []],
    ['isBlank on a number', leaf('qty', 'isBlank'), '"qty" IS NULL', []],
    ['isNull on json', leaf('meta', 'isNull'), '"meta" IS NULL', []],
    // sets
    ['inSet', leaf('qty', 'inSet', [1, '2']), '"qty" = ANY($1::bigint[])', [[1, 2]]],
    [
      'inSet with null',
      leaf('name', 'inSet', ['a', null]),
      '("name" = ANY($1::text[]) OR "name" IS NULL)',
      [['a']],
    ],
    [
      'strict: a null in the set is SQL IN (..., NULL): no member but the others, notInSet matches nothing',
      strict('and', leaf('name', 'inSet', ['a', null]), leaf('qty', 'notInSet', [1, null])),
      '(("name" = ANY($1::text[]) OR NULL) AND NOT (("qty" = ANY($2::bigint[]) OR NULL)))',
      [['a'], [1]],
    ],
    ['inSet []', leaf('d', 'inSet', []), '"d" = ANY($1::date[])', [[]]],
    [
      'notInSet matches NULLs',
      leaf('price', 'notInSet', [1]),
      'NOT coalesce("price" = ANY($1::numeric[]), false)',
      [['1']],
    ],
    [
      'notInSet strict',
      strict('and', leaf('flag', 'notInSet', [true])),
      'NOT ("flag" = ANY($1::boolean[]))',
      [[true]],
    ],
    // field comparisons
    [
      'equalsField (NULL equals NULL)',
      leaf('name', 'equalsField', 'code'),
      '("name" = "code" OR ("name" IS NULL AND "code" IS NULL))',
      [],
    ],
    ['equalsField strict', strict('and', leaf('name', 'equalsField', 'code')), '"name" = "code"', []],
    [
      'notEqualField',
      leaf('name', 'notEqualField', 'code'),
      'NOT coalesce(("name" = "code" OR ("name" IS NULL AND "code" IS NULL)), false)',
      [],
    ],
    [
      'iEqualsField',
      strict('and', leaf('name', 'iEqualsField', 'code')),
      'lower("name") = lower("code")',
      [],
    ],
    [
      'greaterThanField',
      leaf('qty', 'greaterThanField', 'price'),
      '("qty" > "price" OR ("qty" IS NOT NULL AND "price" IS NULL))',
      [],
    ],
    [
      'lessThanField',
      leaf('qty', 'lessThanField', 'price'),
      '("qty" < "price" OR ("qty" IS NULL AND "price" IS NOT NULL))',
      [],
    ],
    [
      'greaterOrEqualField',
      leaf('qty', 'greaterOrEqualField', 'price'),
      '("qty" >= "price" OR "price" IS NULL)',
      [],
    ],
    ['lessOrEqualField', leaf('qty', 'lessOrEqualField', 'price'), '("qty" <= "price" OR "qty" IS NULL)', []],
    [
      'containsField escapes the other field in SQL',
      leaf('name', 'containsField', 'code'),
      `"t"."name" LIKE ('%' || replace(replace(replace("t"."code", '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%') ESCAPE '\\'`,
      [],
      { alias: 't' },
    ],
    [
      'iStartsWithField',
      leaf('name', 'iStartsWithField', 'code'),
      `lower("name") LIKE lower((replace(replace(replace("code", '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%')) ESCAPE '\\'`,
      [],
    ],
    [
      'notEndsWithField',
      leaf('name', 'notEndsWithField', 'code'),
      `NOT coalesce("name" LIKE ('%' || replace(replace(replace("code", '\\', '\\\\'), '%', '\\%'), '_', '\\_')) ESCAPE '\\', false)`,
      [],
    ],
    // typed text columns are cast safely
    ['decimal stored as text', leaf('attr', 'greaterThan', 9), 'rc_try_numeric("attr") > $1::numeric', ['9']],
    ['integer stored as text', leaf('attrInt', 'equals', 9), 'rc_try_numeric("attr_i") = $1::numeric', [9]],
    [
      'date stored as text',
      leaf('attrDate', 'greaterThan', '2024-01-01'),
      'rc_try_date("attr_d") > $1::date',
      ['2024-01-01'],
    ],
    [
      'datetime stored as text',
      leaf('attrTs', 'greaterThan', '2024-01-01T00:00Z'),
      'rc_try_timestamptz("attr_ts") > $1::timestamptz',
      ['2024-01-01T00:00:00Z'],
    ],
    [
      'boolean stored as text',
      leaf('attrFlag', 'equals', false),
      'rc_try_boolean("attr_b") = $1::boolean',
      [false],
    ],
    [
      'inSet on a typed text column',
      leaf('attr', 'inSet', ['1.5', 2]),
      'rc_try_numeric("attr") = ANY($1::numeric[])',
      [['1.5', '2']],
    ],
    [
      'isBlank on a typed text column: its stored text',
      leaf('attr', 'isBlank'),
      `((rc_try_numeric("attr") IS NULL AND "attr" IS NULL) OR "attr" = '')`,
      [],
    ],
    ['notNull on a typed text column: its stored text', leaf('attr', 'notNull'), '"attr" IS NOT NULL', []],
    [
      'field comparison across a typed text column',
      strict('and', leaf('attrInt', 'lessThanField', 'qty')),
      'rc_try_numeric("attr_i") < "qty"',
      [],
    ],
    // logic
    [
      'and / or nest with parentheses',
      adv('and', leaf('qty', 'equals', 1), adv('or', leaf('name', 'isNull'), leaf('flag', 'equals', true))),
      '("qty" = $1::bigint AND ("name" IS NULL OR "flag" = $2::boolean))',
      [1, true],
    ],
    [
      'a nested node without _constructor',
      adv('or', { operator: 'and', criteria: [leaf('qty', 'isNull')] }),
      '"qty" IS NULL',
      [],
    ],
    ['empty and is TRUE', adv('and'), 'TRUE', []],
    ['empty or is FALSE', adv('or'), 'FALSE', []],
    ['empty not is TRUE', adv('not'), 'TRUE', []],
    [
      'not counts a NULL child as false',
      adv('not', leaf('qty', 'equals', 1), leaf('qty', 'greaterThan', 5)),
      'NOT (coalesce("qty" = $1::bigint, false) OR coalesce("qty" > $2::bigint, false))',
      [1, 5],
    ],
    [
      'not strict is plain NOT',
      strict('not', leaf('qty', 'equals', 1), leaf('qty', 'greaterThan', 5)),
      'NOT ("qty" = $1::bigint OR "qty" > $2::bigint)',
      [1, 5],
    ],
    [
      'strictSQLFiltering is inherited by nested nodes',
      strict('and', adv('or', leaf('qty', 'lessThan', 1), leaf('qty', 'notEqual', 5))),
      '("qty" < $1::bigint OR NOT ("qty" = $2::bigint))',
      [1, 5],
    ],
    // simple criteria
    [
      'simple: text by exact (case-insensitive), others by equality',
      { name: 'Apple', qty: '3' },
      '(lower("name") = lower($1::text) AND "qty" = $2::bigint)',
      ['Apple', 3],
    ],
    ['simple exactCase', { name: 'Apple' }, '"name" = $1::text', ['Apple'], { textMatchStyle: 'exactCase' }],
    [
      'simple substring',
      { name: 'a%' },
      `lower("name") LIKE lower($1::text) ESCAPE '\\'`,
      ['%a\\%%'],
      { textMatchStyle: 'substring' },
    ],
    [
      'simple startsWith',
      { name: 'a' },
      `(lower("name") ~>=~ lower($1::text) AND lower("name") ~<~ (left(lower($1::text), -1) || chr(ascii(right(lower($1::text), 1)) + 1)))`,
      ['a'],
      { textMatchStyle: 'startsWith' },
    ],
    [
      'simple startsWith on a number is equality',
      { qty: 10 },
      '"qty" = $1::bigint',
      [10],
      { textMatchStyle: 'startsWith' },
    ],
    ['simple null', { name: null }, '"name" IS NULL', []],
    ['simple list on a number is inSet', { qty: [1, 2] }, '"qty" = ANY($1::bigint[])', [[1, 2]]],
    [
      'simple list on text is one case-insensitive set',
      { name: ['a', 'B', null] },
      '(lower("name") = ANY(ARRAY(SELECT lower(v) FROM unnest($1::text[]) v)) OR "name" IS NULL)',
      [['a', 'B']],
    ],
    [
      'simple list on text, substring: an or of matches',
      { name: ['a', null] },
      `(lower("name") LIKE lower($1::text) ESCAPE '\\' OR "name" IS NULL)`,
      ['%a%'],
      { textMatchStyle: 'substring' },
    ],
    [
      'simple empty list',
      { name: [] },
      'lower("name") = ANY(ARRAY(SELECT lower(v) FROM unnest($1::text[]) v))',
      [[]],
    ],
  ];

  for (const [title, input, sql, params, opts] of cases) {
    void test(title, () => assert.deepEqual(compile(input, opts), { sql, params }));
  }
});

void describe('compileSort', () => {
  void test('a field, a list, descending, by the declared type, tie-breaker last', () => {
    assert.equal(compileSort(undefined, FIELDS), '"id" ASC');
    assert.equal(compileSort([], FIELDS, 't', 'pk'), '"t"."pk" ASC');
    assert.equal(compileSort('name', FIELDS), '"name" ASC NULLS FIRST, "id" ASC');
    assert.equal(
      compileSort(['-qty', 'attr'], FIELDS, 't'),
      '"t"."qty" DESC NULLS LAST, rc_try_numeric("t"."attr") ASC NULLS FIRST, "t"."id" ASC',
    );
  });

  void test('unknown or malformed sortBy is a -4 on sortBy', () => {
    rejects(() => compileSort('nope', FIELDS), 'sortBy', /unknown field "nope"/);
    rejects(() => compileSort(['name', '--qty'], FIELDS), 'sortBy');
    rejects(() => compileSort([1], FIELDS), 'sortBy');
    rejects(() => compileSort({ name: 1 }, FIELDS), 'sortBy');
    rejects(() => compileSort('meta', FIELDS), 'sortBy', /json/);
    rejects(() => compileSort('', FIELDS), 'sortBy');
  });
});

// ---------------------------------------------------------------------------------------------
// The same filters on real databases.

const SETUP = String.raw`
CREATE TABLE items (
  id integer PRIMARY KEY, name text, code text, qty integer, price numeric, d date, ts timestamptz,
  flag boolean, meta jsonb, attr text, attr_d text, attr_i text, attr_ts text, attr_b text
);
INSERT INTO items VALUES
 (1, 'Apple', 'apple', 10, 1.50, '2024-01-10', '2024-01-10T10:00:00Z', true, '{"a":1}',
    '9', '2024-01-05', '9', '2024-01-05T10:00:00Z', 'true'),
 (2, 'apple pie', 'APPLE', 9, 12.00, '2024-02-29', '2024-02-29T23:30:00Z', false, NULL,
    '10', '2024-02-30', '10', '2024-01-05 10:00', 'no'),
 (3, '100% juice', '100%', 0, 0, '2023-12-31', '2023-12-31T00:00:00Z', true, NULL,
    '10.5', '2023-12-31', 'x', '2024-01-05T12:00:00+02:00', 'maybe'),
 (4, 'snake_case', 'snake_case', -5, -2.5, '2024-03-01', '2024-03-01T12:00:00Z', false, NULL,
    'n/a', 'soon', '-5', 'later', 'f'),
 (5, 'back\slash', 'back\', NULL, NULL, NULL, NULL, NULL, NULL, '', '', '', '', ''),
 (6, '', NULL, 3, 3, '2024-01-10', '2024-01-10T09:00:00Z', true, NULL, NULL, NULL, NULL, NULL, NULL),
 (7, NULL, 'misc', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (8, 'o''brien', 'O''Brien', 100, 99.99, '2025-06-15', '2025-06-15T08:15:00+02:00', false, NULL,
    ' 1e3 ', '2025-06-15', '100', '2025-13-01T00:00:00Z', 'TRUE'),
 (9, 'abc', '%', 1, 1, '2024-01-01', '2024-01-01T00:00:00Z', true, NULL,
    '1e999999', '2024-1-1', '1.0', NULL, NULL);
`;

const ALL = [1, 2, 3, 4, 5, 6, 7, 8, 9];
const except = (...ids: number[]) => ALL.filter((id) => !ids.includes(id));

/** [title, criteria, ids expected, options]; the rows are described in SETUP above. */
const ROW_CASES: Array<[string, unknown, number[], Opts?]> = [
  // comparison
  ['equals text', leaf('name', 'equals', 'Apple'), [1]],
  ['equals is case-sensitive', leaf('name', 'equals', 'apple'), []],
  ['equals null', leaf('name', 'equals', null), [7]],
  ['equals null, strict', strict('and', leaf('name', 'equals', null)), [7]],
  ['notEqual matches NULLs', leaf('name', 'notEqual', 'Apple'), except(1)],
  ['notEqual, strict', strict('and', leaf('name', 'notEqual', 'Apple')), except(1, 7)],
  ['notEqual null', leaf('name', 'notEqual', null), except(7)],
  // strictSQLFiltering on a nested criteria holds for its subtree (and only there).
  ['strict nested', adv('and', strict('and', leaf('name', 'notEqual', 'Apple'))), except(1, 7)],
  [
    'strict nested beside a lenient sibling',
    adv('and', strict('and', leaf('name', 'notEqual', 'Apple')), leaf('qty', 'lessThan', 1)),
    [3, 4, 5], // qty lessThan 1 still matches its NULLs (5; 7's name is NULL, out by the strict part)
  ],
  [
    'strict false nested under a strict top level',
    strict('and', { ...adv('and', leaf('name', 'notEqual', 'Apple')), strictSQLFiltering: false }),
    except(1),
  ],
  [
    'strict on a nested leaf',
    adv('and', { ...leaf('name', 'notEqual', 'Apple'), strictSQLFiltering: true }),
    except(1, 7),
  ],
  ['iEquals', leaf('name', 'iEquals', 'APPLE'), [1]],
  ['iNotEqual', leaf('name', 'iNotEqual', 'apple'), except(1)],
  ['iNotEqual, strict', strict('and', leaf('name', 'iNotEqual', 'apple')), except(1, 7)],
  ['equals integer', leaf('qty', 'equals', '10'), [1]],
  ['notEqual integer', leaf('qty', 'notEqual', 10), except(1)],
  ['greaterThan never matches NULL', leaf('qty', 'greaterThan', 9), [1, 8]],
  ['lessThan: NULL sorts lowest', leaf('qty', 'lessThan', 1), [3, 4, 5, 7]],
  ['lessThan, strict', strict('and', leaf('qty', 'lessThan', 1)), [3, 4]],
  ['greaterOrEqual', leaf('qty', 'greaterOrEqual', 9), [1, 2, 8]],
  ['lessOrEqual', leaf('qty', 'lessOrEqual', 0), [3, 4, 5, 7]],
  ['lessOrEqual, strict', strict('and', leaf('qty', 'lessOrEqual', 0)), [3, 4]],
  ['decimal compares numerically', leaf('price', 'greaterThan', '1.5'), [2, 6, 8]],
  ['decimal equality ignores scale', leaf('price', 'equals', 1.5), [1]],
  ['date', leaf('d', 'lessThan', '2024-01-01'), [3, 5, 7]],
  ['datetime', leaf('ts', 'greaterOrEqual', '2024-02-29T23:30:00Z'), [2, 4, 8]],
  ['datetime with an offset', leaf('ts', 'greaterThan', '2024-03-01T13:00:00+02:00'), [4, 8]],
  ['datetime equality across offsets', leaf('ts', 'equals', '2025-06-15T06:15:00Z'), [8]],
  ['boolean', leaf('flag', 'equals', true), [1, 3, 6, 9]],
  ['boolean from text', leaf('flag', 'equals', 'false'), [2, 4, 8]],
  ['notEqual boolean matches NULLs', leaf('flag', 'notEqual', true), [2, 4, 5, 7, 8]],
  ['text ordering', leaf('name', 'lessThan', 'b'), [1, 2, 3, 6, 7, 9]],
  // range
  ['between excludes both ends', range('qty', 'between', 0, 10), [2, 6, 9]],
  ['betweenInclusive', range('qty', 'betweenInclusive', 0, 10), [1, 2, 3, 6, 9]],
  ['between with only an end is lessThan', range('qty', 'between', null, 1), [3, 4, 5, 7]],
  ['between with only an end, strict', strict('and', range('qty', 'between', null, 1)), [3, 4]],
  ['between with only a start', range('qty', 'between', 9), [1, 8]],
  ['between dates', range('d', 'between', '2024-01-01', '2024-03-01'), [1, 2, 6]],
  ['betweenInclusive decimals', range('price', 'betweenInclusive', '0', 3), [1, 3, 6, 9]],
  ['iBetween', range('name', 'iBetween', 'APPLE', 'B'), [2]],
  ['iBetweenInclusive', range('name', 'iBetweenInclusive', 'apple', 'APPLE PIE'), [1, 2]],
  // Numbers, dates and booleans have no case: the i-forms compare as the plain ones.
  ['iBetween integer', range('qty', 'iBetween', 0, 10), [2, 6, 9]],
  ['iBetweenInclusive decimals', range('price', 'iBetweenInclusive', '0', 3), [1, 3, 6, 9]],
  ['iBetween dates', range('d', 'iBetween', '2024-01-01', '2024-03-01'), [1, 2, 6]],
  ['iEquals integer', leaf('qty', 'iEquals', '10'), [1]],
  ['iNotEqual boolean matches NULLs', leaf('flag', 'iNotEqual', true), [2, 4, 5, 7, 8]],
  // text
  ['contains', leaf('name', 'contains', 'apple'), [2]],
  ['contains %', leaf('name', 'contains', '%'), [3]],
  ['contains _', leaf('name', 'contains', '_'), [4]],
  ['contains \\', leaf('name', 'contains', '\\'), [5]],
  ['contains a quote', leaf('name', 'contains', "'"), [8]],
  ['contains _ is literal', leaf('name', 'contains', '1_0'), []],
  ['contains empty text', leaf('name', 'contains', ''), except(7)],
  ['startsWith', leaf('name', 'startsWith', '100%'), [3]],
  ['endsWith', leaf('name', 'endsWith', 'e'), [1, 2, 3, 4]],
  ['iContains', leaf('name', 'iContains', 'APPLE'), [1, 2]],
  ['iStartsWith', leaf('name', 'iStartsWith', 'APP'), [1, 2]],
  ['iEndsWith', leaf('name', 'iEndsWith', 'CE'), [3]],
  ['notContains matches NULLs', leaf('name', 'notContains', 'a'), [1, 3, 6, 7, 8]],
  ['notContains, strict', strict('and', leaf('name', 'notContains', 'a')), [1, 3, 6, 8]],
  ['notStartsWith', leaf('name', 'notStartsWith', 'a'), except(2, 9)],
  ['notEndsWith', leaf('name', 'notEndsWith', 'e'), [5, 6, 7, 8, 9]],
  ['iNotContains', leaf('name', 'iNotContains', 'A'), [3, 6, 7, 8]],
  ['iNotStartsWith', leaf('name', 'iNotStartsWith', 'A'), [3, 4, 5, 6, 7, 8]],
  ['iNotEndsWith', leaf('name', 'iNotEndsWith', 'E'), [5, 6, 7, 8, 9]],
  ['iNotEndsWith, strict', strict('and', leaf('name', 'iNotEndsWith', 'E')), [5, 6, 8, 9]],
  // patterns
  ['matchesPattern', leaf('name', 'matchesPattern', 'a*'), [2, 9]],
  ['matchesPattern ?', leaf('name', 'matchesPattern', '?bc'), [9]],
  ['matchesPattern *', leaf('name', 'matchesPattern', '*'), except(7)],
  ['containsPattern', leaf('name', 'containsPattern', 'p?e'), [1, 2]],
  ['startsWithPattern keeps % literal', leaf('name', 'startsWithPattern', '1*%'), [3]],
  ['endsWithPattern keeps _ literal', leaf('name', 'endsWithPattern', '_c?se'), [4]],
  ['iMatchesPattern', leaf('name', 'iMatchesPattern', 'A*E'), [1, 2]],
  ['iContainsPattern', leaf('name', 'iContainsPattern', 'APP*E'), [1, 2]],
  ['iStartsWithPattern', leaf('name', 'iStartsWithPattern', 'O?B'), [8]],
  ['iEndsWithPattern keeps \\ literal', leaf('name', 'iEndsWithPattern', '\\*SLASH'), [5]],
  ['regexp', leaf('name', 'regexp', '^[a-z]+ '), [2]],
  ['regexp with a backslash', leaf('name', 'regexp', '\\\\'), [5]],
  ['iregexp', leaf('name', 'iregexp', '^apple'), [1, 2]],
  // null and blank
  ['isNull', leaf('name', 'isNull'), [7]],
  ['notNull', leaf('name', 'notNull'), except(7)],
  ['isBlank', leaf('name', 'isBlank'), [6, 7]],
  ['notBlank', leaf('name', 'notBlank'), except(6, 7)],
  ['isNull on a number', leaf('qty', 'isNull'), [5, 7]],
  // Null and blank are the stored text's: an unparsable value is neither (the record answers it).
  ['isBlank on a typed text column: stored text null or empty', leaf('attr', 'isBlank'), [5, 6, 7]],
  ['notBlank on a typed text column', leaf('attr', 'notBlank'), [1, 2, 3, 4, 8, 9]],
  ['notNull on json', leaf('meta', 'notNull'), [1]],
  // sets
  ['inSet text', leaf('name', 'inSet', ['Apple', 'abc', "o'brien"]), [1, 8, 9]],
  ['inSet integers', leaf('qty', 'inSet', [10, '9', 0]), [1, 2, 3]],
  ['inSet [] matches nothing', leaf('qty', 'inSet', []), []],
  ['notInSet [] matches everything', leaf('qty', 'notInSet', []), ALL],
  ['notInSet [] strict matches everything', strict('and', leaf('qty', 'notInSet', [])), ALL],
  ['inSet with null', leaf('qty', 'inSet', [10, null]), [1, 5, 7]],
  ['notInSet matches NULLs', leaf('qty', 'notInSet', [10, 9]), [3, 4, 5, 6, 7, 8, 9]],
  ['notInSet, strict', strict('and', leaf('qty', 'notInSet', [10, 9])), [3, 4, 6, 8, 9]],
  ['notInSet with null excludes NULLs', leaf('qty', 'notInSet', [10, null]), [2, 3, 4, 6, 8, 9]],
  ['inSet dates', leaf('d', 'inSet', ['2024-01-10']), [1, 6]],
  ['inSet booleans', leaf('flag', 'inSet', [false]), [2, 4, 8]],
  ['inSet decimals', leaf('price', 'inSet', ['1.5', 3]), [1, 6]],
  ['inSet datetimes', leaf('ts', 'inSet', ['2025-06-15T08:15:00+02:00']), [8]],
  ['inSet on a typed text column', leaf('attr', 'inSet', ['10', 9]), [1, 2]],
  // field comparisons
  ['equalsField', leaf('name', 'equalsField', 'code'), [4]],
  ['iEqualsField', leaf('name', 'iEqualsField', 'code'), [1, 4, 8]],
  ['notEqualField matches NULLs', leaf('name', 'notEqualField', 'code'), except(4)],
  ['notEqualField, strict', strict('and', leaf('name', 'notEqualField', 'code')), [1, 2, 3, 5, 8, 9]],
  ['iNotEqualField', leaf('name', 'iNotEqualField', 'code'), except(1, 4, 8)],
  ['equalsField: NULL equals NULL', leaf('qty', 'equalsField', 'price'), [3, 5, 6, 7, 9]],
  ['equalsField, strict', strict('and', leaf('qty', 'equalsField', 'price')), [3, 6, 9]],
  ['greaterThanField', leaf('qty', 'greaterThanField', 'price'), [1, 8]],
  ['lessThanField', leaf('qty', 'lessThanField', 'price'), [2, 4]],
  ['greaterOrEqualField', leaf('qty', 'greaterOrEqualField', 'price'), [1, 3, 5, 6, 7, 8, 9]],
  ['lessOrEqualField', leaf('qty', 'lessOrEqualField', 'price'), [2, 3, 4, 5, 6, 7, 9]],
  ['lessOrEqualField, strict', strict('and', leaf('qty', 'lessOrEqualField', 'price')), [2, 3, 4, 6, 9]],
  ['greaterThanField on a typed text column', leaf('attrInt', 'greaterThanField', 'qty'), [2]],
  ['containsField takes % _ \\ literally', leaf('name', 'containsField', 'code'), [3, 4, 5]],
  ['startsWithField', leaf('name', 'startsWithField', 'code'), [3, 4, 5]],
  ['endsWithField', leaf('name', 'endsWithField', 'code'), [4]],
  ['iContainsField', leaf('name', 'iContainsField', 'code'), [1, 2, 3, 4, 5, 8]],
  ['iStartsWithField', leaf('name', 'iStartsWithField', 'code'), [1, 2, 3, 4, 5, 8]],
  ['iEndsWithField', leaf('name', 'iEndsWithField', 'code'), [1, 4, 8]],
  ['notContainsField matches NULLs', leaf('name', 'notContainsField', 'code'), [1, 2, 6, 7, 8, 9]],
  ['notContainsField, strict', strict('and', leaf('name', 'notContainsField', 'code')), [1, 2, 8, 9]],
  ['notStartsWithField', leaf('name', 'notStartsWithField', 'code'), [1, 2, 6, 7, 8, 9]],
  ['notEndsWithField', leaf('name', 'notEndsWithField', 'code'), except(4)],
  ['iNotContainsField', leaf('name', 'iNotContainsField', 'code'), [6, 7, 9]],
  ['iNotStartsWithField', leaf('name', 'iNotStartsWithField', 'code'), [6, 7, 9]],
  ['iNotEndsWithField', leaf('name', 'iNotEndsWithField', 'code'), [2, 3, 5, 6, 7, 9]],
  // typed text columns: compared by their declared type; unparsable values are NULL
  ['decimal attribute: 10 > 9.5 numerically', leaf('attr', 'greaterThan', 9.5), [2, 3, 8]],
  [
    'decimal attribute: lessThan matches NULL and unparsable',
    leaf('attr', 'lessThan', 10),
    [1, 4, 5, 6, 7, 9],
  ],
  ['decimal attribute, strict', strict('and', leaf('attr', 'lessThan', 10)), [1]],
  ['decimal attribute with spaces and exponent', leaf('attr', 'equals', '1000'), [8]],
  ['date attribute (2024-02-30 is NULL)', leaf('attrDate', 'greaterThan', '2024-01-01'), [1, 8]],
  ['date attribute, notNull: any stored text', leaf('attrDate', 'notNull'), [1, 2, 3, 4, 5, 8, 9]],
  ['date attribute, isNull: no stored text', leaf('attrDate', 'isNull'), [6, 7]],
  ['integer attribute', leaf('attrInt', 'inSet', [1, -5]), [4, 9]],
  ['datetime attribute, offset and UTC', leaf('attrTs', 'equals', '2024-01-05T10:00:00Z'), [1, 2, 3]],
  ['datetime attribute, notNull: any stored text', leaf('attrTs', 'notNull'), [1, 2, 3, 4, 5, 8]],
  ['datetime attribute, inSet with null', leaf('attrTs', 'inSet', [null]), [6, 7, 9]],
  ['boolean attribute', leaf('attrFlag', 'equals', true), [1, 8]],
  ['boolean attribute, notEqual', leaf('attrFlag', 'notEqual', true), [2, 3, 4, 5, 6, 7, 9]],
  // logic
  ['and', adv('and', leaf('name', 'iContains', 'apple'), leaf('qty', 'greaterThan', 9)), [1]],
  ['or', adv('or', leaf('qty', 'equals', 10), leaf('name', 'isNull')), [1, 7]],
  [
    'not: none of the children',
    adv('not', leaf('qty', 'equals', 10), leaf('qty', 'equals', 9)),
    except(1, 2),
  ],
  ['not, strict', strict('not', leaf('qty', 'equals', 10), leaf('qty', 'equals', 9)), [3, 4, 6, 8, 9]],
  ['not over a comparison keeps NULLs', adv('not', leaf('qty', 'greaterThan', 5)), [3, 4, 5, 6, 7, 9]],
  ['empty and', adv('and'), ALL],
  ['empty or', adv('or'), []],
  ['empty not', adv('not'), ALL],
  [
    'nested and/or/not',
    adv(
      'or',
      adv('and', leaf('price', 'greaterOrEqual', 1), leaf('price', 'lessThan', 10)),
      adv('not', leaf('name', 'notNull')),
    ),
    [1, 6, 7, 9],
  ],
  [
    'not of an or of nots',
    adv('not', adv('or', adv('not', leaf('flag', 'equals', true)), leaf('qty', 'lessThan', 2))),
    [1, 6],
  ],
  [
    'strict inherited through nesting',
    strict('and', adv('or', adv('and', leaf('name', 'notEqual', 'Apple')))),
    except(1, 7),
  ],
  // simple criteria
  ['simple exact is case-insensitive', { name: 'apple' }, [1]],
  ['simple exactCase', { name: 'apple' }, [], { textMatchStyle: 'exactCase' }],
  ['simple exactCase match', { name: 'Apple' }, [1], { textMatchStyle: 'exactCase' }],
  ['simple substring', { name: 'APPLE' }, [1, 2], { textMatchStyle: 'substring' }],
  ['simple substring keeps % literal', { name: 'a%' }, [], { textMatchStyle: 'substring' }],
  ['simple startsWith', { name: 'APP' }, [1, 2], { textMatchStyle: 'startsWith' }],
  ['simple startsWith does not find the middle', { name: 'pie' }, [], { textMatchStyle: 'startsWith' }],
  ['simple list, exact', { name: ['apple', 'ABC'] }, [1, 9]],
  ['simple list, exactCase', { name: ['Apple', 'abc', 'ABC'] }, [1, 9], { textMatchStyle: 'exactCase' }],
  ['simple list, substring', { name: ['le', 'ic'] }, [1, 2, 3], { textMatchStyle: 'substring' }],
  ['simple null', { name: null }, [7]],
  ['simple fields are ANDed', { qty: 10, flag: true }, [1]],
  ['simple list on a number', { qty: [10, 9] }, [1, 2]],
  ['simple number ignores the style', { qty: '10' }, [1], { textMatchStyle: 'substring' }],
  ['simple list with null', { qty: [10, null] }, [1, 5, 7]],
  ['simple empty list', { name: [] }, []],
  ['simple date and boolean', { d: '2024-01-10', flag: 'true' }, [1, 6]],
];

const SORT_CASES: Array<[unknown, number[]]> = [
  [undefined, ALL],
  ['-qty', [8, 1, 2, 6, 9, 3, 4, 5, 7]],
  ['qty', [5, 7, 4, 3, 9, 6, 2, 1, 8]],
  ['attr', [4, 5, 6, 7, 9, 1, 2, 3, 8]],
  [
    ['flag', '-name'],
    [5, 7, 4, 8, 2, 9, 1, 3, 6],
  ],
  [
    ['-attrDate', '-id'],
    [8, 1, 3, 9, 7, 6, 5, 4, 2],
  ],
];

void test('every operator is exercised on the database', () => {
  const used = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (typeof v === 'object' && v !== null) {
      const { operator } = v as { operator?: unknown };
      if (typeof operator === 'string') used.add(operator);
      Object.values(v).forEach(walk);
    }
  };
  walk(ROW_CASES.map(([, input]) => input));
  const missing = OPERATOR_NAMES.filter((name: Operator) => !used.has(name));
  assert.deepEqual(missing, []);
  assert.ok(used.has('and') && used.has('or') && used.has('not'));
});

/** The safe-cast functions exactly as the migration creates them. */
const SAFE_CAST_FUNCTIONS_SQL = readFileSync(
  new URL('../../src/db/migrations/002_safe_casts.sql', import.meta.url),
  'utf8',
);

const databases = rawDatabases('rc_criteria_test');

for (const [dbName, open] of databases) {
  void describe(`criteria on ${dbName}`, () => {
    let db: RawDb;
    before(async () => {
      db = await open();
      await db.exec(SAFE_CAST_FUNCTIONS_SQL);
      await db.exec(SETUP);
    });
    after(() => db.close());

    const ids = async (where: string, params: readonly unknown[], orderBy = 't.id') =>
      (await db.query(`SELECT t.id FROM items AS t WHERE ${where} ORDER BY ${orderBy}`, params)).map((r) =>
        Number(r.id),
      );

    for (const [title, input, expected, opts] of ROW_CASES) {
      void test(title, async () => {
        const { sql, params } = compile(input, { ...opts, alias: 't' });
        assert.deepEqual(await ids(sql, params), expected, sql);
      });
    }

    void test('a prefix compiled as a range finds what starts_with(lower(name), lower(prefix)) finds', async () => {
      // Each prefix of each name (as is, upper- and lower-cased by JavaScript) against the database's
      // own prefix test: LIKE's metacharacters, non-ASCII letters whose case the database may fold or
      // not, the last ASCII characters (a prefix ending in a character outside ASCII keeps LIKE).
      const names = [
        'Apple',
        'apple pie',
        'APPLE',
        'ápple',
        'Ápfel',
        'ß',
        'SS',
        'Straße',
        'Ωmega',
        'ωmega',
        'a%b',
        'a_b',
        'a\\b',
        "o'brien",
        'z{',
        'z|',
        'z~',
        'y\x7e',
        'y\x7e1',
        'y\x7f',
        'y\x7f1',
        'ÿ',
        'Ÿ',
        'İstanbul',
        '中文',
        '中',
        '\uD7FE',
        '\uD7FEx',
        '\uE000',
        '𝔸bc',
        '😀x',
        '',
      ];
      await db.exec('CREATE TABLE prefix_items (id integer PRIMARY KEY, name text)');
      for (const [i, n] of [...names, null].entries()) {
        await db.query('INSERT INTO prefix_items VALUES ($1, $2)', [i + 1, n]);
      }
      const prefixes = new Set<string>();
      for (const n of names) {
        const chars = [...n];
        for (let k = 1; k <= chars.length; k++) {
          const p = chars.slice(0, k).join('');
          for (const v of [p, p.toUpperCase(), p.toLowerCase()]) prefixes.add(v);
        }
      }
      let ranged = 0;
      for (const p of prefixes) {
        const { sql, params } = compile(leaf('name', 'iStartsWith', p), { alias: 't' });
        if (sql.includes('~>=~')) ranged++;
        const got = await db.query(`SELECT t.id FROM prefix_items t WHERE ${sql} ORDER BY t.id`, params);
        const want = await db.query(
          'SELECT t.id FROM prefix_items t WHERE starts_with(lower(t.name), lower($1)) ORDER BY t.id',
          [p],
        );
        assert.deepEqual(got, want, `prefix ${JSON.stringify(p)}: ${sql}`);
      }
      // Only prefixes ending outside ASCII (or in DEL) keep LIKE.
      const wide = [...prefixes].filter((p) => p.charCodeAt(p.length - 1) >= 0x7f).length;
      assert.equal(ranged, prefixes.size - wide);
      assert.ok(wide > 0 && ranged > 50, `${ranged} ranged, ${wide} not`);
    });

    for (const [sortBy, expected] of SORT_CASES) {
      void test(`sortBy ${JSON.stringify(sortBy)} with the tie-breaker`, async () => {
        assert.deepEqual(await ids('TRUE', [], compileSort(sortBy, FIELDS, 't')), expected);
      });
    }

    void test('paging on a sort with ties never overlaps or skips', async () => {
      const order = compileSort('flag', FIELDS, 't');
      const pages: number[] = [];
      for (let offset = 0; offset < 9; offset += 2) {
        const rows = await db.query(`SELECT t.id FROM items AS t ORDER BY ${order} LIMIT 2 OFFSET ${offset}`);
        pages.push(...rows.map((r) => Number(r.id)));
      }
      assert.deepEqual(pages, [5, 7, 2, 4, 8, 1, 3, 6, 9]);
    });

    void test('the safe casts answer NULL for what does not parse', async () => {
      const [row] = await db.query(
        `SELECT rc_try_numeric('1e999999') AS overflow, rc_try_numeric(' -1.5e2 ') AS num,
                rc_try_numeric('NaN') AS nan, rc_try_date('2024-02-30') AS bad_day,
                rc_try_date('2024-02-29')::text AS leap, rc_try_date('today') AS today,
                rc_try_timestamptz('2024-01-01 10:00') = '2024-01-01T10:00:00Z' AS utc,
                rc_try_timestamptz('2024-01-01T10:00:00+02:00') = '2024-01-01T08:00:00Z' AS offset,
                rc_try_timestamptz('now') AS now, rc_try_boolean('yes') AS yes,
                rc_try_boolean('perhaps') AS perhaps, rc_try_numeric(NULL) AS null_in`,
      );
      assert.deepEqual(
        { ...row, num: Number(row?.num) },
        {
          overflow: null,
          num: -150,
          nan: null,
          bad_day: null,
          leap: '2024-02-29',
          today: null,
          utc: true,
          offset: true,
          now: null,
          yes: true,
          perhaps: null,
          null_in: null,
        },
      );
    });
  });
}
