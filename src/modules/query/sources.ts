// The sources a query pipeline reads: a type code of the registry (`P`, `C`, `SL`, `PBOME`,
// `PCOMP`, `PDESC`, `CDESC`, `PR`, `PXREF`), an extension table (`PX:<name>`, `CX:<name>`,
// `SX:<name>`), the values of a lookup table (`LTV:<uniqueName>`, any kind), or the items of a
// condition record set (`CRCI:<set>`, and their history `CRCIH:<set>`; a set the caller's user
// groups do not show is unknown). Each resolves to a registry declaration as the partition sees it
// (custom attributes typed by the attribute meta) plus its row scope: partition, fixed column, soft
// delete, record-level user groups and, for extension tables, the table name. The source's fetch
// permission is checked here, so no pipeline reads a source its caller may not fetch.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { Params, qualified } from '../../db/sql.ts';
import { requireAccess } from '../../engine/crud.ts';
import { loadTypeContext, rowScope, type TypeContext } from '../../engine/context.ts';
import { findType } from '../../engine/registry.ts';
import { TABLE_KINDS, valueTypeOf, type LookupTable, type TableKind } from '../../engine/registry-lookup.ts';
import { HISTORY_TYPE, ITEM_TYPE, sizedItemType } from '../../engine/registry-condrec.ts';
import { AppError, validationError } from '../../http/errors.ts';
import {
  extensionTableExists,
  extensionTableNames,
  type ExtensionKind,
} from '../../engine/extension-tables.ts';

/** Type codes read as they are. */
const PLAIN_KINDS = ['P', 'C', 'SL', 'PBOME', 'PCOMP', 'PDESC', 'CDESC', 'PR', 'PXREF'] as const;
/** Type codes read one named table at a time (the `name` field). */
const EXTENSION_KINDS = ['PX', 'CX', 'SX'] as const;
const LOOKUP_KINDS = ['LTV'] as const;
const CONDITION_KINDS = ['CRCI', 'CRCIH'] as const;

export const SOURCE_KINDS: readonly string[] = [
  ...PLAIN_KINDS,
  ...EXTENSION_KINDS,
  ...LOOKUP_KINDS,
  ...CONDITION_KINDS,
];

export interface Source {
  /** As the pipeline named it, e.g. `PX:prices`. */
  readonly code: string;
  readonly kind: string;
  readonly tc: TypeContext;
  /**
   * The attribute meta rows that label its custom fields, where they are not the kind's rows of the
   * table's name (the items of a set: the set's CRCIAM rows, owner `CRCI`, named by the set's id).
   */
  readonly meta?: { readonly owner: string; readonly name: string };
  /** The rows of this source the principal may see, for the table aliased `alias`. */
  scope(params: Params, alias: string): string;
}

const SOURCE = /^([A-Z][A-Z0-9]{0,9})(?::(.{1,255}))?$/s;

async function findLookupTable(
  q: Queryable,
  partitionId: number,
  name: string,
): Promise<LookupTable | undefined> {
  const r = await q.query<{ id: number; unique_name: string; type: string; value_type: string }>(
    'SELECT id, unique_name, type, value_type FROM lookup_tables WHERE partition_id = $1 AND unique_name = $2',
    [partitionId, name],
  );
  const row = r.rows[0];
  if (row === undefined || !(TABLE_KINDS as readonly string[]).includes(row.type)) return undefined;
  return {
    id: row.id,
    uniqueName: row.unique_name,
    type: row.type as TableKind,
    valueType: row.value_type as LookupTable['valueType'],
  };
}

interface SetRow {
  id: number;
  unique_name: string;
  label: string | null;
  key_size: number;
}

/** Condition record sets the principal's user groups show (all of them for admins). */
export async function visibleSets(q: Queryable, principal: Principal, name?: string): Promise<SetRow[]> {
  const r = await q.query<SetRow>(
    `SELECT id, unique_name, label, key_size FROM condition_record_sets
      WHERE partition_id = $1 AND ($2::text IS NULL OR unique_name = $2)
        AND ($3 OR user_group_view_details IS NULL OR user_group_view_details = ''
             OR user_group_view_details = ANY($4::text[]))
      ORDER BY unique_name`,
    [principal.partitionId, name ?? null, principal.admin, principal.groups],
  );
  return r.rows;
}

/** Resolves `text` (the pipeline's `field`) to a source the principal may read; -4, 403 or 404 otherwise. */
export async function resolveSource(
  q: Queryable,
  principal: Principal,
  text: unknown,
  field: string,
): Promise<Source> {
  const m = typeof text === 'string' && !text.includes('\u0000') ? SOURCE.exec(text) : null;
  if (!m) {
    throw validationError(field, `must be a source such as P, C, PX:<table>, CX:<table>, LTV:<table>`);
  }
  const kind = m[1]!;
  const name = m[2];
  const code = text as string;
  if ((PLAIN_KINDS as readonly string[]).includes(kind)) {
    if (name !== undefined) throw validationError(field, `${kind} takes no table name`);
    const type = findType(kind)!;
    requireAccess(principal, type.access.fetch);
    const tc = await loadTypeContext(q, principal, type);
    return { code, kind, tc, scope: (p, alias) => rowScope(tc, principal, p, alias) };
  }
  if ((EXTENSION_KINDS as readonly string[]).includes(kind)) {
    if (name === undefined) throw validationError(field, `${kind} needs a table name: ${kind}:<table>`);
    const type = findType(kind)!;
    requireAccess(principal, type.access.fetch);
    if (!(await extensionTableExists(q, principal, kind as ExtensionKind, name))) {
      throw new AppError('NOT_FOUND', `Extension table ${code} not found`, { field });
    }
    const tc = await loadTypeContext(q, principal, type, name);
    return {
      code,
      kind,
      tc,
      scope: (p, alias) =>
        `${rowScope(tc, principal, p, alias)} AND ${qualified(alias, 'name')} = ${p.add(name)}`,
    };
  }
  if ((LOOKUP_KINDS as readonly string[]).includes(kind)) {
    if (name === undefined) throw validationError(field, `${kind} needs a table name: ${kind}:<table>`);
    const table = await findLookupTable(q, principal.partitionId, name);
    if (table === undefined) throw new AppError('NOT_FOUND', `Lookup table ${name} not found`, { field });
    const type = valueTypeOf(table);
    requireAccess(principal, type.access.fetch);
    const tc = await loadTypeContext(q, principal, type);
    return { code, kind, tc, scope: (p, alias) => rowScope(tc, principal, p, alias) };
  }
  if ((CONDITION_KINDS as readonly string[]).includes(kind)) {
    if (name === undefined) throw validationError(field, `${kind} needs a set name: ${kind}:<set>`);
    // The permission first (as /fetch/CRCI): without it a hidden set is a 403 too, not a 404.
    requireAccess(principal, (kind === 'CRCI' ? ITEM_TYPE : HISTORY_TYPE).access.fetch);
    const [set] = await visibleSets(q, principal, name);
    if (set === undefined)
      throw new AppError('NOT_FOUND', `Condition record set ${name} not found`, { field });
    const type = kind === 'CRCI' ? sizedItemType(set.key_size) : HISTORY_TYPE;
    requireAccess(principal, type.access.fetch);
    // Attributes typed by the set's own meta (CRCIAM is per set).
    const tc = await loadTypeContext(q, principal, type, String(Number(set.id)));
    return {
      code,
      kind,
      tc,
      meta: { owner: 'CRCI', name: String(Number(set.id)) },
      scope: (p, alias) =>
        `${rowScope(tc, principal, p, alias)} AND ${qualified(alias, 'condition_record_set_id')} = ${p.add(set.id)}`,
    };
  }
  throw validationError(field, `unknown source kind ${kind}; known: ${SOURCE_KINDS.join(', ')}`);
}

export interface TableInfo {
  readonly name: string;
  readonly label: string | null;
}

/**
 * The partition's actual tables of each kind that has tables (for /queryapi.meta), as the principal
 * sees them: an extension table whose rows are all (soft-)deleted or hidden from him, and that no
 * attribute meta names, is not listed — `resolveSource` would not know it either.
 */
export async function listTables(q: Queryable, principal: Principal): Promise<Record<string, TableInfo[]>> {
  const lt = await q.query<{ name: string; label: string | null }>(
    'SELECT unique_name AS name, label FROM lookup_tables WHERE partition_id = $1 ORDER BY unique_name',
    [principal.partitionId],
  );
  const out: Record<string, TableInfo[]> = { LTV: lt.rows };
  for (const kind of EXTENSION_KINDS) {
    out[kind] = (await extensionTableNames(q, principal, kind)).map((name) => ({ name, label: null }));
  }
  return out;
}
