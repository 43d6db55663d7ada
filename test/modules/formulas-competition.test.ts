// Pricing logics reading product competition data (type PCOMP) over real HTTP on both databases:
// competition(competitor[, date]) and competitionPrices([currency[, date]]) at the edges of their
// dates, explained; prefetched set-based in bulk; isolated by partition. Also: an execute runs in one
// transaction and reads nothing outside it.

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
import type { Queryable, Tx } from '../../src/db/db.ts';
import { bulkLogic, evaluateBulk } from '../../src/modules/formulas/bulk.ts';
import { LogicDate } from '../../src/logic/values.ts';
import { okData } from '../helpers/envelope.ts';

function results(r: Reply): Record<string, any> {
  return Object.fromEntries(okData(r).map((x: any) => [x.resultName, x]));
}

const ELEMENTS = [
  { elementName: 'A', expression: 'competition("ShopA")', displayOptions: 0 },
  { elementName: 'PriceA', expression: 'A.price' },
  { elementName: 'DateA', expression: 'A.competitionDate' },
  { elementName: 'Lowest', expression: 'min(competitionPrices("EUR"))' },
  { elementName: 'Average', expression: 'avg(competitionPrices())' },
  { elementName: 'Count', expression: 'count(competitionPrices())' },
  { elementName: 'Missing', expression: 'competition("Nobody")' },
  { elementName: 'EarlyA', expression: 'get(competition("ShopA", date("2026-02-01")), "price")' },
  { elementName: 'Gap', expression: 'product.attribute1 - Lowest' },
  // The README's example: no higher than the cheapest competitor in EUR.
  {
    elementName: 'Capped',
    expression: 'if(isNull(Lowest), product.attribute1, min(product.attribute1, Lowest - 0.01))',
  },
];

describe('logics: competition data', () => {
  let h: Harness;
  let api: Client;
  before(async () => {
    h = await startHarness();
    api = await clientOf(h);
    okData(await api('/add/PAM', { data: { fieldName: 'attribute1', label: 'List', fieldType: 'MONEY' } }));
    for (const sku of ['K-1', 'K-2', 'K-3'])
      okData(await api('/add/P', { data: { sku, attribute1: '20.00', formulaName: 'Compete' } }));
    const comp = [
      ['K-1', 'ShopA', '2026-01-01', '19.10', 'EUR'],
      ['K-1', 'ShopA', '2026-03-01', '18.35', 'EUR'], // the latest on or before 2026-03-01
      ['K-1', 'ShopA', '2026-03-02', '9.99', 'EUR'], // after the target date: not seen
      ['K-1', 'ShopB', '2026-02-15', '18.40', 'EUR'],
      ['K-1', 'ShopC', '2026-02-20', '17.00', 'CHF'],
      ['K-2', 'ShopA', '2026-01-10', '21.005', 'EUR'],
    ];
    for (const [sku, competitor, competitionDate, price, currency] of comp)
      okData(await api('/add/PCOMP', { data: { sku, competitor, competitionDate, price, currency } }));
    okData(
      await api('/add/F', {
        data: { uniqueName: 'Compete', validAfter: '2025-01-01', elements: ELEMENTS },
      }),
    );
  });
  after(() => h.close());

  test('competition(): the latest row on or before the target date; competitionPrices() per competitor', async () => {
    const by = results(await api('/formulamanager.execute/K-1', { data: { targetDate: '2026-03-01' } }));
    assert.equal(by.A, undefined, 'hidden');
    assert.equal(by.PriceA.result, 18.35, 'the row of 2026-03-01 counts; the one of 03-02 does not');
    assert.equal(by.PriceA.resultType, 'NUMBER');
    assert.equal(by.DateA.result, '2026-03-01');
    assert.equal(by.DateA.resultType, 'DATE');
    assert.equal(by.Lowest.result, 18.35, 'EUR only: ShopC (CHF 17.00) is left out');
    // (18.35 + 18.40 + 17.00) / 3, decimal
    assert.equal(by.Average.result, '17.91666666666666666666666666666667');
    assert.equal(by.Count.result, 3);
    assert.equal(by.Missing.result, null);
    assert.equal(by.Missing.alertType, null, 'no row is null, not an error');
    assert.equal(by.EarlyA.result, 19.1, 'a date argument reads the row valid then');
    assert.equal(by.Gap.result, 1.65, '20.00 − 18.35, exact');
    assert.equal(by.Capped.result, 18.34);

    const before = results(await api('/formulamanager.execute/K-1', { data: { targetDate: '2026-02-28' } }));
    assert.equal(before.PriceA.result, 19.1);
    assert.equal(before.Lowest.result, 18.4, 'ShopB (02-15) is now the lowest in EUR');
    const none = results(await api('/formulamanager.execute/K-1', { data: { targetDate: '2025-12-31' } }));
    assert.equal(none.Count.result, 0);
    assert.equal(none.PriceA.result, null);
    assert.equal(none.Lowest.result, null);
    assert.equal(none.Capped.result, 20);

    const k3 = results(await api('/formulamanager.execute/K-3', { data: { targetDate: '2026-03-01' } }));
    assert.equal(k3.Count.result, 0, 'a product without competition data');
  });

  test('explained: each competition row read, with its id, version, date and price', async () => {
    const by = results(
      await api('/formulamanager.execute/K-1', { data: { targetDate: '2026-03-01', explain: true } }),
    );
    const [a] = by.A.explanation.reads;
    assert.equal(a.kind, 'competition');
    assert.equal(a.competitor, 'ShopA');
    assert.equal(a.date, '2026-03-01');
    assert.equal(a.hit, true);
    assert.match(a.typedId, /^\d+\.PCOMP$/);
    assert.equal(a.competitionDate, '2026-03-01');
    assert.equal(a.price, 18.35);
    const [prices] = by.Lowest.explanation.reads;
    assert.equal(prices.kind, 'competitionPrices');
    assert.equal(prices.currency, 'EUR');
    assert.deepEqual(
      prices.rows.map((r: any) => [r.competitor, r.price]),
      [
        ['ShopA', 18.35],
        ['ShopB', 18.4],
      ],
    );
    const [missing] = by.Missing.explanation.reads;
    assert.equal(missing.hit, false);
  });

  test('checked on write: arity and argument types', async () => {
    for (const [expression, problem] of [
      ['competition()', /competition/],
      ['competition("A", date("2026-01-01"), 3)', /competition/],
      ['competition(1)', /text|number/],
      ['competitionPrices(1)', /text|number/],
    ] as const) {
      const r = await api('/add/F', {
        data: {
          uniqueName: `Bad${Math.random().toString(36).slice(2, 8)}`,
          validAfter: '2025-01-01',
          elements: [{ elementName: 'X', expression }],
        },
      });
      assert.equal(r.status, 400, `${expression}: ${r.text}`);
      assert.equal(r.body.response.status, -4);
      assert.match(String(r.body.response.data), problem);
    }
  });

  test('bulk: competition rows prefetched set-based (one statement per batch, none per item)', async () => {
    const principal = adminPrincipal(h);
    const date = new LogicDate('2026-03-01');
    const { logic } = await bulkLogic(h.db, principal, 'Compete', date);
    const statements: string[] = [];
    const counted: Queryable = {
      query: (sql, params) => (statements.push(sql), h.db.query(sql, params)),
    };
    const items = Array.from({ length: 30 }, (_, i) => ({ sku: `K-${(i % 3) + 1}` }));
    const out = [];
    for await (const batch of evaluateBulk(counted, principal, logic, items, {
      targetDate: date,
      limits: { maxSteps: 10_000, maxMs: 5_000 },
      batchSize: 10,
    }))
      out.push(...batch);
    assert.equal(out.length, 30);
    const k1 = Object.fromEntries(out[0]!.results!.map((r) => [r.resultName, r.result]));
    const k2 = Object.fromEntries(out[1]!.results!.map((r) => [r.resultName, r.result]));
    assert.equal(k1.PriceA, 18.35);
    assert.equal(k2.PriceA, 21.005);
    assert.equal(k2.Lowest, 21.005);
    // Per batch: the target date's rows prefetched before the first pass, and the rows at 2026-02-01
    // (EarlyA's date argument) after it: two statements per batch whatever its size.
    const reads = statements.filter((s) => /product_competition/.test(s));
    assert.equal(reads.length, 6, statements.join('\n---\n'));
  });

  test('bulk: products read with the columns the logic reads; a field named at run time reads all', async () => {
    const principal = adminPrincipal(h);
    const date = new LogicDate('2026-03-01');
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Fields',
          validAfter: '2025-01-01',
          inputs: [{ name: 'Field', type: 'TEXT', default: 'label' }],
          elements: [
            { elementName: 'List', expression: 'product.attribute1 * 2' },
            { elementName: 'Fmt', expression: 'product("formulaName")' },
            { elementName: 'Any', expression: 'product(input.Field)' },
          ],
        },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Static',
          validAfter: '2025-01-01',
          elements: [
            { elementName: 'List', expression: 'product.attribute1 * 2' },
            { elementName: 'Fmt', expression: 'product("formulaName")' },
            { elementName: 'Label', expression: 'product.label' },
          ],
        },
      }),
    );
    okData(await api('/update/P', { data: { sku: 'K-2', label: 'Second' } }));
    const run = async (name: string, inputs?: Record<string, unknown>) => {
      const { logic } = await bulkLogic(h.db, principal, name, date);
      const statements: string[] = [];
      const counted: Queryable = { query: (sql, params) => (statements.push(sql), h.db.query(sql, params)) };
      const out = [];
      const items = [{ sku: 'K-2', ...(inputs ? { inputs } : {}) }];
      for await (const b of evaluateBulk(counted, principal, logic, items, {
        targetDate: date,
        limits: { maxSteps: 10_000, maxMs: 5_000 },
      }))
        out.push(...b);
      const sql = statements.find((x) => /FROM "products"/.test(x))!;
      return { by: Object.fromEntries(out[0]!.results!.map((r) => [r.resultName, r.result])), sql };
    };
    const pruned = await run('Static');
    assert.deepEqual(pruned.by, { List: 40, Fmt: 'Compete', Label: 'Second' });
    assert.match(pruned.sql, /^SELECT "id", "version", "sku", "user_group_view_details", .*"attribute1"/);
    assert.doesNotMatch(pruned.sql, /attribute2"|\*/);
    const all = await run('Fields', { Field: 'label' });
    assert.deepEqual(all.by, { List: 40, Fmt: 'Compete', Any: 'Second' });
    assert.match(all.sql, /^SELECT \* FROM/);
  });

  test('execute: one read-only transaction, nothing read outside it', async () => {
    const db = h.db as any;
    const query = db.query;
    const transaction = db.transaction;
    const outside: string[] = [];
    const opened: unknown[] = [];
    db.query = (sql: string, params?: unknown[]) => (outside.push(sql), query.call(h.db, sql, params));
    db.transaction = (fn: (tx: Tx) => Promise<unknown>, opts?: unknown) => (
      opened.push(opts),
      transaction.call(h.db, fn, opts)
    );
    try {
      results(await api('/formulamanager.execute/K-1', { data: { targetDate: '2026-03-01' } }));
    } finally {
      db.query = query;
      db.transaction = transaction;
    }
    // Authentication may read its account row on its own (uncached on PGlite); the logic reads nothing.
    assert.deepEqual(
      outside.filter((s) =>
        /products|formulas|product_competition|lookup_|condition_record|rounding_policies|attribute_meta/.test(
          s,
        ),
      ),
      [],
    );
    assert.deepEqual(opened, [{ readOnly: true }]);
  });

  test('execute: the customer by customerId or typedId, read with the product; a hidden one is a 404', async () => {
    okData(await api('/add/UG', { data: { uniqueName: 'key-accounts' } }));
    const [c] = okData(
      await api('/add/C', { data: { customerId: 'KC-1', name: 'Kunde', attribute1: 'EU' } }),
    );
    okData(
      await api('/add/C', {
        data: { customerId: 'KC-2', name: 'Hidden', userGroupViewDetails: 'key-accounts' },
      }),
    );
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Who',
          validAfter: '2025-01-01',
          elements: [
            { elementName: 'Name', expression: 'customer.name' },
            { elementName: 'Region', expression: 'customer("attribute1")' },
            { elementName: 'Sku', expression: 'product.sku' },
          ],
        },
      }),
    );
    for (const customerId of ['KC-1', `${c.id}.C`]) {
      const by = results(await api('/formulamanager.execute/K-1/Who', { data: { customerId } }));
      assert.equal(by.Name.result, 'Kunde', customerId);
      assert.equal(by.Region.result, 'EU');
      assert.equal(by.Sku.result, 'K-1');
    }
    const none = results(await api('/formulamanager.execute/K-1/Who', { data: {} }));
    assert.equal(none.Name.result, null, 'no customer: null');
    const user = 'plain-user';
    await h.newUser(user, 'plain-password-1', []);
    const plain = await clientOf(h, user, 'plain-password-1');
    assert.equal(
      results(await plain('/formulamanager.execute/K-1/Who', { data: { customerId: 'KC-1' } })).Name.result,
      'Kunde',
    );
    for (const customerId of ['KC-2', 'KC-404', '999999.C']) {
      const r = await plain('/formulamanager.execute/K-1/Who', { data: { customerId } });
      assert.equal(r.status, 404, `${customerId}: ${r.text}`);
      assert.match(String(r.body.response.data), new RegExp(`Customer ${customerId.replace('.', '\\.')}`));
    }
    // The admin sees every customer.
    assert.equal(
      results(await api('/formulamanager.execute/K-1/Who', { data: { customerId: 'KC-2' } })).Name.result,
      'Hidden',
    );
  });

  test('execute: product extension rows of the logic read last time come with the product', async () => {
    okData(
      await api('/add/PX', { data: { name: 'Costs', sku: 'K-1', attribute1: '7.5', attribute2: 'kg' } }),
    );
    okData(await api('/add/PX', { data: { name: 'Packs', sku: 'K-1', attribute1: '12' } }));
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Ext',
          validAfter: '2025-01-01',
          elements: [
            { elementName: 'C', expression: 'productExtension("Costs")', displayOptions: 0 },
            { elementName: 'Cost', expression: 'C.attribute1 * 2' },
            { elementName: 'Unit', expression: 'C.attribute2' },
            { elementName: 'Pack', expression: 'get(productExtension("Packs"), "attribute1")' },
          ],
        },
      }),
    );
    const db = h.db as any;
    const transaction = db.transaction;
    const statements: string[] = [];
    db.transaction = (fn: (tx: Tx) => Promise<unknown>, opts?: unknown) =>
      transaction.call(
        h.db,
        (tx: Tx) => fn({ ...tx, query: (sql, p) => (statements.push(sql), tx.query(sql, p)) }),
        opts,
      );
    const own = (list: string[]) => list.filter((x) => /FROM "product_extensions"\s+WHERE/.test(x));
    const perCall: string[][] = [];
    try {
      for (const [sku, want] of [
        ['K-1', { Cost: 15, Unit: 'kg', Pack: '12' }],
        ['K-1', { Cost: 15, Unit: 'kg', Pack: '12' }],
        ['K-2', { Cost: null, Unit: null, Pack: null }],
      ] as const) {
        statements.length = 0;
        const by = results(await api(`/formulamanager.execute/${sku}/Ext`, { data: {} }));
        assert.deepEqual(
          { Cost: by.Cost.result, Unit: by.Unit.result, Pack: by.Pack.result },
          want,
          `${sku}: ${statements.join('\n---\n')}`,
        );
        perCall.push(own(statements));
      }
      // Later calls (the logic known from the call before): none of their own.
      // The first call (a logic not run before) reads them in a statement of their own, one per table.
      assert.equal(perCall[0]!.length, 2);
      assert.deepEqual(perCall.slice(1), [[], []]);
    } finally {
      db.transaction = transaction;
    }
    const explained = results(await api('/formulamanager.execute/K-1/Ext', { data: { explain: true } }));
    const [read] = explained.C.explanation.reads;
    assert.equal(read.kind, 'productExtension');
    assert.match(read.typedId, /^\d+\.PX$/);
  });

  test('execute: the look-ups of several single-key tables in one statement', async () => {
    const table = async (uniqueName: string, type: string, values: object[]) => {
      const [t] = okData(
        await api('/lookuptablemanager.add', { data: { uniqueName, type, valueType: 'REAL' } }),
      );
      okData(
        await api(
          `/lookuptablemanager.add/${t.id}`,
          values.map((data) => ({ data })),
        ),
      );
    };
    await table('Regions', 'SIMPLE', [{ name: 'EU', value: 0.25 }]);
    await table('Steps', 'RANGE', [
      { name: 'low', upperBound: 10, value: 0 },
      { name: 'high', lowerBound: 10, value: 0.05 },
    ]);
    await table('Weights', 'SIMPLE_INT_KEY', [{ name: '3', value: 1.5 }]);
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Looks',
          validAfter: '2025-01-01',
          inputs: [{ name: 'Qty', type: 'NUMBER' }],
          elements: [
            { elementName: 'R', expression: 'lookup("Regions", "EU")' },
            { elementName: 'S', expression: 'lookup("Steps", input.Qty)' },
            { elementName: 'W', expression: 'lookup("Weights", 3)' },
            { elementName: 'Miss', expression: 'lookup("Regions", "US")' },
          ],
        },
      }),
    );
    const db = h.db as any;
    const transaction = db.transaction;
    const statements: string[] = [];
    db.transaction = (fn: (tx: Tx) => Promise<unknown>, opts?: unknown) =>
      transaction.call(
        h.db,
        (tx: Tx) => fn({ ...tx, query: (sql, p) => (statements.push(sql), tx.query(sql, p)) }),
        opts,
      );
    try {
      for (const [qty, step] of [
        [9.99, 0],
        [10, 0.05],
      ] as const) {
        const by = results(
          await api('/formulamanager.execute/K-1/Looks', { data: { inputs: { Qty: qty } } }),
        );
        assert.deepEqual([by.R.result, by.S.result, by.W.result, by.Miss.result], [0.25, step, 1.5, null]);
      }
    } finally {
      db.transaction = transaction;
    }
    const reads = statements.filter((x) => /lookup_values/.test(x));
    assert.equal(reads.length, 2, 'one statement per execute for the three tables');
    assert.match(reads[0]!, /UNION ALL/);
  });

  test('partition isolation: another partition sees none of these rows', async () => {
    const other = await startHarness({ shareDbWith: h });
    try {
      const b = await clientOf(other);
      okData(await b('/add/P', { data: { sku: 'K-1', attribute1: '20.00' } }));
      okData(
        await b('/add/F', {
          data: {
            uniqueName: 'Compete',
            validAfter: '2025-01-01',
            elements: [
              { elementName: 'A', expression: 'competition("ShopA")' },
              { elementName: 'N', expression: 'count(competitionPrices())' },
            ],
          },
        }),
      );
      const by = results(
        await b('/formulamanager.execute/K-1/Compete', { data: { targetDate: '2026-03-01' } }),
      );
      assert.equal(by.A.result, null);
      assert.equal(by.N.result, 0);
    } finally {
      await other.close();
    }
  });
});
