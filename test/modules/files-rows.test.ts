// Rows out of stored files (src/modules/files/rows.ts), without a database: an XLSX read that fails
// at its start is read again (exceljs's streaming reader sometimes loses a part of the workbook,
// exceljs/exceljs#3064). Losing a part is simulated by cutting the file before that part's entry.

import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import ExcelJS from 'exceljs';
import { XLSX_ATTEMPTS, rowsOf } from '../../src/modules/files/rows.ts';

const LOCAL_HEADER = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

async function workbook(): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  const sheet = wb.addWorksheet('values');
  sheet.addRow(['name', 'value']);
  sheet.addRow(['a', 1.5]);
  sheet.addRow(['b', 'text']);
  return Buffer.from(await wb.xlsx.writeBuffer());
}

/** The file up to (without) the ZIP entry named `name`: that part and all after it are lost. */
function cutBefore(file: Buffer, name: string): Buffer {
  for (let at = file.indexOf(LOCAL_HEADER); at >= 0; at = file.indexOf(LOCAL_HEADER, at + 4)) {
    const length = file.readUInt16LE(at + 26);
    if (file.subarray(at + 30, at + 30 + length).toString() === name) return file.subarray(0, at);
  }
  throw new Error(`no entry ${name}`);
}

/** An opener that answers the given files in turn (the last one again when they run out). */
function opener(files: readonly Buffer[]) {
  const o = {
    opens: 0,
    open: () => {
      const file = files[Math.min(o.opens, files.length - 1)]!;
      o.opens++;
      return Readable.from([file.subarray(0, 100), file.subarray(100)]);
    },
  };
  return o;
}

async function read(open: () => AsyncIterable<Buffer>) {
  const source = await rowsOf(open);
  const rows: (string | null)[][] = [];
  for await (const r of source.rows) rows.push(r);
  return { format: source.format, header: source.header, rows };
}

const EXPECTED = {
  format: 'xlsx',
  header: ['name', 'value'],
  rows: [
    ['a', '1.5'],
    ['b', 'text'],
  ],
};

test('a readable XLSX file is opened once', async () => {
  const o = opener([await workbook()]);
  assert.deepEqual(await read(o.open), EXPECTED);
  assert.equal(o.opens, 1);
});

for (const [part, message] of [
  ['xl/workbook.xml', 'not a readable XLSX workbook'],
  ['xl/sharedStrings.xml', 'not a readable XLSX workbook'],
  ['xl/worksheets/sheet1.xml', 'the workbook has no worksheet'],
] as const) {
  test(`a read that lost ${part} is read again`, async () => {
    const file = await workbook();
    const lost = cutBefore(file, part);
    const once = opener([lost, file]);
    assert.deepEqual(await read(once.open), EXPECTED);
    assert.equal(once.opens, 2);
    const twice = opener([lost, lost, file]);
    assert.deepEqual(await read(twice.open), EXPECTED);
    assert.equal(twice.opens, 3);
  });

  test(`a file that always lacks ${part} is refused after ${XLSX_ATTEMPTS} reads`, async () => {
    const always = opener([cutBefore(await workbook(), part)]);
    await assert.rejects(read(always.open), (e: Error & { field?: string }) => {
      assert.match(e.message, new RegExp(message));
      return true;
    });
    assert.equal(always.opens, XLSX_ATTEMPTS);
  });
}

test('CSV is opened once', async () => {
  const o = opener([Buffer.from('name;value\na;1.5\nb;text\n')]);
  assert.deepEqual(await read(o.open), { ...EXPECTED, format: 'csv' });
  assert.equal(o.opens, 1);
});
