// One batch of grid items through the logic: the bulk evaluator (src/modules/formulas/bulk.ts) runs
// every item; items with manual overrides run a second time with the overridden element values
// fixed, so the elements after them read the override, while the first run gives the computed value
// shown beside it (`computedResult`). The outcome is the stored form of each item (ItemRow).

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { evaluateBulk, type BulkItem, type BulkOptions, type BulkResult } from '../formulas/bulk.ts';
import type { CompiledElement, CompiledLogic } from '../../logic/logic.ts';
import { UNSET_RESULT_FIELDS } from '../../logic/results.ts';
import { asDec, parseIsoDate } from '../../logic/values.ts';
import type { KeySource } from './sources.ts';
import type { ItemRow, Keys } from './store.ts';

/** The evaluator's item for a key tuple: key1 the product, a customers key the customer, the keys
 * of value and lookup-table sources the inputs they name, over the grid's own inputs. */
export function itemOf(
  sources: readonly KeySource[],
  gridInputs: Readonly<Record<string, unknown>>,
  keys: readonly string[],
): BulkItem {
  const inputs: Record<string, unknown> = { ...gridInputs };
  let customerId: string | undefined;
  sources.forEach((s, i) => {
    if (s.type === 'customers') customerId = keys[i];
    else if (s.type === 'values' || s.type === 'lookupTable') inputs[s.input] = keys[i];
  });
  return { sku: keys[0]!, inputs, ...(customerId === undefined ? {} : { customerId }) };
}

export interface Pending {
  readonly keys: Keys;
  readonly item: BulkItem;
  readonly inputHash: string;
  /** Manual overrides by element name (empty: none). */
  readonly overrides: Readonly<Record<string, unknown>>;
  /** The overrides as read from the item (JSON; the default: none or as given). */
  readonly overridesJson?: string;
}

/**
 * What every item of a grid shares per element (migration 032): the static fields of its result
 * objects and the defaults of the varying ones; items store the rest (see rowOf).
 */
export function resultMetaOf(logic: CompiledLogic): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const el of logic.elements) {
    const d = el.def;
    out[d.elementName] = {
      resultLabel: d.label ?? d.elementName,
      ...(d.formatType === undefined ? {} : { formatType: d.formatType }),
      suffix: d.suffix ?? null,
      alertType: null,
      alertMessage: null,
      warnings: [],
      overridable: d.overridable ?? false,
      overridden: false,
      resultGroup: d.resultGroup ?? null,
      displayOptions: d.displayOptions ?? 1,
      ...UNSET_RESULT_FIELDS,
    };
  }
  return out;
}

/** The field type of an element's values: `result.<name>` in CGI criteria and sorts. */
function resultTypeOf(el: CompiledElement): string {
  const f = el.def.formatType;
  return f === 'NUMERIC' || f === 'MONEY' || f === 'PERCENT' || el.type === 'number'
    ? 'decimal'
    : f === 'DATE' || el.type === 'date'
      ? 'date'
      : f === 'BOOLEAN' || el.type === 'boolean'
        ? 'boolean'
        : 'string';
}

/** resultTypeOf of every element, by name (kept with the grid: `result_types`). */
export function resultTypesOf(logic: CompiledLogic): Record<string, string> {
  const out: Record<string, string> = {};
  for (const el of logic.elements) out[el.def.elementName] = resultTypeOf(el);
  return out;
}

/**
 * What an override of the element takes: a value of the element's own type — a number for a number
 * (as its field is typed), a list for a list, a record for a record (criteria show as records too).
 * `any`: an element whose type only its values tell (`product.attribute1`), which takes any value.
 */
export type OverrideKind = 'number' | 'date' | 'boolean' | 'text' | 'list' | 'record' | 'any';

export function overrideKindOf(el: CompiledElement): OverrideKind {
  switch (resultTypeOf(el)) {
    case 'decimal':
      return 'number';
    case 'date':
      return 'date';
    case 'boolean':
      return 'boolean';
  }
  switch (el.type) {
    case 'list':
      return 'list';
    case 'record':
    case 'criteria':
      return 'record';
    case 'text':
      return 'text';
    case 'null':
    case 'any':
      return el.def.formatType === 'TEXT' ? 'text' : 'any';
    case 'number':
    case 'boolean':
    case 'date':
      // (Typed by resultTypeOf above.)
      return 'any';
  }
}

async function evaluate(
  q: Queryable,
  principal: Principal,
  logic: CompiledLogic,
  items: readonly BulkItem[],
  opts: BulkOptions,
): Promise<BulkResult[]> {
  const out: BulkResult[] = [];
  if (items.length === 0) return out;
  for await (const part of evaluateBulk(q, principal, logic, items, { ...opts, batchSize: items.length }))
    out.push(...part);
  return out;
}

/** Evaluates the pending items (in order) and answers their stored rows. */
export async function computeItems(
  q: Queryable,
  principal: Principal,
  logic: CompiledLogic,
  pending: readonly Pending[],
  opts: BulkOptions,
): Promise<ItemRow[]> {
  const normal = await evaluate(
    q,
    principal,
    logic,
    pending.map((p) => p.item),
    opts,
  );
  // Only overrides of elements the logic (still) declares overridable apply: one held for an element
  // since made not overridable, or gone, is inert (kept on the item until removed by null).
  const allowed = new Set(
    logic.elements.filter((e) => e.def.overridable === true).map((e) => e.def.elementName),
  );
  const applied = new Map(
    pending.map((p) => [p, Object.fromEntries(Object.entries(p.overrides).filter(([n]) => allowed.has(n)))]),
  );
  const overridden = pending.filter((p) => Object.keys(applied.get(p)!).length > 0);
  const types = resultTypesOf(logic);
  const fixedRuns = await evaluate(
    q,
    principal,
    logic,
    overridden.map((p) => ({ ...p.item, fixed: fixedValues(applied.get(p)!, types) })),
    opts,
  );
  const fixedOf = new Map(overridden.map((p, i) => [p, fixedRuns[i]!]));
  const metaFormats = new Set(
    logic.elements.filter((e) => e.def.formatType !== undefined).map((e) => e.def.elementName),
  );
  return pending.map((p, i) => rowOf(p, applied.get(p)!, normal[i]!, fixedOf.get(p), metaFormats));
}

/**
 * Overrides as element values: a numeric element's text (a decimal past a double) as its decimal, a
 * date element's `YYYY-MM-DD` as a date (stored as their JSON text, they were read back as text).
 */
function fixedValues(
  overrides: Readonly<Record<string, unknown>>,
  types: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(overrides)) {
    if (typeof v !== 'string') out[name] = v;
    else if (types[name] === 'decimal') out[name] = asDec(v) ?? v;
    else if (types[name] === 'date') out[name] = parseIsoDate(v) ?? v;
    else out[name] = v;
  }
  return out;
}

function rowOf(
  p: Pending,
  applied: Readonly<Record<string, unknown>>,
  normal: BulkResult,
  fixed: BulkResult | undefined,
  metaFormats: ReadonlySet<string>,
): ItemRow {
  const failed = normal.error ?? fixed?.error ?? null;
  const base = fixed?.results ?? normal.results;
  if (failed !== null || base === null) {
    return {
      keys: p.keys,
      calculationResults: null,
      results: JSON.stringify(p.overrides),
      warnings: null,
      alerts: null,
      error: failed ?? 'no result',
      inputHash: p.inputHash,
      overrides: p.overridesJson ?? JSON.stringify(p.overrides),
    };
  }
  const computed = fixed ? new Map((normal.results ?? []).map((r) => [r.resultName, r.result])) : undefined;
  const values: Record<string, unknown> = {};
  const warnings: string[] = [];
  const alerts: { resultName: string; alertType: string; alertMessage: string | null }[] = [];
  const objects: Record<string, unknown>[] = [];
  for (const r of base) {
    const v = r.result;
    // The stored (compact) result object: what varies per item; the grid's result meta has the rest.
    const o: Record<string, unknown> = { resultName: r.resultName, result: v, resultType: r.resultType };
    if (!metaFormats.has(r.resultName)) o.formatType = r.formatType;
    if (r.warnings.length > 0) o.warnings = r.warnings;
    if (r.alertType !== null) {
      o.alertType = r.alertType;
      o.alertMessage = r.alertMessage;
      alerts.push({ resultName: r.resultName, alertType: r.alertType, alertMessage: r.alertMessage });
    }
    if (fixed && Object.hasOwn(applied, r.resultName)) {
      o.overridden = true;
      o.computedResult = computed?.get(r.resultName) ?? null;
    }
    objects.push(o);
    // The field result.<name>: a scalar as it is; a record or list as its JSON text (a text field),
    // so that it is read, filtered (isNull/notNull, text operators) and sorted as the docs say.
    if (v === null || typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean')
      values[r.resultName] = v;
    else if (v !== undefined) values[r.resultName] = JSON.stringify(v);
    for (const w of r.warnings) warnings.push(`${r.resultName}: ${w}`);
  }
  return {
    keys: p.keys,
    calculationResults: JSON.stringify(objects),
    results: JSON.stringify(values),
    warnings: warnings.length > 0 ? JSON.stringify(warnings) : null,
    alerts: alerts.length > 0 ? JSON.stringify(alerts) : null,
    error: null,
    inputHash: p.inputHash,
    overrides: p.overridesJson ?? JSON.stringify(p.overrides),
  };
}
