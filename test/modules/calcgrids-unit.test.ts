// Calculation grids, the pure parts: key sources checked against the key number and the logic's
// inputs, and result indexes built from exactly the expression the criteria compiler emits.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileCriteria, parseCriteria, resolveCriteria } from '../../src/engine/criteria.ts';
import type { FieldSpec } from '../../src/engine/types.ts';
import { AppError } from '../../src/http/errors.ts';
import { Params } from '../../src/db/sql.ts';
import { parseIndexedResults, resultIndexSql } from '../../src/modules/calcgrids/indexes.ts';
import { parseSources } from '../../src/modules/calcgrids/sources.ts';
import type { InputDef } from '../../src/logic/logic.ts';

const INPUTS: InputDef[] = [
  { name: 'Region', type: 'TEXT' },
  { name: 'Channel', type: 'TEXT' },
];

function refused(fn: () => unknown, field: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof AppError, String(err));
    assert.ok(err.errors?.[field], `names ${field}: ${JSON.stringify(err.errors)}`);
    return true;
  });
}

describe('calculation grid key sources', () => {
  test('accepted shapes', () => {
    assert.deepEqual(parseSources([{ type: 'products' }], 1, INPUTS), [{ type: 'products' }]);
    const three = parseSources(
      [
        { type: 'products', filter: { fieldName: 'sku', operator: 'startsWith', value: 'A' } },
        { type: 'customers' },
        { type: 'values', values: ['EU', 'US'], input: 'Region' },
      ],
      3,
      INPUTS,
    );
    assert.equal(three.length, 3);
    assert.deepEqual(three[2], { type: 'values', values: ['EU', 'US'], input: 'Region' });
  });

  test('refusals name the setting', () => {
    refused(() => parseSources({ type: 'products' }, 1, INPUTS), 'keySources');
    refused(() => parseSources([{ type: 'products' }], 2, INPUTS), 'keySources');
    refused(() => parseSources([{ type: 'customers' }], 1, INPUTS), 'keySources[0].type');
    refused(
      () => parseSources([{ type: 'products' }, { type: 'products' }], 2, INPUTS),
      'keySources[1].type',
    );
    refused(
      () => parseSources([{ type: 'products' }, { type: 'customers' }, { type: 'customers' }], 3, INPUTS),
      'keySources[2].type',
    );
    refused(
      () =>
        parseSources(
          [{ type: 'products' }, { type: 'values', values: ['a', 'a'], input: 'Region' }],
          2,
          INPUTS,
        ),
      'keySources[1].values.1',
    );
    refused(
      () => parseSources([{ type: 'products' }, { type: 'values', values: [], input: 'Region' }], 2, INPUTS),
      'keySources[1].values',
    );
    refused(
      () => parseSources([{ type: 'products' }, { type: 'values', values: ['a'], input: 'Nope' }], 2, INPUTS),
      'keySources[1].input',
    );
    refused(
      () =>
        parseSources(
          [
            { type: 'products' },
            { type: 'values', values: ['a'], input: 'Region' },
            { type: 'lookupTable', table: 'T', input: 'Region' },
          ],
          3,
          INPUTS,
        ),
      'keySources[2].input',
    );
    refused(() => parseSources([{ type: 'products', colour: 'red' }], 1, INPUTS), 'keySources[0].colour');
    refused(
      () =>
        parseSources(
          [{ type: 'products', filter: { _constructor: 'AdvancedCriteria', operator: 'xor', criteria: [] } }],
          1,
          INPUTS,
        ),
      'keySources[0].filter',
    );
    refused(
      () => parseSources([{ type: 'products' }, { type: 'lookupTable', input: 'Region' }], 2, INPUTS),
      'keySources[1].table',
    );
  });
});

describe('result indexes', () => {
  test('the index holds the expression the criteria compiler filters and sorts by', () => {
    for (const type of ['decimal', 'string', 'boolean', 'date'] as const) {
      const field: FieldSpec = { name: 'result.Price', column: 'results', type, jsonKey: 'Price' };
      const compiled = compileCriteria(
        resolveCriteria(
          parseCriteria({ fieldName: 'result.Price', operator: 'isNull' }),
          new Map([['result.Price', field]]),
        ).criteria,
        new Params(),
      );
      // `x IS NULL`, or for a typed element `(x IS NULL AND <stored text> IS NULL)`: x is the expression.
      const expr = compiled.replace(/^\((.*) IS NULL AND \(.*\) IS NULL\)$/, '$1').replace(/ IS NULL$/, '');
      assert.ok(resultIndexSql('Price', type).includes(`(partition_id, grid_id, (${expr}))`), type);
    }
  });

  test('only elements of the logic, at most five', () => {
    const types = { Price: 'decimal', Tier: 'string' };
    assert.deepEqual(parseIndexedResults(['Price'], types), ['Price']);
    assert.deepEqual(parseIndexedResults(undefined, types), []);
    refused(() => parseIndexedResults(['Nope'], types), 'indexedResults.0');
    refused(() => parseIndexedResults(['__proto__'], types), 'indexedResults.0');
    refused(() => parseIndexedResults(Array(6).fill('Price'), types), 'indexedResults');
  });
});
