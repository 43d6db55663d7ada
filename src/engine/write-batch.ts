// `/add` and `/integrate` of many records at once: records of a type that allows it
// (`writesAtOnce`), each named by its business key (and, to integrate, complete), are written by one
// statement per run of records that set the same fields instead of one statement per record — the
// same INSERT or upsert (./write-rows.ts), the same record history, the same answer in the request's
// order, new records' ids in that order.
// Whatever this path cannot answer exactly as the record-by-record path does — a key named twice (to
// integrate: the second record updates the first; to add: a duplicate), a key that exists already
// (add), a record named by id or lacking fields, a value refused, a record the caller may not edit,
// a statement the database refuses — it leaves to that path: nothing is written then (a savepoint is
// rolled back) and the record-by-record path answers, naming the element at fault.

import type { Principal } from '../access/access.ts';
import type { Tx } from '../db/db.ts';
import { inSavepoint } from '../db/savepoint.ts';
import { AppError } from '../http/errors.ts';
import { addressOf } from './addressing.ts';
import { toRecord, type TypeContext } from './context.ts';
import type { FieldDef } from './registry.ts';
import { lacksRequired, leavesDefaulted, prepareValues } from './value-check.ts';
import { insertRows } from './write-rows.ts';

type Obj = Record<string, unknown>;
type Row = Record<string, unknown>;

/** Bind parameters per statement: PostgreSQL takes at most 65,535. */
const MAX_PARAMS = 60_000;
/** Thrown in the savepoint when a record came back unwritten (the batch is then undone). */
const UNWRITTEN = new Error('write-batch: a record was not written');
/** What a key that exists does: nothing (add: a duplicate), or the upsert's update (integrate). */
const CONFLICT = { add: 'revive-deleted', integrate: 'merge' } as const;

/**
 * Whether the record-by-record path answers after `e`: a record left unwritten, a value refused, a
 * statement the database refused. The deadline (or a statement it cut, 57014) and any other error
 * end the request.
 */
function leftToOneByOne(e: unknown): boolean {
  if (e === UNWRITTEN || e instanceof AppError) return true;
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && code !== '57014';
}

/**
 * The added (`add`) or upserted (`integrate`) records in the order of `items`, or undefined when the
 * batch is left to the record-by-record path (nothing written). `tc`: the type's context (no meta per
 * record).
 */
export async function writeAtOnce(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  items: readonly Obj[],
  operation: 'add' | 'integrate',
): Promise<Row[] | undefined> {
  const keyFields = tc.type.businessKey.map((k) => tc.fields.get(k)!);
  const keyOf = (values: readonly unknown[]) => JSON.stringify(values.map(String));
  // Consecutive records that set the same fields: one statement each (or more, past MAX_PARAMS), in
  // the request's order, so that new records get their ids in that order, as one by one.
  const runs: { shape: string; rows: Map<FieldDef, unknown>[] }[] = [];
  const order: string[] = [];
  const seen = new Set<string>();
  for (const data of items) {
    let values: Map<FieldDef, unknown>;
    try {
      const address = addressOf(tc.type, data);
      if (!address || !('key' in address)) return undefined;
      if (operation === 'integrate' && (lacksRequired(tc, data) || leavesDefaulted(tc, data)))
        return undefined;
      values = prepareValues(tc, data, 'add');
    } catch (e) {
      if (e instanceof AppError) return undefined;
      throw e;
    }
    const key = keyOf(keyFields.map((f) => values.get(f)));
    if (seen.has(key)) return undefined;
    seen.add(key);
    order.push(key);
    const shape = [...values.keys()]
      .map((f) => f.name)
      .sort()
      .join(',');
    const last = runs[runs.length - 1];
    if (last?.shape === shape) last.rows.push(values);
    else runs.push({ shape, rows: [values] });
  }
  try {
    return await inSavepoint(tx, 'rc_write_batch', async () => {
      const byKey = new Map<string, Row>();
      for (const { rows } of runs) {
        const per = Math.max(1, Math.floor(MAX_PARAMS / (rows[0]!.size + 1)));
        for (let i = 0; i < rows.length; i += per) {
          const written = await insertRows(tx, tc, principal, rows.slice(i, i + per), CONFLICT[operation]);
          for (const row of written) byKey.set(keyOf(tc.type.businessKey.map((k) => row[k])), row);
        }
      }
      // A record came back unwritten — one the caller may not edit, or (add) one that exists: the
      // other path says which, and why.
      if (byKey.size !== order.length) throw UNWRITTEN;
      return order.map((key) => toRecord(tc, byKey.get(key)!));
    });
  } catch (e) {
    if (!leftToOneByOne(e)) throw e;
    return undefined; // nothing written: the savepoint was rolled back
  }
}
