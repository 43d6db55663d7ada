// `/dcrmanager.fetch/{id}/changesOnly`: a DCR's items with only the fields whose proposed value differs
// from the target record's current one.

import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { fetchRecords, type FetchBody, type FetchResult } from '../../engine/crud.ts';
import { paging } from '../../engine/paging.ts';
import { validationError } from '../../http/errors.ts';
import { findType } from '../../engine/registry.ts';
import { readableDcr, scopeOf, visibleItems } from './service.ts';
import { findTargets, sameValue, typedItem } from './target.ts';
import { itemContexts } from './item-typing.ts';
import type { TypeContext } from '../../engine/context.ts';

type Obj = Record<string, unknown>;

const DCRI = findType('DCRI')!;

/** The item fields `changesOnly` compares (`targetKey`: an extension row's table types its values). */
const CHANGE_INPUTS = ['targetId', 'changeType', 'values', 'targetKey'];

/**
 * The items with only the fields whose proposed value differs from the record's current one
 * (`changes`: {field: {old, new}}); an UPDATE proposing only current values is left out. ADD items
 * list every proposed field; DELETE items the record's current values; items whose record is gone are
 * left out. Paged after the comparison.
 * `resultFields` / `valueFields` name the fields answered (`changes` among them, if wanted); the
 * comparison reads its own fields whatever they name. `distinctResults` applies to the answered
 * fields, after the comparison (the read is not distinct: it needs the comparison's own fields).
 */
export async function changesOnly(
  db: Db,
  principal: Principal,
  idText: string,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  const { start: startRow, end: endRow } = paging(body, maxPageSize);
  const s = await scopeOf(db, principal, await readableDcr(db, principal, idText));
  const { resultFields, valueFields, distinctResults, ...rest } = body;
  // (Both named: the engine refuses the body as it is.)
  const asked =
    resultFields !== undefined && valueFields !== undefined ? undefined : (valueFields ?? resultFields);
  const distinct = distinctResults === true && asked !== undefined;
  if (distinct) {
    // As the engine's distinct rows: sorted by the answered fields unless sortBy names some of them.
    for (const sort of rest.sortBy === undefined || rest.sortBy === null ? [] : [rest.sortBy].flat()) {
      if (typeof sort !== 'string' || !asked.includes(sort.replace(/^-/, ''))) {
        throw validationError(
          'sortBy',
          `with distinctResults, sort only by the selected fields (${JSON.stringify(sort)})`,
        );
      }
    }
    rest.sortBy ??= asked.filter((n) => DCRI.fields.some((f) => f.name === n && f.type !== 'json'));
  }
  const read: FetchBody =
    asked === undefined
      ? body
      : { ...rest, resultFields: [...new Set([...asked.filter((n) => n !== 'changes'), ...CHANGE_INPUTS])] };
  const items: Obj[] = [];
  const restrict = await visibleItems(db, principal, s);
  for (let start = 0; ; start += maxPageSize) {
    const r = await fetchRecords(
      db,
      principal,
      DCRI,
      { ...read, startRow: start, endRow: start + maxPageSize },
      maxPageSize,
      restrict,
    );
    items.push(...(r.rows as Obj[]));
    if (r.rows.length < maxPageSize) break;
  }
  const ids = items.flatMap((i) => (typeof i.targetId === 'number' ? [i.targetId] : []));
  const current = (await findTargets(db, principal, s.tc, { ids, keys: [] })).byId;
  // Compared and answered by the item's table's types (PX, CX, SX: its meta), as the record is.
  const contextOf = await itemContexts(db, principal, s.tc, items);
  const changed: Obj[] = [];
  const typedBy = new Map<Obj, TypeContext>();
  for (const item of items) {
    const tc = contextOf(item);
    const proposed = (item.values ?? {}) as Obj;
    const now = typeof item.targetId === 'number' ? current.get(item.targetId) : undefined;
    const changes: Record<string, { old: unknown; new: unknown }> = {};
    // An UPDATE or DELETE whose record is gone changes nothing of the record as it is now (its apply
    // fails, naming the item): not listed, where its stored values passed for the record's.
    if (item.changeType !== 'ADD' && now === undefined) continue;
    if (item.changeType === 'DELETE') {
      for (const [k, v] of Object.entries(now ?? {})) {
        const f = s.tc.fields.get(k);
        if (f && !f.system && v !== null) changes[k] = { old: v, new: null };
      }
    } else {
      for (const [k, v] of Object.entries(proposed)) {
        const old = now?.[k] ?? null;
        if (item.changeType === 'ADD' || !sameValue(tc.fields.get(k), old, v)) changes[k] = { old, new: v };
      }
    }
    if (Object.keys(changes).length === 0 && item.changeType === 'UPDATE') continue;
    const row = { ...item, changes };
    changed.push(row);
    typedBy.set(row, tc);
  }
  // Typed as the target's records are answered (a NUMERIC attribute a number), after comparing.
  const project = (item: Obj): unknown => {
    const typed = typedItem(typedBy.get(item) ?? s.tc, item) as Obj;
    if (asked === undefined) return typed;
    return valueFields !== undefined
      ? asked.map((n) => typed[n])
      : Object.fromEntries(asked.map((n) => [n, typed[n]]));
  };
  const answered = distinct
    ? [...new Map(changed.map((item) => project(item)).map((row) => [JSON.stringify(row), row])).values()]
    : undefined;
  const rows = answered?.slice(startRow, endRow) ?? changed.slice(startRow, endRow).map(project);
  return { rows, startRow, endRow: startRow + rows.length, totalRows: answered?.length ?? changed.length };
}
