// The bench's product rows, generated once (deterministic) and shaped for each consumer: JSON bodies
// for `/loaddata/P`, CSV for the COPY peer, and the filter both fetch sides run.

export const ATTRIBUTES = 30;
export const HEADER: readonly string[] = [
  'sku',
  'label',
  ...Array.from({ length: ATTRIBUTES }, (_, i) => `attribute${i + 1}`),
];
export const CHUNK_ROWS = 10_000;
export const PAGE_ROWS = 100;

export type Row = readonly string[];

/** mulberry32: a small seeded PRNG, so every run loads the same values. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ['alpha', 'bravo', 'charlie', 'delta'];
export const skuOf = (i: number): string => `SKU${String(i).padStart(7, '0')}`;

/** `n` rows in HEADER order: attribute1 starts with `a` in a quarter of them, label holds `1` in ~45%. */
export function generateRows(n: number): Row[] {
  const rand = prng(42);
  return Array.from({ length: n }, (_, i) => [
    skuOf(i + 1),
    `Product ${i + 1}`,
    `${WORDS[Math.floor(rand() * WORDS.length)]}-${Math.floor(rand() * 1e6)}`,
    ...Array.from({ length: ATTRIBUTES - 1 }, () => `v${Math.floor(rand() * 1e6)}`),
  ]);
}

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function loaddataBody(rows: readonly Row[]): string {
  return JSON.stringify({ data: { header: HEADER, data: rows, options: { detectJoinFields: false } } });
}

const csvField = (v: string): string => (/[",\n\r]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);

/** CSV without header, `prefix` (the partition id) as the first column of every row. */
export function csv(rows: readonly Row[], prefix: string): string {
  return rows.map((r) => [prefix, ...r].map(csvField).join(',') + '\n').join('');
}

/** The fetch filter: `attribute1 startsWith 'a'` AND `label iContains '1'`. */
export const FETCH_CRITERIA = {
  _constructor: 'AdvancedCriteria',
  operator: 'and',
  criteria: [
    { fieldName: 'attribute1', operator: 'startsWith', value: 'a' },
    { fieldName: 'label', operator: 'iContains', value: '1' },
  ],
} as const;

export const fetchMatches = (rows: readonly Row[]): number =>
  rows.filter((r) => r[2]!.startsWith('a') && r[1]!.toLowerCase().includes('1')).length;

/**
 * Single-record upserts for `/integrate/P` and its peer: every other one updates an existing sku
 * (spread over the table), the others insert new ones. Each side gets its own sequence.
 */
export function upserts(n: number): () => { sku: string; label: string; attribute1: string } {
  let k = 0;
  return () => {
    k++;
    const sku = k % 2 === 0 ? skuOf(1 + ((k * 7919) % n)) : `NEW${String(k).padStart(8, '0')}`;
    return { sku, label: `Upserted ${k}`, attribute1: `bench-${k}` };
  };
}
