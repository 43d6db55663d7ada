// Batches of many records of a type that allows it (`writesAtOnce`), written by a few statements
// instead of one or two per record, with the same record history and the same answer, in the
// request's order:
// - `/add` and `/integrate` of records named by their business key (and, to integrate, complete):
//   one INSERT or upsert (./write-rows.ts) per run of records that set the same fields, new records'
//   ids in the request's order (writeAtOnce);
// - `/update` and `/integrate` of records named by id (`typedId`): the records locked by one select,
//   checked here, then one UPDATE per set of fields changed (updateAtOnce); `/delete` of records named
//   by id: one DELETE (deleteAtOnce).
// Whatever these paths cannot answer exactly as the record-by-record path does — a record named
// twice, by its key where an id is needed or the other way round, a key that exists already (add),
// a record missing, hidden, not editable or at another version, a value refused, a record lacking
// fields, a statement the database refuses — they leave to that path: nothing is written then (a
// savepoint is rolled back, or nothing was written yet) and the record-by-record path answers,
// naming the element at fault.

import type { Principal } from '../access/access.ts';
import type { Tx } from '../db/db.ts';
import { inSavepoint } from '../db/savepoint.ts';
import { Params, ident } from '../db/sql.ts';
import { AppError } from '../http/errors.ts';
import { canEdit } from './access-check.ts';
import { addressOf } from './addressing.ts';
import { rowScope, selectList, toRecord, type TypeContext } from './context.ts';
import type { FieldDef } from './registry.ts';
import {
  checkVersion,
  lacksRequired,
  leavesDefaulted,
  prepareValues,
  refuseKeyChanges,
} from './value-check.ts';
import { insertRows, written } from './write-rows.ts';

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

/**
 * The stored records `records` name by id (`typedId` or `id`), in their order, locked; undefined
 * when one is named otherwise (or badly), twice, or is not found within the caller's row scope.
 */
async function lockedById(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  records: readonly Obj[],
): Promise<Row[] | undefined> {
  const ids: number[] = [];
  for (const data of records) {
    let address;
    try {
      address = addressOf(tc.type, data);
    } catch (e) {
      if (e instanceof AppError) return undefined;
      throw e;
    }
    if (!address || !('id' in address)) return undefined;
    ids.push(address.id);
  }
  if (new Set(ids).size !== ids.length) return undefined;
  // Locked in the request's order, as the record-by-record path locks them: two batches naming the
  // same records in the same order, one by id and one by key (which lockBatch's locks do not tell
  // apart), wait for each other instead of deadlocking.
  const params = new Params();
  const scope = rowScope(tc, principal, params, 't');
  const r = await tx.query<Row>(
    `SELECT ${selectList(tc)}
       FROM unnest(${params.add(ids)}::bigint[]) WITH ORDINALITY AS r(id, ordinal)
       JOIN ${ident(tc.type.table)} t ON t.id = r.id
      WHERE ${scope} ORDER BY r.ordinal FOR UPDATE OF t`,
    params.values,
  );
  const byId = new Map(r.rows.map((row) => [Number(row.id), row]));
  const olds = ids.map((id) => byId.get(id));
  return olds.every((o) => o !== undefined) ? olds : undefined;
}

/** A record of an update (with its `oldValues`) or of an integrate. */
interface ChangeItem {
  readonly data: Obj;
  readonly oldValues?: Obj | null;
}

/**
 * `/update` (versions checked) or `/integrate` (not) of records named by id: the updated records in
 * the order of `items` (with `oldValues`, the stored ones, when `returnOld`), or undefined when the
 * batch is left to the record-by-record path (nothing written). `tc`: the type's context.
 */
export async function updateAtOnce(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  items: readonly ChangeItem[],
  operation: 'update' | 'integrate',
  returnOld: boolean,
): Promise<Row[] | undefined> {
  const { type } = tc;
  const olds = await lockedById(
    tx,
    tc,
    principal,
    items.map((i) => i.data),
  );
  if (!olds) return undefined;
  // Consecutive records that change the same fields: one statement each, in the request's order.
  const runs: { shape: string; fields: FieldDef[]; rows: Obj[] }[] = [];
  try {
    for (const [i, { data, oldValues }] of items.entries()) {
      const old = olds[i]!;
      // A key the type lets an update move (SX's seller) needs its new parent checked: one by one.
      if (!canEdit(type, principal, old) || type.movableKeys?.some((k) => k in data)) return undefined;
      if (operation === 'update') checkVersion(type, oldValues, old);
      refuseKeyChanges(tc, data, old);
      const values = prepareValues(tc, data, 'update');
      const fields = [...values.keys()].sort((a, b) => a.column.localeCompare(b.column));
      const shape = fields.map((f) => f.column).join(',');
      const row: Obj = { id: Number(old.id) };
      // Values as JSON, read back into the table's column types by jsonb_populate_recordset (a
      // json field's value is its JSON text).
      for (const f of fields) {
        const v = values.get(f);
        row[f.column] = f.type === 'json' && typeof v === 'string' ? JSON.parse(v) : v;
      }
      const last = runs[runs.length - 1];
      if (last?.shape === shape) last.rows.push(row);
      else runs.push({ shape, fields, rows: [row] });
    }
  } catch (e) {
    if (e instanceof AppError) return undefined;
    throw e;
  }
  try {
    return await inSavepoint(tx, 'rc_write_batch', async () => {
      const byId = new Map<number, Row>();
      for (const { fields, rows } of runs) {
        const params = new Params();
        const sets = fields.map((f) => `${ident(f.column)} = v.${ident(f.column)}`);
        sets.push(
          'version = t.version + 1',
          'last_update_at = now()',
          `last_update_by = ${params.add(principal.userId)}`,
        );
        if (type.deleteMode === 'soft') sets.push('deleted_at = NULL');
        const table = ident(type.table);
        const values = `jsonb_populate_recordset(NULL::${table}, ${params.add(JSON.stringify(rows))}::jsonb)`;
        const update = `UPDATE ${table} t SET ${sets.join(', ')}
            FROM ${values} WITH ORDINALITY AS v
           WHERE t.partition_id = ${params.add(principal.partitionId)} AND t.id = v.id`;
        const sql = written(update, tc, principal, params, 'rows', 'v.ordinality');
        const r = await tx.query<Row>(sql, params.values);
        for (const row of r.rows) byId.set(Number(row.id), row);
      }
      if (byId.size !== items.length) throw UNWRITTEN;
      return olds.map((old) => {
        const row = toRecord(tc, byId.get(Number(old.id))!);
        if (returnOld) row.oldValues = toRecord(tc, old);
        return row;
      });
    });
  } catch (e) {
    if (!leftToOneByOne(e)) throw e;
    return undefined;
  }
}

/**
 * `/delete` of records named by id, `oldValues[i]` their versions where given: the deleted records
 * (as they were) in the order of `records`, or undefined when the batch is left to the
 * record-by-record path (nothing written). The caller names the deletes' actor (setDeleteActor).
 */
export async function deleteAtOnce(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  records: readonly Obj[],
  oldValues: readonly (Obj | null)[],
): Promise<Row[] | undefined> {
  const { type } = tc;
  if (records.some((data) => Object.keys(data).some((k) => k !== 'typedId' && !tc.fields.has(k))))
    return undefined;
  const olds = await lockedById(tx, tc, principal, records);
  if (!olds) return undefined;
  try {
    for (const [i, old] of olds.entries()) {
      if (!canEdit(type, principal, old)) return undefined;
      checkVersion(type, oldValues[i], old, false);
    }
  } catch (e) {
    if (e instanceof AppError) return undefined;
    throw e;
  }
  try {
    return await inSavepoint(tx, 'rc_write_batch', async () => {
      const params = new Params();
      const ids = `unnest(${params.add(olds.map((o) => Number(o.id)))}::bigint[]) WITH ORDINALITY AS r(id, ordinal)`;
      const match = `t.partition_id = ${params.add(principal.partitionId)} AND t.id = r.id`;
      const stmt =
        type.deleteMode === 'soft'
          ? `UPDATE ${ident(type.table)} t SET deleted_at = now(), version = t.version + 1, last_update_at = now(),
                    last_update_by = ${params.add(principal.userId)} FROM ${ids} WHERE ${match}`
          : `DELETE FROM ${ident(type.table)} t USING ${ids} WHERE ${match}`;
      const sql = written(stmt, tc, principal, params, 'count', 'r.ordinal');
      const r = await tx.query<{ n: number }>(sql, params.values);
      if (r.rows[0]!.n !== olds.length) throw UNWRITTEN;
      return olds.map((old) => toRecord(tc, old));
    });
  } catch (e) {
    if (!leftToOneByOne(e)) throw e;
    return undefined;
  }
}
