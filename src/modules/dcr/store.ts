// The SQL of data change requests that the generic engine does not cover: creating a DCR with its
// generated uniqueName, status changes, and the set-based insert of many items at once. Reads of
// DCRs, items and mass changes go through the engine (types DCR, DCRI, DCRM).

import type { Queryable } from '../../db/db.ts';
import { notFound, validationError } from '../../http/errors.ts';

export interface DcrRow {
  readonly partition_id: number;
  readonly id: number;
  readonly unique_name: string;
  readonly label: string | null;
  readonly dcr_type: string;
  readonly target_type: string;
  readonly lookup_table: string | null;
  readonly status: string;
  readonly workflow_status: string;
  readonly created_by: number | null;
  readonly submitted_by: number | null;
  /** The DCR's current job (DCR_SUBMIT): the async submit's, or the apply's above the threshold. */
  readonly job_id: number | null;
  readonly version: number;
}

export interface DcrTypeRow {
  readonly unique_name: string;
  readonly target_type: string;
  readonly lookup_table: string | null;
  readonly fields: string | null;
}

export interface ItemRow {
  readonly id: number;
  readonly change_type: 'ADD' | 'UPDATE' | 'DELETE';
  readonly target_id: number | null;
  readonly target_version: number | null;
  readonly target_key: string[];
  readonly proposed: Record<string, unknown>;
  readonly original: Record<string, unknown> | null;
  readonly version: number;
}

export interface MassOpRow {
  readonly id: number;
  readonly label: string | null;
  readonly filter: unknown;
  readonly operations: unknown;
  readonly version: number;
}

/** An id or typedId (`12.DCR`) of type `code`. */
export function parseDcrId(v: unknown, code = 'DCR', field = 'id'): number {
  const text = typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim() : '';
  const m = /^(\d{1,15})(?:\.([A-Z0-9]+))?$/.exec(text);
  if (!m || (m[2] !== undefined && m[2] !== code)) {
    throw validationError(field, `${JSON.stringify(v)} is not an id or typedId of type ${code}`);
  }
  return Number(m[1]);
}

export async function dcrTypeByName(
  q: Queryable,
  partitionId: number,
  name: string,
): Promise<DcrTypeRow | undefined> {
  const r = await q.query<DcrTypeRow>(
    `SELECT unique_name, target_type, lookup_table, fields FROM dcr_types
      WHERE partition_id = $1 AND unique_name = $2`,
    [partitionId, name],
  );
  return r.rows[0];
}

export async function insertDcr(
  q: Queryable,
  partitionId: number,
  userId: number,
  t: DcrTypeRow,
  label: string | null,
): Promise<number> {
  // The uniqueName is the id's: the identity value is drawn first, so one statement does both.
  const r = await q.query<{ id: number }>(
    `INSERT INTO dcrs (partition_id, id, unique_name, label, dcr_type, target_type, lookup_table,
                       created_by, last_update_by)
     SELECT $1, n, 'DCR-' || n, $2, $3, $4, $5, $6, $6
       FROM (SELECT nextval(pg_get_serial_sequence('dcrs', 'id')) AS n) s
     RETURNING id`,
    [partitionId, label, t.unique_name, t.target_type, t.lookup_table, userId],
  );
  return Number(r.rows[0]!.id);
}

export async function findDcrOrFail(
  q: Queryable,
  partitionId: number,
  id: number,
  forUpdate = false,
): Promise<DcrRow> {
  const r = await q.query<DcrRow>(
    `SELECT * FROM dcrs WHERE partition_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    [partitionId, id],
  );
  const row = r.rows[0];
  if (!row) throw notFound(`DCR ${id}`, 'id');
  return row;
}

export async function setDcrState(
  q: Queryable,
  partitionId: number,
  id: number,
  userId: number,
  s: {
    status: string;
    workflowStatus?: string;
    messages?: unknown;
    submitted?: boolean;
    applied?: boolean;
    /** A job id to record; null forgets the current one (a synchronous submit). */
    jobId?: number | null;
    submittedBy?: number;
    /** Only when the DCR is in this state (a failed apply must not overwrite another outcome). */
    from?: string;
  },
): Promise<void> {
  await q.query(
    `UPDATE dcrs SET status = $3, workflow_status = coalesce($4, workflow_status),
            messages = CASE WHEN $5::text IS NULL THEN messages ELSE $5::jsonb END,
            submitted_at = CASE WHEN $6 THEN now() ELSE submitted_at END,
            applied_at = CASE WHEN $7 THEN now() ELSE applied_at END,
            job_id = CASE WHEN $12 THEN NULL ELSE coalesce($8, job_id) END, submitted_by = coalesce($11, submitted_by),
            version = version + 1, last_update_at = now(), last_update_by = $9
      WHERE partition_id = $1 AND id = $2 AND ($10::text IS NULL OR status = $10)`,
    [
      partitionId,
      id,
      s.status,
      s.workflowStatus ?? null,
      s.messages === undefined ? null : JSON.stringify(s.messages),
      s.submitted === true,
      s.applied === true,
      s.jobId ?? null,
      userId,
      s.from ?? null,
      s.submittedBy ?? null,
      s.jobId === null,
    ],
  );
}

export interface NewItem {
  readonly changeType: 'ADD' | 'UPDATE' | 'DELETE';
  readonly targetId: number | null;
  readonly targetVersion: number | null;
  readonly targetKey: readonly string[];
  readonly proposed: Record<string, unknown>;
  readonly original: Record<string, unknown> | null;
}

/** Many items in one statement (a JSON array unpacked by the database). */
export async function insertItems(
  q: Queryable,
  partitionId: number,
  dcrId: number,
  userId: number,
  items: readonly NewItem[],
): Promise<{ id: number; key: string }[]> {
  const r = await q.query<{ id: number; key: string }>(
    `INSERT INTO dcr_items (partition_id, dcr_id, change_type, target_id, target_version, target_key,
                            proposed, original, created_by, last_update_by)
     SELECT $1, $2, e->>'changeType', (e->>'targetId')::bigint, (e->>'targetVersion')::int,
            e->'targetKey', e->'proposed', CASE WHEN e->'original' = 'null'::jsonb THEN NULL ELSE e->'original' END,
            $3, $3
       FROM jsonb_array_elements($4::jsonb) WITH ORDINALITY AS x(e, n)
      ORDER BY n
     ON CONFLICT (partition_id, dcr_id, target_key) DO NOTHING
     RETURNING id, target_key::text AS key`,
    [partitionId, dcrId, userId, JSON.stringify(items)],
  );
  return r.rows.map((x) => ({ id: Number(x.id), key: x.key }));
}

/** The item of a DCR that targets the record with this key (jsonb equality), if any. */
export async function itemIdByKey(
  q: Queryable,
  partitionId: number,
  dcrId: number,
  key: unknown,
): Promise<number | undefined> {
  const r = await q.query<{ id: number }>(
    `SELECT id FROM dcr_items WHERE partition_id = $1 AND dcr_id = $2 AND target_key = $3::jsonb`,
    [partitionId, dcrId, JSON.stringify(key)],
  );
  return r.rows[0] === undefined ? undefined : Number(r.rows[0].id);
}

export async function itemsOf(
  q: Queryable,
  partitionId: number,
  dcrId: number,
  ids?: readonly number[],
): Promise<ItemRow[]> {
  const r = await q.query<ItemRow>(
    `SELECT id, change_type, target_id, target_version, target_key, proposed, original, version
       FROM dcr_items WHERE partition_id = $1 AND dcr_id = $2 ${ids ? 'AND id = ANY($3::bigint[])' : ''}
      ORDER BY id`,
    ids ? [partitionId, dcrId, ids] : [partitionId, dcrId],
  );
  return r.rows.map((row) => ({
    ...row,
    id: Number(row.id),
    target_id: row.target_id === null ? null : Number(row.target_id),
  }));
}

export async function massOpsOf(
  q: Queryable,
  partitionId: number,
  dcrId: number,
  ids?: readonly number[],
): Promise<MassOpRow[]> {
  const r = await q.query<MassOpRow>(
    `SELECT id, label, filter, operations, version FROM dcr_massops
      WHERE partition_id = $1 AND dcr_id = $2 ${ids ? 'AND id = ANY($3::bigint[])' : ''} ORDER BY id`,
    ids ? [partitionId, dcrId, ids] : [partitionId, dcrId],
  );
  return r.rows.map((row) => ({ ...row, id: Number(row.id) }));
}

export async function updateItem(
  q: Queryable,
  partitionId: number,
  id: number,
  userId: number,
  proposed: Record<string, unknown>,
  rebased?: { readonly version: number; readonly original: Record<string, unknown> },
): Promise<void> {
  await q.query(
    `UPDATE dcr_items SET proposed = $3::jsonb, version = version + 1, last_update_at = now(), last_update_by = $4,
            target_version = coalesce($5::int, target_version), original = coalesce($6::jsonb, original)
      WHERE partition_id = $1 AND id = $2`,
    [
      partitionId,
      id,
      JSON.stringify(proposed),
      userId,
      rebased?.version ?? null,
      rebased === undefined ? null : JSON.stringify(rebased.original),
    ],
  );
}

export async function deleteRows(
  q: Queryable,
  table: 'dcr_items' | 'dcr_massops',
  partitionId: number,
  dcrId: number,
  ids: readonly number[],
): Promise<number[]> {
  const r = await q.query<{ id: number }>(
    `DELETE FROM ${table} WHERE partition_id = $1 AND dcr_id = $2 AND id = ANY($3::bigint[]) RETURNING id`,
    [partitionId, dcrId, ids],
  );
  return r.rows.map((x) => Number(x.id));
}

export async function insertMassOp(
  q: Queryable,
  partitionId: number,
  dcrId: number,
  userId: number,
  m: { label: string | null; filter: unknown; operations: unknown },
): Promise<number> {
  const r = await q.query<{ id: number }>(
    `INSERT INTO dcr_massops (partition_id, dcr_id, label, filter, operations, created_by, last_update_by)
     VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6, $6) RETURNING id`,
    [partitionId, dcrId, m.label, JSON.stringify(m.filter ?? null), JSON.stringify(m.operations), userId],
  );
  return Number(r.rows[0]!.id);
}

export async function updateMassOp(
  q: Queryable,
  partitionId: number,
  id: number,
  userId: number,
  m: { label: string | null; filter: unknown; operations: unknown },
): Promise<void> {
  await q.query(
    `UPDATE dcr_massops SET label = $3, filter = $4::jsonb, operations = $5::jsonb, version = version + 1,
            last_update_at = now(), last_update_by = $6
      WHERE partition_id = $1 AND id = $2`,
    [partitionId, id, m.label, JSON.stringify(m.filter ?? null), JSON.stringify(m.operations), userId],
  );
}

/** `asyncSubmitDCRThreshold`: undefined when the option does not exist (submits stay synchronous). */
export async function asyncThreshold(q: Queryable, partitionId: number): Promise<number | undefined> {
  const r = await q.query<{ value: string | null }>(
    `SELECT value FROM advanced_config WHERE partition_id = $1 AND unique_name = 'asyncSubmitDCRThreshold'`,
    [partitionId],
  );
  if (r.rows.length === 0) return undefined;
  // Any number counts as given (a DCR with more items than it, 1.5 or -1 too); no number means 100.
  const n = Number(r.rows[0]!.value);
  return r.rows[0]!.value !== null && r.rows[0]!.value.trim() !== '' && Number.isFinite(n) ? n : 100;
}
