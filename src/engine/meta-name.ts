// Which table's attribute meta types a request on a `metaPerName` type (extension rows PX, CX, SX by
// `name`; condition record items by `conditionRecordSetId`; rebate record groups by `rebateType`):
// the one its filter names. A criterion that matches more than one spelling (simple criteria compare
// text case-insensitively unless `textMatchStyle` is `exactCase`; `substring` and `startsWith` match
// parts) names a table only when exactly one table with attribute meta matches it; that table's meta
// then types the filter and the changes. Otherwise the request names no table: a fetch types each
// row by its own table, and a massedit of custom attributes is refused — it would check the new
// values against one table's meta and write them into another's rows (`Costs` and `COSTS` are two
// tables, each with its own types).

import type { Queryable } from '../db/db.ts';
import { metaNameIsId, type ContextOwner } from './context.ts';
import type { TypeDef } from './registry.ts';
import { nameCriterionOf, type NameMatch } from './top-equality.ts';

const MATCH_SQL: Readonly<Record<Exclude<NameMatch, 'equals'>, string>> = {
  iEquals: 'lower(name) = lower($3)',
  iContains: 'strpos(lower(name), lower($3)) > 0',
  iStartsWith: 'starts_with(lower(name), lower($3))',
};

// Resolved names per (partition, meta version, owner, match, value): a key names the meta version it
// was read at, as the attribute types' cache (context.ts), so an entry is never stale.
const MAX_CACHED = 2_000;
const resolved = new Map<string, string | null>();

/**
 * The table (meta name) whose attribute meta types a request whose filter is `criteria`, or
 * undefined when it names none (module comment). `textMatchStyle` is the request's.
 */
export async function filterMetaName(
  q: Queryable,
  owner: ContextOwner,
  type: TypeDef,
  criteria: unknown,
  textMatchStyle?: string,
): Promise<string | undefined> {
  if (!type.metaPerName) return undefined;
  const c = nameCriterionOf(criteria, type.metaNameField ?? 'name', metaNameIsId(type), textMatchStyle);
  if (c === undefined || c.match === 'equals') return c?.value;
  const metaOwner = type.metaOwner ?? type.code;
  const key =
    owner.metaVersion === undefined
      ? undefined
      : `${owner.partitionId}:${owner.metaVersion}:${metaOwner}:${c.match}:${c.value}`;
  const hit = key === undefined ? undefined : resolved.get(key);
  if (hit !== undefined) return hit ?? undefined;
  const r = await q.query<{ name: string }>(
    `SELECT DISTINCT name FROM attribute_meta
      WHERE partition_id = $1 AND owner_type = $2 AND name <> '' AND ${MATCH_SQL[c.match]} LIMIT 2`,
    [owner.partitionId, metaOwner, c.value],
  );
  const name = r.rows.length === 1 ? r.rows[0]!.name : null;
  if (key !== undefined) {
    if (resolved.size >= MAX_CACHED) resolved.clear();
    resolved.set(key, name);
  }
  return name ?? undefined;
}
