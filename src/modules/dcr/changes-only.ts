// `/dcrmanager.fetch/{id}/changesOnly`: a DCR's items with only the fields whose proposed value differs
// from the target record's current one.

import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { fetchRecords, type FetchBody, type FetchResult } from '../../engine/crud.ts';
import { paging } from '../../engine/paging.ts';
import { findType } from '../../engine/registry.ts';
import { readableDcr, scopeOf, visibleItems } from './service.ts';
import { findTargets, sameValue, typedItem } from './target.ts';

type Obj = Record<string, unknown>;

const DCRI = findType('DCRI')!;

/** The item fields `changesOnly` compares. */
const CHANGE_INPUTS = ['targetId', 'changeType', 'values', 'originalValues'];

/**
 * The items with only the fields whose proposed value differs from the record's current one
 * (`changes`: {field: {old, new}}); an UPDATE proposing only current values is left out. ADD items
 * list every proposed field; DELETE items the record's current values. Paged after the comparison.
 * `resultFields` / `valueFields` name the fields answered (`changes` among them, if wanted); the
 * comparison reads its own fields whatever they name.
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
  const { resultFields, valueFields, ...rest } = body;
  // (Both named: the engine refuses the body as it is.)
  const asked =
    resultFields !== undefined && valueFields !== undefined ? undefined : (valueFields ?? resultFields);
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
  const changed: Obj[] = [];
  for (const item of items) {
    const proposed = (item.values ?? {}) as Obj;
    const now = typeof item.targetId === 'number' ? current.get(item.targetId) : undefined;
    const changes: Record<string, { old: unknown; new: unknown }> = {};
    if (item.changeType === 'DELETE') {
      for (const [k, v] of Object.entries(now ?? (item.originalValues as Obj) ?? {})) {
        const f = s.tc.fields.get(k);
        if (f && !f.system && v !== null) changes[k] = { old: v, new: null };
      }
    } else {
      for (const [k, v] of Object.entries(proposed)) {
        const old = now?.[k] ?? null;
        if (item.changeType === 'ADD' || !sameValue(s.tc.fields.get(k), old, v)) changes[k] = { old, new: v };
      }
    }
    if (Object.keys(changes).length > 0 || item.changeType !== 'UPDATE') changed.push({ ...item, changes });
  }
  // Typed as the target's records are answered (a NUMERIC attribute a number), after comparing.
  const page = changed.slice(startRow, endRow).map((item) => typedItem(s.tc, item) as Obj);
  const rows =
    asked === undefined
      ? page
      : page.map((item) =>
          valueFields !== undefined
            ? asked.map((n) => item[n])
            : Object.fromEntries(asked.map((n) => [n, item[n]])),
        );
  return { rows, startRow, endRow: startRow + rows.length, totalRows: changed.length };
}
