// Every operator of the conventions through `/fetch/P` over HTTP, on text and on a NUMERIC custom
// attribute: null semantics (default and strictSQLFiltering), literal %, _ and \, nesting.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { leaf } from '../helpers/criteria.ts';

type Case = [name: string, criterion: object, expected: string[], strict?: boolean];

// OP-1 Alpha 9 'a%b' | OP-2 beta 10 'a_b' | OP-3 (nulls) '' | OP-4 'Gamma ray' 100 'x\y'
const CASES: Case[] = [
  ['equals', leaf('label', 'equals', 'Alpha'), ['OP-1']],
  ['equals null', leaf('label', 'equals', null), ['OP-3']],
  ['notEqual (matches null)', leaf('label', 'notEqual', 'Alpha'), ['OP-2', 'OP-3', 'OP-4']],
  ['notEqual strict', leaf('label', 'notEqual', 'Alpha'), ['OP-2', 'OP-4'], true],
  ['iEquals', leaf('label', 'iEquals', 'ALPHA'), ['OP-1']],
  ['iNotEqual', leaf('label', 'iNotEqual', 'ALPHA'), ['OP-2', 'OP-3', 'OP-4']],
  ['greaterThan numeric', leaf('attribute3', 'greaterThan', 9), ['OP-2', 'OP-4']],
  ['lessThan numeric (null lowest)', leaf('attribute3', 'lessThan', 10), ['OP-1', 'OP-3']],
  ['lessThan strict', leaf('attribute3', 'lessThan', 10), ['OP-1'], true],
  ['greaterOrEqual', leaf('attribute3', 'greaterOrEqual', 10), ['OP-2', 'OP-4']],
  ['lessOrEqual', leaf('attribute3', 'lessOrEqual', 10), ['OP-1', 'OP-2', 'OP-3']],
  ['between (exclusive)', leaf('attribute3', 'between', undefined, { start: 9, end: 100 }), ['OP-2']],
  [
    'betweenInclusive',
    leaf('attribute3', 'betweenInclusive', undefined, { start: 9, end: 100 }),
    ['OP-1', 'OP-2', 'OP-4'],
  ],
  ['between open end', leaf('attribute3', 'betweenInclusive', undefined, { start: 10 }), ['OP-2', 'OP-4']],
  [
    'between without bounds (nothing checked)',
    leaf('attribute3', 'between', undefined, { start: null, end: null }),
    ['OP-1', 'OP-2', 'OP-3', 'OP-4'],
  ],
  ['iBetween', leaf('label', 'iBetween', undefined, { start: 'alpha', end: 'gamma ray' }), ['OP-2']],
  [
    'iBetweenInclusive',
    leaf('label', 'iBetweenInclusive', undefined, { start: 'ALPHA', end: 'BETA' }),
    ['OP-1', 'OP-2'],
  ],
  ['contains', leaf('label', 'contains', 'a r'), ['OP-4']],
  ['iContains', leaf('label', 'iContains', 'A'), ['OP-1', 'OP-2', 'OP-4']],
  ['startsWith', leaf('label', 'startsWith', 'Al'), ['OP-1']],
  ['iStartsWith', leaf('label', 'iStartsWith', 'al'), ['OP-1']],
  ['endsWith', leaf('label', 'endsWith', 'ray'), ['OP-4']],
  ['iEndsWith', leaf('label', 'iEndsWith', 'TA'), ['OP-2']],
  ['notContains (matches null)', leaf('label', 'notContains', 'a'), ['OP-3']],
  ['iNotContains', leaf('label', 'iNotContains', 'A'), ['OP-3']],
  ['notStartsWith', leaf('label', 'notStartsWith', 'A'), ['OP-2', 'OP-3', 'OP-4']],
  ['iNotStartsWith', leaf('label', 'iNotStartsWith', 'a'), ['OP-2', 'OP-3', 'OP-4']],
  ['notEndsWith', leaf('label', 'notEndsWith', 'a'), ['OP-3', 'OP-4']],
  ['iNotEndsWith', leaf('label', 'iNotEndsWith', 'A'), ['OP-3', 'OP-4']],
  ['% is literal', leaf('attribute4', 'contains', '%'), ['OP-1']],
  ['_ is literal', leaf('attribute4', 'contains', '_'), ['OP-2']],
  ['\\ is literal', leaf('attribute4', 'contains', '\\'), ['OP-4']],
  ['matchesPattern', leaf('label', 'matchesPattern', 'G*r?y'), ['OP-4']],
  ['iMatchesPattern', leaf('label', 'iMatchesPattern', 'al*'), ['OP-1']],
  ['containsPattern', leaf('label', 'containsPattern', 'm?a'), ['OP-4']],
  ['iContainsPattern', leaf('label', 'iContainsPattern', 'L?H'), ['OP-1']],
  ['startsWithPattern', leaf('label', 'startsWithPattern', 'b?t'), ['OP-2']],
  ['iStartsWithPattern', leaf('label', 'iStartsWithPattern', 'B*T'), ['OP-2']],
  ['endsWithPattern', leaf('label', 'endsWithPattern', 'r*y'), ['OP-4']],
  ['iEndsWithPattern', leaf('label', 'iEndsWithPattern', 'H?'), ['OP-1']],
  ['regexp', leaf('label', 'regexp', '^[AB]'), ['OP-1']],
  ['iregexp', leaf('label', 'iregexp', '^[ab]'), ['OP-1', 'OP-2']],
  ['isNull', leaf('label', 'isNull'), ['OP-3']],
  ['notNull', leaf('label', 'notNull'), ['OP-1', 'OP-2', 'OP-4']],
  ['isBlank', leaf('attribute4', 'isBlank'), ['OP-3']],
  ['notBlank', leaf('attribute4', 'notBlank'), ['OP-1', 'OP-2', 'OP-4']],
  ['inSet', leaf('attribute3', 'inSet', [9, 100]), ['OP-1', 'OP-4']],
  ['inSet []', leaf('label', 'inSet', []), []],
  ['inSet with null (NULLs are members)', leaf('attribute3', 'inSet', [9, null]), ['OP-1', 'OP-3']],
  ['inSet with null strict (SQL IN)', leaf('attribute3', 'inSet', [9, null]), ['OP-1'], true],
  ['notInSet with null', leaf('attribute3', 'notInSet', [9, null]), ['OP-2', 'OP-4']],
  ['notInSet with null strict (SQL NOT IN: nothing)', leaf('attribute3', 'notInSet', [9, null]), [], true],
  ['notInSet (matches null)', leaf('label', 'notInSet', ['Alpha']), ['OP-2', 'OP-3', 'OP-4']],
  ['notInSet []', leaf('label', 'notInSet', []), ['OP-1', 'OP-2', 'OP-3', 'OP-4']],
  ['equalsField (null equals null)', leaf('label', 'equalsField', 'unitOfMeasure'), ['OP-2', 'OP-3']],
  ['notEqualField', leaf('label', 'notEqualField', 'unitOfMeasure'), ['OP-1', 'OP-4']],
  ['greaterThanField (null lowest)', leaf('label', 'greaterThanField', 'currency'), ['OP-2']],
  ['lessThanField', leaf('label', 'lessThanField', 'currency'), ['OP-1', 'OP-4']],
  ['greaterOrEqualField', leaf('label', 'greaterOrEqualField', 'currency'), ['OP-2', 'OP-3']],
  ['lessOrEqualField', leaf('label', 'lessOrEqualField', 'currency'), ['OP-1', 'OP-3', 'OP-4']],
  ['containsField', leaf('label', 'containsField', 'currency'), ['OP-4']],
  ['startsWithField', leaf('currency', 'startsWithField', 'label'), ['OP-1']],
  ['endsWithField', leaf('label', 'endsWithField', 'currency'), ['OP-4']],
  [
    'or',
    { operator: 'or', criteria: [leaf('label', 'equals', 'Alpha'), leaf('attribute3', 'equals', 100)] },
    ['OP-1', 'OP-4'],
  ],
  ['empty or', { operator: 'or', criteria: [] }, []],
  ['empty and', { operator: 'and', criteria: [] }, ['OP-1', 'OP-2', 'OP-3', 'OP-4']],
  ['not (nulls stay visible)', { operator: 'not', criteria: [leaf('label', 'iContains', 'a')] }, ['OP-3']],
  [
    'nested',
    {
      operator: 'and',
      criteria: [
        { operator: 'or', criteria: [leaf('attribute3', 'lessThan', 10), leaf('label', 'startsWith', 'G')] },
        { operator: 'not', criteria: [leaf('label', 'isNull')] },
      ],
    },
    ['OP-1', 'OP-4'],
  ],
];

describe('every criteria operator over HTTP', () => {
  let h: Harness;
  let token: string;
  const fetchSkus = async (criterion: object, strict = false): Promise<string[]> => {
    const data = {
      _constructor: 'AdvancedCriteria',
      operator: 'and',
      ...(strict ? { strictSQLFiltering: true } : {}),
      criteria: [leaf('sku', 'startsWith', 'OP-'), criterion],
    };
    const r = await h.call('/fetch/P', {
      headers: { 'X-Ratecard-jwt': token },
      body: { data, sortBy: 'sku' },
    });
    assert.equal(r.status, 200, r.text);
    return r.body.response.data.map((p: { sku: string }) => p.sku);
  };

  before(async () => {
    h = await startHarness();
    token = (await h.login()).token;
    const post = (path: string, body: unknown) =>
      h.call(path, { headers: { 'X-Ratecard-jwt': token }, body });
    assert.equal(
      (await post('/add/PAM', { data: { fieldName: 'attribute3', fieldType: 'NUMERIC' } })).status,
      200,
    );
    const r = await post('/add/P', [
      {
        data: {
          sku: 'OP-1',
          label: 'Alpha',
          attribute3: '9',
          attribute4: 'a%b',
          currency: 'Alphabet',
          unitOfMeasure: 'x',
        },
      },
      { data: { sku: 'OP-2', label: 'beta', attribute3: '10', attribute4: 'a_b', unitOfMeasure: 'beta' } },
      { data: { sku: 'OP-3', attribute4: '' } },
      {
        data: {
          sku: 'OP-4',
          label: 'Gamma ray',
          attribute3: '100',
          attribute4: 'x\\y',
          currency: 'ray',
          unitOfMeasure: 'y',
        },
      },
    ]);
    assert.equal(r.status, 200, r.text);
  });
  after(() => h.close());

  for (const [name, criterion, expected, strict] of CASES) {
    test(name, async () => {
      assert.deepEqual(await fetchSkus(criterion, strict), expected);
    });
  }

  test('an unknown operator or a bad value names the field', async () => {
    for (const bad of [
      leaf('label', 'resembles', 'x'),
      leaf('attribute3', 'greaterThan', 'ten'),
      leaf('nosuch', 'equals', 1),
    ]) {
      const r = await h.call('/fetch/P', {
        headers: { 'X-Ratecard-jwt': token },
        body: { data: { _constructor: 'AdvancedCriteria', operator: 'and', criteria: [bad] } },
      });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.response.status, -4);
      assert.ok(r.body.response.errors[(bad as { fieldName: string }).fieldName], r.text);
    }
  });

  test('a pattern the database refuses (JavaScript took it) names its field, on fetch and massedit', async () => {
    const criteria = (pattern: string) => ({
      _constructor: 'AdvancedCriteria',
      operator: 'and',
      criteria: [leaf('sku', 'startsWith', 'OP-'), leaf('label', 'iregexp', pattern)],
    });
    for (const pattern of ['(?<n>a)', '\\p{L}', '[\\d-z]']) {
      for (const [path, body] of [
        ['/fetch/P', { data: criteria(pattern) }],
        [
          '/massedit/P',
          {
            filterCriteria: criteria(pattern),
            massEditRecords: [{ fieldName: 'attribute4', massEditOperator: '=', fieldValue: 'x' }],
          },
        ],
      ] as const) {
        const r = await h.call(path, { headers: { 'X-Ratecard-jwt': token }, body });
        assert.equal(r.status, 400, r.text);
        assert.equal(r.body.response.status, -4);
        assert.deepEqual(Object.keys(r.body.response.errors), ['label'], `${path} ${pattern}: ${r.text}`);
        assert.match(r.body.response.errors.label.errorMessage, /regular expression/);
      }
    }
    // Two fields tested with patterns: the database does not say which it refused, so neither is
    // blamed (the refusal names data).
    const both = await h.call('/fetch/P', {
      headers: { 'X-Ratecard-jwt': token },
      body: {
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [leaf('sku', 'regexp', '^OP'), leaf('label', 'iregexp', '(?<n>a)')],
        },
      },
    });
    assert.equal(both.status, 400, both.text);
    assert.deepEqual(Object.keys(both.body.response.errors), ['data']);
  });

  test('typedId filters and sorts as the id it names', async () => {
    const fetch = (body: object) => h.call('/fetch/P', { headers: { 'X-Ratecard-jwt': token }, body });
    const all = await fetch({ data: leaf('sku', 'startsWith', 'OP-'), sortBy: 'sku' });
    const ids = all.body.response.data.map((p: { typedId: string }) => p.typedId) as string[];
    const skus = async (criterion: object, sortBy: unknown = 'sku') => {
      const r = await fetch({
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'and',
          criteria: [leaf('sku', 'startsWith', 'OP-'), criterion],
        },
        sortBy,
      });
      assert.equal(r.status, 200, r.text);
      return r.body.response.data.map((p: { sku: string }) => p.sku) as string[];
    };
    assert.deepEqual(await skus(leaf('typedId', 'equals', ids[1])), ['OP-2']);
    assert.deepEqual(await skus(leaf('typedId', 'inSet', [ids[0], ids[3]])), ['OP-1', 'OP-4']);
    assert.deepEqual(await skus(leaf('typedId', 'notInSet', [ids[0]])), ['OP-2', 'OP-3', 'OP-4']);
    assert.deepEqual(await skus(leaf('typedId', 'notEqual', ids[2])), ['OP-1', 'OP-2', 'OP-4']);
    assert.deepEqual(await skus(leaf('typedId', 'equals', Number.parseInt(ids[2]!, 10))), ['OP-3']);
    assert.deepEqual(await skus(leaf('sku', 'notNull'), '-typedId'), ['OP-4', 'OP-3', 'OP-2', 'OP-1']);
    const simple = await fetch({ data: { typedId: ids[0] } });
    assert.deepEqual(
      simple.body.response.data.map((p: { sku: string }) => p.sku),
      ['OP-1'],
    );
    for (const bad of [
      leaf('typedId', 'equals', ids[0]!.replace('.P', '.C')),
      leaf('typedId', 'equals', 'OP-1'),
      leaf('typedId', 'greaterThan', ids[0]),
      leaf('typedId', 'iContains', '1'),
    ]) {
      const r = await fetch({ data: bad });
      assert.equal(r.status, 400, r.text);
      assert.ok(r.body.response.errors.typedId, r.text);
    }
  });

  test('simple criteria and each textMatchStyle', async () => {
    const simple = async (data: object, textMatchStyle?: string) => {
      const r = await h.call('/fetch/P', {
        headers: { 'X-Ratecard-jwt': token },
        body: { data: { ...data }, sortBy: 'sku', ...(textMatchStyle ? { textMatchStyle } : {}) },
      });
      assert.equal(r.status, 200, r.text);
      return r.body.response.data
        .map((p: { sku: string }) => p.sku)
        .filter((s: string) => s.startsWith('OP-'));
    };
    assert.deepEqual(await simple({ label: 'alpha' }), ['OP-1']);
    assert.deepEqual(await simple({ label: 'alpha' }, 'exactCase'), []);
    assert.deepEqual(await simple({ label: 'ET' }, 'substring'), ['OP-2']);
    assert.deepEqual(await simple({ label: 'gam' }, 'startsWith'), ['OP-4']);
    assert.deepEqual(await simple({ sku: ['OP-1', 'OP-3'] }), ['OP-1', 'OP-3']);
    assert.deepEqual(await simple({ attribute3: 10 }, 'substring'), ['OP-2']);
  });
});
