// How a write or a fetch names one record: `typedId`, `id`, or the whole business key; and the
// select of that record within the principal's row scope.

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { Params, ident, qualified } from '../db/sql.ts';
import { preparedShape } from '../db/prepared.ts';
import { AppError, validationError } from '../http/errors.ts';
import { parseId } from './record-id.ts';
import { notOfType } from './values.ts';
import { checkValue } from './value-check.ts';
import { rowScope, selectList, type TypeContext } from './context.ts';
import type { TypeDef } from './registry.ts';

type Obj = Record<string, unknown>;
type Row = Record<string, unknown>;

export type Address = { readonly id: number } | { readonly key: readonly unknown[] };

export { parseId } from './record-id.ts';

/**
 * The record a path names (`/fetch/{TypeCode}/{id}`): its id or typedId, or — the interface lets an
 * operation address a record by its business key — the key of a type keyed by one text field
 * (`/fetch/P/A-1`, `/fetch/RRG/<uniqueName>`). Digits are always an id.
 */
export function pathAddress(type: TypeDef, text: string, field: string): Address {
  if (/^\d{1,15}$/.test(text)) return { id: parseId(type, text, field) };
  const [k] = type.businessKey;
  const f = type.businessKey.length === 1 ? type.fields.find((x) => x.name === k) : undefined;
  const byKey =
    f !== undefined && f.type === 'string' && text !== '' && typeof checkValue(f, text) !== 'string';
  // `<digits>.<code>` is a typedId of this type, or else (`1.C`, `2.5`) a key that looks like one.
  if (/^\d{1,15}\.[A-Za-z0-9]+$/.test(text)) {
    try {
      return { id: parseId(type, text, field) };
    } catch (e) {
      if (!byKey) throw e;
    }
  }
  // Digits with blanks around them (` 1`) are a key where the type has one (a sku may be ` 1`): read
  // as the id, they named another record. A type without such a key takes them as the id.
  return byKey ? { key: [text] } : { id: parseId(type, text, field) };
}

/**
 * A record is addressed by `typedId`, `id`, or its whole business key; a type without one (jobs,
 * notifications, ...) by its id alone.
 */
export function addressOf(type: TypeDef, data: Obj): Address | undefined {
  if (data.typedId !== undefined && data.typedId !== null)
    return { id: parseId(type, data.typedId, 'typedId') };
  if (data.id !== undefined && data.id !== null) return { id: parseId(type, data.id, 'id') };
  // A number past a double (1e400 parses to Infinity) names no key: as text it was "Infinity".
  for (const k of type.businessKey) {
    const v = data[k];
    if (typeof v === 'number' && !Number.isFinite(v)) {
      const f = type.fields.find((x) => x.name === k)!;
      throw validationError(k, notOfType(f.type, v, String(v)));
    }
  }
  const given = (v: unknown) => (typeof v === 'string' && v !== '') || typeof v === 'number';
  if (type.businessKey.length > 0 && type.businessKey.every((k) => given(data[k]))) {
    return { key: type.businessKey.map((k) => data[k]) };
  }
  return undefined;
}

/** How a 404 names the record asked for: its typedId, or its business key as given (`Product MB-1`). */
export function describeAddress(type: TypeDef, a: Address): string {
  return 'id' in a ? `${type.label} ${a.id}.${type.code}` : `${type.label} ${keyText(a.key)}`;
}

/** A business key in a message: its value, or its values joined by ` / ` (a lookup table's name and key). */
export function keyText(key: readonly unknown[]): string {
  return key.map(String).join(' / ');
}

/**
 * A record a request names that is not there (or hidden from the caller): a 404 naming the field
 * that named it — `typedId` or `id` as given in `data`, else the business key's first field.
 */
export function recordNotFound(type: TypeDef, a: Address, data: Obj = {}): AppError {
  return new AppError('NOT_FOUND', `${describeAddress(type, a)} not found`, {
    field: addressField(type, a, data),
  });
}

/** The field of `data` that gave its address `a`: `typedId` or `id` as given, else the business key's first. */
export function addressField(type: TypeDef, a: Address, data: Obj): string {
  const given = ['typedId', 'id'].find((k) => data[k] !== undefined && data[k] !== null);
  return given ?? ('id' in a ? 'typedId' : (type.businessKey[0] ?? 'typedId'));
}

export function requireAddress(type: TypeDef, data: Obj): Address {
  const a = addressOf(type, data);
  if (!a) {
    const key = type.businessKey.length > 0 ? ` or ${type.businessKey.join(' + ')}` : '';
    throw validationError('typedId', `give typedId${key}`);
  }
  return a;
}

/** A decimal key value as checkValue stores it, in its one form (`2.50` names the key `2.5`). */
function keyParam(tc: TypeContext, name: string, v: unknown): unknown {
  const f = tc.fields.get(name)!;
  if (!f.key || f.type !== 'decimal') return v;
  const stored = checkValue(f, v);
  return typeof stored === 'string' ? v : stored.value;
}

export async function selectOne(
  q: Queryable,
  tc: TypeContext,
  principal: Principal,
  address: Address,
  forUpdate: boolean,
  includeDeleted = false,
): Promise<Row | undefined> {
  const params = new Params();
  const scope = rowScope(tc, principal, params, 't', { includeDeleted });
  const match =
    'id' in address
      ? `t.id = ${params.add(address.id)}`
      : tc.type.businessKey
          .map((k, i) => {
            const f = tc.fields.get(k)!;
            const value = params.add(keyParam(tc, k, address.key[i]));
            return f.caseless
              ? `lower(${qualified('t', f.column)}) = lower(${value})`
              : `${qualified('t', f.column)} = ${value}`;
          })
          .join(' AND ');
  const extra = includeDeleted && tc.type.deleteMode === 'soft' ? ', t.deleted_at AS "__deleted"' : '';
  // Prepared (PostgreSQL): one text per type and address kind, a lookup by a unique key whose plan
  // does not depend on the values.
  const r = await q.query<Row>(
    preparedShape(
      `SELECT ${selectList(tc)}${extra} FROM ${ident(tc.type.table)} t WHERE ${scope} AND ${match}${forUpdate ? ' FOR UPDATE' : ''}`,
    ),
    params.values,
  );
  return r.rows[0];
}

/**
 * Most record locks one batch takes (lockBatch); a batch naming more locks its type's table instead.
 * PostgreSQL keeps advisory locks in its shared lock table (`max_locks_per_transaction` × connections,
 * 6,400 by default): a batch locking 30,000 records ran out of it ("out of shared memory", a 500) and
 * so could every transaction of the server at that moment.
 */
const RECORD_LOCKS_MAX = 128;

/**
 * PostgreSQL, before a batch writes: transaction-level advisory locks taken in one order by every
 * batch, so two batches that name the same records in other orders wait for each other instead of
 * deadlocking halfway. A batch of up to RECORD_LOCKS_MAX records takes its type's table lock shared,
 * then one lock per record it names (by id, or by business key — a key not stored yet included), in
 * sorted order; a larger batch takes the table lock alone, exclusive (it waits for the small batches
 * of the type and they for it). A record named by id in one batch and by key in the other is not
 * covered: such a deadlock is broken by PostgreSQL and the batch run again (batchTransaction), at the
 * cost of `deadlock_timeout`. PGlite runs one transaction at a time: nothing to order.
 */
export async function lockBatch(
  tx: Queryable,
  postgres: boolean,
  type: TypeDef,
  partitionId: number,
  items: readonly Obj[],
): Promise<void> {
  if (!postgres || items.length < 2) return;
  const names = new Set<string>();
  for (const data of items) {
    let a: Address | undefined;
    try {
      a = addressOf(type, data);
    } catch {
      continue; // the element's own write answers its bad address
    }
    if (a !== undefined) names.add('id' in a ? `#${a.id}` : JSON.stringify(a.key.map(String)));
  }
  const table = `rc_batch:${partitionId}:${type.table}`;
  if (names.size > RECORD_LOCKS_MAX) {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [table]);
    return;
  }
  // The table's lock first, then the records' in the order of their keys (the subquery's order).
  await tx.query(
    `SELECT CASE WHEN s.n IS NULL THEN pg_advisory_xact_lock_shared(s.k) ELSE pg_advisory_xact_lock(s.k) END
       FROM (SELECT NULL AS n, hashtextextended($1, 0) AS k
             UNION ALL
             SELECT * FROM (SELECT DISTINCT n, hashtextextended($1 || ':' || n, 0) AS k FROM unnest($2::text[]) n) r
              ORDER BY n NULLS FIRST, k) s`,
    [table, [...names]],
  );
}
