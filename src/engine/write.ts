// Writes of records: add, update, integrate (upsert); delete by address in write-delete.ts. Each validates every value
// (value-check.ts), checks edit rights (access-check.ts) and runs as one transaction — or as one
// statement where that is atomic on its own — with its record history in the same statement.

import type { Principal } from '../access/access.ts';
import { batchTransaction, type Db, type Queryable, type Tx } from '../db/db.ts';
import { runsInTransaction } from '../db/views.ts';
import { Params, ident } from '../db/sql.ts';
import { preparedShape } from '../db/prepared.ts';
import { AppError, elementError, markElement, validationError } from '../http/errors.ts';
import { canEdit, requireWrite } from './access-check.ts';
import {
  addressField,
  addressOf,
  keyText,
  lockBatch,
  recordNotFound,
  requireAddress,
  selectOne,
} from './addressing.ts';
import { loadTypeContext, metaNameOf, requireParentEditable, toRecord, type TypeContext } from './context.ts';
import { trackedFields } from './history.ts';
import { updateAtOnce, writeAtOnce } from './write-batch.ts';
import type { FieldDef, TypeDef } from './registry.ts';
import {
  checkVersion,
  lacksRequired,
  leavesDefaulted,
  prepareValues,
  refuseKeyChanges,
} from './value-check.ts';
import { insertRows, purgeDeletedHolder, withChangeSets, written } from './write-rows.ts';

type Obj = Record<string, unknown>;
type Row = Record<string, unknown>;

/** Contexts per extension table name within one request (attribute types differ per table). */
export function contextCache(q: Queryable, principal: Principal, type: TypeDef) {
  const cache = new Map<string, Promise<TypeContext>>();
  return (data: Obj): Promise<TypeContext> => {
    const name = metaNameOf(type, data) ?? '';
    let c = cache.get(name);
    if (!c) {
      c = loadTypeContext(q, principal, type, type.metaPerName ? name : undefined);
      cache.set(name, c);
    }
    return c;
  };
}

function duplicate(type: TypeDef, data: Obj): AppError {
  const key = type.businessKey.map((k) => `${k}=${JSON.stringify(data[k])}`).join(', ');
  return new AppError('DUPLICATE_KEY', `${type.label} ${key} already exists`, {
    field: type.businessKey[type.businessKey.length - 1]!,
  });
}

/**
 * Names the caller as the actor of the transaction's deletes (`rc.actor`, transaction-local): the
 * database's delete triggers record it (condition record items moved into their history, `CRCIH`).
 */
export async function setDeleteActor(tx: Queryable, principal: Principal): Promise<void> {
  await tx.query(`SELECT set_config('rc.actor', $1, true)`, [String(principal.userId)]);
}

export async function countWritten(tx: Queryable, sql: string, params: Params): Promise<number> {
  const r = await tx.query<{ n: number }>(sql, params.values);
  return r.rows[0]!.n;
}

/**
 * The principal may change (or delete) this stored record: its own `userGroupEdit`, and that of the
 * record it describes (`scopedBy`: a condition record set's attribute meta needs the set editable).
 */
export async function requireEditable(
  q: Queryable,
  principal: Principal,
  tc: TypeContext,
  old: Row,
  verb: 'change' | 'delete',
  /** The field of the request that named the record (`typedId`, `sku`): the 403 names it. */
  field?: string,
): Promise<void> {
  if (!canEdit(tc.type, principal, old)) {
    const message = `Not allowed to ${verb} ${old.typedId as string} (user group)`;
    throw new AppError('FORBIDDEN', message, field === undefined ? {} : { field });
  }
  await requireParentEditable(q, principal, tc.type, old);
}

/** The checks of a record about to be inserted: its parent's user groups (`scopedBy`), then the type's guard. */
async function guardInsert(q: Queryable, principal: Principal, type: TypeDef, data: Obj): Promise<void> {
  await requireParentEditable(q, principal, type, data);
  await type.beforeInsert?.(q, principal, data);
}

/**
 * Writes the elements of a batch in order, each through `one`; an error of element i names it
 * (`2.attribute1`), also when the database refused the write (an overlap of condition record items:
 * `1.validFrom`, named once the error is answered). A record added by an earlier element is not
 * stored once the batch fails (it is rolled back): an error naming it (`item 25.CRCI`) names that
 * element instead; one an earlier element changed is named as that element leaves it (the values the
 * error quotes were never stored either). `added` tells of a written record whether this element
 * created it.
 */
async function eachElement<T extends Obj>(
  type: TypeDef,
  items: readonly T[],
  one: (item: T) => Promise<Row>,
  added: (row: Row) => boolean,
): Promise<Row[]> {
  const out: Row[] = [];
  const created = new Map<string, number>();
  const changed = new Map<string, number>();
  const codes = [...new Set([type.code, type.historyCode ?? type.code])].join('|');
  const named = new RegExp(`\\b(?:item )?(\\d+)\\.(?:${codes})\\b`, 'g');
  const rename = (text: string) =>
    text.replace(named, (whole, id: string) => {
      const j = created.get(id);
      if (j !== undefined) return `element ${j} of this request`;
      const k = changed.get(id);
      return k === undefined ? whole : `${whole} as element ${k} of this request leaves it`;
    });
  for (const [i, item] of items.entries()) {
    const prefix = items.length > 1 ? `${i}.` : '';
    const name = (e: AppError): AppError =>
      prefix === '' && created.size === 0 && changed.size === 0 ? e : elementError(prefix, e, rename);
    let row: Row;
    try {
      row = await one(item);
    } catch (err) {
      if (err instanceof AppError) throw name(err);
      markElement(err, name);
      throw err;
    }
    const id = String(row.id);
    if (added(row)) created.set(id, i);
    else if (!created.has(id)) changed.set(id, i);
    out.push(row);
  }
  return out;
}

/** Add and integrate may write many records of `type` at once: it asks to, and has no per-record hooks. */
export const atOnce = (type: TypeDef): boolean =>
  type.writesAtOnce === true &&
  !type.beforeInsert &&
  !type.beforeChange &&
  !type.changeSets &&
  !type.scopedBy &&
  !type.metaPerName;

export async function addRecords(
  db: Db,
  principal: Principal,
  type: TypeDef,
  items: readonly Obj[],
): Promise<Row[]> {
  requireWrite(principal, type);
  const add = async (q: Queryable, ctx: ReturnType<typeof contextCache>, data: Obj): Promise<Row> => {
    const tc = await ctx(data);
    const values = prepareValues(tc, data, 'add');
    await guardInsert(q, principal, type, data);
    const row = await insertRow(q, tc, principal, values, 'revive-deleted');
    if (!row) throw (await type.duplicateError?.(q, principal, data)) ?? duplicate(type, data);
    return toRecord(tc, row);
  };
  // One record is one INSERT statement, atomic without BEGIN/COMMIT round trips.
  if (items.length === 1) return [await add(db, contextCache(db, principal, type), items[0]!)];
  return inBatch(db, principal, type, items, async (tx) => {
    const ctx = contextCache(tx, principal, type);
    if (atOnce(type)) {
      const rows = await writeAtOnce(tx, await ctx({}), principal, items, 'add');
      if (rows) return rows;
    }
    return eachElement(
      type,
      items,
      (data) => add(tx, ctx, data),
      () => true,
    );
  });
}

/** INSERT of one record (see insertRows); undefined when no row was written. */
async function insertRow(
  tx: Queryable,
  tc: TypeContext,
  principal: Principal,
  values: Map<FieldDef, unknown>,
  onConflict: 'revive-deleted' | 'merge',
): Promise<Row | undefined> {
  return (await insertRows(tx, tc, principal, [values], onConflict))[0];
}

async function updateRow(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  id: number,
  values: Map<FieldDef, unknown>,
) {
  const params = new Params();
  const sets = [...values].map(([f, v]) => `${ident(f.column)} = ${params.add(v)}`);
  sets.push(
    'version = t.version + 1',
    'last_update_at = now()',
    `last_update_by = ${params.add(principal.userId)}`,
  );
  if (tc.type.deleteMode === 'soft') sets.push('deleted_at = NULL');
  const update = `UPDATE ${ident(tc.type.table)} t SET ${sets.join(', ')}
      WHERE t.partition_id = ${params.add(principal.partitionId)} AND t.id = ${params.add(id)}`;
  // Server fields set along (TypeDef.changeSets) are recorded with the tracked ones.
  const server = [...values.keys()].filter((f) => f.system === true);
  const changing =
    server.length === 0 ? undefined : [...trackedFields(tc.type), ...server].map((f) => f.name);
  const r = await tx.query<Row>(
    preparedShape(written(update, tc, principal, params, 'rows', undefined, changing)),
    params.values,
  );
  return r.rows[0]!;
}

/**
 * The type that writes the records and the elements as it takes them: the one named, or the one
 * whose business key addresses them when they name no id (`keyedType`: CRCI items by set, keys and
 * validFrom are CRCI<n>'s).
 */
export async function writer(
  db: Db,
  principal: Principal,
  pathType: TypeDef,
  items: readonly Obj[],
): Promise<{ type: TypeDef; items: readonly Obj[] }> {
  return (await pathType.keyedType?.(db, principal, items)) ?? { type: pathType, items };
}

export interface UpdateItem {
  readonly data: Obj;
  readonly oldValues?: Obj | null;
}

export async function updateRecords(
  db: Db,
  principal: Principal,
  pathType: TypeDef,
  given: readonly UpdateItem[],
  returnOld: boolean,
): Promise<Row[]> {
  requireWrite(principal, pathType);
  const keyed = await writer(
    db,
    principal,
    pathType,
    given.map((i) => i.data),
  );
  const type = keyed.type;
  const items = given.map((item, i) => ({ ...item, data: keyed.items[i]! }));
  return inBatch(
    db,
    principal,
    type,
    items.map((i) => i.data),
    async (tx) => {
      if (items.length > 1 && atOnce(type)) {
        const base = await loadTypeContext(tx, principal, type);
        const rows = await updateAtOnce(tx, base, principal, items, 'update', returnOld);
        if (rows) return rows;
      }
      const one = async (item: UpdateItem): Promise<Row> => {
        const address = requireAddress(type, item.data);
        const base = await loadTypeContext(tx, principal, type);
        const old = await selectOne(tx, base, principal, address, true);
        if (!old) throw recordNotFound(type, address, item.data);
        const tc = type.metaPerName
          ? await loadTypeContext(tx, principal, type, metaNameOf(type, old) ?? '')
          : base;
        await requireEditable(tx, principal, tc, old, 'change', addressField(type, address, item.data));
        checkVersion(item.oldValues, old, type.updateNeedsVersion === true);
        await type.beforeChange?.(tx, principal, old, item.data);
        const movable = 'id' in address ? (type.movableKeys ?? []) : [];
        refuseKeyChanges(tc, item.data, old, movable);
        // A row moved to another parent (SX to another seller) needs that one editable too.
        if (movable.some((k) => k in item.data))
          await requireParentEditable(tx, principal, type, { ...old, ...item.data });
        const values = await withChangeSets(
          tx,
          principal,
          tc,
          old,
          item.data,
          prepareValues(tc, item.data, 'update', movable),
        );
        if (movable.some((k) => k in item.data)) {
          const keyOf = new Map(
            type.uniqueColumns.map((c) => {
              const f = tc.type.fields.find((x) => x.column === c)!;
              return [c, values.has(f) ? values.get(f) : old[f.name]] as const;
            }),
          );
          await purgeDeletedHolder(tx, tc, principal, keyOf);
        }
        const row = await updateRow(tx, tc, principal, Number(old.id), values).catch((err: unknown) => {
          // A key moved onto one that exists (SX's sellerId): the duplicate names the moved key.
          const moved = movable.find((k) => k in item.data);
          if (moved === undefined || (err as { code?: unknown }).code !== '23505') throw err;
          const key = type.businessKey
            .map((k) => `${k}=${JSON.stringify(item.data[k] ?? old[k])}`)
            .join(', ');
          throw new AppError('DUPLICATE_KEY', `${type.label} ${key} already exists`, { field: moved });
        });
        return withOld(toRecord(tc, row), returnOld ? toRecord(tc, old) : undefined);
      };
      return eachElement(type, items as readonly (UpdateItem & Obj)[], one, () => false);
    },
  );
}

/** A batch's transaction: the records it names locked in one order first (lockBatch), run again after a deadlock. */
export function inBatch<T>(
  db: Db,
  principal: Principal,
  type: TypeDef,
  records: readonly Obj[],
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  return batchTransaction(db, async (tx) => {
    await lockBatch(tx, db.kind === 'postgres', type, principal.partitionId, records);
    return fn(tx);
  });
}

function withOld(row: Row, old: Row | undefined): Row {
  if (old !== undefined) row.oldValues = old;
  return row;
}

/**
 * An upsert whose update the row scope refused: 403 for a record the caller sees but may not edit;
 * one hidden from him (its `userGroupViewDetails`) is not found, as `/update` answers, so that
 * hidden business keys cannot be probed.
 */
async function upsertRefused(
  q: Queryable,
  tc: TypeContext,
  principal: Principal,
  key: readonly unknown[],
): Promise<AppError> {
  const seen = await selectOne(q, tc, principal, { key }, false, true);
  return seen
    ? new AppError('FORBIDDEN', `Not allowed to change ${tc.type.label} ${keyText(key)} (user group)`, {
        field: tc.type.businessKey[0] ?? 'typedId',
      })
    : recordNotFound(tc.type, { key });
}

const STALE: unique symbol = Symbol('stale snapshot');

/** Upsert by typedId or business key; partial: unspecified fields keep their values; no version check. */
export async function integrateRecords(
  db: Db,
  principal: Principal,
  pathType: TypeDef,
  given: readonly Obj[],
  returnOld: boolean,
): Promise<Row[]> {
  requireWrite(principal, pathType);
  const { type, items } = await writer(db, principal, pathType, given);
  const only = items.length === 1 ? items[0]! : undefined;
  const byKey = only !== undefined && !returnOld ? addressOf(type, only) : undefined;
  // The common case — one complete record by business key, of a type without state rules — is a
  // single upsert statement, atomic on its own: no BEGIN/COMMIT round trips.
  if (only && byKey && 'key' in byKey && !type.beforeChange && !type.changeSets) {
    const tc = await contextCache(db, principal, type)(only);
    if (!lacksRequired(tc, only) && !leavesDefaulted(tc, only)) {
      const values = prepareValues(tc, only, 'add');
      await guardInsert(db, principal, type, only);
      // Refused as a serialization failure (its history read a snapshot older than the row a
      // concurrent writer left, migration 064): run again below, in a transaction that retries —
      // inside a caller's transaction, aborted by it, the failure ends it (retried whole, pg.ts).
      const row = await insertRow(db, tc, principal, values, 'merge').catch((e: unknown): typeof STALE => {
        if ((e as { code?: unknown }).code === '40001' && !runsInTransaction(db)) return STALE;
        throw e;
      });
      if (row !== STALE) {
        if (!row) throw await upsertRefused(db, tc, principal, byKey.key);
        return [toRecord(tc, row)];
      }
    }
  }
  return inBatch(db, principal, type, items, async (tx) => {
    const ctx = contextCache(tx, principal, type);
    if (items.length > 1 && atOnce(type)) {
      const tc = await ctx({});
      // By business key (new records too), or by id (updates only): each path takes its own batches.
      const rows =
        (returnOld ? undefined : await writeAtOnce(tx, tc, principal, items, 'integrate')) ??
        (await updateAtOnce(
          tx,
          tc,
          principal,
          items.map((data) => ({ data })),
          'integrate',
          returnOld,
        ));
      if (rows) return rows;
    }
    const one = async (data: Obj): Promise<Row> => {
      const address = addressOf(type, data);
      if (!address) {
        if (type.businessKey.length === 0) throw validationError('typedId', 'give typedId');
        // Named: the first key field the data leaves out (key2 of a JSON2 value given only key1).
        const missing = type.businessKey.find(
          (k) => data[k] === undefined || data[k] === null || data[k] === '',
        );
        throw validationError(
          missing ?? type.businessKey[0]!,
          `a new record needs ${type.businessKey.join(' + ')}`,
        );
      }
      // A record without its required fields can only be an update, one without a field the
      // database defaults keeps its stored value, and a type's state rules (beforeChange) and the
      // server fields it sets along (changeSets) depend on the stored record: read it first.
      const readFirst = async () => {
        const tc = await ctx(data);
        return lacksRequired(tc, data) || leavesDefaulted(tc, data);
      };
      if ('id' in address || returnOld || type.beforeChange || type.changeSets || (await readFirst())) {
        const base = await loadTypeContext(tx, principal, type);
        const old = await selectOne(tx, base, principal, address, true, true);
        if (old) {
          const tc = type.metaPerName ? await ctx(old) : base;
          await requireEditable(tx, principal, tc, old, 'change', addressField(type, address, data));
          await type.beforeChange?.(tx, principal, old, data);
          refuseKeyChanges(tc, data, old);
          const wasDeleted = old.__deleted !== null && old.__deleted !== undefined;
          delete old.__deleted;
          const values = await withChangeSets(
            tx,
            principal,
            tc,
            old,
            data,
            prepareValues(tc, data, 'update'),
          );
          const row = await updateRow(tx, tc, principal, Number(old.id), values);
          return withOld(toRecord(tc, row), returnOld ? (wasDeleted ? {} : toRecord(tc, old)) : undefined);
        }
        if ('id' in address) throw recordNotFound(type, address, data);
      }
      const tc = await ctx(data);
      const values = prepareValues(tc, data, 'add');
      await guardInsert(tx, principal, type, data);
      const row = await insertRow(tx, tc, principal, values, 'merge');
      if (!row) throw await upsertRefused(tx, tc, principal, address.key);
      return withOld(toRecord(tc, row), returnOld ? {} : undefined);
    };
    // A record integrate created is at version 0 (an update of an existing one bumps it).
    return eachElement(type, items, one, (row) => row.version === 0);
  });
}
