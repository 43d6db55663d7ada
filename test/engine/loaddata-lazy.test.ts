// /loaddata/{TypeCode} with bodies large enough that their rows are parsed as the load reads them
// (src/http/json-rows.ts), over real HTTP on both databases: every row stored as one parse of the
// body would read it, and a malformed row anywhere refuses the call with nothing written, in one
// chunk or several, as a malformed small body is refused.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };
const H = { 'content-type': 'application/json' };

/** Labels that a scan of the text must not split inside: quotes, brackets, commas, escapes. */
const TRICKY = [
  'plain',
  'a "quoted" word',
  'ends with a backslash \\',
  '\\"],["not-a-row", "x"]',
  '{"data": [1, 2]}',
  'line\nbreak\ttab',
  'ünïcødé ✓ 😀',
  '',
  '  ',
  '\\\\"',
];

/** The body's text: the rows, each with a filler so that the body passes the lazy path's size. */
function bodyText(rows: readonly (readonly unknown[])[]): string {
  return JSON.stringify({ data: { header: ['sku', 'label', 'attribute1'], data: rows } });
}

describe('loaddata: large bodies, rows read as the load goes', () => {
  let h: Harness;

  before(async () => {
    h = await startHarness({ env: { RATE_LIMIT_PER_MINUTE: '0' } });
  });
  after(() => h.close());

  const load = (raw: string) => h.call('/loaddata/P', { basic: admin, headers: H, raw });
  async function count(prefix: string): Promise<number> {
    const r = await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM products WHERE partition_id = $1 AND sku LIKE $2`,
      [h.partitionId, `${prefix}%`],
    );
    return r.rows[0]!.n;
  }

  test('every row is stored as one parse of the body reads it', async () => {
    const filler = 'x'.repeat(60);
    const rows = Array.from({ length: 4_000 }, (_, i) => [
      `lz-${String(i).padStart(5, '0')}`,
      TRICKY[i % TRICKY.length],
      `${filler}${i}`,
    ]);
    const raw = bodyText(rows);
    assert.ok(raw.length > 300_000);
    const r = await load(raw);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.response.data[0].inserted, 4_000, r.text);
    const stored = await h.db.query<{ sku: string; label: string; attribute1: string }>(
      `SELECT sku, label, attribute1 FROM products WHERE partition_id = $1 AND sku LIKE 'lz-%' ORDER BY sku`,
      [h.partitionId],
    );
    assert.deepEqual(
      stored.rows.map((x) => [x.sku, x.label, x.attribute1]),
      rows,
    );
  });

  test('a malformed last row refuses the call as a small malformed body is refused; nothing is written', async () => {
    const rows = Array.from({ length: 4_000 }, (_, i) => [`lzb-${i}`, 'y'.repeat(70), String(i)]);
    const good = bodyText(rows);
    // The last row loses its closing bracket's partner: `["lzb-3999","yy…","3999",]`.
    const raw = good.replace(/"3999"\]\]\}\}$/, '"3999",]]}}');
    assert.notEqual(raw, good);
    const r = await load(raw);
    const small = await load('{"data":{"header":["sku"],"data":[["lzb-s",]]}}');
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.response.status, -4);
    assert.deepEqual(r.body.response.errors, small.body.response.errors);
    assert.equal(r.body.response.message, small.body.response.message);
    assert.equal(await count('lzb-'), 0);
  });

  test('several chunks: a malformed row in the last one writes none of them', async () => {
    const rows = Array.from({ length: 10_500 }, (_, i) => [`lzm-${i}`, 'z'.repeat(20), String(i)]);
    const raw = bodyText(rows).replace('"lzm-10400"', '"lzm-10400" "oops"');
    const r = await load(raw);
    assert.equal(r.status, 400, r.text);
    assert.ok(r.body.response.errors.body, r.text);
    assert.equal(await count('lzm-'), 0);
    // The same rows well formed: all of them, in two chunks.
    const ok = await load(bodyText(rows));
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.response.data[0].inserted, 10_500);
  });

  test('a large body the full parser must see (a prototype key) is refused as before', async () => {
    const rows = Array.from({ length: 4_000 }, (_, i) => [`lzp-${i}`, 'p'.repeat(70), String(i)]);
    const raw = bodyText(rows).replace('"header"', '"__proto__":{"x":1},"header"');
    const r = await load(raw);
    assert.equal(r.status, 400, r.text);
    assert.equal(await count('lzp-'), 0);
    // A value that merely names one is data.
    const named = bodyText(rows.map((x, i) => (i === 0 ? [x[0], 'constructor', x[2]] : x)));
    const ok = await load(named);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.response.data[0].inserted, 4_000);
  });
});
