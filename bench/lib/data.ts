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

export const skuOf = (i: number): string => `SKU${String(i).padStart(7, '0')}`;

/**
 * `n` rows in HEADER order: label `Product <i>`; attribute1 `v<i mod 1000>` (an indexed TEXT
 * attribute: 1 in 1,000 rows per value); attribute2 a number 0..99,999.99 (an indexed NUMERIC
 * attribute); attribute3..30 random text (attribute5 is the non-indexed filter).
 */
export function generateRows(n: number): Row[] {
  const rand = prng(42);
  return Array.from({ length: n }, (_, i) => [
    skuOf(i + 1),
    `Product ${i + 1}`,
    `v${(i + 1) % 1000}`,
    (Math.floor(rand() * 10_000_000) / 100).toFixed(2),
    ...Array.from({ length: ATTRIBUTES - 2 }, () => `v${Math.floor(rand() * 1e6)}`),
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

/** The attribute meta the bench declares before loading: attribute1 TEXT and attribute2 NUMERIC, indexed. */
export const INDEXED_META = [
  { fieldName: 'attribute1', label: 'Group', fieldType: 'TEXT', indexed: true },
  { fieldName: 'attribute2', label: 'Weight', fieldType: 'NUMERIC', indexed: true },
] as const;

/** One filtered fetch: the API's criteria, the peer's WHERE over `t` ($1 is the partition), the expected matches. */
export interface Filter {
  readonly name: string;
  readonly criteria: object;
  readonly peerWhere: string;
  readonly peerParams: readonly unknown[];
  readonly matches: (r: Row) => boolean;
  /** Whether an index serves it on both sides (the goal differs for a scan). */
  readonly indexed: boolean;
}

const leaf = (fieldName: string, operator: string, more: object) => ({
  _constructor: 'AdvancedCriteria',
  operator: 'and',
  criteria: [{ fieldName, operator, ...more }],
});

/** The five indexed filters and one scan, each answered as a 100-row page with totalRows. */
export function filters(rows: readonly Row[]): Filter[] {
  const n = rows.length;
  const skus = Array.from({ length: 50 }, (_, i) => skuOf(1 + ((i * 7919) % n)));
  const skuSet = new Set(skus);
  const scanValue = rows[Math.floor(n / 2)]![6]!; // attribute5 of a row in the middle
  return [
    {
      name: 'attribute1 equals "v5" (indexed TEXT)',
      criteria: leaf('attribute1', 'equals', { value: 'v5' }),
      peerWhere: 't.attribute1 = $2',
      peerParams: ['v5'],
      matches: (r) => r[2] === 'v5',
      indexed: true,
    },
    {
      name: 'attribute2 between 1000 and 2000 (indexed NUMERIC)',
      criteria: leaf('attribute2', 'betweenInclusive', { start: 1000, end: 2000 }),
      peerWhere: 't.attribute2::numeric BETWEEN $2 AND $3',
      peerParams: [1000, 2000],
      matches: (r) => Number(r[3]) >= 1000 && Number(r[3]) <= 2000,
      indexed: true,
    },
    {
      name: 'label iStartsWith "product 12"',
      criteria: leaf('label', 'iStartsWith', { value: 'product 12' }),
      peerWhere: "lower(t.label) LIKE 'product 12%'",
      peerParams: [],
      matches: (r) => r[1]!.toLowerCase().startsWith('product 12'),
      indexed: true,
    },
    {
      name: 'label iContains "duct 123"',
      criteria: leaf('label', 'iContains', { value: 'duct 123' }),
      peerWhere: "lower(t.label) LIKE '%duct 123%'",
      peerParams: [],
      matches: (r) => r[1]!.toLowerCase().includes('duct 123'),
      indexed: true,
    },
    {
      name: 'sku inSet of 50 skus',
      criteria: leaf('sku', 'inSet', { value: skus }),
      peerWhere: 't.sku = ANY($2)',
      peerParams: [skus],
      matches: (r) => skuSet.has(r[0]!),
      indexed: true,
    },
    {
      name: 'attribute5 equals a value (not indexed: a scan on both sides)',
      criteria: leaf('attribute5', 'equals', { value: scanValue }),
      peerWhere: 't.attribute5 = $2',
      peerParams: [scanValue],
      matches: (r) => r[6] === scanValue,
      indexed: false,
    },
  ];
}

/**
 * Upserts for `/integrate/P` and its peer: every other one updates an existing sku (spread over the
 * table: no sku twice within `n` upserts), the others insert new ones named `prefix` and a number.
 * Each side gets its own sequence.
 */
export function upserts(n: number, prefix = 'NEW'): () => { sku: string; label: string; attribute1: string } {
  let k = 0;
  return () => {
    k++;
    const sku = k % 2 === 0 ? skuOf(1 + ((k * 7919) % n)) : `${prefix}${String(k).padStart(8, '0')}`;
    return { sku, label: `Upserted ${k}`, attribute1: `bench-${k}` };
  };
}
