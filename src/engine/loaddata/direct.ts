// Bulk loads, stage 4, the direct path of an insert-only chunk (no join fields): COPY the rows
// straight into the type's table, then write their record history. With history on, the rows get ids
// drawn from the table's identity before the COPY, so the history statement takes the new rows'
// ids, keys and view groups from the load itself instead of reading 10,000 rows back by key.

import type { Principal } from '../../access/access.ts';
import type { Db, Tx } from '../../db/db.ts';
import { Params, ident, qualified } from '../../db/sql.ts';
import { parentsEditable, type TypeContext } from '../context.ts';
import { addedColumnsRead, historyCte, historyEnabled, trackedFields } from '../history.ts';
import { SQL_TYPE } from '../types.ts';
import type { LoadPlan } from './plan.ts';
import type { ChunkCheck, ValidRow } from './check.ts';
import { PIECE_ROWS, csvLine } from './merge-sql.ts';

/** What the direct path answers: the rows inserted (undefined: the chunk takes the merge). */
export interface DirectOutcome {
  readonly updated: 0;
  readonly inserted: number;
  readonly errors: [];
}

/** What a table's new rows get without the writer (the schema changes only with migrations). */
interface Defaults {
  /**
   * Columns with a default (identity and generated ones too); every column (`'*'`) for a table with
   * a BEFORE INSERT row trigger, which may set any of them.
   */
  readonly columns: ReadonlySet<string>;
  /** The sequence of the table's `id` identity, when it has one. */
  readonly idSequence: string | undefined;
  /** The default of `version` when it is a whole number (what a new row's history records). */
  readonly version: number | undefined;
}

const defaultsOf = new Map<string, Defaults>();

async function defaultsFor(db: Db, table: string): Promise<Defaults> {
  let known = defaultsOf.get(table);
  if (known === undefined) {
    const r = await db.query<{ c: string; d: string | null }>(
      `SELECT column_name AS c, column_default AS d FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = $1
          AND (column_default IS NOT NULL OR is_identity = 'YES' OR is_generated <> 'NEVER')
       UNION ALL
       SELECT '*', NULL FROM pg_trigger
        WHERE tgrelid = to_regclass($1) AND NOT tgisinternal AND tgtype & 7 = 7
       UNION ALL
       SELECT '.id', pg_get_serial_sequence(quote_ident(table_name::text), 'id') FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = $1 AND column_name = 'id' AND is_identity = 'YES'`,
      [table],
    );
    const version = r.rows.find((x) => x.c === 'version')?.d;
    known = {
      columns: new Set(r.rows.filter((x) => !x.c.startsWith('.')).map((x) => x.c)),
      idSequence: r.rows.find((x) => x.c === '.id')?.d ?? undefined,
      version:
        version !== undefined && version !== null && /^\d+$/.test(version) ? Number(version) : undefined,
    };
    defaultsOf.set(table, known);
  }
  return known;
}

/**
 * The names of the tracked fields a COPY of these rows sets (non-null), in the order record history
 * lists them, when they are the same for every row and no tracked field outside the header has a
 * default; else undefined (the history's SQL then tests each field of each row).
 */
function sameFieldsSet(
  plan: LoadPlan,
  rows: readonly ValidRow[],
  defaulted: ReadonlySet<string>,
): string[] | undefined {
  const tracked = trackedFields(plan.type);
  const at = new Map(plan.header.map((f, i) => [f.name, i]));
  if (defaulted.has('*') || tracked.some((f) => !at.has(f.name) && defaulted.has(f.column))) return undefined;
  const columns = tracked.flatMap((f) => (at.has(f.name) ? [at.get(f.name)!] : []));
  const first = rows[0];
  if (first === undefined) return undefined;
  for (const r of rows) {
    for (const i of columns) if ((r.values[i] === null) !== (first.values[i] === null)) return undefined;
  }
  return tracked.filter((f) => at.has(f.name) && first.values[at.get(f.name)!] !== null).map((f) => f.name);
}

/**
 * The written rows as the history of an ADD reads them (`addedColumnsRead`), from the load itself:
 * the ids drawn for them and their header values; undefined when one of those columns would take a
 * default the load cannot know (the history then reads the rows back).
 */
function loadedRowsSql(
  plan: LoadPlan,
  principal: Principal,
  defaults: Defaults,
): ((p: Params, rows: readonly ValidRow[], ids: readonly string[]) => string) | undefined {
  const { type } = plan;
  const version = defaults.version;
  if (defaults.idSequence === undefined || version === undefined || defaults.columns.has('*'))
    return undefined;
  const at = new Map(plan.header.map((f, i) => [f.column, i]));
  const columns = addedColumnsRead(type);
  const unknown = columns.some(
    (c) => !['partition_id', 'id', 'version'].includes(c) && !at.has(c) && defaults.columns.has(c),
  );
  if (unknown) return undefined;
  return (p, rows, ids) => {
    const arrays = [`${p.add(ids.slice(0, rows.length))}::bigint[]`];
    const names = ['id'];
    const select = columns.map((c) => {
      if (c === 'partition_id') return `${p.add(principal.partitionId)}::bigint AS partition_id`;
      if (c === 'version') return `${version}::integer AS version`;
      if (c === 'id') return 'u.id';
      const f = type.fields.find((x) => x.column === c)!;
      const i = at.get(c);
      if (i === undefined) return `NULL::${SQL_TYPE[f.type]} AS ${ident(c)}`;
      arrays.push(`${p.add(rows.map((r) => r.values[i]))}::${SQL_TYPE[f.type]}[]`);
      names.push(ident(c));
      return qualified('u', c);
    });
    return `SELECT ${select.join(', ')} FROM unnest(${arrays.join(', ')}) AS u(${names.join(', ')})`;
  };
}

/** `n` ids of the table's identity sequence, for rows written with explicit ids. */
async function drawIds(tx: Tx, sequence: string, n: number): Promise<string[]> {
  if (n === 0) return []; // (array_agg of no rows is NULL)
  const r = await tx.query<{ ids: string }>(
    `SELECT array_agg(nextval($1::regclass))::text AS ids FROM generate_series(1, $2::integer)`,
    [sequence, n],
  );
  return r.rows[0]!.ids.slice(1, -1).split(',');
}

/**
 * COPY the rows straight into the target — no staging table, no merge. A business key that exists
 * already (live or soft-deleted, or just inserted by a concurrent load) fails the COPY with a unique
 * violation, which rolls this attempt back whole; the answer is then undefined and the chunk takes
 * the merge path, which reports or replaces those rows. (Checking the keys first cost a probe per row
 * of every chunk, to spare only loads that repeat keys without join fields.)
 */
export async function insertDirectly(
  db: Db,
  plan: LoadPlan,
  principal: Principal,
  base: TypeContext,
  check: ChunkCheck,
  /** LoadLimits' `beforeChunk`, first in the chunk's transaction. */
  beforeChunk?: (tx: Tx) => Promise<void>,
): Promise<DirectOutcome | undefined> {
  const { type } = plan;
  if (plan.missingForInsert !== undefined || type.fixed !== undefined) return undefined;
  // Rows describing a parent record (scopedBy) need it editable; the merge's SQL names those that
  // do not, so a chunk with one goes there (the COPY rolled back). The scoped field's values:
  const scoped = plan.header.findIndex((f) => f.column === type.scopedBy?.column);
  /**
   * The chunk's rows in the table (alias `t`): by the ids drawn for them, or else by their business
   * keys. Both as `= ANY(array)`: the primary key or the key's unique index probes them, and a plan
   * made without statistics of the partition (its first load) still tests each row against a hashed
   * list. A semi-join on `unnest` of the keys was planned then as a nested loop comparing every row
   * with every key: 14 s for a first chunk of 10,000 rows. Keys of several columns keep the semi-join.
   */
  const ofChunk = (p: Params, rows: readonly ValidRow[], ids: readonly string[] | undefined) => {
    const partition = p.add(principal.partitionId);
    const table = `${ident(type.table)} t WHERE t.partition_id = ${partition} AND`;
    if (ids) return `${table} t.id = ANY(${p.add(ids.slice(0, rows.length))}::bigint[])`;
    const keys = plan.key.map((i) => {
      const f = plan.header[i]!;
      return {
        col: qualified('t', f.column),
        list: `${p.add(rows.map((r) => r.values[i]))}::${SQL_TYPE[f.type]}[]`,
      };
    });
    if (keys.length === 1) return `${table} ${keys[0]!.col} = ANY(${keys[0]!.list})`;
    return `${table} (${keys.map((k) => k.col).join(', ')}) IN
           (SELECT * FROM unnest(${keys.map((k) => k.list).join(', ')}))`;
  };
  const defaults = historyEnabled() ? await defaultsFor(db, type.table) : undefined;
  const loaded = defaults && loadedRowsSql(plan, principal, defaults);
  // The history of the new rows: from the load (`loaded`, with the ids drawn for them) when the
  // fields set are the same for every row; else the rows read back by key, all their columns.
  const recorded = (history: Params, rows: readonly ValidRow[], ids: readonly string[] | undefined) => {
    const names = sameFieldsSet(plan, rows, defaults!.columns);
    const setFields = names === undefined ? undefined : `${history.add(names)}::text[]`;
    // Read back: only the columns the history reads when the fields set are the same for every row
    // (10,000 rows of a wide table, all columns, spilled to disk on PostgreSQL).
    const readBack = () => {
      const read = names === undefined ? ['t.*'] : addedColumnsRead(type).map((c) => qualified('t', c));
      return `SELECT ${read.join(', ')} FROM ${ofChunk(history, rows, ids)}`;
    };
    const written = names !== undefined && loaded && ids ? loaded(history, rows, ids) : readBack();
    return `WITH w AS (${written}),
    ${historyCte('h', 'w', { tc: base, principal, params: history, kind: 'add', setFields })}
    SELECT 1 AS done`;
  };
  const prefix = [principal.partitionId, principal.userId, principal.userId];
  try {
    return await db.transaction(async (tx: Tx) => {
      await beforeChunk?.(tx);
      const columns = ['partition_id', 'created_by', 'last_update_by', ...plan.header.map((f) => f.column)];
      const ids = loaded ? await drawIds(tx, defaults.idSequence!, check.size) : undefined;
      let next = 0;
      await tx.copyFrom(
        type.table,
        ids ? ['id', ...columns] : columns,
        check.pieces((r) => csvLine(ids ? [ids[next++]!, ...prefix] : prefix, r.values), PIECE_ROWS),
      );
      const rows = check.valid; // every row is checked once the COPY has taken its pieces
      if (
        scoped >= 0 &&
        !(await parentsEditable(
          tx,
          principal,
          type,
          rows.map((r) => r.values[scoped]),
        ))
      )
        throw new ParentRefused();
      if (defaults && rows.length > 0) {
        const history = new Params();
        await tx.query(recorded(history, rows, ids), history.values);
      }
      return { inserted: rows.length, updated: 0, errors: [] };
    });
  } catch (err) {
    // A key another transaction holds (a duplicate, or a deadlock over keys two loads insert in other
    // orders): the merge, which upserts and runs again after a deadlock, takes the chunk.
    const code = (err as { code?: unknown }).code;
    if (err instanceof ParentRefused || code === '23505' || code === '40P01') return undefined;
    throw err;
  }
}

/** A direct insert's chunk names a parent record the principal may not change: the merge answers it. */
class ParentRefused extends Error {}
