// The page a fetch-style body asks for: `startRow` included, `endRow` excluded, 300 rows by default,
// at most the configured largest page (conventions: Fetch bodies). Used by the engine's fetches and by
// the lists that are not tables (the type codes, the accounts' listed reads, api tokens).

import { validationError } from '../http/errors.ts';

/** The page a fetch body asks for (default 300 rows), checked against the largest page (-4). */
export function paging(
  body: { readonly startRow?: number; readonly endRow?: number },
  maxPageSize: number,
): { start: number; end: number } {
  const start = body.startRow ?? 0;
  const end = body.endRow ?? start + Math.min(300, maxPageSize);
  if (end < start) throw validationError('endRow', 'must not be less than startRow');
  if (end - start > maxPageSize) throw validationError('endRow', `a page holds at most ${maxPageSize} rows`);
  return { start, end };
}

/**
 * The fields of a fetch body that lists read by their path (pageOfList) do not take: a client of the
 * interface sends them as `null` (not given), which they accept; a value is a -4 naming the field.
 */
export const UNTAKEN_LIST_FIELDS = {
  sortBy: { type: 'null' },
  resultFields: { type: 'null' },
  valueFields: { type: 'null' },
  distinctResults: { type: 'null' },
} as const;

/**
 * A list read by its path, paged as fetches are (`startRow` included, `endRow` excluded, 300 by
 * default, at most `maxPageSize`: -4 beyond, or for an end before the start).
 */
export function pageOfList<T>(
  rows: readonly T[],
  body: unknown,
  maxPageSize: number,
): { rows: T[]; startRow: number; endRow: number; totalRows: number } {
  const b = (body ?? {}) as { startRow?: number | null; endRow?: number | null };
  const { start, end } = paging(
    { startRow: b.startRow ?? undefined, endRow: b.endRow ?? undefined },
    maxPageSize,
  );
  const page = rows.slice(start, end);
  return { rows: page, startRow: start, endRow: start + page.length, totalRows: rows.length };
}
