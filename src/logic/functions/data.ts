// Built-ins that read data: lookup tables, condition records, extension rows and rounding policies.
// Table and set names must be text literals, so the compiled logic knows every table it reads
// (findref, prefetch). Reads go through the synchronous data port: in a collecting pass a missing
// row is recorded and read as null; the evaluator loads what was recorded set-based and runs again.

import { addWarning, traceEntry } from '../env.ts';
import { applyPolicy } from '../rounding.ts';
import { LogicDate, toJson, type Value } from '../values.ts';
import { date, num, text } from './args.ts';
import { roundTo } from '../rounding.ts';
import { fn, type CallSite, type FnDef } from './types.ts';

/** The arguments from `from` on (a look-up's keys), in one new list. */
function keysOf(args: readonly Value[], from: number): Value[] {
  const out = new Array<Value>(Math.max(0, args.length - from));
  for (let i = from; i < args.length; i++) out[i - from] = args[i] ?? null;
  return out;
}

/** `productExtension(table)` / `customerExtension(table)`: the owner's row of an extension table. */
function extensionFn(owner: 'product' | 'customer', doc: string, example: string): FnDef {
  const kind = `${owner}Extension`;
  return fn({
    name: kind,
    min: 1,
    max: 1,
    params: ['text'],
    literal: [0],
    returns: 'record',
    data: true,
    doc,
    example,
    run(_args, env, site) {
      const table = site.literals[0]!;
      const row = env.data!.extension(owner, table)[0] ?? null;
      if (env.element.trace)
        traceEntry(env, {
          kind,
          table,
          typedId: row?.ref?.typedId ?? null,
          version: row?.ref?.version ?? null,
        });
      return row;
    },
  });
}

/** The date argument at `i` if given, else the evaluation's target date. */
function dateArg(args: readonly Value[], i: number, env: Parameters<FnDef['run']>[1], site: CallSite) {
  return args.length > i && args[i] !== null ? date(args, i, site)! : env.targetDate;
}

export const DATA: readonly FnDef[] = [
  fn({
    name: 'competition',
    min: 1,
    max: 2,
    params: ['text', 'date'],
    returns: 'record',
    data: true,
    doc: "The product's competition data (type PCOMP) of one competitor: the latest row dated on or before the target date (or the date given), or null. Fields: competitor, competitionDate, price (a number), currency, label, attribute1..30.",
    example: 'competition("ShopA").price  (as element A = competition("ShopA"), then A.price)',
    run(args, env, site) {
      const competitor = text(args, 0, site);
      const at = dateArg(args, 1, env, site);
      const row =
        competitor === undefined
          ? null
          : (env.data!.competition(at).find((r) => r.get('competitor') === competitor) ?? null);
      if (env.element.trace)
        traceEntry(env, {
          kind: 'competition',
          competitor: competitor ?? null,
          date: at.iso,
          hit: row !== null,
          typedId: row?.ref?.typedId ?? null,
          version: row?.ref?.version ?? null,
          competitionDate: row === null ? null : toJson(row.get('competitionDate')),
          price: row === null ? null : toJson(row.get('price')),
          currency: row === null ? null : toJson(row.get('currency')),
        });
      return row;
    },
  }),
  fn({
    name: 'competitionPrices',
    min: 0,
    max: 2,
    params: ['text', 'date'],
    returns: 'list',
    data: true,
    doc: "The product's competitor prices (type PCOMP): per competitor, the price of the latest row dated on or before the target date (or the date given), in competitor order; only rows in the currency when one is given (null: any). Rows without a price are left out. For min(), max(), avg(), count().",
    example: 'min(competitionPrices("EUR"))',
    run(args, env, site) {
      const currency = args.length > 0 && args[0] !== null ? text(args, 0, site) : undefined;
      const at = dateArg(args, 1, env, site);
      const rows = env
        .data!.competition(at)
        .filter((r) => r.get('price') !== null && (currency === undefined || r.get('currency') === currency));
      if (env.element.trace)
        traceEntry(env, {
          kind: 'competitionPrices',
          currency: currency ?? null,
          date: at.iso,
          rows: rows.map((r) => ({
            competitor: toJson(r.get('competitor')),
            typedId: r.ref?.typedId ?? null,
            version: r.ref?.version ?? null,
            competitionDate: toJson(r.get('competitionDate')),
            price: toJson(r.get('price')),
          })),
        });
      return rows.map((r) => r.get('price'));
    },
  }),
  fn({
    name: 'lookup',
    min: 2,
    max: 7,
    params: ['text', 'any'],
    literal: [0],
    returns: 'any',
    data: true,
    doc: 'The value of a lookup table for the key(s): SIMPLE by exact key (`value`), RANGE by the range holding the number (`value`), MATRIX..MATRIX6 by key1..keyN (`attribute1`). Null when there is no row.',
    example: 'lookup("MarginByRegion", customer.attribute1)',
    run(args, env, site) {
      const table = site.literals[0]!;
      const found = env.data!.lookup(table, keysOf(args, 1));
      if (env.element.trace)
        traceEntry(env, {
          kind: 'lookup',
          table,
          keys: keysOf(args, 1).map(toJson),
          hit: found.row !== null,
          typedId: found.row?.ref?.typedId ?? null,
          version: found.row?.ref?.version ?? null,
          value: toJson(found.value),
        });
      return found.value;
    },
  }),
  fn({
    name: 'lookupRow',
    min: 2,
    max: 7,
    params: ['text', 'any'],
    literal: [0],
    returns: 'record',
    data: true,
    doc: 'The whole row of a lookup table for the key(s) (read its fields with `.field` on an element, or `get(row, "attribute2")`).',
    example: 'get(lookupRow("Freight", "DE", "PALLET"), "attribute2")',
    run(args, env, site) {
      const table = site.literals[0]!;
      const found = env.data!.lookup(table, keysOf(args, 1));
      if (env.element.trace)
        traceEntry(env, {
          kind: 'lookupRow',
          table,
          keys: keysOf(args, 1).map(toJson),
          hit: found.row !== null,
          typedId: found.row?.ref?.typedId ?? null,
          version: found.row?.ref?.version ?? null,
        });
      return found.row;
    },
  }),
  extensionFn(
    'product',
    "The product's row of a product extension table (PX), or null.",
    'productExtension("Costs").attribute1  (as element Costs = productExtension("Costs"), then Costs.attribute1)',
  ),
  extensionFn(
    'customer',
    "The customer's row of a customer extension table (CX), or null (null without a customer).",
    'customerExtension("Terms")',
  ),
  fn({
    name: 'conditionRecord',
    min: 2,
    max: 14,
    params: ['text', 'any'],
    literal: [0],
    returns: 'record',
    data: true,
    doc: 'The condition record of a set for the key(s), valid at the target date (or at a date given as last argument with `date(...)`); read `conditionValue` etc. from it.',
    example:
      'element Cond = conditionRecord("SalesDiscount", customer.customerId, product.sku), then Cond.conditionValue',
    run(args, env, site) {
      const set = site.literals[0]!;
      let keys = keysOf(args, 1);
      let at = env.targetDate;
      const last = keys[keys.length - 1];
      if (keys.length > 1 && last instanceof LogicDate) {
        at = date(keys, keys.length - 1, site)!;
        keys = keys.slice(0, -1);
      }
      const row = env.data!.conditionRecord(set, keys, at);
      if (env.element.trace)
        traceEntry(env, {
          kind: 'conditionRecord',
          set,
          keys: keys.map(toJson),
          date: at.iso,
          hit: row !== null,
          typedId: row?.ref?.typedId ?? null,
          version: row?.ref?.version ?? null,
          validFrom: row === null ? null : toJson(row.get('validFrom')),
          validTo: row === null ? null : toJson(row.get('validTo')),
          conditionValue: row === null ? null : toJson(row.get('conditionValue')),
        });
      return row;
    },
  }),
  fn({
    name: 'roundPrice',
    min: 2,
    max: 2,
    params: ['number', 'text'],
    returns: 'number',
    data: true,
    doc: "Rounds a price by the currency's rounding policy (type RP: step, mode, price ending). Without a policy: 2 decimals HALF_UP and a warning.",
    example: 'roundPrice(17.8347, "EUR")',
    run(args, env, site) {
      const x = num(args, 0, site);
      const currency = text(args, 1, site);
      if (x === undefined || currency === undefined) return null;
      const policy = env.data!.policyFor(currency);
      if (policy === null) {
        const after = roundTo(x, 2, 'HALF_UP');
        addWarning(env, `no rounding policy for ${currency}: rounded to 2 decimals`);
        if (env.element.trace)
          traceEntry(env, {
            kind: 'rounding',
            policy: null,
            currency,
            before: toJson(x),
            after: toJson(after),
          });
        return after;
      }
      const after = applyPolicy(x, policy);
      if (env.element.trace)
        traceEntry(env, {
          kind: 'rounding',
          policy: policy.uniqueName,
          currency,
          step: policy.step.toFixed(),
          mode: policy.mode,
          priceEnding: policy.priceEnding,
          endingRule: policy.endingRule,
          before: toJson(x),
          after: toJson(after),
        });
      return after;
    },
  }),
];
