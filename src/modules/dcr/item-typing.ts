// Which attribute meta types a DCR item's `values`, `originalValues` and `changes` as its record's
// own fields are answered: the target type's, or for an extension table (PX, CX, SX) the meta of
// the table the item's key names (`targetKey[0]`, its `name`), as /fetch types each row by its own
// table. A DCR of PX may hold items of several tables, so the context is chosen item by item.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { rowContexts, typedPerRow, type TypeContext } from '../../engine/context.ts';
import type { FetchBody } from '../../engine/crud.ts';
import { keyData, typedItem } from './target.ts';

type Row = Record<string, unknown>;

/**
 * A read of items that answers `targetKey` too when the items of an extension table are typed by it
 * and the client's `resultFields`/`valueFields` leave it out (`added`: strip it again). Not with
 * `distinctResults`: another field would change which rows are distinct (those rows stay text).
 */
export function withTargetKey(
  type: TypeContext['type'],
  body: FetchBody,
): { body: FetchBody; added: boolean } {
  if (!typedPerRow(type) || body.distinctResults === true) return { body, added: false };
  // (Both named, or not a list of names, or an empty one: the engine refuses the body as it is.)
  const names = (v: unknown): readonly string[] | undefined =>
    Array.isArray(v) && v.length > 0 && v.every((n) => typeof n === 'string') ? v : undefined;
  const values = names(body.valueFields);
  const results = names(body.resultFields);
  if (body.resultFields !== undefined && body.valueFields !== undefined) return { body, added: false };
  if (values !== undefined && !values.includes('targetKey'))
    return { body: { ...body, valueFields: [...values, 'targetKey'] }, added: true };
  if (results !== undefined && !results.includes('targetKey'))
    return { body: { ...body, resultFields: [...results, 'targetKey'] }, added: true };
  return { body, added: false };
}

/**
 * The context that types each of `rows` (DCR items as read: objects, or arrays in the order of
 * `names`): `tc` itself, or for an extension type the context of the table each item's key names.
 */
export async function itemContexts(
  q: Queryable,
  principal: Principal,
  tc: TypeContext,
  rows: readonly unknown[],
  names?: readonly string[],
): Promise<(row: unknown) => TypeContext> {
  if (!typedPerRow(tc.type) || tc.metaName !== undefined) return () => tc;
  const at = names?.indexOf('targetKey') ?? -1;
  const keyOf = (row: unknown): unknown =>
    Array.isArray(row) ? (at < 0 ? undefined : row[at]) : (row as Row | null)?.targetKey;
  const records = new Map<unknown, Row>();
  for (const row of rows) {
    const key = keyOf(row);
    records.set(row, Array.isArray(key) ? keyData(tc.type, key.map(String)) : {});
  }
  const contextOf = await rowContexts(q, principal, tc, [...records.values()]);
  return (row) => {
    const record = records.get(row);
    return record === undefined ? tc : contextOf(record);
  };
}

/** `rows` typed item by item (`typedItem` with the context of each), `added` targetKey stripped. */
export async function typedItems(
  q: Queryable,
  principal: Principal,
  tc: TypeContext,
  rows: readonly unknown[],
  names?: readonly string[],
  added = false,
): Promise<unknown[]> {
  const contextOf = await itemContexts(q, principal, tc, rows, names);
  return rows.map((row) => {
    const typed = typedItem(contextOf(row), row, names);
    if (!added) return typed;
    if (Array.isArray(typed)) return (typed as unknown[]).slice(0, -1);
    return Object.fromEntries(Object.entries(typed as Row).filter(([k]) => k !== 'targetKey'));
  });
}
