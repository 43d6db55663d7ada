// Pricing logics over real HTTP on both databases, through /formulamanager.execute: a look-up in
// every lookup-table kind (SIMPLE and its typed keys, RANGE, MATRIX..MATRIX6, JSON, JSON2; hits,
// misses and a wrong key count, explained), one logic using customerExtension, today() and the text,
// date and math functions (each value worked by hand), and every rounding mode and the price endings
// .95 and 9.90 with each side rule, through element rounding policies and roundPrice.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientOf, startHarness, type Client, type Harness, type Reply } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';

/** The result objects of an execute answer, by element name. */
function byName(r: Reply): Record<string, any> {
  return Object.fromEntries(okData(r).map((x: any) => [x.resultName, x]));
}

const M = '/lookuptablemanager';

/** Creates a lookup table with its values. */
async function table(api: Client, uniqueName: string, type: string, valueType: string, values: object[]) {
  const [t] = okData(await api(`${M}.add`, { data: { uniqueName, label: uniqueName, type, valueType } }));
  okData(
    await api(
      `${M}.add/${t.id}`,
      values.map((data) => ({ data })),
    ),
  );
}

const utcToday = (): string => new Date().toISOString().slice(0, 10);

describe('logics: look-ups, functions and rounding over HTTP', () => {
  let h: Harness;
  let api: Client;
  before(async () => {
    h = await startHarness();
    api = await clientOf(h);
    okData(await api('/add/P', { data: { sku: 'MB-1', label: 'Steel Bolt' } }));
    okData(await api('/add/C', { data: { customerId: 'C-1', name: 'Kunde' } }));
    okData(await api('/add/C', { data: { customerId: 'C-2', name: 'Other' } }));
  });
  after(() => h.close());

  const run = (logic: string, data: object = {}) =>
    api(`/formulamanager.execute/MB-1/${logic}`, { data: { targetDate: '2026-03-01', ...data } });

  test('lookup and lookupRow in every table kind: hits, misses, a wrong key count; explained', async () => {
    await table(api, 'Simple', 'SIMPLE', 'REAL', [{ name: 'EU', value: 0.25 }]);
    await table(api, 'RealKey', 'SIMPLE_REAL_KEY', 'STRING', [{ name: '2.5', value: 'two and a half' }]);
    await table(api, 'IntKey', 'SIMPLE_INT_KEY', 'REAL', [{ name: 10, value: 1.5 }]);
    await table(api, 'DateKey', 'SIMPLE_DATE_KEY', 'INT', [{ name: '2026-12-24', value: 24 }]);
    await table(api, 'Range', 'RANGE', 'REAL', [
      { name: 'small', lowerBound: 0, upperBound: 100, value: 0 },
      { name: 'medium', lowerBound: 100, upperBound: 1000, value: 0.05 },
      { name: 'large', lowerBound: 1000, value: 0.1 },
    ]);
    await table(api, 'M1', 'MATRIX', 'INT', [{ name: 'EU', attribute1: 1, attribute3: 3 }]);
    for (const n of [2, 3, 4, 5, 6]) {
      const keys = Object.fromEntries(Array.from({ length: n }, (_, i) => [`key${i + 1}`, `k${i + 1}`]));
      await table(api, `M${n}`, `MATRIX${n}`, 'REAL', [
        { ...keys, attribute1: n + 0.5, attribute2: n * 100 },
      ]);
    }
    await table(api, 'J1', 'JSON', 'STRING', [{ name: 'cfg', value: { tiers: [1, 2], label: 'x' } }]);
    await table(api, 'J2', 'JSON2', 'STRING', [
      { key1: 'EU', key2: 'cfg', value: { b: [3] } },
      { key1: 'EU', key2: 'n', value: 7 },
    ]);
    const keys = (n: number, last = `k${n}`) =>
      [...Array.from({ length: n - 1 }, (_, i) => `"k${i + 1}"`), `"${last}"`].join(', ');
    const elements: [string, string][] = [
      ['SimpleHit', 'lookup("Simple", "EU")'],
      ['SimpleMiss', 'lookup("Simple", "US")'],
      ['RealHit', 'lookup("RealKey", 2.50)'],
      ['RealText', 'lookup("RealKey", "2.50")'],
      ['RealMiss', 'lookup("RealKey", 2.51)'],
      ['IntHit', 'lookup("IntKey", 10)'],
      ['IntText', 'lookup("IntKey", "10.0")'],
      ['IntMiss', 'lookup("IntKey", 11)'],
      ['DateHit', 'lookup("DateKey", date("2026-12-24"))'],
      ['DateCalc', 'lookup("DateKey", addDays(targetDate, 298))'],
      ['DateMiss', 'lookup("DateKey", date("2026-12-25"))'],
      ['RangeFirst', 'lookup("Range", 0)'],
      ['RangeBelow', 'lookup("Range", 99.99)'],
      ['RangeEdge', 'lookup("Range", 100)'],
      ['RangeTop', 'lookup("Range", 1000000000)'],
      ['RangeMiss', 'lookup("Range", -5)'],
      ['RangeRow', 'lookupRow("Range", 150)'],
      ['RangeLower', 'RangeRow.lowerBound + 1'],
      ['RangeUpper', 'max(RangeRow.upperBound, 20)'],
      ['M1Hit', 'lookup("M1", "EU")'],
      ['M1Row', 'lookupRow("M1", "EU")'],
      ['M1Third', 'M1Row.attribute3'],
      ['M1Miss', 'lookup("M1", "US")'],
      ...[2, 3, 4, 5, 6].flatMap((n): [string, string][] => [
        [`M${n}Hit`, `lookup("M${n}", ${keys(n)})`],
        [`M${n}Second`, `get(lookupRow("M${n}", ${keys(n)}), "attribute2")`],
        [`M${n}Miss`, `lookup("M${n}", ${keys(n, 'other')})`],
      ]),
      ['J1Hit', 'lookup("J1", "cfg")'],
      ['J1Label', 'J1Hit.label'],
      ['J1Miss', 'lookup("J1", "nope")'],
      // lookupRow answers the row under the names the API answers it.
      ['J1Row', 'lookupRow("J1", "cfg")'],
      ['J1RowValue', 'get(J1Row, "value")'],
      ['J2RowValue', 'get(lookupRow("J2", "EU", "n"), "value")'],
      ['SimpleRow', 'lookupRow("Simple", "EU")'],
      ['M1Created', 'isNull(get(M1Row, "createDate"))'],
      ['J2Hit', 'lookup("J2", "EU", "cfg")'],
      ['J2Number', 'lookup("J2", "EU", "n") * 2'],
      ['J2Miss', 'lookup("J2", "US", "cfg")'],
      ['WrongKeys', 'lookup("M3", "k1", "k2")'],
    ];
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Kinds',
          validAfter: '2026-01-01',
          elements: elements.map(([elementName, expression]) => ({ elementName, expression })),
        },
      }),
    );
    const r = byName(await run('Kinds', { explain: true }));
    const v = Object.fromEntries(Object.entries(r).map(([k, x]) => [k, x.result]));
    assert.equal(v.SimpleHit, 0.25);
    assert.equal(v.SimpleMiss, null);
    assert.equal(v.RealHit, 'two and a half', 'a REAL key compares as a number: 2.50 = 2.5');
    assert.equal(v.RealText, 'two and a half', 'numeric text is compared as a number too');
    assert.equal(v.RealMiss, null);
    assert.equal(v.IntHit, 1.5);
    assert.equal(v.IntText, 1.5);
    assert.equal(v.IntMiss, null);
    assert.equal(v.DateHit, 24, 'an INT table answers numbers');
    assert.equal(v.DateCalc, 24, '2026-03-01 + 298 days = 2026-12-24');
    assert.equal(v.DateMiss, null);
    assert.equal(v.RangeFirst, 0, 'the lower bound 0 is included');
    assert.equal(v.RangeBelow, 0);
    assert.equal(v.RangeEdge, 0.05, '100 is the lower bound of medium, not in small');
    assert.equal(v.RangeTop, 0.1, 'an open upper bound');
    assert.equal(v.RangeMiss, null, 'no range holds -5');
    assert.equal(v.RangeLower, 101, "a RANGE row's bounds are numbers to the logic");
    assert.equal(v.RangeUpper, 1000);
    assert.equal(r.RangeUpper!.resultType, 'NUMBER');
    assert.equal(v.M1Hit, 1);
    assert.equal(v.M1Third, 3);
    assert.equal(v.M1Miss, null);
    for (const n of [2, 3, 4, 5, 6]) {
      assert.equal(v[`M${n}Hit`], n + 0.5, `MATRIX${n} hit`);
      assert.equal(v[`M${n}Second`], n * 100, `MATRIX${n} row`);
      assert.equal(v[`M${n}Miss`], null, `MATRIX${n}: the last key differs`);
    }
    assert.deepEqual(v.J1Hit, { tiers: [1, 2], label: 'x' });
    assert.equal(v.J1Label, 'x');
    assert.equal(v.J1Miss, null);
    assert.deepEqual(v.J1RowValue, { tiers: [1, 2], label: 'x' });
    assert.equal(v.J2RowValue, 7);
    assert.equal(v.M1Created, false, 'createDate, as the API names it');
    const [simple] = okData(await api('/lookuptablemanager.fetch', { data: { uniqueName: 'Simple' } }));
    assert.equal(v.SimpleRow.lookupTableId, simple.id);
    assert.equal(v.SimpleRow.name, 'EU');
    assert.equal(v.SimpleRow.value, 0.25);
    assert.equal(v.J1Row.jsonValue, undefined, 'no column names');
    assert.deepEqual(v.J1Row.value, { tiers: [1, 2], label: 'x' });
    assert.deepEqual(v.J2Hit, { b: [3] });
    assert.equal(v.J2Number, 14);
    assert.equal(v.J2Miss, null);
    assert.equal(v.WrongKeys, null);
    assert.equal(r.WrongKeys.alertType, 'CRITICAL');
    assert.equal(r.WrongKeys.alertMessage, 'lookup table M3 (MATRIX3) takes 3 key(s), got 2');
    // The explanation names the row hit (its type code says the kind) or the miss.
    const entry = (name: string) => r[name].explanation.reads.find((e: any) => e.kind.startsWith('lookup'));
    const rowKinds: [string, RegExp][] = [
      ['SimpleHit', /^\d+\.LTV$/],
      ['RealHit', /^\d+\.LTV$/],
      ['IntText', /^\d+\.LTV$/],
      ['DateHit', /^\d+\.LTV$/],
      ['RangeEdge', /^\d+\.LTV$/],
      ['M1Hit', /^\d+\.MLTV$/],
      ['M1Row', /^\d+\.MLTV$/],
      ['M2Hit', /^\d+\.MLTV2$/],
      ['M6Hit', /^\d+\.MLTV6$/],
      ['J1Hit', /^\d+\.JLTV$/],
      ['J2Hit', /^\d+\.JLTV2$/],
    ];
    for (const [name, code] of rowKinds) {
      assert.equal(entry(name).hit, true, name);
      assert.match(entry(name).typedId, code, name);
      assert.equal(entry(name).version, 0, name);
    }
    assert.deepEqual(entry('M4Miss'), {
      kind: 'lookup',
      table: 'M4',
      keys: ['k1', 'k2', 'k3', 'other'],
      hit: false,
      typedId: null,
      version: null,
      value: null,
    });
    assert.deepEqual(entry('DateHit').keys, ['2026-12-24']);
    assert.deepEqual(entry('J2Hit').value, { b: [3] });
  });

  test('look-up keys holding any character: U+001F, colons and digits are no other key', async () => {
    const US = '\u001f';
    // Joined by U+001F, ("a<US>b", "c") and ("a", "b<US>c") were one key, and a single key holding
    // U+001F was split in two and never found.
    await table(api, 'Sep2', 'MATRIX2', 'REAL', [
      { key1: `a${US}b`, key2: 'c', attribute1: 1 },
      { key1: 'a', key2: `b${US}c`, attribute1: 2 },
      { key1: '1:a', key2: '1:b', attribute1: 3 },
    ]);
    await table(api, 'Sep1', 'SIMPLE', 'REAL', [{ name: `x${US}y`, value: 4 }]);
    okData(await api('/add/CRCS', { data: { uniqueName: `Sep${US}Set`, label: 'separators', keySize: 2 } }));
    okData(await api('/add/CRCS', { data: { uniqueName: 'SepOne', label: 'one key', keySize: 1 } }));
    const item = (set: string, keys: string[], conditionValue: number) =>
      api('/loaddata/CRCP', {
        data: {
          header: [
            'conditionRecordSetId',
            ...keys.map((_, i) => `key${i + 1}`),
            'validFrom',
            'conditionValue',
          ],
          data: [[set, ...keys, '2026-01-01', conditionValue]],
        },
      });
    for (const r of [
      await item(`Sep${US}Set`, [`a${US}b`, 'c'], 5),
      await item(`Sep${US}Set`, ['a', `b${US}c`], 6),
      await item('SepOne', [`x${US}y`], 7),
    ])
      assert.equal(okData(r)[0].inserted, 1, r.text);
    const inputs = ['A', 'C', 'BC', 'AB', 'XY'].map((name) => ({ name, type: 'TEXT' }));
    const elements: [string, string][] = [
      ['M1', 'lookup("Sep2", input.AB, input.C)'],
      ['M2', 'lookup("Sep2", input.A, input.BC)'],
      ['M3', 'lookup("Sep2", "1:a", "1:b")'],
      ['MMiss', 'lookup("Sep2", "a", "b")'],
      ['S1', 'lookup("Sep1", input.XY)'],
      // (A set is named by a literal: this one holds U+001F itself.)
      ['C1', `get(conditionRecord("Sep${US}Set", input.AB, input.C), "conditionValue")`],
      ['C2', `get(conditionRecord("Sep${US}Set", input.A, input.BC), "conditionValue")`],
      ['C3', 'get(conditionRecord("SepOne", input.XY), "conditionValue")'],
    ];
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Separators',
          validAfter: '2026-01-01',
          inputs,
          elements: elements.map(([elementName, expression]) => ({ elementName, expression })),
        },
      }),
    );
    const r = byName(
      await run('Separators', {
        inputs: { A: 'a', C: 'c', BC: `b${US}c`, AB: `a${US}b`, XY: `x${US}y` },
      }),
    );
    const v = Object.fromEntries(Object.entries(r).map(([k, x]) => [k, [x.result, x.alertMessage ?? null]]));
    assert.deepEqual(v, {
      M1: [1, null],
      M2: [2, null],
      M3: [3, null],
      MMiss: [null, null],
      S1: [4, null],
      C1: [5, null],
      C2: [6, null],
      C3: [7, null],
    });
  });

  test('customerExtension, today() and the text, date and math functions, each worked by hand', async () => {
    okData(
      await api('/add/CXAM', { data: { name: 'Terms', fieldName: 'attribute1', fieldType: 'NUMERIC' } }),
    );
    const [terms] = okData(
      await api('/add/CX', {
        data: { name: 'Terms', customerId: 'C-1', attribute1: '30', attribute2: 'NET' },
      }),
    );
    const elements: [string, string][] = [
      ['Terms', 'customerExtension("Terms")'],
      ['PayDays', 'Terms.attribute1 + 1'],
      ['PayCode', 'Terms.attribute2'],
      ['NoTable', 'customerExtension("Nowhere")'],
      ['Today', 'today()'],
      ['SinceTarget', 'daysBetween(targetDate, today())'],
      [
        'Code',
        'concat(upper(substring(product.label, 0, 5)), "-", lower("ABC"), "-", 12.50, "-", null, true)',
      ],
      ['Tail', 'substring("ABC-123", 4)'],
      ['Middle', 'substring("ABC-123", 1, 2)'],
      ['Past', 'substring("ABC", 5)'],
      ['Has', 'contains(product.label, "Bolt")'],
      ['HasCase', 'contains(product.label, "bolt")'],
      ['Starts', 'startsWith(product.sku, "MB-")'],
      ['StartsCase', 'startsWith(product.sku, "mb")'],
      ['MonthEnd', 'addMonths(date("2026-01-31"), 1)'],
      ['LeapYear', 'addMonths(date("2024-02-29"), 12)'],
      ['Back', 'addMonths(targetDate, -3)'],
      ['Days', 'daysBetween(date("2026-02-01"), targetDate)'],
      ['DaysBack', 'daysBetween(targetDate, date("2026-02-01"))'],
      ['Leap', 'daysBetween(date("2024-02-28"), date("2024-03-01"))'],
      ['Year', 'year(targetDate)'],
      ['Month', 'month(targetDate)'],
      ['NextYear', 'year(addMonths(targetDate, 10)) * 100 + month(addMonths(targetDate, 10))'],
      ['Min', 'min(3, 1.5, null)'],
      ['MinDate', 'min(date("2026-05-01"), targetDate)'],
      ['Max', 'max([2, 7.25, null])'],
      ['Avg', 'avg(1, 2, 3, 4)'],
      ['AvgThird', 'avg(1, 2, 4)'],
      ['Sum', 'sum([0.1, 0.2, null, 0.3])'],
      ['Floor', 'floor(-2.5)'],
      ['Floor2', 'floor(2.567, 2)'],
      ['Ceil', 'ceil(2.01)'],
      ['Ceil2', 'ceil(-2.567, 2)'],
      ['Abs', 'abs(-3.5)'],
    ];
    okData(
      await api('/add/F', {
        data: {
          uniqueName: 'Functions',
          validAfter: '2026-01-01',
          elements: elements.map(([elementName, expression]) => ({ elementName, expression })),
        },
      }),
    );
    const before = utcToday();
    const r = byName(await run('Functions', { customerId: 'C-1', explain: true }));
    const after = utcToday();
    const v = Object.fromEntries(Object.entries(r).map(([k, x]) => [k, x.result]));
    assert.equal(v.Terms.attribute1, 30, 'typed NUMERIC by the CXAM meta');
    assert.equal(v.Terms.customerId, 'C-1');
    assert.equal(v.PayDays, 31);
    assert.equal(v.PayCode, 'NET');
    assert.equal(v.NoTable, null);
    assert.deepEqual(
      r.Terms.explanation.reads.find((e: any) => e.kind === 'customerExtension'),
      { kind: 'customerExtension', table: 'Terms', typedId: terms.typedId, version: 0 },
    );
    assert.ok([before, after].includes(v.Today), `today() is the UTC date: ${v.Today}`);
    const days = (iso: string) => (Date.parse(iso) - Date.parse('2026-03-01')) / 86_400_000;
    assert.ok([days(before), days(after)].includes(v.SinceTarget), `${v.SinceTarget} days`);
    assert.equal(r.Today.resultType, 'DATE');
    assert.equal(v.Code, 'STEEL-abc-12.5-true', 'null joins as empty text, numbers plainly');
    assert.equal(v.Tail, '123');
    assert.equal(v.Middle, 'BC');
    assert.equal(v.Past, '');
    assert.equal(v.Has, true);
    assert.equal(v.HasCase, false, 'contains is case-sensitive');
    assert.equal(v.Starts, true);
    assert.equal(v.StartsCase, false);
    assert.equal(v.MonthEnd, '2026-02-28', 'clipped to the end of February');
    assert.equal(v.LeapYear, '2025-02-28');
    assert.equal(v.Back, '2025-12-01');
    assert.equal(v.Days, 28);
    assert.equal(v.DaysBack, -28);
    assert.equal(v.Leap, 2, '2024 is a leap year');
    assert.equal(v.Year, 2026);
    assert.equal(v.Month, 3);
    assert.equal(v.NextYear, 202701, '2026-03-01 + 10 months = 2027-01-01');
    assert.equal(v.Min, 1.5);
    assert.equal(v.MinDate, '2026-03-01');
    assert.equal(v.Max, 7.25);
    assert.equal(v.Avg, 2.5);
    assert.equal(v.AvgThird, '2.333333333333333333333333333333333', '34 significant digits, as text');
    assert.equal(v.Sum, 0.6);
    assert.equal(v.Floor, -3);
    assert.equal(v.Floor2, 2.56);
    assert.equal(v.Ceil, 3);
    assert.equal(v.Ceil2, -2.56);
    assert.equal(v.Abs, 3.5);
    for (const [name, x] of Object.entries(r)) assert.equal(x.alertType, null, `${name}: ${x.alertMessage}`);
    // Another customer without a Terms row, and no customer at all: null, not an error.
    assert.equal(byName(await run('Functions', { customerId: 'C-2' })).Terms.result, null);
    const none = byName(await run('Functions'));
    assert.equal(none.Terms.result, null);
    assert.equal(none.PayDays.result, null);
  });

  test('rounding: every mode by policy and by roundPrice, price endings .95 and 9.90 by each side rule', async () => {
    const modes = ['HALF_UP', 'HALF_DOWN', 'HALF_EVEN', 'UP', 'DOWN', 'CEILING', 'FLOOR'];
    for (const mode of modes) {
      // Step 0.05 (a step that is no power of ten), named by element rounding.
      okData(await api('/add/RP', { data: { uniqueName: `S5_${mode}`, currency: 'XXX', step: 0.05, mode } }));
      // Step 0.01, found by roundPrice through the currency (the mode's name).
      okData(await api('/add/RP', { data: { uniqueName: `C_${mode}`, currency: mode, step: 0.01, mode } }));
    }
    const rules = ['NEAREST', 'UP', 'DOWN'];
    for (const [tag, priceEnding] of [
      ['95', '.95'],
      ['990', '9.90'],
    ])
      for (const endingRule of rules)
        okData(
          await api('/add/RP', {
            data: {
              uniqueName: `E${tag}_${endingRule}`,
              currency: `E${tag}${endingRule[0]}`,
              step: 0.01,
              mode: 'HALF_UP',
              priceEnding,
              endingRule,
            },
          }),
        );
    const S5 = ['2.325', '-2.325', '2.375', '2.31', '2.34'];
    const C = ['2.325', '-2.325', '2.375', '2.3412', '2.3481'];
    const E95 = ['12.40', '12.50', '12.45', '12.95', '12.96', '0.50', '12.445'];
    const E990 = ['14', '15', '14.90', '19.90', '123.45', '5'];
    const elements: object[] = [];
    for (const mode of modes) {
      S5.forEach((x, i) =>
        elements.push({ elementName: `S5_${mode}_${i}`, expression: x, rounding: `S5_${mode}` }),
      );
      C.forEach((x, i) =>
        elements.push({ elementName: `C_${mode}_${i}`, expression: `roundPrice(${x}, "${mode}")` }),
      );
    }
    for (const rule of rules) {
      E95.forEach((x, i) => {
        elements.push({ elementName: `E95_${rule}_${i}`, expression: x, rounding: `E95_${rule}` });
        elements.push({ elementName: `R95_${rule}_${i}`, expression: `roundPrice(${x}, "E95${rule[0]}")` });
      });
      E990.forEach((x, i) => {
        elements.push({ elementName: `E990_${rule}_${i}`, expression: x, rounding: `E990_${rule}` });
        elements.push({ elementName: `R990_${rule}_${i}`, expression: `roundPrice(${x}, "E990${rule[0]}")` });
      });
    }
    okData(await api('/add/F', { data: { uniqueName: 'Rounding', validAfter: '2026-01-01', elements } }));
    const r = byName(await run('Rounding', { explain: true }));
    const row = (prefix: string, n: number) =>
      Array.from({ length: n }, (_, i) => r[`${prefix}_${i}`].result);
    // Step 0.05: 2.325 and -2.325 are 46.5 steps, 2.375 47.5, 2.31 46.2, 2.34 46.8.
    const step5: Record<string, number[]> = {
      HALF_UP: [2.35, -2.35, 2.4, 2.3, 2.35],
      HALF_DOWN: [2.3, -2.3, 2.35, 2.3, 2.35],
      HALF_EVEN: [2.3, -2.3, 2.4, 2.3, 2.35],
      UP: [2.35, -2.35, 2.4, 2.35, 2.35],
      DOWN: [2.3, -2.3, 2.35, 2.3, 2.3],
      CEILING: [2.35, -2.3, 2.4, 2.35, 2.35],
      FLOOR: [2.3, -2.35, 2.35, 2.3, 2.3],
    };
    // Step 0.01: 232.5, -232.5, 237.5, 234.12 and 234.81 cents.
    const step1: Record<string, number[]> = {
      HALF_UP: [2.33, -2.33, 2.38, 2.34, 2.35],
      HALF_DOWN: [2.32, -2.32, 2.37, 2.34, 2.35],
      HALF_EVEN: [2.32, -2.32, 2.38, 2.34, 2.35],
      UP: [2.33, -2.33, 2.38, 2.35, 2.35],
      DOWN: [2.32, -2.32, 2.37, 2.34, 2.34],
      CEILING: [2.33, -2.32, 2.38, 2.35, 2.35],
      FLOOR: [2.32, -2.33, 2.37, 2.34, 2.34],
    };
    for (const mode of modes) {
      assert.deepEqual(row(`S5_${mode}`, S5.length), step5[mode], `policy S5_${mode}`);
      assert.deepEqual(row(`C_${mode}`, C.length), step1[mode], `roundPrice in currency ${mode}`);
    }
    // .95: 12.40 is 0.45 above 11.95 and 0.55 below 12.95; 12.45 is a tie (goes up); 12.445 is first
    // rounded to the step (12.45), then moved; 0.50 has no .95 price at or below it that is not negative.
    const e95: Record<string, number[]> = {
      NEAREST: [11.95, 12.95, 12.95, 12.95, 12.95, 0.95, 12.95],
      UP: [12.95, 12.95, 12.95, 12.95, 13.95, 0.95, 12.95],
      DOWN: [11.95, 11.95, 11.95, 12.95, 12.95, 0.95, 11.95],
    };
    // 9.90: candidates 9.90, 19.90, 29.90 ...: 14 is 4.10 above 9.90, 15 is 4.90 below 19.90, 14.90 a tie.
    const e990: Record<string, number[]> = {
      NEAREST: [9.9, 19.9, 19.9, 19.9, 119.9, 9.9],
      UP: [19.9, 19.9, 19.9, 19.9, 129.9, 9.9],
      DOWN: [9.9, 9.9, 9.9, 19.9, 119.9, 9.9],
    };
    for (const rule of rules) {
      assert.deepEqual(row(`E95_${rule}`, E95.length), e95[rule], `.95 ${rule} by policy`);
      assert.deepEqual(row(`R95_${rule}`, E95.length), e95[rule], `.95 ${rule} by roundPrice`);
      assert.deepEqual(row(`E990_${rule}`, E990.length), e990[rule], `9.90 ${rule} by policy`);
      assert.deepEqual(row(`R990_${rule}`, E990.length), e990[rule], `9.90 ${rule} by roundPrice`);
    }
    // Both paths explain the policy with the value before and after.
    const step = (name: string) => r[name].explanation.reads.find((e: any) => e.kind === 'rounding');
    assert.deepEqual(step('E990_DOWN_4'), {
      kind: 'rounding',
      policy: 'E990_DOWN',
      step: '0.01',
      mode: 'HALF_UP',
      priceEnding: '9.90',
      endingRule: 'DOWN',
      before: 123.45,
      after: 119.9,
    });
    assert.deepEqual(step('R95_NEAREST_6'), {
      kind: 'rounding',
      policy: 'E95_NEAREST',
      currency: 'E95N',
      step: '0.01',
      mode: 'HALF_UP',
      priceEnding: '.95',
      endingRule: 'NEAREST',
      before: 12.445,
      after: 12.95,
    });
    assert.equal(step('S5_FLOOR_1').step, '0.05');
    for (const [name, x] of Object.entries(r)) assert.deepEqual(x.warnings, [], name);
  });
});
