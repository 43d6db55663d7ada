// The export of a lookup table's values to XLSX (`/lookuptablemanager.fetch/{tableId}?output=xls`):
// the values read page by page through the engine, written with exceljs's streaming writer, so a
// large table is never held in memory.

import type { Writable } from 'node:stream';
import { Decimal } from 'decimal.js';
import ExcelJS from 'exceljs';
import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { validationError } from '../../http/errors.ts';
import { fetchRecords, type FetchBody } from '../../engine/crud.ts';
import type { FieldDef } from '../../engine/registry.ts';
import type { LookupTable } from '../../engine/registry-lookup.ts';
import { valuesOf } from './tables.ts';

export interface ValueExport {
  readonly table: LookupTable;
  readonly fields: readonly FieldDef[];
  /** Pages of rows (arrays in `fields` order); the first is read before anything is sent. */
  readonly pages: AsyncIterable<readonly unknown[][]>;
}

/**
 * The values matching the body (filter, sort, `startRow`/`endRow` when given, else all of them),
 * with the columns of `resultFields` (default: the table's keys and values), read page by page
 * through the engine. The first page is read here, so a bad filter is still an error envelope.
 */
export async function exportValues(
  db: Db,
  principal: Principal,
  tableId: number,
  body: FetchBody,
  maxPageSize: number,
): Promise<ValueExport> {
  const { table, type } = await valuesOf(db, principal, tableId);
  const param = body.valueFields !== undefined ? 'valueFields' : 'resultFields';
  const names =
    body.resultFields ?? body.valueFields ?? type.fields.filter((f) => !f.system).map((f) => f.name);
  const fields = names.map((n): FieldDef => {
    if (n === 'typedId') return { name: n, column: 'id', type: 'string' };
    const f = type.fields.find((d) => d.name === n);
    if (!f) throw validationError(param, `unknown field ${JSON.stringify(n)}`);
    return f;
  });
  const start = body.startRow ?? 0;
  const end = body.endRow ?? Number.MAX_SAFE_INTEGER;
  const read = (from: number) =>
    fetchRecords(
      db,
      principal,
      type,
      {
        ...body,
        resultFields: undefined,
        valueFields: names,
        startRow: from,
        endRow: Math.min(end, from + maxPageSize),
      },
      maxPageSize,
    );
  const first = await read(start);
  async function* pages(): AsyncGenerator<unknown[][]> {
    let page = first;
    for (;;) {
      yield page.rows as unknown[][];
      const wanted = Math.min(end, page.startRow + maxPageSize) - page.startRow;
      if (page.rows.length < wanted || page.endRow >= end) return;
      page = await read(page.endRow);
    }
  }
  return { table, fields, pages: pages() };
}

/**
 * A cell as a spreadsheet holds it: numbers as numbers (a cell is a double) while a double holds them
 * exactly, else their exact text (`9007199254740993`, `1e-400`, 23 decimals), as /fetch answers them;
 * JSON as its text.
 */
function cell(f: FieldDef, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  // Every JSON value as its text, strings and numbers too (`"hello"`, `"42"`): the cell a JSON
  // table's load reads back as the same value (a bare `hello` is no JSON; `42` would be a number).
  if (f.type === 'json') return JSON.stringify(v);
  if ((f.type === 'decimal' || f.type === 'integer') && typeof v === 'string') {
    const n = Number(v);
    return Number.isFinite(n) && holdsExactly(v, n) ? n : v;
  }
  if (typeof v === 'object' && !(v instanceof Date)) return JSON.stringify(v);
  return v;
}

/** Whether the double `n` is the decimal `text` (text that is no decimal: no). */
function holdsExactly(text: string, n: number): boolean {
  try {
    return new Decimal(text).equals(n);
  } catch {
    return false;
  }
}

/**
 * A worksheet name Excel (and exceljs, reading it back) takes for a table's name: none of
 * `[ ] : * ? / \`, no apostrophe first or last, at most 31 characters, not the reserved `History`.
 */
export function sheetName(tableName: string): string {
  // At most 31 UTF-16 units, cut between characters (an emoji is not split in two).
  let name = '';
  for (const ch of tableName.replace(/[[\]:*?/\\]/g, '_')) {
    if (name.length + ch.length > 31) break;
    name += ch;
  }
  name = name.replace(/^'|'$/g, '_');
  if (name === '') return 'values';
  return name.toLowerCase() === 'history' ? `${name}_` : name;
}

/** Writes the export as one worksheet (header row of field names) with exceljs's streaming writer. */
export async function writeXlsx(exp: ValueExport, out: Writable): Promise<void> {
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({
    stream: out,
    useStyles: false,
    useSharedStrings: false,
  });
  const sheet = workbook.addWorksheet(sheetName(exp.table.uniqueName));
  sheet.addRow(exp.fields.map((f) => f.name)).commit();
  for await (const page of exp.pages) {
    for (const row of page) sheet.addRow(row.map((v, i) => cell(exp.fields[i]!, v))).commit();
  }
  sheet.commit();
  await workbook.commit();
}
