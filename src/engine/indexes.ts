// Indexes on custom attributes, kept in step with the attribute meta's `indexed` flag. An index
// matches exactly the SQL the criteria compiler (criteria/compile.ts) emits for the attribute's declared type:
//   TEXT / LINK          (partition_id, col NULLS FIRST)              equals, inSet, ranges, sort
//                        (partition_id, lower(col) text_pattern_ops)  iEquals, (i)StartsWith
//                        gin (lower(col) gin_trgm_ops)                (i)Contains, (i)EndsWith
//   NUMERIC / MONEY / PERCENT / INTEGER   (partition_id, rc_try_numeric(col) NULLS FIRST) INCLUDE (col, id)
//   DATE                 (partition_id, rc_try_date(col) NULLS FIRST) INCLUDE (col, id)
//   DATETIME             (partition_id, rc_try_timestamptz(col) NULLS FIRST) INCLUDE (col, id)
//   BOOLEAN              (partition_id, rc_try_boolean(col) NULLS FIRST) INCLUDE (col, id)
// NULLS FIRST: the order of a sort (nulls lowest, criteria/sort.ts) read forwards, and read backwards
// the order of a descending one; an index in the default order (nulls last) served neither, and a
// sorted page read and sorted every row of the partition.
// A typed index carries the stored text and the row id too (INCLUDE): PostgreSQL answers a query
// from an expression index alone (an index-only scan) only when the index holds every column the
// query names, and the filter names `col` inside the cast. So the count of a page's totalRows, and
// the ids of the page itself, come from the index alone (`FieldDef.indexCovers`; the page then reads
// only its own rows: src/engine/fetch.ts). The text indexes do not: `(partition_id, col)` holds `col`
// already, and the others would halve the longest text they can take.
// Tables are shared by all partitions, so an index is too: it serves every partition that declares
// the same attribute with the same type as indexed, and it stays while any partition still does.
// Their names (`rcx_<table>_<column>_<kind>`) say what they are; `syncIndexes` compares the indexes
// the meta asks for with the `rcx_` indexes that exist, by name and by definition as PostgreSQL
// prints it (an index an older version built from another definition is built again), and creates
// or drops the difference
// (CONCURRENTLY on PostgreSQL, outside any transaction; plainly on PGlite). It runs as the job
// INDEX_SYNC (src/modules/admin/indexes.ts), queued when attribute meta changes.

import type { Db, Queryable } from '../db/db.ts';
import { ident } from '../db/sql.ts';
import type { TypeContext } from './context.ts';
import { ATTRIBUTE_TYPES, allTypes } from './registry.ts';
import type { FieldType } from './types.ts';

export interface IndexSpec {
  readonly name: string;
  /** `USING … (…)`: what follows `ON <table>`. */
  readonly body: string;
}

/** Name prefix of the indexes this file manages; the migrations' own indexes are `rc_*`. */
export const MANAGED_PREFIX = 'rcx_';

const TYPED: Partial<Record<FieldType, { readonly fn: string; readonly kind: string }>> = {
  integer: { fn: 'rc_try_numeric', kind: 'num' },
  decimal: { fn: 'rc_try_numeric', kind: 'num' },
  date: { fn: 'rc_try_date', kind: 'date' },
  datetime: { fn: 'rc_try_timestamptz', kind: 'ts' },
  boolean: { fn: 'rc_try_boolean', kind: 'bool' },
};

/** The indexes an indexed attribute of `type` needs on `table.column`. */
export function attributeIndexes(table: string, column: string, type: FieldType): IndexSpec[] {
  const col = ident(column);
  const name = (kind: string): string => {
    const n = `${MANAGED_PREFIX}${table}_${column}_${kind}`;
    ident(n); // a plain name: table and column come from the registry
    if (n.length > 63) throw new Error(`index name ${n} is too long`);
    return n;
  };
  if (type === 'string') {
    return [
      { name: name('eq'), body: `USING btree (partition_id, ${col} NULLS FIRST)` },
      { name: name('lower'), body: `USING btree (partition_id, lower(${col}) text_pattern_ops)` },
      { name: name('trgm'), body: `USING gin (lower(${col}) gin_trgm_ops)` },
    ];
  }
  const typed = TYPED[type];
  return typed
    ? [
        {
          name: name(typed.kind),
          body: `USING btree (partition_id, ${typed.fn}(${col}) NULLS FIRST) INCLUDE (${col}, id)`,
        },
      ]
    : [];
}

/** Tables with custom attributes, and the type codes (attribute-meta owners) stored in each. */
export function attributeTables(): ReadonlyMap<string, readonly string[]> {
  const out = new Map<string, string[]>();
  for (const t of allTypes()) {
    if (t.attributeMeta === undefined) continue;
    out.set(t.table, [...(out.get(t.table) ?? []), t.code]);
  }
  return out;
}

/**
 * What every partition's attribute meta asks for on `table` (a maintenance read across partitions),
 * or, given `partitionId`, what that partition's asks for.
 */
export async function wantedIndexes(
  q: Queryable,
  table: string,
  partitionId?: number,
): Promise<Map<string, IndexSpec>> {
  const owners = attributeTables().get(table);
  if (owners === undefined) throw new Error(`${table} has no custom attributes`);
  const r = await q.query<{ field_name: string; field_type: string }>(
    `SELECT DISTINCT field_name, field_type FROM attribute_meta
      WHERE indexed AND owner_type = ANY($1::text[]) AND ($2::bigint IS NULL OR partition_id = $2)`,
    [owners, partitionId ?? null],
  );
  const out = new Map<string, IndexSpec>();
  for (const row of r.rows) {
    const type = ATTRIBUTE_TYPES[row.field_type];
    if (type === undefined || !/^attribute\d+$/.test(row.field_name)) continue;
    for (const spec of attributeIndexes(table, row.field_name, type)) out.set(spec.name, spec);
  }
  return out;
}

interface ExistingIndex {
  readonly name: string;
  readonly valid: boolean;
  /** As PostgreSQL prints it: `CREATE INDEX <name> ON <table> USING ...`. */
  readonly definition: string;
}

async function managedIndexes(q: Queryable, table: string): Promise<ExistingIndex[]> {
  const r = await q.query<ExistingIndex>(
    `SELECT c.relname AS name, i.indisvalid AS valid, pg_get_indexdef(c.oid) AS definition
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = $1::regclass AND starts_with(c.relname, $2)`,
    [table, MANAGED_PREFIX],
  );
  return r.rows;
}

/**
 * The attribute columns of `table` that managed indexes hold, whichever partition's meta asked for
 * them (one being built concurrently too: it takes every write already). A value of such a column
 * must fit an index entry in every partition, since the table is shared.
 */
export async function indexedColumns(q: Queryable, table: string): Promise<ReadonlySet<string>> {
  const r = await q.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = $1::regclass AND starts_with(c.relname, $2)`,
    [table, `${MANAGED_PREFIX}${table}_`],
  );
  const prefix = `${MANAGED_PREFIX}${table}_`.length;
  const out = new Set<string>();
  for (const { name } of r.rows) {
    // (A trigram index holds trigrams, not the text: it takes any length.)
    const m = /^(attribute\d+)_([a-z]+)$/.exec(name.slice(prefix));
    if (m !== null && m[2] !== 'trgm') out.add(m[1]!);
  }
  return out;
}

/** `tc` with the fields stored in `columns` marked as bound by an index entry's size (value-check.ts). */
export function boundByIndexes(tc: TypeContext, columns: ReadonlySet<string>): TypeContext {
  const bound = [...tc.fields.values()].filter((f) => columns.has(f.column) && !f.searchIndexed);
  if (bound.length === 0) return tc;
  const fields = new Map(tc.fields);
  for (const f of bound) fields.set(f.name, { ...f, indexEntryBound: true });
  return { ...tc, fields };
}

export interface SyncResult {
  readonly created: readonly string[];
  readonly dropped: readonly string[];
  /**
   * Indexes the database could not build, with its reason (a stored value too large for a btree
   * entry, SQLSTATE 54000, say): the others are built all the same, and filters work without them.
   */
  readonly failed: readonly { readonly name: string; readonly reason: string }[];
}

/**
 * What a sync of `table` would do: drop the managed indexes that are invalid (a concurrent build that
 * failed), built from another definition, or no longer asked for; create those missing.
 */
async function syncPlan(
  q: Queryable,
  table: string,
): Promise<{ wanted: Map<string, IndexSpec>; drop: string[]; create: IndexSpec[] }> {
  const wanted = await wantedIndexes(q, table);
  const existing = await managedIndexes(q, table);
  // PostgreSQL prints the body without the quotes `ident` puts around plain names.
  const current = (e: ExistingIndex) => {
    const body = wanted.get(e.name)?.body;
    return e.valid && body !== undefined && e.definition.endsWith(` ${body.replaceAll('"', '')}`);
  };
  const have = new Set(existing.filter(current).map((e) => e.name));
  const drop = existing.filter((e) => !current(e)).map((e) => e.name);
  return { wanted, drop, create: [...wanted.values()].filter((s) => !have.has(s.name)) };
}

/**
 * Creates the indexes the meta asks for and drops those it no longer does; an invalid one, or one
 * built from another definition, is dropped and built again. `step` is told before each statement
 * (job progress). Idempotent; the syncs of one table run one after another in this process, and one of
 * another node at the same time is tolerated (IF [NOT] EXISTS; an index found built after an error stays).
 */
export async function syncIndexes(
  db: Db,
  table: string,
  step: (done: number, total: number, what: string) => Promise<void> = async () => {},
): Promise<SyncResult> {
  // One sync of a table at a time in this process: every change of attribute meta queues a job, and
  // jobs run in parallel. Two syncs planned from the same catalog both built the same index, the
  // one that failed dropped it, and it stopped before the table's other indexes. Each sync waits for
  // the one before and plans afresh.
  let chains = syncing.get(db);
  if (!chains) syncing.set(db, (chains = new Map<string, Promise<void>>()));
  const before = chains.get(table) ?? Promise.resolve();
  const mine = before.then(() => syncTable(db, table, step));
  const settled = mine.then(
    () => {},
    () => {},
  );
  chains.set(table, settled);
  void settled.then(() => {
    if (chains.get(table) === settled) chains.delete(table);
  });
  return mine;
}

/** Syncs running or waiting per table (`syncIndexes`): the last one's settlement. */
const syncing = new WeakMap<Db, Map<string, Promise<void>>>();

/** Whether `name` exists as a valid (completely built) index. */
async function validIndex(q: Queryable, name: string): Promise<boolean> {
  const r = await q.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`,
    [name],
  );
  return r.rows[0]?.valid === true;
}

async function syncTable(
  db: Db,
  table: string,
  step: (done: number, total: number, what: string) => Promise<void>,
): Promise<SyncResult> {
  const { wanted, drop, create } = await syncPlan(db, table);
  const concurrently = db.kind === 'postgres' ? ' CONCURRENTLY' : '';
  const total = drop.length + create.length;
  let done = 0;
  for (const name of drop) {
    await step(done++, total, `drop ${name}`);
    await db.query(`DROP INDEX${concurrently} IF EXISTS ${ident(name)}`);
  }
  const created: string[] = [];
  const failed: { name: string; reason: string }[] = [];
  for (const spec of create) {
    await step(done++, total, `create ${spec.name}`);
    try {
      await db.query(
        `CREATE INDEX${concurrently} IF NOT EXISTS ${ident(spec.name)} ON ${ident(table)} ${spec.body}`,
      );
      created.push(spec.name);
    } catch (err) {
      const { code, message } = err as { code?: unknown; message?: unknown };
      if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) throw err;
      // Built all the same (another node's sync built it meanwhile): it stays.
      if (await validIndex(db, spec.name)) {
        created.push(spec.name);
        continue;
      }
      // One index the data does not allow must not keep the others from being built (the whole
      // table's sync, every partition's attribute meta): its leftover (an invalid index after a
      // failed concurrent build) goes, and the next sync tries again.
      failed.push({ name: spec.name, reason: `${code}: ${typeof message === 'string' ? message : ''}` });
      await db.query(`DROP INDEX${concurrently} IF EXISTS ${ident(spec.name)}`);
    }
  }
  return { created, dropped: drop.filter((n) => !wanted.has(n)), failed };
}

/**
 * Syncs every table whose managed indexes are not what the meta asks for (at start-up: indexes an
 * older version built from another definition). Answers what each such table's sync did.
 */
export async function syncOutdatedIndexes(db: Db): Promise<Map<string, SyncResult>> {
  const out = new Map<string, SyncResult>();
  for (const table of attributeTables().keys()) {
    const { drop, create } = await syncPlan(db, table);
    if (drop.length > 0 || create.length > 0) out.set(table, await syncIndexes(db, table));
  }
  return out;
}

export interface IndexInfo {
  readonly name: string;
  /** The index definition as PostgreSQL prints it. */
  readonly definition: string;
  /** Managed from the attribute meta (`rcx_`), rather than made by a migration. */
  readonly managed: boolean;
  readonly valid: boolean;
  readonly sizeBytes: number;
  /** Index scans since statistics were last reset (`pg_stat_user_indexes.idx_scan`). */
  readonly scans: number;
}

interface IndexRow {
  name: string;
  definition: string | null;
  valid: boolean;
  size: number | string | null;
  scans: number | string | null;
}

const LIST_INDEXES = `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition, i.indisvalid AS valid,
            pg_relation_size(i.indexrelid) AS size, s.idx_scan AS scans
       FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid
       LEFT JOIN pg_stat_user_indexes s ON s.indexrelid = i.indexrelid
      WHERE i.indrelid = $1::regclass
      ORDER BY c.relname`;

/** How often a listing that met an index being dropped is read again. */
const LIST_ATTEMPTS = 5;

/**
 * An index dropped between the statement's snapshot and pg_get_indexdef's catalog look-up (a
 * concurrent sync): "cache lookup failed for attribute … of relation …" (XX000).
 */
const droppedMeanwhile = (e: unknown) =>
  (e as { code?: unknown }).code === 'XX000' && /cache lookup failed/.test((e as Error).message);

/** Every index of `table` with its size and how often queries used it. */
export async function listIndexes(q: Queryable, table: string): Promise<IndexInfo[]> {
  let rows: IndexRow[] | undefined;
  for (let attempt = 1; rows === undefined; attempt++) {
    try {
      rows = (await q.query<IndexRow>(LIST_INDEXES, [table])).rows;
    } catch (e) {
      if (attempt >= LIST_ATTEMPTS || !droppedMeanwhile(e)) throw e;
    }
  }
  // An index dropped while this ran (a concurrent sync) has no definition any more: leave it out.
  return rows
    .filter((x) => x.definition !== null)
    .map((x) => ({
      name: x.name,
      definition: x.definition!,
      managed: x.name.startsWith(MANAGED_PREFIX),
      valid: x.valid,
      sizeBytes: Number(x.size ?? 0),
      scans: Number(x.scans ?? 0),
    }));
}
