// The key signature of condition record items (migration 053) on both databases: the server's
// (lookup.ts, used by look-ups and by /loaddata/CRCP's overlap probe) equals the database's
// (rc_condition_key_sig, the stored column) for keys with the separator, backslashes, quotes,
// non-ASCII and signatures past 256 bytes; tuples that only a missing escape would join stay apart;
// loads, look-ups and the single-item overlap check find items by it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';
import { conditionKeySig } from '../../src/modules/conditionrecords/lookup.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };
const SEP = '\u0001';
const emoji = '\u{1F600}';

/** 2-key tuples: pairs that one signature would name if keys were joined without escapes, and keys
 * on both sides of 120 bytes (plain below, hashed above). */
const TUPLES: string[][] = [
  [`a${SEP}b`, 'c'],
  ['a', `b${SEP}c`],
  ['a\\', `${SEP}c`],
  ['a\\', '1c'],
  ['a', '\\1c'],
  ['a"b', 'c\\"'],
  ['x', 'y'],
  ['é'.repeat(30), 'k'.repeat(60)], // 120 bytes: plain
  ['é'.repeat(30), 'k'.repeat(61)], // 121 bytes: hashed
  [SEP.repeat(60), '\\'.repeat(60)], // 120 bytes: plain, 241 characters once escaped
  [SEP.repeat(60), `${'\\'.repeat(60)}x`], // 121: hashed
  [emoji.repeat(40), 'é'.repeat(63)], // 286 bytes: hashed
  [emoji.repeat(40), `${'é'.repeat(62)}e`], // hashed, differs from the one above in its last key
  ['ü'.repeat(63), 'ü'.repeat(63)],
  ['ü'.repeat(63), `${'ü'.repeat(62)}u`], // one character differs
  ['€'.repeat(20), '€'.repeat(20)], // 40 characters of 3 bytes, 120 bytes: plain
  ['€'.repeat(21), '€'.repeat(20)], // 41 characters, 123 bytes: hashed
];
/** Tuples of 12 keys past 300 characters: hashed, the first two told apart by the md5 alone. */
const LONG: string[][] = [
  Array.from({ length: 12 }, () => '\\'.repeat(63)), // 1,523 characters
  Array.from({ length: 12 }, (_, i) => (i === 11 ? `${'\\'.repeat(62)}x` : '\\'.repeat(63))),
  Array.from({ length: 12 }, () => emoji.repeat(63)), // 1,220 bytes (at most 300 × 4 + 32)
];

describe('condition records: key signatures', () => {
  let h: Harness;
  const call = (path: string, body: unknown) => h.call(path, { basic: admin, body });

  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h.close();
  });

  test("the server's signature is the database's, and no two tuples share one", async () => {
    const all = [...TUPLES, ...LONG];
    const sigs = all.map(conditionKeySig);
    assert.equal(new Set(sigs).size, all.length);
    for (const [i, t] of all.entries()) {
      const keys = Array.from({ length: 12 }, (_, k) => t[k] ?? null);
      const r = await h.db.query<{ sig: string; bytes: number }>(
        `SELECT s AS sig, octet_length(s) AS bytes
           FROM (SELECT rc_condition_key_sig(${keys.map((_, k) => `$${k + 1}::text`).join(', ')}) AS s) x`,
        keys,
      );
      assert.equal(sigs[i], r.rows[0]!.sig, `tuple ${i}`);
      assert.ok(r.rows[0]!.bytes <= 1232, `tuple ${i}: ${r.rows[0]!.bytes} bytes`);
    }
    // Plain up to 120 bytes of keys, hashed (ending in 32 hex digits) above.
    assert.equal(sigs[6], `x${SEP}y`);
    assert.equal(sigs[7], `${'é'.repeat(30)}${SEP}${'k'.repeat(60)}`);
    assert.equal(sigs[8]!.slice(0, -32), `${'é'.repeat(30)}${SEP}${'k'.repeat(61)}`);
    assert.match(sigs[8]!, /[0-9a-f]{32}$/);
    assert.equal(sigs[9], `${'\\1'.repeat(60)}${SEP}${'\\\\'.repeat(60)}`);
    assert.match(sigs[10]!, /[0-9a-f]{32}$/);
    assert.equal(sigs[15], `${'€'.repeat(20)}${SEP}${'€'.repeat(20)}`);
    assert.equal(sigs[16]!.slice(0, -32), `${'€'.repeat(21)}${SEP}${'€'.repeat(20)}`);
    assert.match(sigs[16]!, /[0-9a-f]{32}$/);
    assert.equal(conditionKeySig(['only']), 'only');
    assert.equal(sigs[TUPLES.length]!.slice(0, 300), sigs[TUPLES.length + 1]!.slice(0, 300));
    assert.equal(Buffer.byteLength(sigs.at(-1)!), 296 * 4 + 4 + 32); // 296 emoji, 4 separators, the md5
  });

  test('items of every tuple coexist; look-ups, loads and adds find each by its own keys', async () => {
    const name = uniqueName('sig');
    const [set] = okData(await call('/add/CRCS', { data: { uniqueName: name, label: name, keySize: 2 } }));
    // Half by the load (the database computes the stored signature), half by /add.
    const half = Math.ceil(TUPLES.length / 2);
    const header = ['conditionRecordSetId', 'key1', 'key2', 'validFrom', 'validTo', 'conditionValue'];
    const [loaded] = okData(
      await call('/loaddata/CRCP', {
        data: {
          header,
          data: TUPLES.slice(0, half).map((t, i) => [
            set.id,
            t[0],
            t[1],
            '2026-01-01',
            '2026-12-31',
            String(i),
          ]),
        },
      }),
    );
    assert.deepEqual([loaded.inserted, loaded.invalid], [half, 0]);
    for (const [i, t] of TUPLES.entries()) {
      if (i < half) continue;
      okData(
        await call('/add/CRCI2', {
          data: {
            conditionRecordSetId: set.id,
            key1: t[0],
            key2: t[1],
            validFrom: '2026-01-01',
            validTo: '2026-12-31',
            conditionValue: i,
          },
        }),
      );
    }
    const found = okData(
      await call(`/conditionrecordset.lookup/${name}`, { data: { keys: TUPLES, date: '2026-06-01' } }),
    );
    assert.deepEqual(
      found.map((x: any) => [x.keys, x.conditionValue]),
      TUPLES.map((t, i) => [t, String(i)]),
    );
    // A load without splicing reports the overlap of every tuple (the probe's signature, the server's,
    // meets the stored one); one with splicing cuts each item of its tuple only.
    const again = TUPLES.map((t) => [set.id, t[0], t[1], '2026-06-01', '2026-06-30', '99']);
    const [plain] = okData(await call('/loaddata/CRCP', { data: { header, data: again } }));
    assert.deepEqual([plain.inserted, plain.invalid], [0, TUPLES.length]);
    const [spliced] = okData(
      await call('/loaddata/CRCP', {
        data: { header, data: again, options: { conditionRecords: { splicing: {} } } },
      }),
    );
    assert.deepEqual([spliced.inserted, spliced.split, spliced.invalid], [TUPLES.length, TUPLES.length, 0]);
    const june = okData(
      await call(`/conditionrecordset.lookup/${name}`, { data: { keys: TUPLES, date: '2026-06-15' } }),
    );
    assert.deepEqual(
      june.map((x: any) => x.conditionValue),
      TUPLES.map(() => '99'),
    );
    // The single-item writers' check (the trigger) sees the overlap by the signature too.
    for (const t of TUPLES) {
      const r = await call('/add/CRCI2', {
        data: {
          conditionRecordSetId: set.id,
          key1: t[0],
          key2: t[1],
          validFrom: '2026-06-10',
          validTo: '2026-06-20',
        },
      });
      assert.equal(r.status, 400, JSON.stringify(t));
      assert.match(JSON.stringify(r.body), /overlaps item/);
    }
  });
});
