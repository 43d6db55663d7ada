// The look-up's two writers of typed attributes agree value by value (src/modules/conditionrecords/
// lookup-attributes.ts): the JSON the database writes (attributeJsonSql, its marked values finished
// by retypeMarked) is JSON.stringify of the engine's outputValue — what /fetch/CRCI answers — for
// each meta type, over hand-picked and generated texts; the forms the engine stores are written by
// the database itself (none marked). On embedded PGlite always, on PostgreSQL when DATABASE_URL is set.

import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rawDatabases, type RawDb } from '../helpers/raw-db.ts';
import { outputValue } from '../../src/engine/context.ts';
import type { FieldType } from '../../src/engine/types.ts';
import { attributeJsonSql, retypeMarked } from '../../src/modules/conditionrecords/lookup-attributes.ts';

/** Integers as the engine stores them for INTEGER meta (the database types them itself). */
const INTEGERS = ['0', '-0', '+0', '7', '007', '-12', '+42', '999999999999999', '100000000000000000000'];
const BEYOND = ['9007199254740991', '9007199254740992', '-9007199254740993', '123456789012345678901234'];
/** Decimals as the engine stores them for NUMERIC, MONEY and PERCENT meta (typed by the database). */
const DECIMALS = [
  ...['0.0', '-0.0e5', '12.50', '0.075', '.5', '5.', '-.25', '1e3', '1.5E2', '2.5e-3', '-7.125e-2'],
  ...['0.000001', '123456789012345678.25', '0.1234567890123456', '12.000000000000000000', '3.75'],
  ...['1e20', '-1e20', '0.12e2', '999999999999999.9', '1.23456789012345e20'],
];
/** Texts without a digit: NaN or ±Infinity to Number(), the text itself for every meta. */
const TEXTS = ['abc', 'Infinity', '-Infinity', 'n/a', 'true', 'false', 'TRUE', 'x.y', '-', '.', 'e'];
/** Spellings the database's boolean cast reads (or not): outputValue must read them as it does. */
const BOOLEANS = [
  ...['yes', 'no', 'on', 'off', 'of', 'o', 't', 'tr', 'tru', 'truee', 'f', 'fals', 'y', 'ye', 'n', 'nO'],
  ...[' TRUE ', 'True', '\ttrue\n', '01', '10', 'maybe', 'onn', 'of f', 'yes!', '\u00a0true'],
];
const STORED = [...INTEGERS, ...BEYOND, ...DECIMALS, ...TEXTS, ...BOOLEANS];

/** Texts only JavaScript's Number() reads as it does (marked by the database, then typed in JS). */
const ODD = [
  ...['', ' ', ' 12 ', '\t5', '\u00a012', '\u00a0', '\ufeff3', '0x1A', '0b101', '0o17', '1e-7'],
  ...['1e21', '-1e21', '1e0005', '0.0000001', '12abc', 'abc1', '1_000', '1,5', '4503599627370496.5'],
  ...['1.00000000000000001', '1e-400', '2e-320', '0.00000099', '1.2.3', '+-1', '١٢', '1e', '--1'],
  ...['1e400', '1.5e-400', '1e-7', '1.5e21', '1 ', ' 0'],
];

/** A reproducible mix of signs, digits, points, exponents and spaces. */
function generated(n: number): string[] {
  let seed = 20260601;
  const rnd = (k: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % k;
  };
  const digits = (k: number) => Array.from({ length: k }, () => String(rnd(10))).join('');
  const pick = <T>(xs: readonly T[]) => xs[rnd(xs.length)]!;
  return Array.from({ length: n }, () => {
    const mantissa = pick([
      () => digits(1 + rnd(20)),
      () => `${digits(rnd(12))}.${digits(rnd(12))}`,
      () => `0.${'0'.repeat(rnd(10))}${digits(1 + rnd(16))}`,
      () => `${digits(1 + rnd(3))}${'0'.repeat(rnd(24))}`,
    ])();
    const exponent = rnd(3) === 0 ? `${pick(['e', 'E'])}${pick(['', '+', '-'])}${digits(1 + rnd(3))}` : '';
    const space = rnd(12) === 0 ? ' ' : '';
    return `${space}${pick(['', '', '-', '+'])}${mantissa}${exponent}`;
  });
}

const TYPES: readonly (FieldType | null)[] = [
  'decimal',
  'integer',
  'boolean',
  'date',
  'datetime',
  'string',
  null,
];

for (const [dbName, open] of rawDatabases('crc_attrs')) {
  void describe(`look-up attributes typed in SQL as in JavaScript (${dbName})`, () => {
    let db: RawDb;
    before(async () => {
      db = await open();
      // The safe casts as the migration creates them (booleans are read by rc_try_boolean).
      await db.exec(
        readFileSync(new URL('../../src/db/migrations/002_safe_casts.sql', import.meta.url), 'utf8'),
      );
    });
    after(async () => {
      await db.close();
    });

    /** The JSON text the database writes for each value, typed `type`. */
    async function written(type: FieldType | null, values: readonly string[]): Promise<string[]> {
      const rows = await db.query(
        `SELECT ${attributeJsonSql('u.v', type ?? undefined)} AS j
           FROM unnest($1::text[]) WITH ORDINALITY AS u(v, n)
          ORDER BY u.n`,
        [values],
      );
      return rows.map((r) => r.j as string);
    }

    for (const type of TYPES) {
      test(`${type ?? 'no meta'}: every value as JSON.stringify(outputValue)`, async () => {
        const values = [...STORED, ...ODD, ...generated(4000)];
        const sql = await written(type, values);
        values.forEach((v, i) => {
          const expected = JSON.stringify(type === null ? v : outputValue(type, v));
          assert.equal(retypeMarked(sql[i]!), expected, `${type} ${JSON.stringify(v)}`);
        });
        // The stored forms are the database's own work; other texts are marked only for numbers.
        const marked = new Set(values.filter((_, i) => sql[i]!.includes('\u0001')));
        const own = type === 'integer' ? [...INTEGERS, ...BEYOND, ...TEXTS] : STORED;
        assert.deepEqual(
          own.filter((v) => marked.has(v)),
          [],
        );
        if (type !== 'decimal' && type !== 'integer') assert.equal(marked.size, 0);
        // A whole item's worth of them, as the look-up's JSON text: one replacement pass.
        const json = `{"attributes":{${sql.map((j, i) => `"a${i}":${j}`).join(',')}}}`;
        const parsed = JSON.parse(retypeMarked(json)) as { attributes: Record<string, unknown> };
        assert.deepEqual(
          Object.values(parsed.attributes),
          // (Through JSON, as clients read it: -0 is 0.)
          values.map((v) => JSON.parse(JSON.stringify(type === null ? v : outputValue(type, v)))),
        );
      });
    }
  });
}
