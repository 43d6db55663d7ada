// The SQL of imports that the generic engine does not cover: creating an import with its generated
// uniqueName, the set-based upsert of staged changes (by their identity: change type, target
// column, keys), and marking validation states. Reads, mass edits and mass deletes of changes go
// through the engine (type IMC).

import type { Queryable } from '../../db/db.ts';
import { notFound, validationError } from '../../http/errors.ts';
import { IMPORT_KEY_COUNT } from '../../engine/registry-imports.ts';

export interface ImportRow {
  readonly id: number;
  readonly unique_name: string;
  readonly target_type: string;
  readonly lookup_table: string | null;
  readonly status: string;
}

export interface ChangeRow {
  readonly id: number;
  readonly change_type: 'ADD' | 'UPDATE' | 'DELETE';
  readonly target_column: string;
  readonly keys: string[];
  readonly value: string | null;
  readonly row_number: number | null;
}

/** A change to stage: keys in the target type's key order. */
export interface NewChange {
  readonly changeType: string;
  readonly targetColumn: string;
  readonly keys: readonly string[];
  readonly value: string | null;
  readonly rowNumber: number | null;
}

export function parseImportId(v: unknown): number {
  const text = typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim() : '';
  const m = /^(\d{1,15})(?:\.([A-Z]+))?$/.exec(text);
  if (!m || (m[2] !== undefined && m[2] !== 'IM')) {
    throw validationError('typedId', `${JSON.stringify(v)} is not an id or typedId of an import (…IM)`);
  }
  return Number(m[1]);
}

/** `LOADING` while its file is staged chunk by chunk (then `DRAFT`: see `markLoaded`). */
export async function insertImport(
  q: Queryable,
  partitionId: number,
  userId: number,
  i: {
    label: string | null;
    targetType: string;
    lookupTable: string | null;
    fileName: string | null;
    status: 'LOADING' | 'DRAFT';
  },
): Promise<number> {
  const r = await q.query<{ id: number }>(
    `INSERT INTO imports (partition_id, id, unique_name, label, target_type, lookup_table, file_name,
                          status, created_by, last_update_by)
     SELECT $1, n, 'IM-' || n, $2, $3, $4, $5, $7, $6, $6
       FROM (SELECT nextval(pg_get_serial_sequence('imports', 'id')) AS n) s
     RETURNING id`,
    [partitionId, i.label, i.targetType, i.lookupTable, i.fileName, userId, i.status],
  );
  return Number(r.rows[0]!.id);
}

/** Its file staged: `DRAFT`. False when the import is gone (deleted while it loaded). */
export async function markLoaded(q: Queryable, partitionId: number, id: number): Promise<boolean> {
  const r = await q.query(
    `UPDATE imports SET status = 'DRAFT' WHERE partition_id = $1 AND id = $2 AND status = 'LOADING'`,
    [partitionId, id],
  );
  return r.rowCount > 0;
}

/**
 * `lock`: FOR UPDATE by a submit, FOR SHARE by a write of its changes (see `changingImport` in
 * ./service.ts); the status read is then the one committed last.
 */
export async function findImportOrFail(
  q: Queryable,
  partitionId: number,
  id: number,
  lock?: 'FOR UPDATE' | 'FOR SHARE',
): Promise<ImportRow> {
  const r = await q.query<ImportRow>(
    `SELECT id, unique_name, target_type, lookup_table, status FROM imports
      WHERE partition_id = $1 AND id = $2${lock === undefined ? '' : ` ${lock}`}`,
    [partitionId, id],
  );
  if (!r.rows[0]) throw notFound(`Import ${id}`, 'typedId');
  return { ...r.rows[0], id: Number(r.rows[0].id) };
}

const KEYS = Array.from({ length: IMPORT_KEY_COUNT }, (_, i) => `key${i + 1}`);

/**
 * Stages changes in one statement; a change whose identity is already staged gets the new value
 * (and is NEW again), as does one given twice (the later wins). Answers the ids in input order.
 */
export async function upsertChanges(
  q: Queryable,
  partitionId: number,
  importId: number,
  userId: number,
  given: readonly NewChange[],
): Promise<number[]> {
  if (given.length === 0) return [];
  // One row per identity (an upsert may not touch a row twice): the later change, where it stood first.
  const slot = new Map<string, number>();
  const changes: NewChange[] = [];
  const slots = given.map((c) => {
    const id = JSON.stringify([c.changeType, c.targetColumn, ...c.keys]);
    let n = slot.get(id);
    if (n === undefined) slot.set(id, (n = changes.push(c) - 1));
    else changes[n] = c;
    return n;
  });
  const rows = changes.map((c) => ({
    c: c.changeType,
    t: c.targetColumn,
    v: c.value,
    n: c.rowNumber,
    ...Object.fromEntries(KEYS.map((k, i) => [k, c.keys[i] ?? ''])),
  }));
  const r = await q.query<{ id: number }>(
    `INSERT INTO import_changes (partition_id, import_id, change_type, target_column, ${KEYS.join(', ')},
                                 value, row_number, created_by, last_update_by)
     SELECT $1, $2, e->>'c', e->>'t', ${KEYS.map((k) => `e->>'${k}'`).join(', ')}, e->>'v', (e->>'n')::int, $3, $3
       FROM jsonb_array_elements($4::jsonb) WITH ORDINALITY AS x(e, ord)
      ORDER BY ord
     ON CONFLICT (partition_id, import_id, change_type, target_column, ${KEYS.join(', ')})
     DO UPDATE SET value = EXCLUDED.value, row_number = coalesce(EXCLUDED.row_number, import_changes.row_number),
                   validation_state = 'NEW', message = NULL, version = import_changes.version + 1,
                   last_update_at = now(), last_update_by = EXCLUDED.last_update_by
     RETURNING id`,
    [partitionId, importId, userId, JSON.stringify(rows)],
  );
  const ids = r.rows.map((x) => Number(x.id));
  return slots.map((n) => ids[n]!);
}

export async function changesOf(q: Queryable, partitionId: number, importId: number): Promise<ChangeRow[]> {
  const r = await q.query<ChangeRow & { id: string | number }>(
    `SELECT id, change_type, target_column, ARRAY[${KEYS.join(', ')}] AS keys, value, row_number
       FROM import_changes WHERE partition_id = $1 AND import_id = $2 ORDER BY id`,
    [partitionId, importId],
  );
  return r.rows.map((row) => ({ ...row, id: Number(row.id) }));
}

/** Every change VALID except the given ones, INVALID with their reason: one statement. */
export async function markValidation(
  q: Queryable,
  partitionId: number,
  importId: number,
  invalid: ReadonlyMap<number, string>,
): Promise<void> {
  await q.query(
    `UPDATE import_changes c
        SET validation_state = CASE WHEN m.msg IS NULL THEN 'VALID' ELSE 'INVALID' END, message = m.msg
       FROM (SELECT i.id, x.msg FROM import_changes i
               LEFT JOIN jsonb_to_recordset($3::jsonb) AS x(id bigint, msg text) ON x.id = i.id
              WHERE i.partition_id = $1 AND i.import_id = $2) m
      WHERE c.partition_id = $1 AND c.id = m.id`,
    [partitionId, importId, JSON.stringify([...invalid].map(([id, msg]) => ({ id, msg })))],
  );
}

export async function setImportState(
  q: Queryable,
  partitionId: number,
  id: number,
  userId: number,
  status: 'DRAFT' | 'APPLIED' | 'FAILED',
  messages: unknown,
): Promise<void> {
  await q.query(
    `UPDATE imports SET status = $3, messages = $4::jsonb,
            applied_at = CASE WHEN $3 = 'APPLIED' THEN now() ELSE applied_at END,
            version = version + 1, last_update_at = now(), last_update_by = $5
      WHERE partition_id = $1 AND id = $2`,
    [partitionId, id, status, JSON.stringify(messages), userId],
  );
}
