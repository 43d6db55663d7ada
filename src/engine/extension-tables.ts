// The extension tables (PX, CX, SX) that exist for a principal: a table is a `name` that attribute
// meta or a row he sees names. One rule for every caller that names or lists tables — the seller
// manager, /metadata.describe and the query API — so a table listed is a table that resolves.

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { Params, ident } from '../db/sql.ts';
import { loadTypeContext, rowScope } from './context.ts';
import { findType } from './registry.ts';

export type ExtensionKind = 'PX' | 'CX' | 'SX';

/**
 * An extension table exists when attribute meta or a row names it — a row the principal sees (not
 * soft-deleted, of a record not hidden from him): else it is unknown to him, as a misspelt name.
 */
export async function extensionTableExists(
  q: Queryable,
  principal: Principal,
  kind: ExtensionKind,
  name: string,
): Promise<boolean> {
  const tc = await loadTypeContext(q, principal, findType(kind)!);
  const params = new Params();
  const scope = rowScope(tc, principal, params, 't');
  const r = await q.query<{ ok: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM attribute_meta
                     WHERE partition_id = ${params.add(principal.partitionId)} AND owner_type = ${params.add(kind)}
                       AND name = ${params.add(name)})
         OR EXISTS (SELECT 1 FROM ${ident(tc.type.table)} t WHERE ${scope} AND t.name = ${params.add(name)}) AS ok`,
    params.values,
  );
  return r.rows[0]!.ok;
}

/**
 * The names of the extension tables of `kind` that exist for the principal, by the same rule as
 * `extensionTableExists` (attribute meta, or a row he sees), so that every name listed resolves.
 */
export async function extensionTableNames(
  q: Queryable,
  principal: Principal,
  kind: ExtensionKind,
): Promise<string[]> {
  const tc = await loadTypeContext(q, principal, findType(kind)!);
  const params = new Params();
  const scope = rowScope(tc, principal, params, 't');
  const r = await q.query<{ name: string }>(
    `SELECT name FROM attribute_meta
      WHERE partition_id = ${params.add(principal.partitionId)} AND owner_type = ${params.add(kind)} AND name <> ''
     UNION SELECT t.name FROM ${ident(tc.type.table)} t WHERE ${scope}
     ORDER BY 1`,
    params.values,
  );
  return r.rows.map((row) => row.name);
}
