// The bulk evaluator's pipeline and passes on both databases: batches read ahead while the previous
// one is evaluated keep item order and per-item errors (the same results whatever the batch size);
// items whose look-up rows and condition records are missing in the first pass come out as when
// everything was loaded beforehand; a caller that stops early leaves no statement running.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { adminPrincipal, clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import type { Principal } from '../../src/access/access.ts';
import type { Queryable } from '../../src/db/db.ts';
import { bulkLogic, evaluateBulk, type BulkItem, type BulkResult } from '../../src/modules/formulas/bulk.ts';
import type { CompiledLogic } from '../../src/logic/logic.ts';
import { LogicDate, toJson } from '../../src/logic/values.ts';
import {
  attributeTypesOf,
  extensionRows,
  masterFields,
  masterRecords,
  recordOf,
  textArrayParam,
} from '../../src/modules/formulas/master-store.ts';
import { BatchData } from '../../src/modules/formulas/data.ts';
import { evaluateItems } from '../../src/modules/formulas/evaluate-items.ts';
import { checkInputs, policiesFor } from '../../src/modules/formulas/service.ts';
import { resultObjects } from '../../src/logic/results.ts';
import { okData } from '../helpers/envelope.ts';

const ELEMENTS = [
  { elementName: 'Cost', expression: 'product.attribute1' },
  { elementName: 'Ext', expression: 'productExtension("Costs")', displayOptions: 0 },
  { elementName: 'ExtCost', expression: 'coalesce(Ext.attribute1, Cost)' },
  { elementName: 'Margin', expression: 'lookup("Margins", customer.attribute1)' },
  { elementName: 'Disc', expression: 'lookup("QtyDiscount", input.Qty)' },
  {
    elementName: 'Cond',
    expression: 'conditionRecord("SalesDiscount", customer.customerId)',
    displayOptions: 0,
  },
  { elementName: 'CondDisc', expression: 'coalesce(Cond.conditionValue, 0)' },
  { elementName: 'Base', expression: 'max(Cost, ExtCost) * (1 + coalesce(Margin, 0.1))' },
  { elementName: 'Net', expression: 'Base * (1 - coalesce(Disc, 0)) * (1 - CondDisc)' },
  { elementName: 'PerUnit', expression: 'Net / input.Qty' },
  { elementName: 'Price', expression: 'Net', rounding: 'EUR99', formatType: 'MONEY' },
];

const SKUS = 40;
const targetDate = new LogicDate('2026-06-01');
const limits = { maxSteps: 10_000, maxMs: 5_000 };

/** Items over every case: customers with and without rows, unknown products and customers, bad inputs. */
function itemsOf(n: number, offset = 0): BulkItem[] {
  const out: BulkItem[] = [];
  for (let k = 0; k < n; k++) {
    const i = k + offset;
    const sku = i % 37 === 5 ? 'NOPE' : `BK-${i % SKUS}`;
    const customerId = [undefined, 'C-1', 'C-2', 'C-3', 'C-9'][i % 5];
    const qty = i % 23 === 7 ? 'many' : i % 25; // 'many' is not a number; 0 divides by zero
    out.push({ sku, ...(customerId === undefined ? {} : { customerId }), inputs: { Qty: qty } });
  }
  return out;
}

async function bulk(
  q: Queryable,
  principal: Principal,
  logic: CompiledLogic,
  items: readonly BulkItem[],
  batchSize: number,
): Promise<BulkResult[][]> {
  const batches: BulkResult[][] = [];
  for await (const b of evaluateBulk(q, principal, logic, items, { targetDate, limits, batchSize }))
    batches.push(b);
  return batches;
}

describe('bulk evaluator: pipeline and passes', () => {
  let h: Harness;
  let api: Client;
  let principal: Principal;
  let logic: CompiledLogic;
  before(async () => {
    h = await startHarness();
    api = await clientOf(h);
    okData(await api('/add/PAM', { data: { fieldName: 'attribute1', label: 'Cost', fieldType: 'MONEY' } }));
    const skus = Array.from({ length: SKUS }, (_, i) => i);
    okData(
      await api('/loaddata/P', {
        data: { header: ['sku', 'attribute1'], data: skus.map((i) => [`BK-${i}`, `${10 + i}.25`]) },
      }),
    );
    // Every third product has a Costs extension row.
    okData(
      await api('/loaddata/PX', {
        data: {
          header: ['name', 'sku', 'attribute1'],
          data: skus.filter((i) => i % 3 === 0).map((i) => ['Costs', `BK-${i}`, String(12 + i)]),
        },
      }),
    );
    for (const [customerId, attribute1] of [
      ['C-1', 'EU'],
      ['C-2', 'US'],
      ['C-3', 'CH'],
    ])
      okData(await api('/add/C', { data: { customerId, attribute1 } }));
    const [margins] = okData(
      await api('/lookuptablemanager.add', {
        data: { uniqueName: 'Margins', type: 'SIMPLE', valueType: 'REAL' },
      }),
    );
    okData(
      await api(`/lookuptablemanager.add/${margins.id}`, [
        { data: { name: 'EU', value: 0.25 } },
        { data: { name: 'US', value: 0.3 } },
      ]),
    );
    const [qty] = okData(
      await api('/lookuptablemanager.add', {
        data: { uniqueName: 'QtyDiscount', type: 'RANGE', valueType: 'REAL' },
      }),
    );
    okData(
      await api(`/lookuptablemanager.add/${qty.id}`, [
        { data: { name: 'small', upperBound: 10, value: 0 } },
        { data: { name: 'large', lowerBound: 10, upperBound: 20, value: 0.05 } },
      ]),
    );
    const [set] = okData(await api('/add/CRCS', { data: { uniqueName: 'SalesDiscount', keySize: 1 } }));
    for (const [key1, conditionValue] of [
      ['C-1', '0.02'],
      ['C-2', '0.035'],
    ])
      okData(
        await api('/add/CRCI1', {
          data: {
            conditionRecordSetId: set.id,
            key1,
            validFrom: '2026-01-01',
            validTo: '2026-12-31',
            conditionValue,
          },
        }),
      );
    okData(
      await api('/add/RP', {
        data: { uniqueName: 'EUR99', currency: 'EUR', step: 0.01, priceEnding: '.99' },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'BulkPrice',
          validAfter: '2026-01-01',
          inputs: [{ name: 'Qty', type: 'NUMBER', required: true }],
          elements: ELEMENTS,
        },
      }),
    );
    principal = adminPrincipal(h);
    ({ logic } = await bulkLogic(h.db, principal, 'BulkPrice', targetDate));
  });
  after(() => h.close());

  test('batches read ahead keep item order and per-item errors: the same results at every batch size', async () => {
    const items = itemsOf(300);
    const whole = (await bulk(h.db, principal, logic, items, 1_000)).flat();
    assert.equal(whole.length, 300);
    for (const size of [1, 7, 64]) {
      const batches = await bulk(h.db, principal, logic, items, size);
      assert.equal(batches.length, Math.ceil(300 / size));
      assert.deepEqual(batches.flat(), whole, `batches of ${size}`);
    }
    // Spot checks by hand, in item order.
    const byName = (r: BulkResult) => Object.fromEntries(r.results!.map((x) => [x.resultName, x]));
    const field = (v: unknown, name: string) => (v as Record<string, unknown>)[name];
    assert.equal(whole[5]!.error, 'product NOPE not found');
    assert.equal(whole[4]!.error, 'customer C-9 not found');
    assert.match(whole[7]!.error!, /inputs.Qty: "many" is not a number/);
    assert.equal(whole[0]!.sku, 'BK-0');
    const first = byName(whole[0]!); // no customer, Qty 0: no margin row, a division by zero
    assert.equal(field(first.Ext!.result, 'attribute1'), '12');
    assert.equal(first.Base!.result, 13.2, 'max(10.25, 12) × 1.1');
    assert.equal(first.PerUnit!.result, null);
    assert.equal(first.PerUnit!.alertType, 'CRITICAL');
    const one = byName(whole[1]!); // C-1 (EU, 2 %), Qty 1, BK-1 without extension row
    assert.equal(one.Ext!.result, null);
    assert.equal(one.Net!.result, 13.78125, '11.25 × 1.25 × 1 × 0.98');
    assert.equal(one.Price!.result, 13.99);
    const twelve = byName(whole[12]!); // C-2 (US, 3.5 %), Qty 12 (5 %), BK-12 with 24 in Costs
    assert.equal(twelve.Net!.result, 28.6026, '24 × 1.3 × 0.95 × 0.965');
    assert.equal(field(twelve.Cond!.result, 'conditionValue'), 0.035);
  });

  test('a long batch gives way to other work of the process while it is evaluated', async () => {
    // One batch of many items: evaluated without a pause, it held every other request (a timer here)
    // for its whole length (measured: the largest gap between ticks of a 1 ms timer was about half the
    // batch). With a pause every 20 ms slice, it is a small part of the batch even on a loaded machine
    // (measured: 47-67 ms of 350-590 ms idle, 168 ms of 1,394 ms under CI load), so the bound is relative.
    const items = itemsOf(20_000);
    const ticks: number[] = [];
    const timer = setInterval(() => ticks.push(performance.now()), 1);
    const t0 = performance.now();
    try {
      const [results] = await bulk(h.db, principal, logic, items, items.length);
      assert.equal(results!.length, items.length);
    } finally {
      clearInterval(timer);
    }
    const total = performance.now() - t0;
    let gap = 0;
    for (let k = 1; k < ticks.length; k++) gap = Math.max(gap, ticks[k]! - ticks[k - 1]!);
    assert.ok(total > 200, `the batch took ${total.toFixed(0)} ms: too short to tell`);
    assert.ok(gap < total / 4, `a gap of ${gap.toFixed(0)} ms in ${total.toFixed(0)} ms`);
  });

  test('an element result equal to an earlier one is that frozen object; the JSON of unshared results', async () => {
    const items = itemsOf(200);
    const results = (await bulk(h.db, principal, logic, items, 50)).flat();
    const of = (r: BulkResult, name: string) => r.results!.find((x) => x.resultName === name)!;
    // Items 1 and 6: customer C-1 (the same margin), Qty 1 and 6 (no quantity discount).
    assert.equal(of(results[1]!, 'Margin'), of(results[6]!, 'Margin'));
    assert.equal(of(results[1]!, 'Disc'), of(results[6]!, 'Disc'));
    assert.ok(Object.isFrozen(of(results[1]!, 'Margin')));
    // An alert is never shared: each division by zero has its own result.
    const zeros = results.filter((r) => r.results !== null && of(r, 'PerUnit').alertType === 'CRITICAL');
    assert.ok(zeros.length >= 2);
    assert.notEqual(of(zeros[0]!, 'PerUnit'), of(zeros[1]!, 'PerUnit'));
    // The same JSON as results made one by one without sharing.
    const data = new BatchData(
      h.db,
      principal.partitionId,
      await policiesFor(h.db, principal.partitionId, logic),
    );
    for (const k of [1, 6, 12, 13]) {
      const r = results[k]!;
      const item = items[k]!;
      const product = (await masterRecords(h.db, principal, 'P', [item.sku])).get(item.sku)!;
      const customer = (await masterRecords(h.db, principal, 'C', [item.customerId!])).get(item.customerId!)!;
      const spec = {
        sku: item.sku,
        customerId: item.customerId!,
        roots: {
          product: recordOf('P', product, await attributeTypesOf(h.db, principal, 'P')),
          customer: recordOf('C', customer, await attributeTypesOf(h.db, principal, 'C')),
        },
        inputs: checkInputs(logic.inputs, item.inputs),
      };
      await data.prefetchExtensions(logic.extensions, [spec]);
      const [outcomes] = await evaluateItems(logic, [spec], data, { targetDate, explain: false, limits });
      assert.equal(
        JSON.stringify(r.results),
        JSON.stringify(resultObjects(logic, outcomes!, false, true)),
        `item ${k}`,
      );
    }
  });

  test('items from an async iterable or a generator: the batches of the same items in an array', async () => {
    const items = itemsOf(150);
    const run = async (source: Iterable<BulkItem> | AsyncIterable<BulkItem>) => {
      const batches: BulkResult[][] = [];
      for await (const b of evaluateBulk(h.db, principal, logic, source, {
        targetDate,
        limits,
        batchSize: 64,
      }))
        batches.push(b);
      return batches;
    };
    const fromArray = await run(items);
    assert.deepEqual(
      fromArray.map((b) => b.length),
      [64, 64, 22],
    );
    async function* slowly() {
      for (const item of items) {
        await new Promise((r) => setImmediate(r));
        yield item;
      }
    }
    function* lazily() {
      yield* items;
    }
    assert.deepEqual(await run(slowly()), fromArray);
    assert.deepEqual(await run(lazily()), fromArray);
  });

  test('items missing look-up rows and condition records in the first pass: as when all was loaded', async () => {
    const items = itemsOf(120, 1_000);
    const counting = () => {
      const lookups: string[] = [];
      const q: Queryable = {
        query: (sql: string, params?: readonly unknown[]) => {
          if (/condition_record|lookup_values/.test(sql)) lookups.push(sql);
          return h.db.query(sql, params);
        },
      };
      return { q, lookups };
    };
    // One run of the items: the first pass misses every look-up, later passes load them.
    const once = counting();
    const [cold] = await bulk(once.q, principal, logic, items, items.length);
    assert.ok(once.lookups.length > 0);
    // The same items twice in one run: the second batch finds every row loaded (no look-up statement).
    const twice = counting();
    const [first, warm] = await bulk(twice.q, principal, logic, [...items, ...items], items.length);
    assert.equal(twice.lookups.length, once.lookups.length, 'the second batch read no look-up rows');
    assert.deepEqual(warm, cold);
    assert.deepEqual(first, cold);
  });

  test('a caller that stops after the first batch leaves no statement running', async () => {
    let running = 0;
    const q: Queryable = {
      query: async (sql, params) => {
        running++;
        try {
          // Extension rows come slowly: the next batch's read is still running at the first yield.
          if (/product_extensions/.test(sql)) await new Promise((r) => setTimeout(r, 50));
          return await h.db.query(sql, params);
        } finally {
          running--;
        }
      },
    };
    let seen = 0;
    for await (const b of evaluateBulk(q, principal, logic, itemsOf(100), {
      targetDate,
      limits,
      batchSize: 10,
    })) {
      seen += b.length;
      break;
    }
    assert.equal(seen, 10);
    assert.equal(running, 0);
  });

  test('a record of the columns a logic reads, made from those fields only, is the record of all fields', async () => {
    const meta = await attributeTypesOf(h.db, principal, 'P');
    for (const fields of [new Set(['attribute1']), new Set(['attribute1', 'label', 'sku']), undefined]) {
      const rows = await masterRecords(h.db, principal, 'P', ['BK-1', 'BK-2'], fields);
      assert.equal(rows.size, 2);
      for (const row of rows.values()) {
        const all = recordOf('P', row, meta);
        const few = recordOf('P', row, meta, masterFields('P', fields));
        assert.deepEqual(few, all);
        assert.deepEqual(Object.keys(few.fields), Object.keys(all.fields), 'the same field order');
      }
    }
    assert.ok(masterFields('P', new Set(['attribute1'])).length < 10);
  });

  test('extension rows with time stamps read as epoch milliseconds: the records of SELECT * rows', async () => {
    // Time stamps on the edges: microseconds, just before 1970, just before midnight, infinity.
    const stamps: [string, string, string][] = [
      ['BK-0', '2026-03-04 23:59:59.999999+00', '1969-12-31 23:59:59.9995+00'],
      ['BK-3', '1970-01-01 00:00:00+00', 'infinity'],
      ['BK-6', '2026-11-26 12:34:56.123456+01', '-infinity'],
    ];
    for (const [sku, created, updated] of stamps)
      await h.db.query(
        `UPDATE product_extensions SET created_at = $3::timestamptz, last_update_at = $4::timestamptz
          WHERE partition_id = $1 AND sku = $2`,
        [h.partitionId, sku, created, updated],
      );
    const skus = ['BK-0', 'BK-3', 'BK-6', 'BK-9'];
    const meta = new Map<string, string>();
    const fast = await extensionRows(h.db, h.partitionId, 'product', 'Costs', skus);
    const all = await h.db.query<Record<string, unknown>>(
      'SELECT * FROM product_extensions WHERE partition_id = $1 AND name = $2 AND sku = ANY($3::text[]) ORDER BY sku',
      [h.partitionId, 'Costs', skus],
    );
    assert.equal(fast.length, 4);
    for (const row of all.rows) {
      const want = recordOf('PX', row, meta);
      const got = recordOf(
        'PX',
        fast.find((r) => r.sku === row.sku)!,
        meta,
      );
      assert.deepEqual(toJson(got), toJson(want), String(row.sku));
      assert.deepEqual(Object.keys(got.fields), Object.keys(want.fields));
      for (const name of Object.keys(want.fields)) assert.deepEqual(got.get(name), want.get(name), name);
      for (const name of ['createDate', 'lastUpdateDate']) {
        const w = want.fields[name];
        if (w instanceof Date) assert.equal((got.fields[name] as Date).getTime(), w.getTime(), name);
      }
    }
  });
  test('extension rows read with the columns earlier rows held: a row holding others is its whole record', async () => {
    // BK-0 … BK-9 first (attribute1 only), then rows holding attribute2 and attribute5 as well.
    await h.db.query(
      `UPDATE product_extensions SET attribute2 = 'two', attribute5 = 'five'
        WHERE partition_id = $1 AND name = 'Costs' AND sku IN ('BK-30', 'BK-36')`,
      [h.partitionId],
    );
    await h.db.query(
      `UPDATE product_extensions SET attribute5 = 'five only' WHERE partition_id = $1 AND name = 'Costs' AND sku = 'BK-39'`,
      [h.partitionId],
    );
    const items: BulkItem[] = Array.from({ length: SKUS }, (_, i) => ({
      sku: `BK-${i}`,
      customerId: 'C-1',
      inputs: { Qty: 1 },
    }));
    const statements: string[] = [];
    const q: Queryable = {
      query: (sql, params) => {
        if (/product_extensions/.test(sql)) statements.push(sql);
        return h.db.query(sql, params);
      },
    };
    const few = (await bulk(q, principal, logic, items, 10)).flat();
    assert.ok(
      statements.some((sql) => /rc_more/.test(sql)),
      'later batches read the columns seen',
    );
    assert.ok(
      statements.slice(1).some((sql) => !/rc_more/.test(sql)),
      'rows holding others read whole',
    );
    assert.deepEqual(few, (await bulk(h.db, principal, logic, items, 1_000)).flat());
    const all = await h.db.query<Record<string, unknown>>(
      "SELECT * FROM product_extensions WHERE partition_id = $1 AND name = 'Costs'",
      [h.partitionId],
    );
    const ext = (r: BulkResult) => r.results!.find((x) => x.resultName === 'Ext')!.result;
    for (const [i, r] of few.entries()) {
      const row = all.rows.find((x) => x.sku === `BK-${i}`);
      assert.deepEqual(ext(r), row === undefined ? null : toJson(recordOf('PX', row, new Map())), `BK-${i}`);
    }
    assert.equal((ext(few[36]!) as Record<string, unknown>).attribute5, 'five');
    assert.equal((ext(few[39]!) as Record<string, unknown>).attribute5, 'five only');
  });
  test('keys as the text of a text[] parameter: every key as it is, on both databases', async () => {
    const keys = [
      'plain',
      'with space ',
      ' lead',
      'com,ma',
      'br{a}ce',
      'NULL',
      '',
      "it's",
      'ü€😀',
      'new\nline',
    ];
    const special = ['quote"d', 'back\\slash'];
    for (const list of [keys, [...keys, ...special], [], ['one']]) {
      const r = await h.db.query<{ a: string[] }>('SELECT $1::text[] AS a', [textArrayParam(list)]);
      assert.deepEqual(r.rows[0]!.a, list);
    }
    assert.equal(textArrayParam(keys), `{"${keys.join('","')}"}`, 'the text, joined at once');
    assert.deepEqual(textArrayParam(special), special, 'the list itself, for the driver to escape');
  });
});
