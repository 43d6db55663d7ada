// Pricing logics over real HTTP on both databases: checked-on-write (each compile-error kind with
// element, line and column; hostile text), /formulamanager.execute with inputs, product, customer
// and extension reads, SIMPLE/RANGE/MATRIX/MATRIX2 look-ups, rounding policies with price endings, a
// hand-worked explanation, versions by target date, the step limit, permissions and partition
// isolation. Every table kind, the functions, every rounding mode: formulas-functions.test.ts; every
// compile-error kind, the time limit, filtered customers, the README example: formulas-checks.test.ts.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  adminPrincipal,
  clientOf,
  startHarness,
  type Client,
  type Harness,
  type Reply,
} from '../helpers/app.ts';
import type { Principal } from '../../src/access/access.ts';
import { bulkLogic, evaluateBulk, type BulkItem } from '../../src/modules/formulas/bulk.ts';
import { LogicDate } from '../../src/logic/values.ts';
import { okData } from '../helpers/envelope.ts';

function expectError(r: Reply, http: number, status: number, pattern?: RegExp): void {
  assert.equal(r.status, http, r.text);
  assert.equal(r.body.response.status, status, r.text);
  if (pattern) assert.match(String(r.body.response.data), pattern);
}

const M = '/lookuptablemanager';

/** Four sums of a 1,500-value list: over the step limit (5,000) these tests run with. */
const PAST_STEP_LIMIT = [1, 2, 3, 4].map((i) => ({
  elementName: `S${i}`,
  expression: `sum([${Array(1500).fill('1').join(',')}])`,
}));

async function seedTables(api: Client): Promise<void> {
  const table = async (uniqueName: string, type: string, valueType: string, values: object[]) => {
    const [t] = okData(await api(`${M}.add`, { data: { uniqueName, label: uniqueName, type, valueType } }));
    okData(
      await api(
        `${M}.add/${t.id}`,
        values.map((data) => ({ data })),
      ),
    );
  };
  await table('Margins', 'SIMPLE', 'REAL', [
    { name: 'EU', value: 0.25 },
    { name: 'US', value: 0.3 },
  ]);
  await table('QtyDiscount', 'RANGE', 'REAL', [
    { name: 'small', upperBound: 10, value: 0 },
    { name: 'large', lowerBound: 10, upperBound: 100, value: 0.05 },
  ]);
  await table('Freight', 'MATRIX2', 'REAL', [{ key1: 'DE', key2: 'PALLET', attribute1: 2.5, attribute2: 4 }]);
  await table('Brands', 'MATRIX', 'STRING', [{ name: 'ACME', attribute1: 'premium' }]);
}

const PRICE_ELEMENTS = [
  { elementName: 'Cost', expression: 'product.attribute1', formatType: 'MONEY' },
  { elementName: 'Margin', expression: 'lookup("Margins", customer.attribute1)', formatType: 'PERCENT' },
  { elementName: 'Discount', expression: 'lookup("QtyDiscount", input.Qty)', displayOptions: 0 },
  { elementName: 'Freight', expression: 'lookup("Freight", "DE", input.Packing)' },
  { elementName: 'Base', expression: 'Cost * (1 + Margin)' },
  {
    elementName: 'Price',
    label: 'Net price',
    expression: 'Base * (1 - Discount) + Freight',
    rounding: 'EUR99',
    formatType: 'MONEY',
    suffix: 'EUR',
  },
  { elementName: 'Check', expression: 'if(Price < Cost, critical("below cost", false), true)' },
];
const PRICE_INPUTS = [
  { name: 'Qty', type: 'NUMBER', required: true },
  { name: 'Packing', type: 'OPTION', options: ['PALLET', 'BOX'], default: 'PALLET' },
];

describe('pricing logics', () => {
  let h: Harness;
  let api: Client;
  before(async () => {
    h = await startHarness({ env: { LOGIC_MAX_STEPS: '5000' } });
    api = await clientOf(h);
    okData(await api('/add/PAM', { data: { fieldName: 'attribute1', label: 'Cost', fieldType: 'MONEY' } }));
    okData(
      await api('/add/P', {
        data: { sku: 'MB-1', label: 'Bolt', attribute1: '12.40', attribute2: 'ACME', formulaName: 'Price' },
      }),
    );
    okData(await api('/add/P', { data: { sku: 'MB-2', label: 'Nut' } }));
    okData(await api('/add/C', { data: { customerId: 'C-1', name: 'Kunde', attribute1: 'EU' } }));
    okData(
      await api('/add/PX', { data: { name: 'Costs', sku: 'MB-1', attribute1: '10.005', attribute2: 'kg' } }),
    );
    await seedTables(api);
    okData(
      await api('/add/RP', {
        data: {
          uniqueName: 'EUR99',
          currency: 'EUR',
          step: 0.01,
          mode: 'HALF_UP',
          priceEnding: '.99',
          endingRule: 'NEAREST',
        },
      }),
    );
    okData(
      await api('/add/RP', { data: { uniqueName: 'CHF05', currency: 'CHF', step: 0.05, mode: 'HALF_UP' } }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Price',
          validAfter: '2026-01-01',
          label: 'List price',
          inputs: PRICE_INPUTS,
          elements: PRICE_ELEMENTS,
        },
      }),
    );
  });
  after(() => h.close());

  /** The fields of a calculation result object (interface.md, "Rebate record group"). */
  const RESULT_OBJECT_FIELDS = [
    ...['resultName', 'resultLabel', 'result', 'alertMessage', 'resultType', 'suffix', 'cssProperties'],
    ...['userGroup', 'resultGroup', 'labelTranslations', 'resultDescription', 'excludeFromExport'],
    ...['overrideAllowEmpty', 'overridable', 'overridden', 'displayOptions', 'alertType', 'formatType'],
    ...['warnings', 'overrideValueOptions'],
  ];

  test('execute runs the product logic; hidden elements are left out; the answer names the version', async () => {
    const r = await api('/formulamanager.execute/MB-1', {
      data: { inputs: { Qty: 20 }, customerId: 'C-1', targetDate: '2026-03-01' },
    });
    const results = okData(r);
    const by = Object.fromEntries(results.map((x: any) => [x.resultName, x]));
    assert.equal(by.Discount, undefined, 'displayOptions 0 hides the element');
    assert.equal(by.Cost.result, 12.4);
    assert.equal(by.Margin.result, 0.25);
    assert.equal(by.Freight.result, 2.5);
    assert.equal(by.Base.result, 15.5);
    // 15.5 × 0.95 + 2.5 = 17.225 → step 0.01 HALF_UP 17.23 → nearest .99 ending: 16.99 (0.24 away) not 17.99
    assert.equal(by.Price.result, 16.99);
    assert.equal(by.Price.resultLabel, 'Net price');
    assert.equal(by.Price.formatType, 'MONEY');
    assert.equal(by.Price.suffix, 'EUR');
    assert.equal(by.Price.resultType, 'NUMBER');
    assert.equal(by.Check.result, true);
    assert.equal(by.Check.alertType, null);
    // Every field of the interface's result object is there (those no logic sets: their defaults).
    assert.deepEqual(Object.keys(by.Price).sort(), [...RESULT_OBJECT_FIELDS].sort());
    assert.deepEqual(
      [by.Price.cssProperties, by.Price.userGroup, by.Price.labelTranslations, by.Price.resultDescription],
      [null, null, null, null],
    );
    assert.deepEqual(
      [by.Price.excludeFromExport, by.Price.overrideAllowEmpty, by.Price.overrideValueOptions],
      [false, false, []],
    );
    assert.deepEqual(r.body.response.logic, {
      uniqueName: 'Price',
      validAfter: '2026-01-01',
      version: 0,
      targetDate: '2026-03-01',
    });
    const named = okData(
      await api('/formulamanager.execute/MB-1/Price', {
        data: { inputs: { Qty: 5, Packing: 'BOX' }, customerId: 'C-1', targetDate: '2026-03-01' },
      }),
    );
    const n = Object.fromEntries(named.map((x: any) => [x.resultName, x]));
    assert.equal(n.Freight.result, null, 'no BOX row in Freight');
    assert.equal(n.Price.result, null, 'null propagates');
    // A number past the exponents a decimal takes is refused, never expanded (it ran the server out
    // of memory as a text of a billion digits).
    for (const Qty of ['9e999999999', '1e-2000']) {
      expectError(
        await api('/formulamanager.execute/MB-1/Price', { data: { inputs: { Qty, Packing: 'BOX' } } }),
        400,
        -4,
        /inputs\.Qty/,
      );
    }
  });

  test('explain: values, records and fields read, lookup hits and misses, inputs, rounding steps', async () => {
    const results = okData(
      await api('/formulamanager.execute/MB-1', {
        data: { inputs: { Qty: 20 }, customerId: 'C-1', targetDate: '2026-03-01', explain: true },
      }),
    );
    const by = Object.fromEntries(results.map((x: any) => [x.resultName, x]));
    assert.equal(by.Discount.result, 0.05, 'hidden elements appear when explaining');
    assert.equal(by.Discount.explanation.hidden, true);
    const cost = by.Cost.explanation.reads;
    assert.equal(cost[0].kind, 'field');
    assert.equal(cost[0].record, 'product');
    assert.match(cost[0].typedId, /^\d+\.P$/);
    assert.equal(cost[0].field, 'attribute1');
    assert.equal(cost[0].value, 12.4);
    const margin = by.Margin.explanation.reads;
    const hit = margin.find((e: any) => e.kind === 'lookup');
    assert.deepEqual(
      { ...hit, typedId: undefined, version: undefined },
      {
        kind: 'lookup',
        table: 'Margins',
        keys: ['EU'],
        hit: true,
        typedId: undefined,
        version: undefined,
        value: 0.25,
      },
    );
    assert.match(hit.typedId, /^\d+\.LTV$/);
    assert.ok(
      margin.some(
        (e: any) =>
          e.kind === 'field' && e.record === 'customer' && e.field === 'attribute1' && e.value === 'EU',
      ),
    );
    const disc = by.Discount.explanation.reads;
    assert.ok(disc.some((e: any) => e.kind === 'input' && e.name === 'Qty' && e.value === 20));
    const rounding = by.Price.explanation.reads.find((e: any) => e.kind === 'rounding');
    assert.deepEqual(rounding, {
      kind: 'rounding',
      policy: 'EUR99',
      step: '0.01',
      mode: 'HALF_UP',
      priceEnding: '.99',
      endingRule: 'NEAREST',
      before: 17.225,
      after: 16.99,
    });
    assert.ok(
      by.Price.explanation.reads.some(
        (e: any) => e.kind === 'element' && e.name === 'Base' && e.value === 15.5,
      ),
    );
    const miss = okData(
      await api('/formulamanager.execute/MB-1', {
        data: {
          inputs: { Qty: 20, Packing: 'BOX' },
          customerId: 'C-1',
          targetDate: '2026-03-01',
          explain: true,
        },
      }),
    ).find((x: any) => x.resultName === 'Freight');
    assert.deepEqual(
      miss.explanation.reads.find((e: any) => e.kind === 'lookup'),
      {
        kind: 'lookup',
        table: 'Freight',
        keys: ['DE', 'BOX'],
        hit: false,
        typedId: null,
        version: null,
        value: null,
      },
    );
  });

  test('every lookup-table kind, lookupRow, extension rows, decimal exactness and round modes', async () => {
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Kinds',
          validAfter: '2026-01-01',
          elements: [
            { elementName: 'Simple', expression: 'lookup("Margins", "US")' },
            { elementName: 'RangeLow', expression: 'lookup("QtyDiscount", 9.99)' },
            { elementName: 'RangeEdge', expression: 'lookup("QtyDiscount", 10)' },
            { elementName: 'RangeOut', expression: 'lookup("QtyDiscount", 100)' },
            { elementName: 'Matrix', expression: 'lookup("Brands", product.attribute2)' },
            { elementName: 'Row', expression: 'lookupRow("Freight", "DE", "PALLET")' },
            { elementName: 'RowField', expression: 'Row.attribute2 + get(Row, "attribute1")' },
            { elementName: 'Ext', expression: 'productExtension("Costs")' },
            { elementName: 'ExtCost', expression: 'Ext.attribute1 * 2' },
            { elementName: 'Cents', expression: '0.1 + 0.2 == 0.3 and sum([0.01, 0.02, 0.07]) == 0.1' },
            { elementName: 'Div', expression: 'round(10 / 3, 4, "HALF_EVEN")' },
            {
              elementName: 'Modes',
              expression:
                'concat(round(2.345, 2, "HALF_EVEN"), "/", round(2.341, 2, "UP"), "/", round(-2.345, 2, "FLOOR"))',
            },
            { elementName: 'Chf', expression: 'roundPrice(17.8749, "CHF")' },
            { elementName: 'NoPolicy', expression: 'roundPrice(1.005, "JPY")' },
            { elementName: 'Target', expression: 'addDays(targetDate, 1)' },
            { elementName: 'ProdFn', expression: 'product("attribute1") + 0' },
            { elementName: 'SellerName', expression: 'seller("name") + "/" + seller.sellerId' },
            { elementName: 'NoCustomer', expression: 'customer("name")' },
          ],
        },
      }),
    );
    okData(await api('/add/SL', { data: { sellerId: 'S-1', name: 'Anna' } }));
    const results = okData(
      await api('/formulamanager.execute/MB-1/Kinds', {
        data: { targetDate: '2026-03-01', sellerId: 'S-1' },
      }),
    );
    const v = Object.fromEntries(results.map((x: any) => [x.resultName, x.result]));
    assert.equal(v.Simple, 0.3);
    assert.equal(v.RangeLow, 0);
    assert.equal(v.RangeEdge, 0.05, 'lower bound included');
    assert.equal(v.RangeOut, null, 'upper bound excluded');
    assert.equal(v.Matrix, 'premium');
    assert.equal(v.Row.attribute2, 4);
    assert.equal(v.RowField, 6.5);
    assert.equal(v.ExtCost, 20.01);
    assert.equal(v.Cents, true);
    assert.equal(v.Div, 3.3333);
    assert.equal(v.Modes, '2.34/2.35/-2.35');
    assert.equal(v.Chf, 17.85);
    assert.equal(v.NoPolicy, 1.01);
    assert.match(
      results.find((x: any) => x.resultName === 'NoPolicy').warnings[0],
      /no rounding policy for JPY/,
    );
    assert.equal(v.Target, '2026-03-02');
    assert.equal(v.ProdFn, 12.4);
    assert.equal(v.SellerName, 'Anna/S-1');
    assert.equal(v.NoCustomer, null);
    // A seller is read with SELLER_FETCH, as /fetch/SL: without it (by role, or left out of a token's
    // permission list) a 403, never the seller's fields.
    const basic = { user: 'admin', password: 'admin-password-1' };
    const token = okData(
      await h.call('/accountmanager.getjsonwebtoken', {
        basic,
        body: { data: { permissions: ['PRODUCT_EDIT'] } },
      }),
    )[0].token;
    const restricted = { 'X-Ratecard-jwt': token };
    const sellerRun = { data: { targetDate: '2026-03-01', sellerId: 'S-1' } };
    expectError(await h.call('/fetch/SL', { headers: restricted, body: {} }), 403, -3);
    expectError(
      await h.call('/formulamanager.execute/MB-1/Kinds', { headers: restricted, body: sellerRun }),
      403,
      -3,
    );
    await h.newUser('noseller', 'noseller-password-1', []);
    const noSeller = await clientOf(h, 'noseller', 'noseller-password-1');
    expectError(await noSeller('/formulamanager.execute/MB-1/Kinds', sellerRun), 403, -3);
  });

  test('a DATE lookup table answers dates to the logic (date functions, resultType DATE)', async () => {
    const [t] = okData(
      await api(`${M}.add`, { data: { uniqueName: 'Launches', type: 'SIMPLE', valueType: 'DATE' } }),
    );
    okData(await api(`${M}.add/${t.id}`, { data: { name: 'spring', value: '2026-05-01' } }));
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Launch',
          validAfter: '2026-01-01',
          elements: [
            { elementName: 'Day', expression: 'lookup("Launches", "spring")' },
            { elementName: 'Next', expression: 'addDays(lookup("Launches", "spring"), 1)' },
            { elementName: 'Later', expression: 'lookup("Launches", "spring") > targetDate' },
          ],
        },
      }),
    );
    const results = okData(
      await api('/formulamanager.execute/MB-1/Launch', { data: { targetDate: '2026-03-01' } }),
    );
    const by = Object.fromEntries(results.map((x: any) => [x.resultName, x]));
    assert.deepEqual([by.Day.result, by.Day.resultType, by.Day.formatType], ['2026-05-01', 'DATE', 'DATE']);
    assert.deepEqual([by.Next.result, by.Next.resultType], ['2026-05-02', 'DATE']);
    assert.equal(by.Later.result, true);
  });

  test('versions: the latest validAfter not after the target date runs', async () => {
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Ver',
          validAfter: '2026-01-01',
          elements: [{ elementName: 'V', expression: '"old"' }],
        },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Ver',
          validAfter: '2026-06-01',
          elements: [{ elementName: 'V', expression: '"new"' }],
        },
      }),
    );
    const at = async (d: string) =>
      okData(await api('/formulamanager.execute/MB-1/Ver', { data: { targetDate: d } }))[0].result;
    assert.equal(await at('2026-05-31'), 'old');
    assert.equal(await at('2026-06-01'), 'new');
    expectError(
      await api('/formulamanager.execute/MB-1/Ver', { data: { targetDate: '2025-12-31' } }),
      404,
      -1,
      /Ver valid at 2025-12-31/,
    );
    // An update is seen at once (the compiled cache is keyed by version).
    const [row] = okData(await api('/fetch/F', { data: { uniqueName: 'Ver', validAfter: '2026-06-01' } }));
    okData(
      await api('/update/F', {
        data: { id: row.id, inputs: [], elements: [{ elementName: 'V', expression: '"newer"' }] },
        oldValues: { version: row.version },
      }),
    );
    assert.equal(await at('2026-07-01'), 'newer');
    // Elements alone are checked with the logic's stored inputs (by update and by integrate), and an
    // input it does not have is still named.
    const [withInput] = okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Alone',
          validAfter: '2026-01-01',
          inputs: [{ name: 'Qty', type: 'NUMBER' }],
          elements: [{ elementName: 'Cost', expression: '1' }],
        },
      }),
    );
    const [updated] = okData(
      await api('/update/F', {
        data: {
          typedId: withInput.typedId,
          elements: [{ elementName: 'Cost', expression: 'input.Qty + 1' }],
        },
      }),
    );
    assert.deepEqual(updated.inputs, [{ name: 'Qty', type: 'NUMBER' }]);
    okData(
      await api('/integrate/F', [
        {
          data: {
            uniqueName: 'Alone',
            validAfter: '2026-01-01',
            elements: [{ elementName: 'Cost', expression: 'input.Qty * 2' }],
          },
        },
      ]),
    );
    expectError(
      await api('/update/F', {
        data: { typedId: withInput.typedId, elements: [{ elementName: 'Cost', expression: 'input.Other' }] },
      }),
      400,
      -4,
      /unknown input Other/,
    );
    // A new logic without inputs has none.
    expectError(
      await api('/add/F', {
        data: {
          uniqueName: 'AloneNew',
          validAfter: '2026-01-01',
          elements: [{ elementName: 'Cost', expression: 'input.Qty' }],
        },
      }),
      400,
      -4,
      /unknown input Qty/,
    );
  });

  test('compile errors on write: each kind is a -4 naming element, line and column', async () => {
    const bad = async (expression: string, pattern: RegExp, extra: object[] = []) => {
      const r = await api('/add/F', {
        data: {
          uniqueName: 'Bad',
          validAfter: '2026-01-01',
          inputs: [{ name: 'Q', type: 'NUMBER' }],
          elements: [{ elementName: 'A', expression: '1' }, { elementName: 'B', expression }, ...extra],
        },
      });
      expectError(r, 400, -4, pattern);
      assert.ok(r.body.response.errors['elements[1].expression'], r.text);
    };
    await bad('1 +\n  nope(2)', /element B, line 2, column 3: unknown function nope/);
    await bad('A + Missing', /element B, line 1, column 5: unknown name Missing/);
    await bad('A + C', /element B, line 1, column 5: element C comes later/, [
      { elementName: 'C', expression: '2' },
    ]);
    await bad('A + C', /cycle B → C → B/, [{ elementName: 'C', expression: 'B * 2' }]);
    await bad('B + 1', /element B refers to itself/);
    await bad('round(A, 2, "HALF_UP", 4)', /round takes 1 to 3 arguments, got 4/);
    await bad('"text" * A', /\* needs numbers, got text and number/);
    await bad('input.Nope', /unknown input Nope/);
    await bad('length(123)', /length: argument 1 must be text or list, got number/);
    await bad('A.x', /A.x: A is number, not a record/);
    await bad('input.Q.x', /input.Q.x: input.Q is number, not a record/);
    await bad('lookup(product.sku, 1)', /argument 1 must be a name in quotes/);
    await bad('A +', /line 1, column 4/);
    await bad('product.__proto__', /not allowed/);
    await bad('constructor', /not allowed/);
    await bad('('.repeat(200) + '1' + ')'.repeat(200), /nesting deeper than 64/);
    await bad(`"${'x'.repeat(5000)}"`, /text literal longer/);
    expectError(
      await api('/add/F', {
        data: {
          uniqueName: 'Bad',
          validAfter: '2026-01-01',
          elements: [{ elementName: 'input', expression: '1' }],
        },
      }),
      400,
      -4,
      /reserved/,
    );
    expectError(
      await api('/add/F', {
        data: {
          uniqueName: 'Bad',
          validAfter: '2026-01-01',
          elements: [
            { elementName: 'X', expression: '1' },
            { elementName: 'X', expression: '2' },
          ],
        },
      }),
      400,
      -4,
      /used twice/,
    );
    expectError(
      await api('/add/RP', { data: { uniqueName: 'R', currency: 'EUR', priceEnding: '9,9' } }),
      400,
      -4,
      /priceEnding/,
    );
    // An ending finer than the step would put prices off the step (12.40 → 11.999 on 0.01): also
    // with the default step, or when an update or integrate gives only one of the two.
    expectError(
      await api('/add/RP', { data: { uniqueName: 'R', currency: 'EUR', step: 0.01, priceEnding: '.999' } }),
      400,
      -4,
      /priceEnding/,
    );
    expectError(
      await api('/add/RP', { data: { uniqueName: 'R', currency: 'EUR', priceEnding: '.999' } }),
      400,
      -4,
      /priceEnding/,
    );
    const [fine] = okData(
      await api('/add/RP', {
        data: { uniqueName: 'Fine', currency: 'XTS', step: '0.010', priceEnding: '.99' },
      }),
    );
    expectError(
      await api('/update/RP', { data: { typedId: fine.typedId, priceEnding: '.999' } }),
      400,
      -4,
      /priceEnding/,
    );
    expectError(
      await api('/update/RP', { data: { typedId: fine.typedId, step: 0.1 } }),
      400,
      -4,
      /priceEnding/,
    );
    expectError(
      await api('/integrate/RP', [{ data: { uniqueName: 'Fine', priceEnding: '.999' } }]),
      400,
      -4,
      /priceEnding/,
    );
    okData(await api('/update/RP', { data: { typedId: fine.typedId, step: 0.001, priceEnding: '.999' } }));
    okData(await api('/integrate/RP', [{ data: { uniqueName: 'Fine', priceEnding: '.995' } }]));
    okData(await api('/delete/RP', { data: { typedId: fine.typedId } }));
    assert.equal(
      (await api('/fetch/F', { data: { uniqueName: 'Bad' } })).body.response.data.length,
      0,
      'nothing saved',
    );
  });

  test('inputs are checked against their declarations', async () => {
    const run = (inputs: object) =>
      api('/formulamanager.execute/MB-1', { data: { inputs, customerId: 'C-1', targetDate: '2026-03-01' } });
    const missing = await run({});
    expectError(missing, 400, -4, /inputs.Qty: is required/);
    assert.ok(missing.body.response.errors['inputs.Qty']);
    expectError(await run({ Qty: 'many' }), 400, -4, /inputs.Qty: "many" is not a number/);
    // A JSON number past a double is named as such (it arrives as Infinity, whose JSON is null).
    const { token } = await h.login();
    const huge = await h.call('/formulamanager.execute/MB-1', {
      raw: '{"data":{"inputs":{"Qty":1e400},"customerId":"C-1","targetDate":"2026-03-01"}}',
      headers: { 'x-ratecard-jwt': token },
    });
    expectError(huge, 400, -4, /inputs.Qty: is a number beyond the range of a double/);
    expectError(
      await run({ Qty: 1, Packing: 'CRATE' }),
      400,
      -4,
      /inputs.Packing: must be one of PALLET, BOX/,
    );
    expectError(await run({ Qty: 1, Other: 1 }), 400, -4, /inputs.Other: is not an input/);
    expectError(
      await run({ Qty: 1, Packing: 'x'.repeat(10_001) }),
      400,
      -4,
      /inputs.Packing: must be text of at most 10,000 characters/,
    );
    // A day that is none, and year 0 (the database has none): -4 naming targetDate, not its error text.
    for (const targetDate of ['2026-02-30', '0000-01-01']) {
      const r = await api('/formulamanager.execute/MB-1', { data: { inputs: { Qty: 1 }, targetDate } });
      expectError(r, 400, -4, /^targetDate: must be a date/);
      assert.ok(r.body.response.errors.targetDate, r.text);
    }
    expectError(await api('/formulamanager.execute/NOPE', { data: {} }), 404, -1, /Product NOPE/);
    expectError(await api('/formulamanager.execute/MB-2', { data: {} }), 400, -4, /no logic assigned/);
    expectError(
      await api('/formulamanager.execute/MB-1', { data: { inputs: { Qty: 1 }, customerId: 'C-404' } }),
      404,
      -1,
      /Customer C-404/,
    );
  });

  test('run-time problems: element CRITICAL alerts; the step limit stops the evaluation with a -4', async () => {
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Faults',
          validAfter: '2026-01-01',
          elements: [
            { elementName: 'Zero', expression: '1 / 0' },
            { elementName: 'After', expression: 'coalesce(Zero, 7)' },
            { elementName: 'NoTable', expression: 'lookup("Nowhere", 1)' },
            { elementName: 'Warn', expression: 'warning("check me", 3)' },
            // Half of a character: the emoji's first surrogate alone, in a text and in a list.
            { elementName: 'Half', expression: 'substring("\u{1F600}abc", 1)' },
            { elementName: 'HalfList', expression: '[substring("x\u{1F600}", 0, 2)]' },
            { elementName: 'Whole', expression: 'substring("\u{1F600}abc", 2)' },
          ],
        },
      }),
    );
    const v = Object.fromEntries(
      okData(await api('/formulamanager.execute/MB-1/Faults', { data: {} })).map((x: any) => [
        x.resultName,
        x,
      ]),
    );
    assert.equal(v.Zero.result, null);
    assert.equal(v.Zero.alertType, 'CRITICAL');
    assert.equal(v.Zero.alertMessage, 'division by zero');
    assert.equal(v.After.result, 7);
    assert.match(v.NoTable.alertMessage, /unknown lookup table Nowhere/);
    assert.equal(v.Warn.result, 3);
    assert.equal(v.Warn.alertType, 'WARNING');
    assert.deepEqual(v.Warn.warnings, ['check me']);
    for (const name of ['Half', 'HalfList']) {
      assert.equal(v[name].result, null, name);
      assert.equal(v[name].alertType, 'CRITICAL', name);
      assert.match(v[name].alertMessage, /half of a character/, name);
    }
    assert.equal(v.Whole.result, 'abc');
    okData(
      await api('/add/F', {
        data: { uniqueName: 'Loop', validAfter: '2026-01-01', elements: PAST_STEP_LIMIT },
      }),
    );
    expectError(
      await api('/formulamanager.execute/MB-1/Loop', { data: {} }),
      400,
      -4,
      /element S\d: step limit of 5000 exceeded/,
    );
    // Each element within its bounds, all of them together past what one answer holds: a -4 naming
    // the element that went past (seventy such elements answered a 500 after seconds).
    const huge = [
      { elementName: 'E0', expression: `"${'x'.repeat(3990)}"` },
      ...[1, 2, 3, 4, 5, 6, 7].map((i) => ({
        elementName: `E${i}`,
        expression: `[E${i - 1}, E${i - 1}, E${i - 1}]`,
      })),
      ...[0, 1, 2, 3, 4, 5].map((i) => ({ elementName: `R${i}`, expression: '[E7]' })),
    ];
    okData(await api('/add/F', { data: { uniqueName: 'Huge', validAfter: '2026-01-01', elements: huge } }));
    expectError(
      await api('/formulamanager.execute/MB-1/Huge', { data: {} }),
      400,
      -4,
      /element R4: the results hold more than 50000000 characters of text or 1000000 list values in all/,
    );
    // An explanation repeats the values each element read: they count as results do (ten elements
    // counting one 8.7-million-character list answered 109 MB; sixty, a 500).
    const counts = [
      ...huge.slice(0, 8),
      ...[0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => ({ elementName: `C${i}`, expression: 'count(E7)' })),
    ];
    okData(
      await api('/add/F', { data: { uniqueName: 'Counts', validAfter: '2026-01-01', elements: counts } }),
    );
    const plain = await api('/formulamanager.execute/MB-1/Counts', { data: {} });
    assert.equal(plain.status, 200, plain.text.slice(0, 300));
    expectError(
      await api('/formulamanager.execute/MB-1/Counts', { data: { explain: true } }),
      400,
      -4,
      /element C\d: the results hold more than 50000000 characters/,
    );
    assert.equal(
      (await api('/formulamanager.execute/MB-1/Faults', { data: {} })).status,
      200,
      'the process lives',
    );
    expectError(await api('/formulamanager.execute/MB-1/', { data: {} }), 400, -4, /is empty: name a logic/);
  });

  test('formula-filtered products and customers: the logic runs once, the fetch is one SQL statement', async () => {
    for (const [sku, cost, cur] of [
      ['F-1', '5', 'EUR'],
      ['F-2', '15', 'EUR'],
      ['F-3', '25', 'USD'],
      ['F-4', '35', 'EUR'],
    ])
      okData(
        await api('/add/P', { data: { sku, label: `Filtered ${sku}`, attribute1: cost, currency: cur } }),
      );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Expensive',
          validAfter: '2026-01-01',
          nature: 'FILTER',
          inputs: [
            { name: 'Min', type: 'MONEY', required: true },
            { name: 'Currency', type: 'TEXT' },
          ],
          elements: [
            { elementName: 'Threshold', expression: 'input.Min * (1 + lookup("Margins", "EU"))' },
            {
              elementName: 'Filter',
              expression:
                'allOf(filter("attribute1", "greaterThan", Threshold), if(isNull(input.Currency), null, filter("currency", "equals", input.Currency)))',
            },
          ],
        },
      }),
    );
    const statements: string[] = [];
    const original = h.db.query.bind(h.db);
    (h.db as any).query = (sql: string, params?: unknown[]) => {
      statements.push(sql);
      return original(sql, params);
    };
    let rows;
    try {
      // Threshold = 10 × 1.25 = 12.5; attribute1 is MONEY in the attribute meta: compared as numbers.
      rows = okData(
        await api('/productmanager.fetchformulafilteredproducts', {
          formulaName: 'Expensive',
          formulaParameters: { Min: 10, Currency: 'EUR' },
          data: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [{ fieldName: 'sku', operator: 'startsWith', value: 'F-' }],
          },
          sortBy: 'sku',
          resultFields: ['sku'],
        }),
      );
    } finally {
      (h.db as any).query = original;
    }
    assert.deepEqual(
      rows.map((r: any) => r.sku),
      ['F-2', 'F-4'],
    );
    assert.equal(statements.filter((s) => /FROM "products"/.test(s)).length, 1, statements.join('\n---\n'));
    const all = okData(
      await api('/productmanager.fetchformulafilteredproducts', {
        formulaName: 'Expensive',
        formulaParameters: { Min: 10 },
        data: { sku: ['F-1', 'F-2', 'F-3'] },
        sortBy: 'sku',
      }),
    );
    assert.deepEqual(
      all.map((r: any) => r.sku),
      ['F-2', 'F-3'],
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Kunden',
          validAfter: '2026-01-01',
          nature: 'FILTER',
          elements: [{ elementName: 'F', expression: 'filter("attribute1", "inSet", ["EU", "CH"])' }],
        },
      }),
    );
    assert.deepEqual(
      okData(
        await api('/customermanager.fetchformulafilteredcustomers', {
          formulaName: 'Kunden',
          resultFields: ['customerId'],
        }),
      ),
      [{ customerId: 'C-1' }],
    );
    expectError(
      await api('/productmanager.fetchformulafilteredproducts', { formulaName: 'Price' }),
      400,
      -4,
      /PRICING logic, not a FILTER logic/,
    );
    expectError(
      await api('/productmanager.fetchformulafilteredproducts', { formulaName: 'Expensive' }),
      400,
      -4,
      /formulaParameters.Min: is required/,
    );
    // Parameters name the request's own field; without the logic they are for, they are refused.
    const bogus = await api('/productmanager.fetchformulafilteredproducts', {
      formulaName: 'Expensive',
      formulaParameters: { Min: 1, Bogus: 2 },
    });
    expectError(bogus, 400, -4);
    assert.ok(bogus.body.response.errors['formulaParameters.Bogus'], bogus.text);
    const orphan = await api('/productmanager.fetchformulafilteredproducts', {
      formulaParameters: { Min: 1 },
    });
    expectError(orphan, 400, -4);
    assert.ok(orphan.body.response.errors.formulaName, orphan.text);
    // A field named in quotes is checked on save; one given by an expression when the logic runs.
    const badField = (expression: string) =>
      api('/add/F', {
        data: {
          uniqueName: 'BadField',
          validAfter: '2026-01-01',
          nature: 'FILTER',
          elements: [{ elementName: 'F', expression }],
        },
      });
    expectError(await badField('filter("colour", "equals", "red")'), 400, -4, /unknown field "colour"/);
    okData(await badField('filter(concat("col", "our"), "equals", "red")'));
    const bad = await api('/productmanager.fetchformulafilteredproducts', { formulaName: 'BadField' });
    expectError(bad, 400, -4, /colour/);
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'NoFilter',
          validAfter: '2026-01-01',
          nature: 'FILTER',
          elements: [{ elementName: 'F', expression: '1' }],
        },
      }),
    );
    expectError(
      await api('/productmanager.fetchformulafilteredproducts', { formulaName: 'NoFilter' }),
      400,
      -4,
      /must end with a filter/,
    );
  });

  test('conditionRecord: the item valid at the target date, on the edges of validity; explained', async () => {
    const [set] = okData(
      await api('/add/CRCS', { data: { uniqueName: 'SalesDiscount', label: 'Sales discount', keySize: 2 } }),
    );
    for (const [fieldName, fieldType] of [
      ['attribute1', 'NUMERIC'],
      ['attribute3', 'INTEGER'],
      ['attribute4', 'BOOLEAN'],
      ['attribute5', 'DATE'],
      ['attribute6', 'NUMERIC'],
    ])
      okData(await api('/add/CRCIAM', { data: { conditionRecordSetId: set.id, fieldName, fieldType } }));
    const item = async (validFrom: string, validTo: string, conditionValue: string) =>
      okData(
        await api('/add/CRCI2', {
          data: {
            conditionRecordSetId: set.id,
            key1: 'C-1',
            key2: 'MB-1',
            validFrom,
            validTo,
            conditionValue,
            attribute1: '10.5',
            attribute2: 'note',
            // The look-up answers them typed (numbers as doubles while exact, else text): the logic
            // reads decimals as stored, booleans and dates.
            attribute3: '9007199254740993',
            attribute4: 'true',
            attribute5: '2026-09-30',
            attribute6: '0.1',
          },
        }),
      )[0];
    const spring = await item('2026-03-01', '2026-06-30', '0.10');
    await item('2026-07-01', '2026-12-31', '0.125');
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Cond',
          validAfter: '2026-01-01',
          elements: [
            {
              elementName: 'Rec',
              expression: 'conditionRecord("SalesDiscount", customer.customerId, product.sku)',
            },
            { elementName: 'Disc', expression: 'Rec.conditionValue' },
            { elementName: 'Net', expression: 'round(100 * (1 - coalesce(Disc, 0)), 2)' },
            {
              elementName: 'July',
              expression:
                'get(conditionRecord("SalesDiscount", "C-1", "MB-1", date("2026-07-01")), "conditionValue")',
            },
            { elementName: 'NoSet', expression: 'conditionRecord("Nowhere", "C-1")' },
            { elementName: 'BadKeys', expression: 'conditionRecord("SalesDiscount", "C-1")' },
            // Attributes typed by the set's attribute meta, the validity as dates.
            { elementName: 'Bonus', expression: 'Rec.attribute1 * 2' },
            { elementName: 'Raw', expression: 'max(Rec.attribute1, 9)' },
            { elementName: 'Note', expression: 'Rec.attribute2' },
            { elementName: 'EndsLate', expression: 'Rec.validTo > date("2026-06-01")' },
            { elementName: 'Big', expression: 'Rec.attribute3 - 9007199254740990' },
            { elementName: 'Flag', expression: 'Rec.attribute4 == true' },
            { elementName: 'Day', expression: 'Rec.attribute5 > date("2026-09-29")' },
            { elementName: 'Tenth', expression: 'Rec.attribute6 * 3 == 0.3' },
          ],
        },
      }),
    );
    const at = async (targetDate: string, explain = false) =>
      Object.fromEntries(
        okData(
          await api('/formulamanager.execute/MB-1/Cond', {
            data: { customerId: 'C-1', targetDate, explain },
          }),
        ).map((x: any) => [x.resultName, x]),
      );
    assert.equal((await at('2026-02-28')).Disc.result, null, 'the day before validFrom');
    assert.equal((await at('2026-02-28')).Net.result, 100);
    assert.equal((await at('2026-03-01')).Disc.result, 0.1, 'validFrom is included');
    assert.equal((await at('2026-06-30')).Disc.result, 0.1, 'validTo is included');
    const july = await at('2026-07-01');
    assert.equal(july.Disc.result, 0.125);
    assert.equal(july.Net.result, 87.5);
    assert.equal(july.July.result, 0.125, 'a date argument overrides the target date');
    assert.deepEqual([july.Bonus.result, july.Bonus.resultType], [21, 'NUMBER']);
    assert.deepEqual([july.Raw.result, july.Raw.resultType], [10.5, 'NUMBER']);
    assert.equal(july.Note.result, 'note');
    assert.equal(july.EndsLate.result, true);
    assert.deepEqual(
      [july.Big.result, july.Flag.result, july.Day.result, july.Tenth.result],
      [3, true, true, true],
    );
    assert.equal((await at('2027-01-01')).Disc.result, null, 'after the last validTo');
    assert.match(july.NoSet.alertMessage, /Nowhere/);
    assert.equal(july.NoSet.alertType, 'CRITICAL');
    assert.match(july.BadKeys.alertMessage, /2 keys/);
    const explained = await at('2026-04-15', true);
    const entry = explained.Rec.explanation.reads.find((e: any) => e.kind === 'conditionRecord');
    assert.deepEqual(entry, {
      kind: 'conditionRecord',
      set: 'SalesDiscount',
      keys: ['C-1', 'MB-1'],
      date: '2026-04-15',
      hit: true,
      typedId: `${spring.id}.CRCI`,
      version: spring.version,
      validFrom: '2026-03-01',
      validTo: '2026-06-30',
      conditionValue: 0.1,
    });
  });

  test('bulk evaluator: many items, set-based reads (no SQL per item), per-item errors', async () => {
    const principal: Principal = adminPrincipal(h);
    const targetDate = new LogicDate('2026-03-01');
    const { logic } = await bulkLogic(h.db, principal, 'Price', targetDate);
    const items: BulkItem[] = [];
    for (let i = 0; i < 3000; i++)
      items.push({
        sku: 'MB-1',
        customerId: 'C-1',
        inputs: { Qty: i % 2 === 0 ? 20 : 5, Packing: i % 3 === 0 ? 'BOX' : 'PALLET' },
      });
    items.push({ sku: 'NOPE', inputs: { Qty: 1 } }, { sku: 'MB-1', inputs: {} });
    const statements: string[] = [];
    const q = {
      query: (sql: string, params?: readonly unknown[]) => (statements.push(sql), h.db.query(sql, params)),
    };
    const batches = [];
    for await (const b of evaluateBulk(q as any, principal, logic, items, {
      targetDate,
      limits: { maxSteps: 10_000, maxMs: 1000 },
      batchSize: 1000,
    }))
      batches.push(b);
    assert.equal(batches.length, 4);
    const all = batches.flat();
    assert.equal(all.length, 3002);
    const price = (r: any) => r.results.find((x: any) => x.resultName === 'Price').result;
    assert.equal(price(all[2]), 16.99, 'Qty 20, PALLET (the execute example)');
    assert.equal(price(all[0]), null, 'BOX has no freight row');
    assert.ok(
      all[2]!.results!.some((x: any) => x.resultName === 'Discount'),
      'hidden elements are in bulk results',
    );
    assert.match(all[3000]!.error!, /product NOPE not found/);
    assert.match(all[3001]!.error!, /inputs.Qty: is required/);
    // Per batch: policies/meta once, then products, customers, table meta and rows per table and pass.
    assert.ok(
      statements.length <= 40,
      `${statements.length} statements for 3,002 items:\n${statements.join('\n---\n')}`,
    );
  });

  test('recommend: the configured RECOMMENDATION logic ranks candidate products by Score, with Reasons', async () => {
    const body = { data: { customerId: 'C-1', filter: { sku: ['F-1', 'F-2', 'F-3', 'F-4'] }, limit: 3 } };
    const unconfigured = await api('/recommendations.recommend', body);
    expectError(
      unconfigured,
      400,
      -4,
      /no recommendation logic is configured: add the advanced configuration option recommendationLogic/,
    );
    assert.ok(unconfigured.body.response.errors.recommendationLogic);
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Recommend',
          validAfter: '2026-01-01',
          nature: 'RECOMMENDATION',
          inputs: [{ name: 'Segment', type: 'TEXT' }],
          elements: [
            { elementName: 'Margin', expression: 'lookup("Margins", customer.attribute1)' },
            {
              elementName: 'Score',
              expression: 'product.attribute1 * Margin * if(input.Segment == "VIP", 2, 1)',
            },
            {
              elementName: 'Reasons',
              expression: 'concat("cost ", product.attribute1, " at margin ", Margin)',
            },
          ],
        },
      }),
    );
    okData(await api('/add/ACO', { data: { uniqueName: 'recommendationLogic', value: 'Recommend' } }));
    const top = okData(await api('/recommendations.recommend', body));
    assert.deepEqual(
      top.map((r: any) => [r.sku, r.score]),
      [
        ['F-4', 8.75],
        ['F-3', 6.25],
        ['F-2', 3.75],
      ],
    );
    assert.equal(top[0].reasons, 'cost 35 at margin 0.25');
    const vip = okData(
      await api('/recommendations.recommend', { data: { ...body.data, segment: 'VIP', limit: 1 } }),
    );
    assert.deepEqual(
      vip.map((r: any) => [r.sku, r.score]),
      [['F-4', 17.5]],
    );
    const forProduct = okData(
      await api('/recommendations.recommend', {
        data: { customerId: 'C-1', sku: 'F-4', filter: { sku: ['F-3', 'F-4'] } },
      }),
    );
    assert.deepEqual(
      forProduct.map((r: any) => r.sku),
      ['F-3'],
      'the anchor product is not recommended to itself',
    );
    expectError(
      await api('/recommendations.recommend', { data: { customerId: 'C-404' } }),
      404,
      -1,
      /customer C-404/,
    );
    expectError(await api('/recommendations.recommend', { data: {} }), 400, -4, /customerId/);
    // A logic stopped by a limit is the logic's fault, said as execute says it (not the inputs').
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'RecommendLoop',
          validAfter: '2026-01-01',
          nature: 'RECOMMENDATION',
          elements: [...PAST_STEP_LIMIT, { elementName: 'Score', expression: 'S4' }],
        },
      }),
    );
    okData(
      await api('/integrate/ACO', { data: { uniqueName: 'recommendationLogic', value: 'RecommendLoop' } }),
    );
    const stopped = await api('/recommendations.recommend', body);
    expectError(stopped, 400, -4, /logic stopped: element S\d: step limit of 5000 exceeded/);
    assert.ok(stopped.body.response.errors.logic, stopped.text);
    okData(await api('/integrate/ACO', { data: { uniqueName: 'recommendationLogic', value: 'Recommend' } }));

    // A quote's typedId: accepted; it narrows the candidates once quoteProductFilterLogic names a
    // FILTER logic, which receives it as its input QuoteTypedId.
    const forQuote = { data: { ...body.data, typedId: '7.Q' } };
    assert.deepEqual(
      okData(await api('/recommendations.recommend', forQuote)).map((r: any) => r.sku),
      ['F-4', 'F-3', 'F-2'],
      "no quote filter logic configured: the candidates are the filter's",
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'QuoteItems',
          validAfter: '2026-01-01',
          nature: 'FILTER',
          inputs: [{ name: 'QuoteTypedId', type: 'TEXT' }],
          elements: [
            {
              elementName: 'Items',
              expression:
                'if(input.QuoteTypedId == "7.Q", filter("sku", "inSet", ["F-1", "F-2"]), filter("sku", "equals", "F-3"))',
            },
          ],
        },
      }),
    );
    okData(await api('/add/ACO', { data: { uniqueName: 'quoteProductFilterLogic', value: 'QuoteItems' } }));
    assert.deepEqual(
      okData(await api('/recommendations.recommend', forQuote)).map((r: any) => [r.sku, r.score]),
      [
        ['F-2', 3.75],
        ['F-1', 1.25],
      ],
    );
    assert.deepEqual(
      okData(await api('/recommendations.recommend', { data: { ...body.data, typedId: '8.Q' } })).map(
        (r: any) => r.sku,
      ),
      ['F-3'],
    );
    assert.deepEqual(
      okData(await api('/recommendations.recommend', body)).map((r: any) => r.sku),
      ['F-4', 'F-3', 'F-2'],
      'without a typedId the quote filter logic does not run',
    );
    for (const typedId of ['7.P', '7', 'Q', '0.Q', ''])
      expectError(
        await api('/recommendations.recommend', { data: { ...body.data, typedId } }),
        400,
        -4,
        /typedId/,
      );
    okData(await api('/update/ACO', { data: { uniqueName: 'quoteProductFilterLogic', value: 'Recommend' } }));
    const wrongNature = await api('/recommendations.recommend', forQuote);
    expectError(wrongNature, 400, -4, /Recommend is a RECOMMENDATION logic, not a FILTER logic/);
    assert.ok(wrongNature.body.response.errors.quoteProductFilterLogic);

    okData(await api('/update/ACO', { data: { uniqueName: 'recommendationLogic', value: 'Price' } }));
    expectError(await api('/recommendations.recommend', body), 400, -4, /Price is a PRICING logic/);
  });

  test('permissions: FORMULA_EDIT writes, any user runs; no credentials is 401', async () => {
    await h.newUser('reader', 'reader-password-1', []);
    const reader = await clientOf(h, 'reader', 'reader-password-1');
    expectError(
      await reader('/add/F', {
        data: {
          uniqueName: 'X',
          validAfter: '2026-01-01',
          elements: [{ elementName: 'A', expression: '1' }],
        },
      }),
      403,
      -3,
    );
    expectError(await reader('/add/RP', { data: { uniqueName: 'X', currency: 'EUR' } }), 403, -3);
    assert.equal(
      okData(await reader('/formulamanager.execute/MB-1/Ver', { data: { targetDate: '2026-03-01' } }))[0]
        .result,
      'old',
    );
    await h.newUser('author', 'author-password-1', ['PB_LOGICS']);
    const author = await clientOf(h, 'author', 'author-password-1');
    okData(
      await author('/add/F', {
        data: {
          uniqueName: 'ByAuthor',
          validAfter: '2026-01-01',
          elements: [{ elementName: 'A', expression: '1' }],
        },
      }),
    );
    expectError(await h.call('/formulamanager.execute/MB-1', { body: { data: {} } }), 401, -7);
  });

  test('partition isolation: no name reaches another partition', async () => {
    const other = await startHarness({ shareDbWith: h });
    try {
      const b = await clientOf(other);
      okData(await b('/add/P', { data: { sku: 'MB-1', attribute1: '1' } }));
      expectError(
        await b('/formulamanager.execute/MB-1/Price', { data: { targetDate: '2026-03-01' } }),
        404,
        -1,
        /Logic Price/,
      );
      okData(
        await b('/add/F', {
          data: {
            uniqueName: 'Spy',
            validAfter: '2026-01-01',
            elements: [
              { elementName: 'M', expression: 'lookup("Margins", "EU")' },
              { elementName: 'X', expression: 'productExtension("Costs")' },
              { elementName: 'R', expression: 'roundPrice(1.234, "EUR")' },
              { elementName: 'CR', expression: 'conditionRecord("SalesDiscount", "C-1", "MB-1")' },
            ],
          },
        }),
      );
      const v = Object.fromEntries(
        okData(await b('/formulamanager.execute/MB-1/Spy', { data: {} })).map((x: any) => [x.resultName, x]),
      );
      assert.match(v.M.alertMessage, /unknown lookup table Margins/);
      assert.equal(v.X.result, null);
      assert.equal(v.R.result, 1.23, "another partition's EUR99 policy is not used");
      assert.match(v.CR.alertMessage, /SalesDiscount/);
      assert.equal(v.CR.result, null);
    } finally {
      await other.close();
    }
  });
});

describe('recommend over more candidates than a page', () => {
  let h: Harness;
  let api: Client;
  before(async () => {
    // Pages of 3: candidates are read and scored 3 at a time.
    h = await startHarness({ env: { MAX_PAGE_SIZE: '3' } });
    api = await clientOf(h);
  });
  after(() => h.close());

  test('every candidate is scored, the best on the last page included; an unknown anchor sku is a 404', async () => {
    const scores = [5, 1, 7, 2, 2, 9, 3, 4, 100, 6];
    for (const [i, score] of scores.entries())
      okData(await api('/add/P', { data: { sku: `R-${i}`, label: 'cand', attribute1: String(score) } }));
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Rank',
          validAfter: '2026-01-01',
          nature: 'RECOMMENDATION',
          elements: [{ elementName: 'Score', expression: 'product.attribute1 * 1' }],
        },
      }),
    );
    okData(await api('/add/ACO', { data: { uniqueName: 'recommendationLogic', value: 'Rank' } }));
    const top = (body: object) =>
      api('/recommendations.recommend', { data: { segment: 'x', filter: { label: 'cand' }, ...body } });
    assert.deepEqual(
      okData(await top({ limit: 3 })).map((r: any) => [r.sku, r.score]),
      [
        ['R-8', 100],
        ['R-5', 9],
        ['R-2', 7],
      ],
    );
    // Anchored on a product: it is left out, wherever its page.
    assert.deepEqual(
      okData(await top({ sku: 'R-8', limit: 2 })).map((r: any) => r.sku),
      ['R-5', 'R-2'],
    );
    const unknown = await top({ sku: 'NOPE' });
    expectError(unknown, 404, -1, /product NOPE not found/);
    assert.ok(unknown.body.response.errors.sku, unknown.text);
  });
});
