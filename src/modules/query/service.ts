// The query API: `/queryapi.execute` plans a pipeline (./pipeline.ts) and runs it as one SQL
// statement in a read-only transaction, bounded by QUERY_TIMEOUT_SECONDS (on PostgreSQL through
// statement_timeout; PGlite cannot interrupt a statement, so there only the request's deadline
// applies at COMMIT). `/queryapi.meta` describes the source kinds, the partition's tables and their
// columns (type, label from the attribute meta, description), or the result columns of a pipeline.

import type { Principal } from '../../access/access.ts';
import { can } from '../../access/access.ts';
import { AUTHENTICATED, PUBLIC } from '../../access/catalogue.ts';
import type { Config } from '../../config.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { remainingMs } from '../../db/deadline.ts';
import { findType } from '../../engine/registry.ts';
import type { FieldType } from '../../engine/types.ts';
import { AppError, validationError } from '../../http/errors.ts';
import { compileQuery, resultColumns, toRows } from './compile.ts';
import { renamingAsync } from './paths.ts';
import { planQuery, type OutputColumn, type QueryBody } from './pipeline.ts';
import { SOURCE_KINDS, listTables, resolveSource, visibleSets, type Source } from './sources.ts';

export type QuerySettings = Pick<Config, 'queryMaxRows' | 'queryMaxJoins' | 'queryTimeoutSeconds'>;

export interface QueryResult {
  readonly rows: unknown[];
  readonly startRow: number;
  readonly endRow: number;
  readonly totalRows: number;
  readonly columns: OutputColumn[];
}

interface PgError {
  readonly code?: unknown;
}

export async function executeQuery(
  db: Db,
  principal: Principal,
  body: QueryBody,
  settings: QuerySettings,
): Promise<QueryResult> {
  return db.transaction(async (tx) => {
    const plan = await planQuery(tx, principal, body, settings);
    const { sql, params } = compileQuery(plan);
    const limitMs = settings.queryTimeoutSeconds * 1000;
    const left = remainingMs();
    const byLimit = left === undefined || limitMs <= left;
    if (db.kind === 'postgres') {
      await tx.query('SET TRANSACTION READ ONLY');
      const ms = Math.max(1, Math.floor(byLimit ? limitMs : left));
      await tx.query(`SET LOCAL statement_timeout = ${ms}`);
    }
    let rows: Record<string, unknown>[];
    try {
      rows = (await tx.query<Record<string, unknown>>(sql, params)).rows;
    } catch (err) {
      if ((err as PgError).code === '57014' && byLimit) {
        throw new AppError(
          'VALIDATION',
          `The pipeline ran longer than ${settings.queryTimeoutSeconds} s (setting QUERY_TIMEOUT_SECONDS)`,
          { field: 'data' },
        );
      }
      // Only a sum or an average can leave numeric's range (values read as numbers are within it).
      if ((err as PgError).code === '22003') {
        throw validationError('aggregates', 'a sum or average is beyond the range of numbers');
      }
      throw err;
    }
    const r = toRows(plan, rows);
    return {
      rows: r.rows,
      startRow: plan.start,
      endRow: plan.start + r.rows.length,
      totalRows: r.totalRows,
      columns: resultColumns(plan),
    };
  });
}

export interface ColumnMeta {
  readonly name: string;
  readonly type: FieldType;
  readonly label: string | null;
  readonly description: string;
}

export interface TableMeta {
  readonly name: string;
  readonly label: string | null;
  readonly columns: ColumnMeta[];
}

export interface KindMeta {
  readonly kind: string;
  readonly label: string;
  readonly tables: TableMeta[];
}

async function labelsOf(
  q: Queryable,
  partitionId: number,
  owner: string,
  name: string,
): Promise<Map<string, string>> {
  const r = await q.query<{ field: string; label: string | null }>(
    `SELECT field_name AS field, label FROM attribute_meta WHERE partition_id = $1 AND owner_type = $2 AND name = $3`,
    [partitionId, owner, name],
  );
  return new Map(r.rows.filter((x) => x.label !== null).map((x) => [x.field, x.label!]));
}

async function describeSource(
  q: Queryable,
  principal: Principal,
  source: Source,
  label: string | null,
): Promise<TableMeta> {
  const name = source.code.includes(':') ? source.code.slice(source.code.indexOf(':') + 1) : '';
  const meta = source.meta ?? { owner: source.kind, name };
  const labels =
    source.kind === 'LTV'
      ? new Map<string, string>()
      : await labelsOf(q, principal.partitionId, meta.owner, meta.name);
  // `typedId` first, as a select of every field answers it (pipeline.ts addSourceFields).
  const typedId: ColumnMeta[] = source.tc.fields.has('id')
    ? [
        {
          name: 'typedId',
          type: 'string',
          label: null,
          description: `${source.tc.type.label}: typedId (<id>.${source.tc.type.code}, maintained by the server)`,
        },
      ]
    : [];
  const columns = [...source.tc.fields.values()].map((f) => ({
    name: f.name,
    type: f.type,
    label: labels.get(f.name) ?? null,
    description:
      `${source.tc.type.label}: ${f.name}` +
      (f.custom ? ` (custom; type ${f.type}${labels.has(f.name) ? ', from the attribute meta' : ''})` : '') +
      (f.key ? ' (business key)' : '') +
      (f.system ? ' (maintained by the server)' : ''),
  }));
  return { name: source.code, label, columns: [...typedId, ...columns] };
}

function mayFetch(principal: Principal, code: string): boolean {
  const access = findType(code)?.access.fetch;
  return access === AUTHENTICATED || access === PUBLIC || (access !== undefined && can(principal, access));
}

/**
 * A listed table as a source; none when it vanished since it was listed (its last row deleted
 * meanwhile): the call describes what exists, it does not name that table.
 */
async function listedSource(db: Db, principal: Principal, code: string): Promise<Source | undefined> {
  try {
    return await resolveSource(db, principal, code, 'source');
  } catch (err) {
    if (err instanceof AppError && err.code === 'NOT_FOUND' && code.includes(':')) return undefined;
    throw err;
  }
}

/** Every source kind the caller may read, with the partition's tables and their columns. */
export async function describeSources(db: Db, principal: Principal): Promise<KindMeta[]> {
  const tables = await listTables(db, principal);
  const sets = (await visibleSets(db, principal)).map((s) => ({ name: s.unique_name, label: s.label }));
  tables.CRCI = sets;
  tables.CRCIH = sets;
  const out: KindMeta[] = [];
  for (const kind of SOURCE_KINDS) {
    const codes =
      kind in tables
        ? tables[kind]!.map((t) => ({ code: `${kind}:${t.name}`, label: t.label }))
        : [{ code: kind, label: null }];
    if (kind !== 'LTV' && !mayFetch(principal, kind)) continue;
    const described: TableMeta[] = [];
    for (const { code, label } of codes) {
      const source = await listedSource(db, principal, code);
      if (source !== undefined) described.push(await describeSource(db, principal, source, label));
    }
    out.push({
      kind,
      label: kind === 'LTV' ? 'Lookup table values' : findType(kind)!.label,
      tables: described,
    });
  }
  return out;
}

/**
 * The result columns of a pipeline, planned (every check made) but not run. It is `data.pipeline`:
 * its errors are named `pipeline.<path>` (`pipeline.source`), as the route schema's are.
 */
export async function describePipeline(
  db: Db,
  principal: Principal,
  body: QueryBody,
  settings: QuerySettings,
): Promise<OutputColumn[]> {
  const plan = await renamingAsync(
    (key) => `pipeline.${key}`,
    () => planQuery(db, principal, body, settings),
  );
  return resultColumns(plan);
}
