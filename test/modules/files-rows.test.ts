// Rows out of stored files (src/modules/files/rows.ts), without a database: an XLSX read that fails
// at its start is read again (exceljs's streaming reader sometimes loses a part of the workbook,
// exceljs/exceljs#3064). Losing a part is simulated by cutting the file before that part's entry.

import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import ExcelJS from 'exceljs';
import { XLSX_ATTEMPTS, csvWellFormed, rowsOf } from '../../src/modules/files/rows.ts';
import { Utf8Check } from '../../src/modules/files/utf8-check.ts';
import { handWrittenXlsx } from '../helpers/xlsx.ts';

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

// The byte scan that checks a CSV's quoting before a load writes anything: it must say "malformed"
// exactly when csv-parse (with the options the loads use) fails, wherever the file is cut in pieces.

async function parses(text: string, delimiter: string): Promise<boolean> {
  try {
    const source = await rowsOf(() => Readable.from([Buffer.from(text)]), delimiter);
    for await (const _ of source.rows) void _;
    return true;
  } catch {
    return false;
  }
}

async function scanned(text: string, delimiter: string, cut: number[]): Promise<boolean> {
  const bytes = Buffer.from(text);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const at of [...cut, bytes.length]) {
    pieces.push(bytes.subarray(from, Math.max(from, at)));
    from = Math.max(from, at);
  }
  return csvWellFormed(Readable.from(pieces), delimiter);
}

test('the quote scan agrees with csv-parse, whatever the pieces', async () => {
  const cases = [
    'a,b\n1,2\n',
    'a,b\n"1","2"\n',
    'a,b\n"1,x","2\ny"\n',
    'a,b\n"say ""hi""",2\n',
    'a,b\r\n"1"\r\n"2",""\r\n',
    '\uFEFF"a",b\n1,2\n',
    'a,b\n"1",2',
    'a,b\n"1',
    'a,b\n"unclosed,2\n3,4\n',
    'a,b\n"1"x,2\n',
    'a,b\n1"x,2\n',
    'a,b\n 1,"2"\n',
    'a,b\n"",""\n',
    'a;b\n"1;2";3\n',
    'a\tb\n"1\t2"\t3\n',
  ];
  for (const text of cases) {
    const delimiter = text.includes('\t') ? '\t' : text.includes(';') ? ';' : ',';
    const expected = await parses(text, delimiter);
    for (let cut = 0; cut <= Buffer.byteLength(text); cut++) {
      assert.equal(await scanned(text, delimiter, [cut]), expected, `${JSON.stringify(text)} cut at ${cut}`);
    }
  }
  // Random texts of quotes, delimiters, line breaks and letters, cut in random pieces.
  let seed = 7;
  const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  const alphabet = ['"', '"', ',', '\n', '\r\n', 'a', 'b', ' '];
  for (let k = 0; k < 2000; k++) {
    let text = 'h1,h2\n';
    const length = 1 + random(14);
    for (let j = 0; j < length; j++) text += alphabet[random(alphabet.length)];
    const cuts = [random(text.length + 1), random(text.length + 1)].sort((x, y) => x - y);
    assert.equal(await scanned(text, ',', cuts), await parses(text, ','), JSON.stringify(text));
  }
});

test('the UTF-8 check agrees with a strict decoder and names the fault, whatever the pieces', () => {
  const samples = [
    'plain ascii\nline 2\n',
    'Café, naïve, Größe\n€ 5\n',
    'emoji 😀 and CJK 価格\n',
    '\uFEFFbom first\n',
  ].map((t) => Buffer.from(t));
  const odd = [
    [0xe9], // Windows-1252 é
    [0xc0, 0xaf], // overlong '/'
    [0xed, 0xa0, 0x80], // a surrogate
    [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
    [0xe2, 0x82], // a character cut short
    [0xff, 0xfe], // a UTF-16 byte order mark
    [0x80], // a lone continuation byte
  ].map((b) => Buffer.from(b));
  let seed = 7;
  const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  const strict = new TextDecoder('utf-8', { fatal: true });
  for (let round = 0; round < 2_000; round++) {
    const parts: Buffer[] = [];
    for (let k = random(5) + 1; k > 0; k--)
      parts.push(random(4) === 0 ? odd[random(odd.length)]! : samples[random(samples.length)]!);
    const file = Buffer.concat(parts);
    const check = new Utf8Check();
    let fault;
    for (let from = 0; from < file.length && fault === undefined;) {
      const to = Math.min(file.length, from + 1 + random(9));
      fault = check.feed(file.subarray(from, to));
      from = to;
    }
    fault ??= check.end();
    let valid = true;
    try {
      strict.decode(file);
    } catch {
      valid = false;
    }
    assert.equal(fault === undefined, valid, file.toString('hex'));
    if (fault !== undefined) {
      // The bytes before the fault are UTF-8, and the line counts their line breaks.
      strict.decode(file.subarray(0, fault.offset));
      assert.equal(fault.line, file.subarray(0, fault.offset).toString('latin1').split('\n').length);
      assert.throws(() => strict.decode(file.subarray(0, fault.offset + 4)), file.toString('hex'));
    }
  }
});

test('a worksheet whose XML breaks part-way is refused, naming the last row read', async () => {
  const rows = [['name', 'value'], ...Array.from({ length: 5000 }, (_, i) => [`n${i}`, String(i)])];
  const whole = opener([handWrittenXlsx(rows)]);
  assert.equal((await read(whole.open)).rows.length, 5000);
  const broken = opener([handWrittenXlsx(rows, 4000)]);
  await assert.rejects(read(broken.open), (e: Error & { errors?: Record<string, unknown> }) => {
    const m = /not a readable XLSX workbook: the worksheet cannot be read past row (\d+) \(/.exec(e.message);
    assert.ok(m, e.message);
    // The last row read: at most the one before the break (rows read ahead with it are lost).
    assert.ok(Number(m[1]) >= 1 && Number(m[1]) <= 4000, e.message);
    assert.deepEqual(Object.keys(e.errors ?? {}), ['fileName']);
    return true;
  });
});
