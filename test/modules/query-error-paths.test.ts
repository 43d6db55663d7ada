// Every -4 of the query API names the element at fault by its path inside `data`, in one form
// (array elements in brackets), whichever check finds it — the route's schema, the pipeline's own
// checks or the criteria compiler of `filter` and `having` — and in /queryapi.meta by the same path
// under `pipeline.`. Lists that name fields, when given, name at least one (as /fetch's).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

describe('query API error keys', () => {
  let h: Harness;
  /** The keys of a -4's `errors`; its message opens with the first. */
  const keysOf = async (path: string, body: unknown): Promise<string[]> => {
    const r = await h.call(path, { basic: admin, body });
    assert.deepEqual([r.status, r.body?.response?.status], [400, -4], r.text);
    const keys = Object.keys(r.body.response.errors);
    assert.ok(r.body.response.data.startsWith(`${keys[0]}: `), r.text);
    return keys;
  };
  /** The one key of a -4's `errors`. */
  const keyOf = async (path: string, body: unknown): Promise<string> => {
    const keys = await keysOf(path, body);
    assert.equal(keys.length, 1, keys.join(', '));
    return keys[0]!;
  };
  const executeKey = (data: unknown) => keyOf('/queryapi.execute', { data });
  const metaKey = (pipeline: unknown) => keyOf('/queryapi.meta', { data: { pipeline } });

  before(async () => {
    h = await startHarness({ env: { QUERY_MAX_ROWS: '50' } });
    okData(await h.call('/add/P', { basic: admin, body: { data: { sku: 'K-1' } } }));
  });
  after(() => h.close());

  test('filter and having errors are named under filter and having', async () => {
    assert.equal(await executeKey({ source: 'P', filter: 'x' }), 'filter');
    assert.equal(await executeKey({ source: 'P', filter: { nosuch: 1 } }), 'filter.nosuch');
    assert.equal(
      await executeKey({ source: 'P', filter: { fieldName: 'sku', operator: 'nope', value: 1 } }),
      'filter.sku',
    );
    assert.equal(
      await executeKey({
        source: 'P',
        filter: { _constructor: 'AdvancedCriteria', operator: 'xor', criteria: [] },
      }),
      'filter',
    );
    assert.equal(
      await executeKey({ source: 'P', filter: { strictSQLFiltering: 1, operator: 'and', criteria: [] } }),
      'filter.strictSQLFiltering',
    );
    const counted = { source: 'P', aggregates: [{ fn: 'count', as: 'n' }] };
    assert.equal(await executeKey({ ...counted, having: { n: 'x' } }), 'having.n');
    assert.equal(await executeKey({ ...counted, having: 5 }), 'having');
    assert.equal(await executeKey({ ...counted, having: { sku: 'K-1' } }), 'having.sku');
  });

  test("the route schema's errors and the pipeline's own share one form", async () => {
    // By the schema ...
    assert.equal(await executeKey({ source: 'P', endRow: -1 }), 'endRow');
    assert.equal(await executeKey({ source: 'P', select: 'sku' }), 'select');
    assert.equal(await executeKey({ source: 'P', valueFields: ['sku', 1] }), 'valueFields[1]');
    // (Neither a text nor a list of texts: both alternatives say why.)
    assert.deepEqual(await keysOf('/queryapi.execute', { data: { source: 'P', sortBy: [1] } }), [
      'sortBy',
      'sortBy[0]',
    ]);
    assert.equal(await executeKey({ source: 'P', extra: 1 }), 'extra');
    assert.equal(await executeKey({ source: 7 }), 'source');
    assert.equal(await executeKey({}), 'source');
    assert.equal(await keyOf('/queryapi.execute', {}), 'data');
    assert.equal(await keyOf('/queryapi.execute', { data: 5 }), 'data');
    // ... and by the pipeline.
    assert.equal(await executeKey({ source: 'P', endRow: 51 }), 'endRow');
    assert.equal(await executeKey({ source: 'P', select: ['sku', 'nope'] }), 'select[1]');
    assert.equal(
      await executeKey({ source: 'P', select: ['sku', { field: 'label', as: 'sku' }] }),
      'select[1].as',
    );
    assert.equal(await executeKey({ source: 'P', valueFields: ['sku', 'nope'] }), 'valueFields[1]');
    assert.equal(await executeKey({ source: 'P', sortBy: 'nope' }), 'sortBy');
    assert.equal(
      await executeKey({ source: 'P', join: [{ source: 'P', as: 'b', on: { sku: 'nope' } }] }),
      'join[0].on',
    );
    assert.equal(
      await executeKey({ source: 'P', groupBy: ['sku'], aggregates: [{ fn: 'count', as: 'sku' }] }),
      'aggregates[0].as',
    );
    assert.equal(
      await executeKey({
        source: 'P',
        groupBy: ['label', 'sku'],
        select: ['label', { field: 'sku', as: 'label' }],
      }),
      'select[1].as',
    );
  });

  test('/queryapi.meta names the elements of its pipeline under pipeline.', async () => {
    assert.equal(await metaKey({ source: 7 }), 'pipeline.source');
    assert.equal(await metaKey({ source: 'NOPE' }), 'pipeline.source');
    assert.equal(await metaKey({ source: 'P', aggregates: [{ fn: 'sum' }] }), 'pipeline.aggregates[0].field');
    assert.equal(await metaKey({ source: 'P', filter: { nosuch: 1 } }), 'pipeline.filter.nosuch');
    assert.equal(await metaKey({ source: 'P', sortBy: 'nope' }), 'pipeline.sortBy');
    assert.equal(await metaKey({ source: 'P', valueFields: [1] }), 'pipeline.valueFields[0]');
    assert.equal(await metaKey({ source: 'P', extra: 1 }), 'pipeline.extra');
    assert.equal(await keyOf('/queryapi.meta', { data: { extra: 1 } }), 'extra');
    const missing = await h.call('/queryapi.meta', {
      basic: admin,
      body: { data: { pipeline: { source: 'LTV:Nope' } } },
    });
    assert.deepEqual([missing.status, Object.keys(missing.body.response.errors)], [404, ['pipeline.source']]);
  });

  test('select and valueFields name at least one field, as /fetch asks of its lists', async () => {
    const fetchEmpty = await h.call('/fetch/P', { basic: admin, body: { data: {}, valueFields: [] } });
    assert.deepEqual(fetchEmpty.body.response.errors, {
      valueFields: { errorMessage: 'must name at least one field' },
    });
    for (const field of ['select', 'valueFields']) {
      const r = await h.call('/queryapi.execute', {
        basic: admin,
        body: { data: { source: 'P', [field]: [] } },
      });
      assert.deepEqual([r.status, r.body.response.status], [400, -4], r.text);
      assert.deepEqual(r.body.response.errors, { [field]: { errorMessage: 'must name at least one field' } });
      assert.equal(await metaKey({ source: 'P', [field]: [] }), `pipeline.${field}`);
    }
    // Absent (or null) they still mean every field.
    assert.ok(
      okData(
        await h.call('/queryapi.execute', { basic: admin, body: { data: { source: 'P', select: null } } }),
      ).length > 0,
    );
  });
});
