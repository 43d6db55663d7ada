// Batches of many records of a type that allows it (`writesAtOnce`), written by a few statements
// instead of one or two per record, with the same record history and the same answer, in the
// request's order:
// - `/add` and `/integrate` of records named by their business key (and, to integrate, complete):
//   one INSERT or upsert (./write-rows.ts) per run of records that set the same fields, new records'
//   ids in the request's order (writeAtOnce);
// - `/update` and `/integrate` of existing records named all by id (`typedId`) or all by key: the
//   records locked by one select in the request's order, checked here, then one UPDATE per run of
//   records changing the same fields (updateAtOnce); `/delete` of such records: one DELETE
//   (deleteAtOnce).
// Whatever these paths cannot answer exactly as the record-by-record path does — a record named
// twice, records named both ways or (add, integrate of new records) by id, a key that exists (add),
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
import { addressOf, type Address } from './addressing.ts';
import { rowScope, selectList, toRecord, type TypeContext } from './context.ts';
import type { FieldDef } from './registry.ts';
import {
  checkValue,
  checkVersion,
  lacksRequired,
  leavesDefaulted,
  prepareValues,
  refuseKeyChanges,
  refuseOtherKey,
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
 * The stored records `records` name — all by id (`typedId` or `id`), or all by a business key of
 * text fields — in their order, locked; undefined when they are named otherwise (or badly), one is
 * named twice, or one is not found within the caller's row scope.
 */
async function lockedRecords(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  records: readonly Obj[],
): Promise<Row[] | undefined> {
  const { type } = tc;
  const addresses: Address[] = [];
  for (const data of records) {
    try {
      const address = addressOf(type, data);
      if (!address) return undefined;
      addresses.push(address);
    } catch (e) {
      if (e instanceof AppError) return undefined;
      throw e;
    }
  }
  const keyFields = type.businessKey.map((k) => tc.fields.get(k)!);
  const byId = addresses.every((a) => 'id' in a);
  // By key: text keys, each a value the key's field takes (text no column takes, as a NUL, would
  // fail the statement; the record-by-record path names it).
  const keyTaken = (a: Address) =>
    'key' in a &&
    keyFields.every(
      (f, i) => f.type === 'string' && !f.caseless && typeof checkValue(f, a.key[i]) !== 'string',
    );
  if (!byId && !addresses.every(keyTaken)) return undefined;
  // How a record is named: its id, or its key's values as text (as the key's equality compares them).
  const nameOf = (values: readonly unknown[]) => JSON.stringify(values.map(String));
  const names = addresses.map((a) => ('id' in a ? String(a.id) : nameOf(a.key)));
  if (new Set(names).size !== names.length) return undefined;
  // Locked in the request's order, as the record-by-record path locks them: two batches naming the
  // same records in the same order, one by id and one by key (which lockBatch's locks do not tell
  // apart), wait for each other instead of deadlocking.
  const params = new Params();
  const columns = byId ? ['id'] : keyFields.map((f) => f.column);
  const arrays = byId
    ? [`${params.add(addresses.map((a) => ('id' in a ? a.id : 0)))}::bigint[]`]
    : keyFields.map(
        (_, i) => `${params.add(addresses.map((a) => ('key' in a ? String(a.key[i]) : '')))}::text[]`,
      );
  const scope = rowScope(tc, principal, params, 't');
  const r = await tx.query<Row>(
    `SELECT ${selectList(tc)}
       FROM unnest(${arrays.join(', ')}) WITH ORDINALITY AS r(${columns.map((_, i) => `c${i}`).join(', ')}, ordinal)
       JOIN ${ident(type.table)} t ON ${columns.map((c, i) => `t.${ident(c)} = r.c${i}`).join(' AND ')}
      WHERE ${scope} ORDER BY r.ordinal FOR UPDATE OF t`,
    params.values,
  );
  const found = new Map(
    r.rows.map((row) => [byId ? String(row.id) : nameOf(type.businessKey.map((k) => row[k])), row]),
  );
  const olds = names.map((name) => found.get(name));
  return olds.every((o) => o !== undefined) ? olds : undefined;
}

/** A record of an update (with its `oldValues`) or of an integrate. */
interface ChangeItem {
  readonly data: Obj;
  readonly oldValues?: Obj | null;
}

/**
 * `/update` (versions checked) or `/integrate` (not) of existing records (lockedRecords): the updated
 * records in the order of `items` (with `oldValues`, the stored ones, when `returnOld`), or undefined
 * when the batch is left to the record-by-record path (nothing written). `tc`: the type's context.
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
  const olds = await lockedRecords(
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
      if (operation === 'update') checkVersion(oldValues, old, type.updateNeedsVersion === true);
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
 * `/delete` of records (lockedRecords), `oldValues[i]` their versions where given: the deleted records
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
  const olds = await lockedRecords(tx, tc, principal, records);
  if (!olds) return undefined;
  try {
    for (const [i, old] of olds.entries()) {
      if (!canEdit(type, principal, old)) return undefined;
      checkVersion(oldValues[i], old, false);
      refuseOtherKey(tc, records[i]!, old);
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
