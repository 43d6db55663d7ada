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
 * The names of the tables of `kind` that exist for the principal, as SQL: those attribute meta names
 * and those of the rows he sees (not soft-deleted, of a record not hidden from him).
 */
async function namesSql(
  q: Queryable,
  principal: Principal,
  kind: ExtensionKind,
  params: Params,
): Promise<string> {
  const tc = await loadTypeContext(q, principal, findType(kind)!);
  const scope = rowScope(tc, principal, params, 't');
  return `SELECT name FROM attribute_meta
           WHERE partition_id = ${params.add(principal.partitionId)} AND owner_type = ${params.add(kind)}
             AND name <> ''
          UNION SELECT t.name FROM ${ident(tc.type.table)} t WHERE ${scope}`;
}

/** Whether the table exists for the principal: else it is unknown to him, as a misspelt name. */
export async function extensionTableExists(
  q: Queryable,
  principal: Principal,
  kind: ExtensionKind,
  name: string,
): Promise<boolean> {
  const params = new Params();
  const names = await namesSql(q, principal, kind, params);
  const r = await q.query<{ ok: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM (${names}) n WHERE n.name = ${params.add(name)}) AS ok`,
    params.values,
  );
  return r.rows[0]!.ok;
}

/** The names of the extension tables of `kind` that exist for the principal: each one resolves. */
export async function extensionTableNames(
  q: Queryable,
  principal: Principal,
  kind: ExtensionKind,
): Promise<string[]> {
  const params = new Params();
  const names = await namesSql(q, principal, kind, params);
  const r = await q.query<{ name: string }>(`${names} ORDER BY 1`, params.values);
  return r.rows.map((row) => row.name);
}
