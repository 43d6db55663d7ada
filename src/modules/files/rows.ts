// Rows out of a stored file, streamed: CSV through csv-parse (quotes, embedded newlines, BOM; the
// delimiter `,` `;` or tab detected from the header line unless given) or XLSX through exceljs's
// streaming reader (first worksheet). The first row is the header; the rest arrive in chunks, so a
// file of any size is read in constant memory. XLSX is recognised by its content (a ZIP), not by
// its name.
//
// exceljs's streaming reader sometimes loses the workbook part (`xl/workbook.xml`, which exceljs's
// own writer stores last) and then fails on the first worksheet (exceljs/exceljs#3064: a race in
// its single pass over the ZIP, seen about once in 4,000 reads of the same file under CPU load).
// Nothing is read by then, so the file is opened again, up to XLSX_ATTEMPTS times, before it is
// called unreadable: `rowsOf` takes a function that opens the file, not one stream.

import { Readable } from 'node:stream';
import { parse, CsvError } from 'csv-parse';
import ExcelJS from 'exceljs';
import { validationError } from '../../http/errors.ts';
import { Utf8Check, utf8FaultMessage } from './utf8-check.ts';

export interface RowSource {
  readonly format: 'csv' | 'xlsx';
  /** The field delimiter of a CSV (given or detected). */
  readonly delimiter?: string;
  readonly header: readonly string[];
  /** The data rows (after the header), as arrays of text (null: an empty XLSX cell). */
  readonly rows: AsyncIterable<(string | null)[]>;
}

export const DELIMITERS: Readonly<Record<string, string>> = { ',': ',', ';': ';', '\t': '\t', tab: '\t' };

/** Bytes of the file read so far (for progress); a file read again counts from 0. */
export class ByteCounter {
  bytes = 0;
  async *count(source: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
    this.bytes = 0;
    for await (const piece of source) {
      this.bytes += piece.length;
      yield piece;
    }
  }
}

/** Reads up to `min` bytes ahead (or the whole file if shorter); answers them and the full stream. */
async function peek(
  source: AsyncIterable<Buffer>,
  min: number,
): Promise<{ head: Buffer; all: AsyncIterable<Buffer> }> {
  const it = source[Symbol.asyncIterator]();
  const pieces: Buffer[] = [];
  let length = 0;
  let done = false;
  while (length < min) {
    const n = await it.next();
    if (n.done) {
      done = true;
      break;
    }
    pieces.push(n.value);
    length += n.value.length;
  }
  const head = Buffer.concat(pieces);
  async function* all() {
    if (head.length > 0) yield head;
    if (done) return;
    for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
  }
  return { head, all: all() };
}

/** The delimiter of the header line: the most frequent of `,` `;` tab outside quotes (`,` on a tie). */
export function detectDelimiter(head: Buffer): string {
  let text = head.subarray(0, 64 * 1024).toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const counts = new Map<string, number>([
    [',', 0],
    [';', 0],
    ['\t', 0],
  ]);
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (ch === '\n' || ch === '\r')) break;
    else if (!quoted && counts.has(ch)) counts.set(ch, counts.get(ch)! + 1);
  }
  let best = ',';
  for (const [d, n] of counts) if (n > counts.get(best)!) best = d;
  return best;
}

function csvFailure(e: unknown): never {
  if (e instanceof CsvError) {
    const line = (e as CsvError & { lines?: number }).lines;
    throw validationError('fileName', `CSV${line !== undefined ? ` line ${line}` : ''}: ${e.message}`);
  }
  throw e;
}

/** The pieces of a CSV, refused (-4 on `fileName`, naming the line) where they stop being UTF-8. */
async function* utf8Only(all: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
  const check = new Utf8Check();
  for await (const piece of all) {
    const fault = check.feed(piece);
    if (fault !== undefined) throw validationError('fileName', utf8FaultMessage(fault));
    yield piece;
  }
  const fault = check.end();
  if (fault !== undefined) throw validationError('fileName', utf8FaultMessage(fault));
}

async function csvSource(all: AsyncIterable<Buffer>, delimiter: string): Promise<RowSource> {
  const input = Readable.from(utf8Only(all));
  const parser = parse({ bom: true, delimiter, relax_column_count: true, skip_empty_lines: true });
  // `pipe` forwards no error: a fault of the input (not UTF-8, a failed read) ends the parser with it.
  input.on('error', (e) => parser.destroy(e));
  input.pipe(parser);
  const it = (parser as AsyncIterable<string[]>)[Symbol.asyncIterator]();
  let first: IteratorResult<string[]>;
  try {
    first = await it.next();
  } catch (e) {
    csvFailure(e);
  }
  if (first.done) throw validationError('fileName', 'the file is empty: a header line is needed');
  async function* rows() {
    try {
      for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
    } catch (e) {
      csvFailure(e);
    } finally {
      // A load stopped early (time-out, cancellation) releases the parser and the file read.
      await it.return?.();
    }
  }
  return { format: 'csv', delimiter, header: first.value.map((h) => h.trim()), rows: rows() };
}

/**
 * A cell of exceljs as text (dates as ISO, formulas by their result, rich text joined, an error as its
 * text); null when empty.
 */
export function cellText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v instanceof Date) {
    const iso = v.toISOString();
    return iso.endsWith('T00:00:00.000Z') ? iso.slice(0, 10) : iso;
  }
  if (typeof v === 'object') {
    const o = v as { richText?: { text: string }[]; result?: unknown; text?: unknown; error?: unknown };
    if (Array.isArray(o.richText)) return o.richText.map((r) => r.text).join('');
    if ('result' in o) return cellText(o.result);
    if (typeof o.text === 'string') return o.text;
    // An error cell (#N/A, #DIV/0!, a formula's error) is the text Excel shows, as a CSV of the sheet
    // holds it: a typed field refuses it (a row error), never an empty cell that clears the field.
    if (typeof o.error === 'string') return o.error;
  }
  return null;
}

/** Reads of an XLSX file before it is called unreadable (see the header). */
export const XLSX_ATTEMPTS = 3;

type Sheets = AsyncIterator<ExcelJS.stream.xlsx.WorksheetReader>;

/** The workbook's worksheets and the first of them, reading the file again after a failed start. */
async function firstSheet(
  opened: AsyncIterable<Buffer>,
  open: () => AsyncIterable<Buffer>,
): Promise<{ sheets: Sheets; sheet: IteratorResult<ExcelJS.stream.xlsx.WorksheetReader> }> {
  for (let attempt = 1; ; attempt++) {
    const input = Readable.from(attempt === 1 ? opened : open());
    const reader = new ExcelJS.stream.xlsx.WorkbookReader(input, {
      worksheets: 'emit',
      sharedStrings: 'cache',
      styles: 'cache',
      hyperlinks: 'ignore',
      entries: 'ignore',
    });
    const sheets = reader[Symbol.asyncIterator]() as Sheets;
    let sheet: IteratorResult<ExcelJS.stream.xlsx.WorksheetReader>;
    try {
      sheet = await sheets.next();
    } catch {
      input.destroy();
      if (attempt >= XLSX_ATTEMPTS) throw validationError('fileName', 'not a readable XLSX workbook');
      continue;
    }
    // A lost worksheet part looks like a workbook without one: read again before saying so.
    if (!sheet.done || attempt >= XLSX_ATTEMPTS) return { sheets, sheet };
    input.destroy();
  }
}

async function xlsxSource(
  opened: AsyncIterable<Buffer>,
  open: () => AsyncIterable<Buffer>,
): Promise<RowSource> {
  const { sheets, sheet } = await firstSheet(opened, open);
  if (sheet.done) throw validationError('fileName', 'the workbook has no worksheet');
  const rowsIt = sheet.value[Symbol.asyncIterator]();
  const toTexts = (row: ExcelJS.Row): (string | null)[] => {
    const values = row.values as unknown[];
    const out: (string | null)[] = [];
    for (let i = 1; i < values.length; i++) out.push(cellText(values[i]));
    return out;
  };
  // A worksheet whose XML breaks part-way (exceljs's parser throws there) is no readable workbook:
  // the -4 names the last row read. The parser reads ahead, a block of the file at a time, and the
  // rows of the block it failed in are lost with it: the break may lie some rows past that one (its
  // own message names the file position).
  let lastRow = 0;
  const next = async () => {
    try {
      const n = await rowsIt.next();
      if (!n.done) lastRow = n.value.number;
      return n;
    } catch (e) {
      const where = lastRow === 0 ? ' before its first row' : ` past row ${lastRow}`;
      const why = e instanceof Error ? ` (${e.message.split('\n')[0]!.slice(0, 200)})` : '';
      throw validationError(
        'fileName',
        `not a readable XLSX workbook: the worksheet cannot be read${where}${why}`,
      );
    }
  };
  const first = await next();
  if (first.done) throw validationError('fileName', 'the worksheet is empty: a header row is needed');
  const header = toTexts(first.value).map((h) => (h ?? '').trim());
  async function* rows() {
    for (let n = await next(); !n.done; n = await next()) {
      const texts = toTexts(n.value);
      if (texts.every((t) => t === null || t === '')) continue;
      // XLSX leaves trailing empty cells out; the row is as wide as the header.
      while (texts.length < header.length) texts.push(null);
      yield texts;
    }
    // The rest of the workbook (other sheets) is read and dropped, so the zip stream completes; the
    // first sheet is read whole by then, so a failure in another one does not concern its rows.
    try {
      for (let s = await sheets.next(); !s.done; s = await sheets.next()) {
        for await (const _ of s.value) void _;
      }
    } catch {
      // nothing of the first sheet is lost
    }
  }
  return { format: 'xlsx', header, rows: rows() };
}

/**
 * The rows of the CSV or XLSX file that `open` reads (told apart by content); `delimiter` overrides
 * the detection. `open` is called once, or again when an XLSX read fails at its start (see above).
 */
export async function rowsOf(open: () => AsyncIterable<Buffer>, delimiter?: string): Promise<RowSource> {
  const { head, all } = await peek(open(), 4);
  if (head.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]))) return xlsxSource(all, open);
  if (delimiter !== undefined) return csvSource(all, delimiter);
  // Enough of the file to see the whole header line (or 64 KiB of it).
  const more = await peek(all, 64 * 1024);
  return csvSource(more.all, detectDelimiter(more.head));
}

const QUOTE = 0x22;
const CR = 0x0d;
const LF = 0x0a;

/**
 * Whether a CSV is UTF-8 text (utf8-check.ts) and its quoting well-formed as csv-parse reads it (its
 * only errors under our options): a quote opens a field only at the field's start, a quote inside a quoted field is
 * doubled or ends the field before a delimiter, a line break or the end, and the file does not end
 * inside a quoted field. A scan of the bytes (quotes found by `indexOf`), many times faster than
 * parsing: a load checks a file with it before writing anything, and parses it through (for the
 * message naming the line) only when it finds a fault.
 */
export async function csvWellFormed(bytes: AsyncIterable<Buffer>, delimiter: string): Promise<boolean> {
  const utf8 = new Utf8Check();
  const delim = delimiter.charCodeAt(0);
  const endsField = (c: number | undefined) => c === delim || c === CR || c === LF;
  let quoted = false;
  /** Inside a quoted field, the previous piece ended with a quote: the next byte decides. */
  let pending = false;
  let prev = -1; // the byte before the piece (-1: the start of the file)
  let offset = 0; // of the piece in the file
  const head: number[] = []; // the first three bytes: a byte order mark?
  for await (const piece of bytes) {
    if (piece.length === 0) continue;
    if (utf8.feed(piece) !== undefined) return false;
    for (let k = 0; head.length < 3 && k < piece.length; k++) head.push(piece[k]!);
    // Where the text starts in this piece when the file opens with a byte order mark.
    const bom = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 - offset : -1;
    offset += piece.length;
    let i = 0;
    if (pending) {
      pending = false;
      if (piece[0] === QUOTE) i = 1;
      else if (endsField(piece[0])) quoted = false;
      else return false;
    }
    for (let at = piece.indexOf(QUOTE, i); at >= 0; at = piece.indexOf(QUOTE, i)) {
      if (!quoted) {
        const before = at === bom ? -1 : at > 0 ? piece[at - 1] : prev;
        if (!(before === -1 || endsField(before))) return false;
        quoted = true;
        i = at + 1;
      } else if (at + 1 === piece.length) {
        pending = true;
        i = piece.length;
      } else if (piece[at + 1] === QUOTE) {
        i = at + 2;
      } else if (endsField(piece[at + 1])) {
        quoted = false;
        i = at + 1;
      } else {
        return false;
      }
    }
    prev = piece[piece.length - 1]!;
  }
  return (!quoted || pending) && utf8.end() === undefined;
}

/**
 * Reads a source through without keeping a row: the error (naming the line) for a file that
 * `csvWellFormed` found at fault, before a load writes anything — chunks commit one
 * by one, and a file refused half way would otherwise have loaded the rows before the bad line.
 */
export async function checkWellFormed(source: RowSource): Promise<void> {
  for await (const _ of source.rows) void _;
}

/** Groups rows into arrays of `size`. */
export async function* chunked<T>(rows: AsyncIterable<T>, size: number): AsyncIterable<T[]> {
  let chunk: T[] = [];
  for await (const r of rows) {
    chunk.push(r);
    if (chunk.length >= size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}
