// Key sources of a calculation grid: where the key tuples of its items come from. One source per key
// column, the tuples being their cross product in source order (key1 outermost):
//
//   {type: 'products', filter?}            key = sku of the products matching the filter (P criteria);
//                                          the item's product. Only as the first source.
//   {type: 'customers', filter?}           key = customerId of the matching customers; the item's
//                                          customer. At most one.
//   {type: 'lookupTable', table, input}    key = the keys (name, or key1 of MATRIX2..6) of a lookup
//                                          table, given to the logic as the input `input`
//   {type: 'values', values, input}        key = each of a list of values, given as the input `input`
//
// The first source is read page by page in key order (a million products never sit in memory); the
// others are read whole when a calculation starts (a few thousand customers or values, capped).

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { Params } from '../../db/sql.ts';
import { loadTypeContext, rowScope } from '../../engine/context.ts';
import { compileCriteria, parseCriteria, resolveCriteria } from '../../engine/criteria.ts';
import { findType } from '../../engine/registry.ts';
import { AppError, validationError } from '../../http/errors.ts';
import { inputValue, type InputDef } from '../../logic/logic.ts';
import { isObj, unstorableText } from '../../engine/values.ts';

export type KeySource =
  | { readonly type: 'products'; readonly filter?: unknown }
  | { readonly type: 'customers'; readonly filter?: unknown }
  | { readonly type: 'lookupTable'; readonly table: string; readonly input: string }
  | { readonly type: 'values'; readonly values: readonly string[]; readonly input: string };

/** Keys an inner (not first) source may hold. */
export const MAX_INNER_KEYS = 100_000;
const MAX_VALUES = 10_000;

/** The longest key text: an item's keys are at most 255 characters (as `/add/CGI{k}` takes them). */
export const MAX_KEY_LENGTH = 255;
const NUMBER_INPUTS: ReadonlySet<string> = new Set(['NUMBER', 'MONEY', 'PERCENT']);

/**
 * The field a source's filter is named by in errors: `keySources[i].filter`, or `productFilter` for
 * the first source when the request gave it so (addgrid's short form).
 */
export function filterField(i: number, productFilter: boolean): string {
  return productFilter && i === 0 ? 'productFilter' : `keySources[${i}].filter`;
}

/**
 * The sources of an addgrid request, checked against the key number and the logic's inputs.
 * `productFilter`: the request gave the one products source as `productFilter` (errors name it).
 */
export function parseSources(
  raw: unknown,
  keyNumber: number,
  inputs: readonly InputDef[],
  productFilter = false,
): KeySource[] {
  if (!Array.isArray(raw)) throw validationError('keySources', 'must be an array of key sources');
  if (raw.length !== keyNumber)
    throw validationError('keySources', `must have one source per key (keyNumber ${keyNumber})`);
  const out: KeySource[] = [];
  const usedInputs = new Set<string>();
  raw.forEach((s: unknown, i) => {
    const at = `keySources[${i}]`;
    if (!isObj(s)) throw validationError(at, 'must be an object with a type');
    const allowed = (names: string[]) => {
      for (const k of Object.keys(s))
        if (!names.includes(k)) throw validationError(`${at}.${k}`, 'is not a setting of this source type');
    };
    const input = (): InputDef => {
      const name = s.input;
      const def = typeof name === 'string' ? inputs.find((d) => d.name === name) : undefined;
      if (def === undefined) throw validationError(`${at}.input`, 'must name an input the logic declares');
      if (usedInputs.has(def.name))
        throw validationError(`${at}.input`, `input ${def.name} is given by another source`);
      // Keys are text, and an item's inputs are checked as given (formulamanager.execute's check):
      // text is never a BOOLEAN input's value, so every item of such a grid would fail.
      if (def.type === 'BOOLEAN')
        throw validationError(`${at}.input`, `input ${def.name} is BOOLEAN: key sources give text keys`);
      usedInputs.add(def.name);
      return def;
    };
    switch (s.type) {
      case 'products':
        allowed(['type', 'filter']);
        if (i !== 0) throw validationError(`${at}.type`, 'products can only be the first key source');
        checkFilter(s.filter, filterField(i, productFilter));
        out.push(s.filter === undefined ? { type: 'products' } : { type: 'products', filter: s.filter });
        break;
      case 'customers':
        allowed(['type', 'filter']);
        if (out.some((o) => o.type === 'customers'))
          throw validationError(`${at}.type`, 'only one customers source is allowed');
        checkFilter(s.filter, `${at}.filter`);
        out.push(s.filter === undefined ? { type: 'customers' } : { type: 'customers', filter: s.filter });
        break;
      case 'lookupTable':
        allowed(['type', 'table', 'input']);
        // (NUL names no table: the database cannot take it as text.)
        if (typeof s.table !== 'string' || s.table === '' || s.table.includes('\u0000'))
          throw validationError(`${at}.table`, 'must name a lookup table');
        out.push({ type: 'lookupTable', table: s.table, input: input().name });
        break;
      case 'values': {
        allowed(['type', 'values', 'input']);
        const def = input();
        out.push({ type: 'values', values: keyValues(s.values, def, `${at}.values`), input: def.name });
        break;
      }
      default:
        throw validationError(`${at}.type`, 'must be products, customers, lookupTable or values');
    }
  });
  if (out[0]!.type !== 'products')
    throw validationError('keySources[0].type', 'the first key source must be products (the item product)');
  return out;
}

/**
 * The keys of a values source, each named by its index when refused (`keySources[1].values.3`): a
 * text of 1 to 255 characters — a JSON number where the input is a number, as its text — that the
 * input takes (a number for a number, one of an OPTION's options, a date), none repeated.
 */
function keyValues(raw: unknown, def: InputDef, at: string): string[] {
  if (!Array.isArray(raw)) throw validationError(at, `must be a list of 1 to ${MAX_VALUES} values`);
  if (raw.length === 0 || raw.length > MAX_VALUES)
    throw validationError(at, `must hold 1 to ${MAX_VALUES} values (it holds ${raw.length})`);
  const numeric = NUMBER_INPUTS.has(def.type);
  const seen = new Map<string, number>();
  return raw.map((v: unknown, j) => {
    const field = `${at}.${j}`;
    let text: string;
    if (typeof v === 'string') text = v;
    else if (typeof v === 'number' && numeric) {
      // 1e400 parses as Infinity: no number of the client's.
      if (!Number.isFinite(v))
        throw validationError(field, 'is a number beyond the range of a double: send it as text');
      text = String(v);
    } else
      throw validationError(
        field,
        numeric ? 'must be a number or its text' : `must be text (input ${def.name} is ${def.type})`,
      );
    if (text === '') throw validationError(field, 'must not be empty');
    if (text.length > MAX_KEY_LENGTH)
      throw validationError(field, `is longer than ${MAX_KEY_LENGTH} characters (the most of a key)`);
    const unstorable = unstorableText(text);
    if (unstorable !== undefined) throw validationError(field, unstorable);
    const checked = inputValue(def, text);
    if ('error' in checked)
      throw validationError(field, `${checked.error} (input ${def.name} is ${def.type})`);
    const first = seen.get(text);
    if (first !== undefined) throw validationError(field, `repeats ${JSON.stringify(text)} (${at}.${first})`);
    seen.set(text, j);
    return text;
  });
}

function checkFilter(filter: unknown, at: string): void {
  if (filter === undefined) return;
  try {
    parseCriteria(filter);
  } catch (err) {
    if (err instanceof AppError) throw validationError(at, err.message);
    throw err;
  }
}

/** Compiles a source filter over P or C for the principal (user groups apply); -4 names the source. */
async function filterSql(
  q: Queryable,
  principal: Principal,
  code: 'P' | 'C',
  filter: unknown,
  at: string,
  params: Params,
): Promise<string> {
  const tc = await loadTypeContext(q, principal, findType(code)!);
  const parts = [rowScope(tc, principal, params, 't')];
  if (filter !== undefined) {
    try {
      parts.push(compileCriteria(resolveCriteria(parseCriteria(filter), tc.fields).criteria, params, 't'));
    } catch (err) {
      if (err instanceof AppError) throw validationError(at, err.message);
      throw err;
    }
  }
  return parts.join(' AND ');
}

/**
 * Checks the sources against the partition without reading their keys: every filter against its type
 * (unknown fields, bad values), every lookup table named by some table of that name (which one
 * applies is chosen by the target date when the grid is calculated).
 */
export async function checkSources(
  q: Queryable,
  principal: Principal,
  sources: readonly KeySource[],
  productFilter = false,
): Promise<void> {
  for (const [i, s] of sources.entries()) {
    if (s.type === 'products' || s.type === 'customers')
      await filterSql(
        q,
        principal,
        s.type === 'products' ? 'P' : 'C',
        s.filter,
        filterField(i, productFilter),
        new Params(),
      );
    if (s.type === 'lookupTable') {
      const t = await q.query(
        `SELECT 1 FROM lookup_tables WHERE partition_id = $1 AND unique_name = $2 LIMIT 1`,
        [principal.partitionId, s.table],
      );
      if (t.rows.length === 0)
        throw validationError(`keySources[${i}].table`, `there is no lookup table ${s.table}`);
    }
  }
}

/** A product of the first source, with the version that goes into the item's input hash. */
export interface ProductKey {
  readonly sku: string;
  readonly version: number;
}

/** An inner source's keys (with versions for customers). */
export interface InnerKeys {
  readonly source: KeySource;
  readonly keys: readonly string[];
  readonly versions: readonly number[] | undefined;
}

/** One page of products of the first source after `after` (sku order). */
export async function productPage(
  q: Queryable,
  principal: Principal,
  source: KeySource,
  after: string | undefined,
  limit: number,
  /** Only this product (a resumed calculation's last product), if it still matches. */
  exactly?: string,
): Promise<ProductKey[]> {
  const params = new Params();
  const where = await filterSql(
    q,
    principal,
    'P',
    'filter' in source ? source.filter : undefined,
    'keySources[0].filter',
    params,
  );
  const from =
    (after === undefined ? '' : ` AND t.sku > ${params.add(after)}`) +
    (exactly === undefined ? '' : ` AND t.sku = ${params.add(exactly)}`);
  const r = await q.query<{ sku: string; version: number }>(
    `SELECT t.sku, t.version FROM products t WHERE ${where}${from} ORDER BY t.sku LIMIT ${params.add(limit)}`,
    params.values,
  );
  return r.rows.map((row) => ({ sku: row.sku, version: Number(row.version) }));
}

/** How many products the first source has (for progress). */
export async function productCount(q: Queryable, principal: Principal, source: KeySource): Promise<number> {
  const params = new Params();
  const where = await filterSql(
    q,
    principal,
    'P',
    'filter' in source ? source.filter : undefined,
    'keySources[0].filter',
    params,
  );
  const r = await q.query<{ n: string | number }>(
    `SELECT count(*) AS n FROM products t WHERE ${where}`,
    params.values,
  );
  return Number(r.rows[0]!.n);
}

/** The keys of an inner source, in key order. */
export async function innerKeys(
  q: Queryable,
  principal: Principal,
  source: KeySource,
  at: string,
  targetDate: string,
): Promise<InnerKeys> {
  const cap = MAX_INNER_KEYS + 1;
  let keys: string[];
  let versions: number[] | undefined;
  switch (source.type) {
    case 'values':
      keys = [...source.values].sort();
      break;
    case 'customers': {
      const params = new Params();
      const where = await filterSql(q, principal, 'C', source.filter, `${at}.filter`, params);
      const r = await q.query<{ customer_id: string; version: number }>(
        `SELECT t.customer_id, t.version FROM customers t WHERE ${where} ORDER BY t.customer_id LIMIT ${cap}`,
        params.values,
      );
      keys = r.rows.map((row) => row.customer_id);
      versions = r.rows.map((row) => Number(row.version));
      break;
    }
    case 'lookupTable': {
      const t = await q.query<{ id: string; type: string }>(
        `SELECT id::text AS id, type FROM lookup_tables
          WHERE partition_id = $1 AND unique_name = $2 AND (valid_after IS NULL OR valid_after <= $3::date)
          ORDER BY valid_after DESC NULLS LAST LIMIT 1`,
        [principal.partitionId, source.table, targetDate],
      );
      const table = t.rows[0];
      // (The grid was checked when saved: the table exists, but none of that name is valid yet.)
      if (!table)
        throw validationError(
          `${at}.table`,
          `no lookup table ${source.table} is valid at the target date ${targetDate} (validAfter)`,
        );
      const sql = /^MATRIX[2-6]$/.test(table.type)
        ? `SELECT DISTINCT key1 AS k FROM lookup_matrix_values WHERE partition_id = $1 AND table_ref = $2 AND key1 IS NOT NULL`
        : table.type === 'MATRIX'
          ? `SELECT DISTINCT name AS k FROM lookup_matrix_values WHERE partition_id = $1 AND table_ref = $2 AND name IS NOT NULL`
          : `SELECT DISTINCT name AS k FROM lookup_values WHERE partition_id = $1 AND table_ref = $2`;
      const r = await q.query<{ k: string }>(`${sql} ORDER BY k LIMIT ${cap}`, [
        principal.partitionId,
        table.id,
      ]);
      keys = r.rows.map((row) => row.k);
      break;
    }
    case 'products':
      throw new Error('products are only the first source');
  }
  if (keys.length > MAX_INNER_KEYS)
    throw validationError(at, `has more than ${MAX_INNER_KEYS} keys; make the first source the larger one`);
  return { source, keys, versions };
}
