// Product competition (PCOMP) as the logic engine reads it: per product and competitor, the latest
// row dated on or before the evaluation date, for many products in one statement, and such a row as
// a logic record. Every statement is scoped by partition_id first.

import type { Queryable } from '../../db/db.ts';
import { prepared } from '../../db/prepared.ts';
import { D, RecordValue, parseIsoDate } from '../../logic/values.ts';
import { recordOf } from './master-store.ts';

type Row = Record<string, unknown>;

/**
 * Product competition rows (PCOMP) of many products at a date: per product and competitor, the
 * latest row dated on or before it (one statement; the unique key serves it).
 */
export async function competitionRows(
  q: Queryable,
  partitionId: number,
  skus: readonly string[],
  date: string,
): Promise<Row[]> {
  const r = await q.query<Row>(
    prepared(`SELECT DISTINCT ON (c.sku, c.competitor) c.* FROM product_competition c
      WHERE c.partition_id = $1 AND c.sku = ANY($2::text[]) AND c.competition_date <= $3::date
      ORDER BY c.sku, c.competitor, c.competition_date DESC`),
    [partitionId, skus, date],
  );
  return r.rows;
}

/** A competition row as a logic record: `price` a decimal (never compared as text). */
export function competitionRecord(row: Row): RecordValue {
  const rec = recordOf('PCOMP', row, new Map());
  const fields: Record<string, unknown> = { ...rec.fields };
  if (typeof fields.price === 'string') fields.price = new D(fields.price);
  if (typeof fields.competitionDate === 'string')
    fields.competitionDate = parseIsoDate(fields.competitionDate) ?? fields.competitionDate;
  return new RecordValue(fields, rec.ref);
}
