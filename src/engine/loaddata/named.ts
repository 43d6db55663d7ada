// Bulk loads into the extension table the call names (`?name=` of `/loaddata/PX` and of
// `/loaddata.file/PX`, or the table of an importfile path): one rule for the JSON and the file load.
// A header without a `name` column loads every row into that table (the name goes AFTER the given
// columns, so a header error names the column's own index); with one, a row of another table is a
// row error, not a row of that table.

import type { TypeDef } from '../registry.ts';
import { widthError, type RowError } from './check.ts';

export interface CallTable {
  /** The header the loader takes: the given one, with `name` added when it has none. */
  readonly header: string[];
  /** The table a row belongs to: the call's when the header names none, else the row's `name`. */
  tableOf(raw: unknown): unknown;
  /** Why row `row` (its number in the load) is refused before the loader, or undefined. */
  refusal(raw: unknown, row: number): RowError | undefined;
  /** The row as the loader takes it (the call's table added when the header names none). */
  rowOf(raw: unknown): unknown;
}

/** The load of `header`'s rows into extension table `name` (the call's), or of any table when undefined. */
export function callTable(type: TypeDef, header: readonly string[], name: string | undefined): CallTable {
  const nameAt = header.indexOf('name');
  const inject = type.metaPerName === true && nameAt < 0 && name !== undefined;
  const given = header.map((f) => ({ name: f }));
  return {
    header: inject ? [...header, 'name'] : [...header],
    tableOf: (raw) =>
      inject ? name : nameAt >= 0 && Array.isArray(raw) ? (raw[nameAt] as unknown) : undefined,
    refusal(raw, row) {
      if (!Array.isArray(raw)) return undefined; // the loader's own error ("must be an array of values")
      if (inject) return raw.length === header.length ? undefined : widthError(row, raw.length, given);
      if (name === undefined || nameAt < 0 || raw[nameAt] === name) return undefined;
      return {
        row,
        field: 'name',
        message: `belongs to table ${JSON.stringify(raw[nameAt] ?? null)}, not to ${name} (the name of the call)`,
      };
    },
    rowOf: (raw) => (inject && Array.isArray(raw) ? [...(raw as unknown[]), name] : raw),
  };
}
