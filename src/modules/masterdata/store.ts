// SQL of the master-data manager operations that the generic engine does not cover: customer
// assignments (a link table with no type of its own), the bill-of-materials walk (recursive) and
// the skus of a product set. Row visibility still comes from the engine's `rowScope`. Whether an
// extension table exists is the engine's (src/engine/extension-tables.ts), re-exported here.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { Params } from '../../db/sql.ts';
import { rowScope, type TypeContext } from '../../engine/context.ts';

// ---------------------------------------------------------------------------------------------
// Extension tables

export { extensionTableExists, type ExtensionKind } from '../../engine/extension-tables.ts';

// ---------------------------------------------------------------------------------------------
// Customer assignments

/**
 * Links the customers `ids` to `owner`; answers how many links are new (already linked ones are
 * left alone, so the call is idempotent). Inserting from `customers` rather than from the list
 * itself means a customer deleted meanwhile is skipped instead of failing the foreign key.
 */
export async function insertAssignments(
  q: Queryable,
  principal: Principal,
  owner: string,
  ids: readonly number[],
): Promise<number> {
  const r = await q.query(
    `INSERT INTO customer_assignments (partition_id, owner_typed_id, customer_id, created_by)
     SELECT c.partition_id, $2::text, c.id, $3::bigint FROM customers c
      WHERE c.partition_id = $1 AND c.id = ANY($4::bigint[])
     ON CONFLICT DO NOTHING`,
    [principal.partitionId, owner, principal.userId, ids],
  );
  return r.rowCount;
}

/** Ids of the customers linked to `owner` (visibility is applied by the fetch that reads them). */
export async function assignedCustomerIds(
  q: Queryable,
  principal: Principal,
  owner: string,
): Promise<(number | string)[]> {
  const r = await q.query<{ id: number | string }>(
    `SELECT customer_id AS id FROM customer_assignments WHERE partition_id = $1 AND owner_typed_id = $2`,
    [principal.partitionId, owner],
  );
  return r.rows.map((row) => row.id);
}

// ---------------------------------------------------------------------------------------------
// Products

/** The label of a product the principal may see, or undefined when there is none. */
export async function visibleProduct(
  q: Queryable,
  principal: Principal,
  products: TypeContext,
  sku: string,
): Promise<{ label: string | null } | undefined> {
  const params = new Params();
  const scope = rowScope(products, principal, params, 'p');
  const r = await q.query<{ label: string | null }>(
    `SELECT p.label FROM products p WHERE ${scope} AND p.sku = ${params.add(sku)}`,
    params.values,
  );
  return r.rows[0];
}

/** Skus of the visible products whose label is `label` (a product set of the competition API). */
export async function skusOfProductSet(
  q: Queryable,
  principal: Principal,
  products: TypeContext,
  label: string,
): Promise<string[]> {
  const params = new Params();
  const scope = rowScope(products, principal, params, 'p');
  const r = await q.query<{ sku: string }>(
    `SELECT p.sku FROM products p WHERE ${scope} AND p.label = ${params.add(label)}`,
    params.values,
  );
  return r.rows.map((row) => row.sku);
}

// ---------------------------------------------------------------------------------------------
// Bill of materials

export interface BomLine {
  /** Skus from the root down to this component, both included. */
  readonly path: readonly string[];
  readonly sku: string;
  readonly quantity: string | null;
  /** The component's product label, when the product exists and is visible. */
  readonly label: string | null;
  /** The component already appears above itself on its path: it is not expanded again. */
  readonly cycle: boolean;
  /** The depth limit stopped the walk here although the component has components of its own. */
  readonly truncated: boolean;
}

/**
 * Every line of the bill of materials below `sku`, one row per occurrence on a path, walked by one
 * recursive query rather than a query per level. A component met again on its own path ends that
 * path (`cycle`); the walk also stops at `maxDepth`. At most `maxLines` rows are read: the outer
 * LIMIT stops the recursion itself, since PostgreSQL evaluates a WITH query only as far as its
 * reader fetches — which is why the rows are ordered by the caller, not by an ORDER BY here.
 */
export async function bomLines(
  q: Queryable,
  principal: Principal,
  products: TypeContext,
  sku: string,
  maxDepth: number,
  maxLines: number,
): Promise<BomLine[]> {
  const params = new Params();
  const partition = params.add(principal.partitionId);
  const root = params.add(sku);
  const depth = params.add(maxDepth);
  const limit = params.add(maxLines);
  const visible = rowScope(products, principal, params, 'p');
  // A BOM line describes its product (`sku`): it is read only where that product is not hidden from
  // the principal (a sku without a product record hides nothing).
  const described = `NOT EXISTS (SELECT 1 FROM products h
      WHERE h.partition_id = ${partition} AND h.sku = b.sku AND NOT (${rowScope(products, principal, params, 'h')}))`;
  const r = await q.query<BomLine>(
    `WITH RECURSIVE tree (sku, quantity, depth, path, cycle) AS (
       SELECT b.component_sku, b.quantity, 1, ARRAY[b.sku, b.component_sku], b.component_sku = b.sku
         FROM product_bom b
        WHERE b.partition_id = ${partition} AND b.sku = ${root} AND ${described}
       UNION ALL
       SELECT b.component_sku, b.quantity, t.depth + 1, t.path || b.component_sku,
              b.component_sku = ANY(t.path)
         FROM tree t
         JOIN product_bom b ON b.partition_id = ${partition} AND b.sku = t.sku
        WHERE NOT t.cycle AND t.depth < ${depth}::int AND ${described}
     )
     SELECT t.path, t.sku, t.quantity, t.cycle, p.label,
            (t.depth >= ${depth}::int AND NOT t.cycle AND EXISTS (
               SELECT 1 FROM product_bom c WHERE c.partition_id = ${partition} AND c.sku = t.sku)) AS truncated
       FROM (SELECT * FROM tree LIMIT ${limit}) t
       LEFT JOIN products p ON p.sku = t.sku AND ${visible}`,
    params.values,
  );
  return r.rows;
}
