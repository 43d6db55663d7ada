// The manager operations of master data: product quick search, formula-filtered fetches, customer
// assignments, seller extensions by category, bills of materials and product competition. Each is a
// generic engine operation plus one domain rule (a search term, a category, an id set), so paging,
// user groups and the type's permission always come from the engine; ./store.ts holds the little SQL
// the engine does not cover (the assignment link table, the recursive BOM walk).

import type { Principal } from '../../access/access.ts';
import { batchTransaction, type Db, type Queryable } from '../../db/db.ts';
import { inSavepoint } from '../../db/savepoint.ts';
import { inTransaction } from '../../db/views.ts';
import { AppError, notFound, validationError, type FieldErrors } from '../../http/errors.ts';
import { loadTypeContext } from '../../engine/context.ts';
import {
  fetchOne,
  fetchRecords,
  integrateRecords,
  requireAccess,
  type FetchBody,
  type FetchResult,
} from '../../engine/crud.ts';
import { findType, type TypeDef } from '../../engine/registry.ts';
import * as store from './store.ts';
import { filterCriteriaOf } from '../formulas/service.ts';
import type { LogicLimits } from '../../logic/env.ts';

type Obj = Record<string, unknown>;

function registered(code: string): TypeDef {
  const type = findType(code);
  if (!type) throw new Error(`type ${code} is not registered`);
  return type;
}

const PRODUCT = registered('P');
const CUSTOMER = registered('C');
const SELLER_EXTENSION = registered('SX');
const BOM = registered('PBOME');
const COMPETITION = registered('PCOMP');

/** How deep `/productmanager.bomtree` walks; deeper structures are cut and marked `truncated`. */
export const BOM_MAX_DEPTH = 50;

// ---------------------------------------------------------------------------------------------
// Products and customers

export interface PageBody {
  readonly startRow?: number;
  readonly endRow?: number;
}

/** Case-insensitive substring search over sku and label of the visible products, by sku. */
export function quickSearch(
  db: Db,
  principal: Principal,
  q: unknown,
  page: PageBody,
  maxPageSize: number,
): Promise<FetchResult> {
  requireAccess(principal, PRODUCT.access.fetch);
  const term = typeof q === 'string' ? q.trim() : '';
  if (term === '') throw validationError('q', 'give a search term');
  if (term.includes('\u0000')) throw validationError('q', 'must not contain NUL characters');
  // iContains matches %, _ and \ literally: the engine escapes them.
  const data = {
    _constructor: 'AdvancedCriteria',
    operator: 'or',
    criteria: [
      { fieldName: 'sku', operator: 'iContains', value: term },
      { fieldName: 'label', operator: 'iContains', value: term },
    ],
  };
  const body: FetchBody = { data, sortBy: 'sku', startRow: page.startRow, endRow: page.endRow };
  return fetchRecords(db, principal, PRODUCT, body, maxPageSize);
}

/** Body keys that ask for a logic (formula) filter, which needs the logic engine. */
export type FormulaFilterBody = FetchBody & {
  readonly formulaName?: unknown;
  readonly formulaParameters?: unknown;
};

/**
 * The filter body on products or customers, narrowed by a FILTER logic when `formulaName` is given:
 * the logic runs once and answers an AdvancedCriteria (`formulaParameters` are its inputs), which is
 * ANDed with the body's own filter — one SQL statement through the criteria compiler.
 */
export async function fetchFormulaFiltered(
  db: Db,
  principal: Principal,
  code: 'P' | 'C',
  body: FormulaFilterBody,
  maxPageSize: number,
  limits: LogicLimits,
): Promise<FetchResult> {
  const type = code === 'P' ? PRODUCT : CUSTOMER;
  requireAccess(principal, type.access.fetch);
  const { formulaName, formulaParameters, ...fetchBody } = body;
  if (formulaName === undefined || formulaName === null) {
    // Inputs of no logic would be dropped in silence: the filter the caller meant never applied.
    if (formulaParameters !== undefined && formulaParameters !== null)
      throw validationError(
        'formulaName',
        'is required with formulaParameters (the FILTER logic they are for)',
      );
    return fetchRecords(db, principal, type, fetchBody, maxPageSize);
  }
  const criteria = await filterCriteriaOf(db, principal, formulaName, formulaParameters, limits);
  return fetchRecords(db, principal, type, fetchBody, maxPageSize, criteria);
}

// ---------------------------------------------------------------------------------------------
// Customer assignments

const TYPED_ID = /^(\d{1,15})\.([A-Z][A-Z0-9]{0,39})$/;

/**
 * Type codes of the entities the interface assigns customers to that this service does not store
 * (price lists, manual price lists, live price grids, quotes, contracts, rebate agreements): their
 * records cannot be checked, so an owner of these types is taken as named.
 */
const UNSTORED_OWNER_TYPES: ReadonlySet<string> = new Set(['PL', 'MPL', 'PG', 'Q', 'CT', 'RBA']);

/**
 * The owner of assignments in its canonical form. Of a registered type it must exist and be visible
 * (the engine's fetchOne: 404, or 403 without the type's fetch permission); an owner of one of the
 * UNSTORED_OWNER_TYPES is taken as named; any other type code is unknown (404).
 */
async function ownerOrFail(q: Queryable, principal: Principal, typedId: string): Promise<string> {
  const m = TYPED_ID.exec(typedId.trim());
  if (!m || Number(m[1]) < 1) {
    throw validationError('typedId', `${JSON.stringify(typedId)} is not a typedId (<id>.<TypeCode>)`);
  }
  const owner = `${Number(m[1])}.${m[2]!}`;
  const type = findType(m[2]!);
  if (type) await fetchOne(q, principal, type, owner);
  else if (!UNSTORED_OWNER_TYPES.has(m[2]!)) throw notFound(`Type ${m[2]!}`, 'typedId');
  return owner;
}

function customerIdOf(typedId: string): number {
  const m = /^(\d{1,15})(?:\.C)?$/.exec(typedId.trim());
  if (!m || Number(m[1]) < 1) {
    throw validationError('customerTypedIds', `${JSON.stringify(typedId)} is not a customer typedId`);
  }
  return Number(m[1]);
}

export interface AssignData {
  readonly typedId: string;
  /** Business keys (`customerId`). */
  readonly customerIds?: readonly string[];
  readonly customerTypedIds?: readonly string[];
}

export interface AssignResult {
  readonly typedId: string;
  /** Customers named in the request (all of them are assigned now). */
  readonly assignedCustomers: number;
  /** Of those, the ones that were not assigned before. */
  readonly newAssignments: number;
}

/** Assigns customers (by customerId or typedId) to an owner; idempotent; unknown customers are a -4. */
export async function assignCustomers(
  db: Db,
  principal: Principal,
  data: AssignData,
  maxPageSize: number,
): Promise<AssignResult> {
  requireAccess(principal, CUSTOMER.access.write);
  const keys = [...new Set(data.customerIds ?? [])];
  const ids = [...new Set((data.customerTypedIds ?? []).map(customerIdOf))];
  const named = keys.length + ids.length;
  if (named === 0) throw validationError('customerIds', 'name at least one customer');
  if (named > maxPageSize) throw validationError('customerIds', `at most ${maxPageSize} customers per call`);
  return db.transaction(async (tx) => {
    const owner = await ownerOrFail(tx, principal, data.typedId);
    // The customers the principal may see, through the engine (partition and user groups).
    const found = await fetchRecords(
      tx,
      principal,
      CUSTOMER,
      {
        data: {
          _constructor: 'AdvancedCriteria',
          operator: 'or',
          criteria: [
            { fieldName: 'customerId', operator: 'inSet', value: keys },
            { fieldName: 'id', operator: 'inSet', value: ids },
          ],
        },
        valueFields: ['id', 'customerId'],
        endRow: named,
      },
      maxPageSize,
    );
    const rows = found.rows as [number, string][];
    const errors: FieldErrors = {};
    const unknownKeys = keys.filter((k) => !rows.some((r) => r[1] === k));
    const unknownIds = ids.filter((id) => !rows.some((r) => Number(r[0]) === id));
    if (unknownKeys.length > 0)
      errors.customerIds = { errorMessage: `unknown customer ${list(unknownKeys)}` };
    if (unknownIds.length > 0) {
      errors.customerTypedIds = {
        errorMessage: `unknown customer ${list(unknownIds.map((id) => `${id}.C`))}`,
      };
    }
    const first = Object.entries(errors)[0];
    if (first) throw new AppError('VALIDATION', `${first[0]}: ${first[1].errorMessage}`, { errors });
    const added = await store.insertAssignments(
      tx,
      principal,
      owner,
      rows.map((r) => Number(r[0])),
    );
    return { typedId: owner, assignedCustomers: rows.length, newAssignments: added };
  });
}

/** A few values quoted for a message; long lists are cut so a response stays small. */
function list(values: readonly string[]): string {
  const shown = values.slice(0, 10).map((v) => JSON.stringify(v));
  return values.length > 10 ? `${shown.join(', ')} and ${values.length - 10} more` : shown.join(', ');
}

/** The customers assigned to an owner: an ordinary customer fetch restricted to their ids. */
export async function fetchAssignments(
  db: Db,
  principal: Principal,
  typedId: string,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  requireAccess(principal, CUSTOMER.access.fetch);
  const owner = await ownerOrFail(db, principal, typedId);
  const ids = await store.assignedCustomerIds(db, principal, owner);
  return fetchRecords(db, principal, CUSTOMER, body, maxPageSize, {
    fieldName: 'id',
    operator: 'inSet',
    value: ids,
  });
}

// ---------------------------------------------------------------------------------------------
// Seller extensions

/** The rows of one seller extension table (`name` = the category), typed by that table's meta. */
export async function fetchSellerExtensions(
  db: Db,
  principal: Principal,
  category: string,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  requireAccess(principal, SELLER_EXTENSION.access.fetch);
  if (category.trim() === '') throw validationError('SXCategory', 'name the seller extension table');
  // An unknown table is a 404, as the conventions say (not an empty list that hides a misspelling).
  if (!(await store.extensionTableExists(db, principal, 'SX', category))) {
    throw new AppError('NOT_FOUND', `Seller extension table ${category} not found`, { field: 'SXCategory' });
  }
  const inCategory = { fieldName: 'name', operator: 'equals', value: category };
  return fetchRecords(db, principal, SELLER_EXTENSION, body, maxPageSize, inCategory);
}

// ---------------------------------------------------------------------------------------------
// Bill of materials

export interface BomNode {
  readonly sku: string;
  readonly label?: string;
  /** Per unit of the parent; the root is one unit of the product. Decimal text, as fetch answers it. */
  readonly quantity: string | null;
  readonly components: BomNode[];
  /** The component appears above itself on this path: reported, not expanded again. */
  readonly cycle?: true;
  /** Below the depth limit there is more that was not walked. */
  readonly truncated?: true;
}

/**
 * The bill of materials of `sku` as a nested tree, components ordered by sku. A product without a
 * BOM is a tree without components; a sku that is neither a visible product nor has a BOM is a 404.
 */
export async function bomTree(db: Db, principal: Principal, sku: string, maxLines: number): Promise<BomNode> {
  requireAccess(principal, BOM.access.fetch);
  const products = await loadTypeContext(db, principal, PRODUCT);
  const lines = await store.bomLines(db, principal, products, sku, BOM_MAX_DEPTH, maxLines + 1);
  if (lines.length > maxLines) {
    throw validationError(
      'sku',
      `the bill of materials of ${JSON.stringify(sku)} has more than ${maxLines} lines`,
    );
  }
  const product = await store.visibleProduct(db, principal, products, sku);
  if (lines.length === 0 && !product) throw notFound(`Bill of materials of ${JSON.stringify(sku)}`, 'sku');

  const root = bomNode(sku, product?.label ?? null, '1', false, false);
  const byPath = new Map<string, BomNode>([[JSON.stringify([sku]), root]]);
  // Parents before children, siblings by sku: every line finds its parent already placed.
  const ordered = [...lines].sort(
    (a, b) => a.path.length - b.path.length || (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0),
  );
  for (const line of ordered) {
    const parent = byPath.get(JSON.stringify(line.path.slice(0, -1)));
    if (!parent) continue; // cannot happen: the walk reaches a line only through its parent
    const node = bomNode(line.sku, line.label, line.quantity, line.cycle, line.truncated);
    parent.components.push(node);
    byPath.set(JSON.stringify(line.path), node);
  }
  return root;
}

function bomNode(
  sku: string,
  label: string | null,
  quantity: string | null,
  cycle: boolean,
  truncated: boolean,
): BomNode {
  return {
    sku,
    ...(label !== null ? { label } : {}),
    quantity,
    components: [],
    ...(cycle ? { cycle: true as const } : {}),
    ...(truncated ? { truncated: true as const } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Product competition

/** A row of an import that was not written: its index in the body, the field at fault, why. */
export interface RowFailure {
  readonly row: number;
  readonly field?: string;
  readonly message: string;
}

export interface ImportResult {
  readonly insertedRecords: number;
  readonly updatedRecords: number;
  /** Rows refused (each listed in `errors`); the others are written. */
  readonly failedRecords: number;
  /** The first MAX_ROW_ERRORS failures, in row order. */
  readonly errors: RowFailure[];
  readonly errorsTruncated: boolean;
}

const MAX_ROW_ERRORS = 100;

/** What a row's own fault can be: anything else (the database, a bug) fails the whole call. */
const ROW_FAULTS: ReadonlySet<string> = new Set([
  'VALIDATION',
  'NOT_FOUND',
  'FORBIDDEN',
  'DUPLICATE_KEY',
  'CONFLICT',
  'VERSION_CONFLICT',
]);

/**
 * Upserts competition rows by sku + competitor + competitionDate (the engine's integrate), in one
 * transaction: each row behind a savepoint, so a bad row is counted as failed and listed with its
 * error while the good ones are written.
 */
export async function importProductCompetition(
  db: Db,
  principal: Principal,
  items: readonly Obj[],
): Promise<ImportResult> {
  requireAccess(principal, COMPETITION.access.write);
  // Run again whole when a row's upsert met a concurrent writer of the same key (a deadlock, or a
  // serialization failure of its history: src/db/pg.ts), as the engine's own batches are.
  return batchTransaction(db, async (tx) => {
    // The engine's integrate runs on this transaction (each row behind its savepoint).
    const inner = inTransaction(db, tx);
    let inserted = 0;
    let updated = 0;
    let failed = 0;
    const errors: RowFailure[] = [];
    for (const [row, data] of items.entries()) {
      try {
        const [written] = await inSavepoint(tx, 'pcomp_row', () =>
          integrateRecords(inner, principal, COMPETITION, [data], false),
        );
        // A row the upsert created is at version 0; one it changed has been bumped.
        if (written!.version === 0) inserted++;
        else updated++;
      } catch (e) {
        if (!(e instanceof AppError) || !ROW_FAULTS.has(e.code)) throw e;
        failed++;
        const fields = Object.entries(e.errors ?? {});
        // A row naming a record that is not there names the field that named it.
        const address =
          e.code === 'NOT_FOUND'
            ? (['typedId', 'id'] as const).find((k) => data[k] !== undefined && data[k] !== null)
            : undefined;
        const found =
          fields.length === 0
            ? [{ row, ...(address === undefined ? {} : { field: address }), message: e.message }]
            : fields.map(([field, f]) => ({ row, field, message: f.errorMessage }));
        errors.push(...found.slice(0, MAX_ROW_ERRORS + 1 - errors.length));
      }
    }
    const errorsTruncated = errors.length > MAX_ROW_ERRORS;
    return {
      insertedRecords: inserted,
      updatedRecords: updated,
      failedRecords: failed,
      errors: errors.slice(0, MAX_ROW_ERRORS),
      errorsTruncated,
    };
  });
}

export function fetchProductCompetition(
  db: Db,
  principal: Principal,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  return fetchRecords(db, principal, COMPETITION, body, maxPageSize);
}

/** Competition rows of the products of a product set: the visible products whose label is `label`. */
export async function fetchProductSetCompetition(
  db: Db,
  principal: Principal,
  label: string,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  requireAccess(principal, COMPETITION.access.fetch);
  if (label === '') throw validationError('label', 'name the product set');
  const products = await loadTypeContext(db, principal, PRODUCT);
  const skus = await store.skusOfProductSet(db, principal, products, label);
  // A set no visible product is labelled with is unknown, as a misspelt one (/fetch/PCOMPCO lists them).
  if (skus.length === 0)
    throw new AppError('NOT_FOUND', `Product set ${JSON.stringify(label)} not found`, { field: 'label' });
  return fetchRecords(db, principal, COMPETITION, body, maxPageSize, {
    fieldName: 'sku',
    operator: 'inSet',
    value: skus,
  });
}

/**
 * `/fetch/PCOMPCO`: the product sets of the competition data API, whose `label` names them in
 * `/productmanager.fetchproductsetcompetition/{label}` — the labels of the products the caller sees
 * (blank ones left out), one row each, through the engine's fetch of products: its filter (on product
 * fields: the sets of the products it matches), paging and sort; the one field is `label`.
 */
export function fetchProductSets(
  db: Db,
  principal: Principal,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  requireAccess(principal, COMPETITION.access.fetch);
  for (const k of ['resultFields', 'valueFields'] as const) {
    const names = body[k];
    if (names !== undefined && names !== null && (names.length !== 1 || names[0] !== 'label'))
      throw validationError(k, 'a product set has one field: label');
  }
  const sort = body.sortBy ?? 'label';
  if (![sort].flat().every((f) => f === 'label' || f === '-label'))
    throw validationError('sortBy', 'product sets sort by label');
  const asArrays = body.valueFields !== undefined && body.valueFields !== null;
  return fetchRecords(
    db,
    principal,
    PRODUCT,
    { ...body, [asArrays ? 'valueFields' : 'resultFields']: ['label'], distinctResults: true, sortBy: sort },
    maxPageSize,
    { fieldName: 'label', operator: 'notBlank' },
  );
}
