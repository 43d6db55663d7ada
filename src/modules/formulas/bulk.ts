// The bulk evaluator: one logic version over many items (product × optional customer × inputs), for
// calculation grids and rebates. Items go in batches; per batch the products and customers are read
// in one statement each, and everything the logic reads (lookup rows, extension rows, condition
// records) is loaded set-based between evaluation passes — no SQL per item. A batch's data are
// dropped after it, so memory stays constant per batch. A bad item (unknown product, bad inputs, a
// limit hit) is that item's error, never the batch's.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { AppError } from '../../http/errors.ts';
import type { LogicLimits } from '../../logic/env.ts';
import { LimitError } from '../../logic/failures.ts';
import type { ElementOutcome } from '../../logic/evaluate.ts';
import type { CompiledLogic } from '../../logic/logic.ts';
import { resultObjects, type ResultObject } from '../../logic/results.ts';
import { toValue, type LogicDate, type RecordValue, type Value } from '../../logic/values.ts';
import { BatchData, type BatchRows } from './data.ts';
import { evaluateEach, evaluateItems, type ItemSpec } from './evaluate-items.ts';
import { checkInputs, loadLogic, policiesFor } from './service.ts';
import { attributeTypesOf, masterFields, masterRecords, recordOf } from './master-store.ts';

export interface BulkItem {
  readonly sku: string;
  readonly customerId?: string;
  readonly inputs?: Record<string, unknown>;
  /** Element values given (manual overrides): used as they are; the elements after them read them. */
  readonly fixed?: Readonly<Record<string, unknown>>;
}

export interface BulkResult {
  readonly sku: string;
  readonly customerId: string | null;
  /**
   * The result objects (all elements, hidden ones included), or null with `error`. Read only: an
   * element's result equal to an earlier one's (same value, no alert or warning) is that same frozen
   * object.
   */
  readonly results: ResultObject[] | null;
  readonly error: string | null;
}

export interface BulkOptions {
  readonly targetDate: LogicDate;
  readonly limits: LogicLimits;
  /** Items per batch (default 5,000). */
  readonly batchSize?: number;
}

/** The logic version valid at the date, compiled (cached), for a caller that evaluates in bulk. */
export async function bulkLogic(q: Queryable, principal: Principal, uniqueName: string, date: LogicDate) {
  return loadLogic(q, principal.partitionId, uniqueName, date);
}

/** Evaluates the logic over the items, yielding the results batch by batch, in item order. */
export async function* evaluateBulk(
  q: Queryable,
  principal: Principal,
  logic: CompiledLogic,
  items: Iterable<BulkItem> | AsyncIterable<BulkItem>,
  opts: BulkOptions,
): AsyncGenerator<BulkResult[]> {
  const size = Math.max(1, opts.batchSize ?? 5_000);
  const policies = await policiesFor(q, principal.partitionId, logic);
  // One after the other: q may be a transaction's single connection.
  const productMeta = await attributeTypesOf(q, principal, 'P');
  const customerMeta = await attributeTypesOf(q, principal, 'C');
  const productFields = fieldsRead(logic, 'product');
  const customerFields = fieldsRead(logic, 'customer');
  const productColumns = masterFields('P', productFields);
  const customerColumns = masterFields('C', customerFields);
  // One data cache for the whole run: look-up rows carry over, per-item rows are dropped per batch.
  const data = new BatchData(q, principal.partitionId, policies, principal.metaVersion);
  const competitionAt = logic.competition ? opts.targetDate : undefined;
  const failed = (item: BulkItem, error: string): BulkResult => ({
    sku: item.sku,
    customerId: item.customerId ?? null,
    results: null,
    error,
  });

  // Checked inputs by their raw values: the items of a run mostly give the same inputs (a grid's), and
  // one checked object (read only) serves them all instead of one kept per item for its batch.
  const inputsSeen = new Map<string, Record<string, Value>>();
  const checkedInputs = (raw: Record<string, unknown> | undefined): Record<string, Value> => {
    const key = inputsKey(raw);
    if (key === undefined) return checkInputs(logic.inputs, raw);
    let found = inputsSeen.get(key);
    if (found === undefined) {
      found = checkInputs(logic.inputs, raw);
      if (inputsSeen.size >= 1_000) inputsSeen.clear();
      inputsSeen.set(key, found);
    }
    return found;
  };

  /** Reads a batch's products, customers and per-item rows, and makes its items' evaluation specs. */
  const prepare = async (batch: readonly BulkItem[]): Promise<Prepared> => {
    const skus = [...new Set(batch.map((i) => i.sku))];
    const customerIds = [
      ...new Set(batch.flatMap((i) => (i.customerId === undefined ? [] : [i.customerId]))),
    ];
    const products = await masterRecords(q, principal, 'P', skus, productFields);
    const customers =
      customerIds.length > 0
        ? await masterRecords(q, principal, 'C', customerIds, customerFields)
        : new Map<string, Record<string, unknown>>();
    const out = new Array<BulkResult>(batch.length);
    const specs: ItemSpec[] = [];
    const at: number[] = [];
    // One record per product and customer of the batch, however many items name it.
    const productRecords = new Map<string, RecordValue>();
    const customerRecords = new Map<string, RecordValue>();
    batch.forEach((item, n) => {
      const product = products.get(item.sku);
      const customer = item.customerId === undefined ? undefined : customers.get(item.customerId);
      let error: string | undefined;
      if (!product) error = `product ${item.sku} not found`;
      else if (item.customerId !== undefined && !customer) error = `customer ${item.customerId} not found`;
      let inputs = NO_INPUTS;
      if (error === undefined) {
        try {
          inputs = checkedInputs(item.inputs);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          error = err.message;
        }
      }
      if (error !== undefined) {
        out[n] = failed(item, error);
        return;
      }
      let p = productRecords.get(item.sku);
      if (!p) productRecords.set(item.sku, (p = recordOf('P', product!, productMeta, productColumns)));
      let c: RecordValue | undefined;
      if (customer) {
        c = customerRecords.get(item.customerId!);
        if (!c)
          customerRecords.set(item.customerId!, (c = recordOf('C', customer, customerMeta, customerColumns)));
      }
      // A literal of fixed keys (roots are read with Object.hasOwn only): cheaper than a null-prototype
      // object, which V8 keeps as a dictionary.
      const roots: Readonly<Record<string, Value>> = c ? { product: p, customer: c } : { product: p };
      const fixed =
        item.fixed === undefined
          ? undefined
          : new Map(Object.entries(item.fixed).map(([k, v]) => [k, toValue(v)]));
      specs.push(
        item.customerId === undefined
          ? { sku: item.sku, roots, inputs, fixed }
          : { sku: item.sku, customerId: item.customerId, roots, inputs, fixed },
      );
      at.push(n);
    });
    const rows = await data.batchRows(logic.extensions, specs, competitionAt);
    return { batch, out, specs, at, rows };
  };

  /** Evaluates a prepared batch (its look-ups loaded set-based between passes). */
  const run = async ({ batch, out, specs, at, rows }: Prepared): Promise<BulkResult[]> => {
    data.nextBatch(rows);
    // Each item's result objects are made as soon as its outcomes are final (the outcomes die young).
    await evaluateSafely(logic, specs, data, opts, (k, outcomes, error) => {
      const n = at[k]!;
      const item = batch[n]!;
      out[n] =
        outcomes === null
          ? failed(item, error!)
          : {
              sku: item.sku,
              customerId: item.customerId ?? null,
              results: resultObjects(logic, outcomes, false, true, true),
              error: null,
            };
    });
    return out;
  };

  // A pipeline of two batches: the next batch's reads are issued before the current one is evaluated,
  // so the database works while this process evaluates (on one connection the statements just queue).
  // Memory: at most two batches' rows at once. A read's failure surfaces when its batch comes up.
  let next: Promise<Prepared> | undefined;
  const start = (batch: BulkItem[]) => {
    const p = prepare(batch);
    p.catch(() => {}); // handled where it is awaited; not an unhandled rejection meanwhile
    return p;
  };
  try {
    for await (const batch of batchesOf(items, size)) {
      const current = next;
      next = start(batch);
      if (current) yield await run(await current);
    }
    if (next) {
      const last = next;
      next = undefined;
      yield await run(await last);
    }
  } finally {
    // A caller that stops early: the reads in flight end before the generator does (no statement
    // of this run is left running on a connection the caller goes on using).
    if (next) await next.catch(() => {});
  }
}

const NO_INPUTS: Readonly<Record<string, Value>> = Object.freeze({});

/**
 * The items in batches of `size` (the last one shorter). A plain iterable is read with `for ... of`:
 * `for await` would wrap every item in a promise and cost a microtask per item.
 */
async function* batchesOf(
  items: Iterable<BulkItem> | AsyncIterable<BulkItem>,
  size: number,
): AsyncGenerator<BulkItem[]> {
  let batch: BulkItem[] = [];
  if (Symbol.iterator in items) {
    for (const item of items) {
      batch.push(item);
      if (batch.length < size) continue;
      yield batch;
      batch = [];
    }
  } else {
    for await (const item of items) {
      batch.push(item);
      if (batch.length < size) continue;
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/**
 * A key telling raw inputs apart by what checkInputs reads of them (own names, which are declared
 * input names when the inputs pass; each value's type and value), or undefined when a value is not a short text, a number, a boolean or null (checked each
 * time then).
 */
function inputsKey(raw: Record<string, unknown> | undefined): string | undefined {
  if (raw === undefined) return '';
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  let key = '';
  for (const name in raw) {
    if (!Object.hasOwn(raw, name)) return undefined;
    const v = raw[name];
    const kind =
      v === null
        ? 'z'
        : v === undefined
          ? 'u'
          : typeof v === 'number'
            ? 'n'
            : typeof v === 'boolean'
              ? 'b'
              : typeof v === 'string' && v.length <= 100
                ? `s${v.length}:` // the length first: a text holding the separators is no other key
                : undefined;
    if (kind === undefined) return undefined;
    key += `${name}\u001f${kind}${String(v)}\u001e`;
  }
  return key.length <= 2_000 ? key : undefined;
}

interface Prepared {
  readonly batch: readonly BulkItem[];
  readonly out: BulkResult[];
  readonly specs: ItemSpec[];
  readonly at: number[];
  readonly rows: BatchRows;
}

/**
 * An item's outcomes (read at once: the list is reused for the next item), or null and its error.
 */
type Done = (index: number, outcomes: readonly ElementOutcome[] | null, error: string | null) => void;

/** Evaluates the batch; when a limit stops one item, the batch is evaluated again one by one. */
async function evaluateSafely(
  logic: CompiledLogic,
  specs: readonly ItemSpec[],
  data: BatchData,
  opts: BulkOptions,
  done: Done,
): Promise<void> {
  const options = { targetDate: opts.targetDate, explain: false, limits: opts.limits };
  try {
    await evaluateEach(logic, specs, data, options, (i, outcomes) => done(i, outcomes, null), true);
    return;
  } catch (err) {
    if (!(err instanceof LimitError)) throw err;
  }
  for (const [i, spec] of specs.entries()) {
    try {
      const [outcomes] = await evaluateItems(logic, [spec], data, options);
      done(i, outcomes ?? [], null);
    } catch (err) {
      if (!(err instanceof LimitError)) throw err;
      done(i, null, `logic stopped: ${err.message}`);
    }
  }
}

/**
 * The fields of a record root (`product`, `customer`) the logic reads: `product.attribute1` paths
 * and `product("attribute1")` calls; undefined (all of them) when a call names its field at run time.
 */
export function fieldsRead(logic: CompiledLogic, root: string): Set<string> | undefined {
  const out = new Set<string>();
  for (const el of logic.elements) {
    for (const path of el.reads.fields) {
      const [head, field] = path.split('.');
      if (head === root && field !== undefined) out.add(field);
    }
    for (const call of el.reads.calls) {
      if (call.name !== root) continue;
      const field = call.literals[0];
      if (field === undefined) return undefined;
      out.add(field);
    }
  }
  return out;
}
