// Running logics: `/formulamanager.execute/{sku}[/{uniqueName}]`. Flow: the product (by sku or
// typedId, visible to the caller) → the logic version valid at the target date → its compiled form
// (cached by id and version, so a change is seen on every node) → inputs checked against the
// declarations → customer and seller records → evaluation with set-based data passes → result objects.

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import type { LogicLimits } from '../../logic/env.ts';
import { LimitError } from '../../logic/failures.ts';
import type { ElementOutcome } from '../../logic/evaluate.ts';
import { LOGIC_FUNCTIONS } from '../../logic/functions/registry.ts';
import { compileLogic, inputValue, type CompiledLogic, type InputDef } from '../../logic/logic.ts';
import { resultObjects, type ResultObject } from '../../logic/results.ts';
import { CriteriaValue, LogicDate, parseIsoDate, type Value } from '../../logic/values.ts';
import { BatchData } from './data.ts';
import { evaluateItems } from './evaluate-items.ts';
import {
  allLogics,
  logicAt,
  logicById,
  logicContext,
  type LogicRow,
  type LogicVersion,
  productWithLogic,
  roundingPolicies,
} from './logic-store.ts';
import { attributeTypesOf, recordOf, sellerRecord } from './master-store.ts';

export interface ExecuteData {
  readonly inputs?: Record<string, unknown>;
  readonly targetDate?: string;
  readonly customerId?: string;
  readonly sellerId?: string;
  readonly explain?: boolean;
}

export interface ExecuteAnswer {
  readonly results: ResultObject[];
  readonly logic: {
    readonly uniqueName: string;
    readonly validAfter: string;
    readonly version: number;
    readonly targetDate: string;
  };
}

// ---- compiled logics, by partition, id and version (a version is never reused), with the name and
// start they were stored under: a database other than the one the entry was compiled from (one
// restored from a backup, a test's second database in the same process) may hold another logic
// under the same id and version ----
const CACHE_SIZE = 500;
const cache = new Map<string, CompiledLogic>();
/** The logic last run by execute per partition and name ('' for the product's own): see executeLogic. */
const hints = new Map<string, CompiledLogic>();

export function compiledLogic(partitionId: number, row: LogicRow): CompiledLogic {
  const key = `${partitionId}:${row.id}:${row.version}:${row.validAfter}:${row.uniqueName}`;
  let c = cache.get(key);
  if (c === undefined) {
    c = compileLogic(row.inputs, row.elements, LOGIC_FUNCTIONS);
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
    cache.set(key, c);
  } else {
    cache.delete(key);
    cache.set(key, c);
  }
  return c;
}

/** The partition's rounding policies, read only when the logic rounds by policy. */
export async function policiesFor(q: Queryable, partitionId: number, logic: CompiledLogic) {
  return rounds(logic) ? roundingPolicies(q, partitionId) : [];
}

/** The product extension tables a logic reads. */
function productTables(logic: CompiledLogic): string[] {
  return [...logic.extensions].filter((e) => e.startsWith('product:')).map((e) => e.slice('product:'.length));
}

/** Whether the logic rounds by policy (an element's `rounding`, or roundPrice). */
function rounds(logic: CompiledLogic): boolean {
  return (
    logic.policies.size > 0 || logic.elements.some((e) => e.reads.calls.some((c) => c.name === 'roundPrice'))
  );
}

export function today(): string {
  return new Date().toISOString().slice(0, 10);
}

export function targetDateOf(raw: unknown): LogicDate {
  if (raw === undefined || raw === null) return new LogicDate(today());
  const d = typeof raw === 'string' ? parseIsoDate(raw) : undefined;
  if (!d) throw validationError('targetDate', 'must be a date YYYY-MM-DD');
  return d;
}

/** Input values checked against the declarations: typed, defaults applied, required ones present. */
export function checkInputs(decl: readonly InputDef[], raw: unknown, at = 'inputs'): Record<string, Value> {
  if (raw !== undefined && raw !== null && (typeof raw !== 'object' || Array.isArray(raw)))
    throw validationError(at, 'must be an object of input values by name');
  const given = (raw ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(given))
    if (!decl.some((d) => d.name === k)) throw validationError(`${at}.${k}`, 'is not an input of this logic');
  const out: Record<string, Value> = Object.create(null) as Record<string, Value>;
  for (const d of decl) {
    const field = `${at}.${d.name}`;
    const v =
      Object.hasOwn(given, d.name) && given[d.name] !== null && given[d.name] !== ''
        ? given[d.name]
        : d.default;
    if (v === undefined || v === null) {
      if (d.required) throw validationError(field, 'is required');
      out[d.name] = null;
      continue;
    }
    const checked = inputValue(d, v);
    if ('error' in checked) throw validationError(field, checked.error);
    out[d.name] = checked.value;
  }
  return out;
}

/** A limit hit while evaluating: the logic is at fault, so a -4 naming the element. */
export function limitError(err: LimitError): AppError {
  return new AppError('VALIDATION', `logic stopped: ${err.message}`, { field: 'logic' });
}

/**
 * The logic version valid at the date, compiled. None: a 404 naming `field` (where the name came
 * from), or a -4 on it when `missing` is 'VALIDATION' (a name the configuration gave, not the request).
 */
export async function loadLogic(
  q: Queryable,
  partitionId: number,
  uniqueName: string,
  date: LogicDate,
  {
    field = 'uniqueName',
    missing = 'NOT_FOUND',
  }: { field?: string; missing?: 'NOT_FOUND' | 'VALIDATION' } = {},
) {
  const row = await logicAt(q, partitionId, uniqueName, date.iso);
  if (!row) {
    const what = `Logic ${uniqueName} valid at ${date.iso}`;
    throw missing === 'NOT_FOUND' ? notFound(what, field) : validationError(field, `${what} not found`);
  }
  return { row, logic: compiledLogic(partitionId, row) };
}

export async function executeLogic(
  db: Db,
  principal: Principal,
  sku: string,
  uniqueName: string | undefined,
  data: ExecuteData,
  limits: LogicLimits,
): Promise<ExecuteAnswer> {
  const targetDate = targetDateOf(data.targetDate);
  const explain = data.explain === true;
  // One read-only transaction on one snapshot: every record, row and version the evaluation reads is
  // of the same moment. Few round trips: the product with its logic version, the customer (and
  // seller), policies with table metadata, then one statement per lookup table, extension table and
  // condition-record set the logic reads (all on this one connection).
  return db.transaction(
    async (tx) => {
      // The logic this call ran last time says which context to read with the product; when the
      // version found differs, the context is read after it (one more statement).
      const hintKey = `${principal.partitionId}:${uniqueName ?? ''}`;
      const hint = hints.get(hintKey);
      const want = hint
        ? {
            policies: rounds(hint),
            tables: [...hint.tables],
            sets: [...hint.conditionSets],
            productExtensions: productTables(hint),
          }
        : { policies: false, tables: [] };
      const customerKey =
        data.customerId !== undefined && data.customerId !== null ? String(data.customerId) : undefined;
      const found = await productWithLogic(tx, principal, sku, uniqueName, targetDate.iso, want, customerKey);
      if (!found) throw notFound(`Product ${sku}`, 'sku');
      const { product } = found;
      const name = uniqueName ?? (product.formula_name as string | null);
      if (!name)
        throw validationError(
          'formulaName',
          `product ${String(product.sku)} has no logic assigned (formulaName)`,
        );
      if (!found.logic) throw notFound(`Logic ${name} valid at ${targetDate.iso}`, 'uniqueName');
      const version = found.logic;
      const logic = await compiledVersion(tx, principal.partitionId, version);
      const inputs = checkInputs(logic.inputs, data.inputs);
      const roots: Record<string, Value> = Object.create(null) as Record<string, Value>;
      roots.product = recordOf('P', product, await attributeTypesOf(tx, principal, 'P'));
      let customerId: string | undefined;
      if (customerKey !== undefined) {
        const customer = found.customer;
        if (!customer) throw notFound(`Customer ${customerKey}`, 'customerId');
        customerId = String(customer.customer_id);
        roots.customer = recordOf('C', customer, await attributeTypesOf(tx, principal, 'C'));
      }
      if (data.sellerId !== undefined && data.sellerId !== null) {
        const seller = await sellerRecord(tx, principal, String(data.sellerId));
        if (!seller) throw notFound(`Seller ${String(data.sellerId)}`, 'sellerId');
        roots.seller = recordOf('SL', seller, await attributeTypesOf(tx, principal, 'SL'));
      }
      if (hints.size >= CACHE_SIZE) hints.clear();
      hints.set(hintKey, logic);
      const context =
        logic === hint
          ? found.context
          : await logicContext(
              tx,
              principal.partitionId,
              rounds(logic),
              [...logic.tables],
              [...logic.conditionSets],
            );
      const batch = new BatchData(tx, principal.partitionId, context.policies, principal.metaVersion);
      batch.knowTables(logic.tables, context.tables);
      // A read-only transaction: the lookup rows and condition records may come from, and go to, the
      // cache of what earlier calls read at the same versions (read-cache.ts).
      batch.useReadCache(context.tables, context.sets);
      const spec = { sku: String(product.sku), customerId, roots, inputs };
      if (logic === hint)
        for (const [table, x] of found.productExtensions)
          await batch.knowExtensionRows('product', table, spec.sku, x);
      let all: ElementOutcome[][];
      try {
        await batch.prefetchExtensions(logic.extensions, [spec], logic.competition ? targetDate : undefined);
        all = await evaluateItems(logic, [spec], batch, { targetDate, explain, limits });
      } catch (err) {
        if (err instanceof LimitError) throw limitError(err);
        throw err;
      }
      return {
        results: resultObjects(logic, all[0] ?? [], explain),
        logic: {
          uniqueName: version.uniqueName,
          validAfter: version.validAfter,
          version: version.version,
          targetDate: targetDate.iso,
        },
      };
    },
    { readOnly: true },
  );
}

/** The compiled logic of a version: from the cache, else read by id and compiled. */
async function compiledVersion(q: Queryable, partitionId: number, v: LogicVersion): Promise<CompiledLogic> {
  const hit = cache.get(`${partitionId}:${v.id}:${v.version}`);
  if (hit) return hit;
  const row = await logicById(q, partitionId, v.id);
  if (!row) throw notFound(`Logic ${v.uniqueName} valid at ${v.validAfter}`, 'uniqueName');
  return compiledLogic(partitionId, row);
}

/** Logics of the partition whose compiled elements read the lookup table (findref). */
export async function logicsReferencingTable(
  q: Queryable,
  partitionId: number,
  tableName: string,
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (const row of await allLogics(q, partitionId)) {
    let logic: CompiledLogic;
    try {
      logic = compiledLogic(partitionId, row);
    } catch {
      continue; // saved before a change of the language: it cannot run, so it reads nothing
    }
    if (!logic.tables.has(tableName)) continue;
    const elements = logic.elements
      .filter((e) =>
        e.reads.calls.some(
          (c) => (c.name === 'lookup' || c.name === 'lookupRow') && c.literals[0] === tableName,
        ),
      )
      .map((e) => e.def.elementName);
    out.push({
      id: row.id,
      typedId: `${row.id}.F`,
      uniqueName: row.uniqueName,
      validAfter: row.validAfter,
      label: row.label,
      status: row.status,
      version: row.version,
      elements,
    });
  }
  return out;
}

/**
 * Runs a FILTER logic (once, not per row) and answers its AdvancedCriteria: the value of its last
 * element, built with filter()/allOf()/anyOf()/noneOf(). The caller ANDs it with its own filter and
 * runs one SQL statement through the criteria compiler. `field` names where the logic's name came
 * from (in errors); `option`: that is an advanced configuration option, so a logic it names that does
 * not exist is a -4 on it (the configuration is at fault), not a 404; `implicit` inputs fill those
 * the logic declares (the others are left out).
 */
export async function filterCriteriaOf(
  q: Queryable,
  principal: Principal,
  formulaName: unknown,
  parameters: unknown,
  limits: LogicLimits,
  {
    field = 'formulaName',
    parametersField = 'formulaParameters',
    option = false,
    implicit = {},
  }: {
    field?: string;
    parametersField?: string;
    option?: boolean;
    implicit?: Record<string, unknown>;
  } = {},
): Promise<Readonly<Record<string, unknown>>> {
  if (typeof formulaName !== 'string' || formulaName === '')
    throw validationError(field, 'must be the uniqueName of a FILTER logic');
  const targetDate = new LogicDate(today());
  const { row, logic } = await loadLogic(q, principal.partitionId, formulaName, targetDate, {
    field,
    missing: option ? 'VALIDATION' : 'NOT_FOUND',
  });
  if (row.nature !== 'FILTER')
    throw validationError(field, `logic ${formulaName} is a ${row.nature} logic, not a FILTER logic`);
  const declared = Object.entries(implicit).filter(([name]) => logic.inputs.some((d) => d.name === name));
  const inputs = checkInputs(
    logic.inputs,
    declared.length === 0
      ? parameters
      : { ...(parameters as object | undefined), ...Object.fromEntries(declared) },
    parametersField,
  );
  const batch = new BatchData(
    q,
    principal.partitionId,
    await policiesFor(q, principal.partitionId, logic),
    principal.metaVersion,
  );
  let all: ElementOutcome[][];
  try {
    all = await evaluateItems(logic, [{ roots: {}, inputs }], batch, { targetDate, explain: false, limits });
  } catch (err) {
    if (err instanceof LimitError) throw limitError(err);
    throw err;
  }
  const outcomes = all[0] ?? [];
  const last = outcomes[outcomes.length - 1];
  if (last?.alertType === 'CRITICAL')
    throw validationError(field, `logic ${formulaName}: ${last.alertMessage ?? 'failed'}`);
  const value = last?.value ?? null;
  if (!(value instanceof CriteriaValue))
    throw validationError(
      field,
      `logic ${formulaName} must end with a filter (filter(), allOf(), anyOf(), noneOf())`,
    );
  const c = value.criteria;
  return c._constructor === 'AdvancedCriteria'
    ? c
    : { _constructor: 'AdvancedCriteria', operator: 'and', criteria: [c] };
}
