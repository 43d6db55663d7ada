// The collections of a rebate record group (interface.md RRG "Collections": `calculationResults`,
// `allCalculationResults`, `inputs`, `serverMessagesExtended`, `approvalRequiredEmailAttachments`
// arrays, `itemExtensions` an object) answer `[]` / `{}` before the first calculation, never null, on
// every read: the write's answer, /fetch/RRG lists, by id, resultFields, valueFields, distinct
// results; and a locked group sent back as it was read (with those empty collections) is no change
// its lock refuses.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

const COLLECTIONS = [
  'calculationResults',
  'allCalculationResults',
  'inputs',
  'serverMessagesExtended',
  'approvalRequiredEmailAttachments',
  'itemExtensions',
] as const;
const EMPTY = [[], [], [], [], [], {}];

describe('rebate record group collections', () => {
  let h: Harness;
  const call = (path: string, body?: unknown) =>
    h.call(path, {
      basic: { user: ADMIN, password: ADMIN_PASSWORD },
      ...(body === undefined ? {} : { body }),
    });
  const collections = (g: Record<string, unknown>) => COLLECTIONS.map((c) => g[c]);

  before(async () => {
    h = await startHarness();
    okData(await call('/add/RBT', { data: { uniqueName: 'Volume', label: 'Volume rebate' } }));
  });
  after(() => h.close());

  test('empty collections answer [] and {} on every read', async () => {
    const group = { rebateType: 'Volume', startDate: '2026-01-01', endDate: '2026-12-31' };
    const [added] = okData(await call('/add/RRG', { data: { uniqueName: 'RC-1', ...group } }));
    assert.deepEqual(collections(added), EMPTY);
    const byName = { data: { uniqueName: 'RC-1' } };
    assert.deepEqual(collections(okData(await call('/fetch/RRG', byName))[0]), EMPTY);
    assert.deepEqual(collections(okData(await call('/fetch/RRG', {}))[0]), EMPTY);
    assert.deepEqual(collections(okData(await call(`/fetch/RRG/${added.id}`))[0]), EMPTY);
    const named = okData(await call('/fetch/RRG', { ...byName, resultFields: [...COLLECTIONS] }))[0];
    assert.deepEqual(collections(named), EMPTY);
    assert.deepEqual(okData(await call('/fetch/RRG', { ...byName, valueFields: [...COLLECTIONS] })), [EMPTY]);
    const distinct = { ...byName, resultFields: ['uniqueName', 'inputs'], distinctResults: true };
    assert.deepEqual(okData(await call('/fetch/RRG', distinct)), [{ uniqueName: 'RC-1', inputs: [] }]);
    // What was given is answered as it is.
    const [given] = okData(
      await call('/add/RRG', {
        data: {
          uniqueName: 'RC-2',
          ...group,
          inputs: [{ name: 'Volume', value: 1 }],
          itemExtensions: { a: 1 },
        },
      }),
    );
    assert.deepEqual([given.inputs, given.itemExtensions], [[{ name: 'Volume', value: 1 }], { a: 1 }]);
  });

  test('a locked group sent back as read, empty collections included, is not refused', async () => {
    const [g] = okData(
      await call('/add/RRG', {
        data: { uniqueName: 'RC-L', rebateType: 'Volume', startDate: '2026-01-01', endDate: '2026-12-31' },
      }),
    );
    okData(await call('/update/RRG', { data: { typedId: g.typedId, locked: true } }));
    const [read] = okData(await call(`/fetch/RRG/${g.id}`));
    const back = { uniqueName: 'RC-L', inputs: read.inputs, itemExtensions: read.itemExtensions };
    assert.deepEqual([back.inputs, back.itemExtensions], [[], {}]);
    okData(await call('/update/RRG', { data: { typedId: g.typedId, ...back } }));
    okData(await call('/integrate/RRG', [{ data: back }]));
    assert.deepEqual(collections(okData(await call(`/fetch/RRG/${g.id}`))[0]), EMPTY);
    // A change it refuses names the field in errors (409), and in a batch the element.
    expectError(
      await call('/update/RRG', { data: { typedId: g.typedId, comments: 'x' } }),
      409,
      -1,
      'comments',
    );
    expectError(
      await call('/update/RRG', [
        { data: { typedId: g.typedId, locked: true } },
        { data: { typedId: g.typedId, label: 'x' } },
      ]),
      409,
      -1,
      '1.label',
    );
  });
});
