// /metadata.describe of an extension type names the table whose attribute meta types its
// attributes (`data.name`, `name` beside `typeCode`, or `?name=`): an unknown table is a 404 naming
// it, a name on a type without tables a -4. Describe's body may be a client's usual fetch body, with
// `null` for any field meaning absent.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { NULL_FETCH_BODY } from '../helpers/criteria.ts';

describe('/metadata.describe of an extension table', () => {
  let h: Harness;
  const call = (path: string, body?: unknown) =>
    h.call(path, {
      basic: { user: ADMIN, password: ADMIN_PASSWORD },
      ...(body === undefined ? {} : { body }),
    });
  /** The type of each attribute1..3 in a describe's answer. */
  const types = (r: Awaited<ReturnType<typeof call>>) => {
    const [d] = okData(r);
    return Object.fromEntries(
      (d.fields as any[]).filter((f) => /^attribute[1-3]$/.test(f.name)).map((f) => [f.name, f.type]),
    );
  };
  const untyped = { attribute1: 'string', attribute2: 'string', attribute3: 'string' };
  const costs = { attribute1: 'decimal', attribute2: 'date', attribute3: 'string' };

  before(async () => {
    h = await startHarness();
    okData(
      await call('/add/PXAM', { data: { name: 'Costs', fieldName: 'attribute1', fieldType: 'NUMERIC' } }),
    );
    okData(await call('/add/PXAM', { data: { name: 'Costs', fieldName: 'attribute2', fieldType: 'DATE' } }));
    okData(await call('/add/P', { data: { sku: 'DT-1' } }));
    okData(await call('/add/PX', { data: { name: 'Plain', sku: 'DT-1', attribute1: '5' } }));
  });
  after(() => h.close());

  test('the table named in the body or the query types the attributes', async () => {
    assert.deepEqual(types(await call('/metadata.describe/PX')), untyped);
    const [d] = okData(await call('/metadata.describe/PX', { data: { name: 'Costs' } }));
    assert.equal(d.tableName, 'Costs');
    assert.deepEqual(types(await call('/metadata.describe/PX', { data: { name: 'Costs' } })), costs);
    assert.deepEqual(types(await call('/metadata.describe/PX?name=Costs')), costs);
    assert.deepEqual(types(await call('/metadata.describe?name=Costs', { typeCode: 'PX' })), costs);
    assert.deepEqual(types(await call('/metadata.describe', { typeCode: 'PX', name: 'Costs' })), costs);
    assert.deepEqual(
      types(await call('/metadata.describe', { data: { typeCode: 'PX', name: 'Costs' } })),
      costs,
    );
    // A table of rows only (no meta) exists too, its attributes text.
    assert.deepEqual(types(await call('/metadata.describe/PX', { data: { name: 'Plain' } })), untyped);
  });

  test('an unknown table is a 404 naming it; a name where no tables are, or two names, a -4', async () => {
    const r = await call('/metadata.describe/PX', { data: { name: 'Nope' } });
    expectError(r, 404, -1, 'data.name');
    assert.match(r.body.response.data, /PX:Nope/);
    expectError(await call('/metadata.describe/CX?name=Costs'), 404, -1, 'name');
    expectError(await call('/metadata.describe/P', { data: { name: 'Costs' } }), 400, -4, 'data.name');
    expectError(
      await call('/metadata.describe/PX?name=Plain', { data: { name: 'Costs' } }),
      400,
      -4,
      'data.name',
    );
    expectError(await call('/metadata.describe/PX', { data: { name: '' } }), 400, -4, 'data.name');
    expectError(await call('/metadata.describe/PX', { data: { name: 'a\u0000b' } }), 400, -4, 'data.name');
    expectError(await call('/metadata.describe/PX', { data: { bogus: 1 } }), 400, -4, 'data.bogus');
  });

  test('a fetch body is taken, null meaning absent, paging only as its first page; sort and pick fields only as null', async () => {
    const nulls = NULL_FETCH_BODY;
    assert.deepEqual(types(await call('/metadata.describe/PX', nulls)), untyped);
    assert.deepEqual(
      types(
        await call('/metadata.describe/PX', { ...nulls, operationType: 'fetch', data: { name: 'Costs' } }),
      ),
      costs,
    );
    assert.deepEqual(
      types(await call('/metadata.describe', { ...nulls, data: { typeCode: 'PX', name: null } })),
      untyped,
    );
    assert.deepEqual(
      types(await call('/metadata.describe', { ...nulls, typeCode: 'PX', name: 'Costs' })),
      costs,
    );
    assert.deepEqual(types(await call('/metadata.describe/PX', { startRow: 0, endRow: 300 })), untyped);
    expectError(await call('/metadata.describe/PX', { startRow: 1 }), 400, -4, 'startRow');
    expectError(await call('/metadata.describe/PX', { sortBy: 'name' }), 400, -4, 'sortBy');
  });
});
