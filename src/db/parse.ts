// Value parsing shared by both adapters, so that they answer the same JavaScript values.

/** int8 as a JS number while it is exact, as a string beyond 2^53 (never a BigInt: JSON can't hold it). */
export function parseInt8(text: string): number | string {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : text;
}

/** Type OIDs parsed the same way on both adapters. */
export const OID = { INT8: 20, DATE: 1082, NUMERIC: 1700, TIMESTAMP: 1114, TIMESTAMPTZ: 1184 } as const;
