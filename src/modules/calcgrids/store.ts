// The SQL of calculation grids that the generic engine does not cover: the grid row as the job and
// the manager operations read it, the batch lookup of existing items (run, input hash, overrides),
// and the set-based write of a batch of calculated items (COPY into a staging table, then one
// INSERT ... ON CONFLICT DO UPDATE). Every statement is scoped by partition.

import type { Db, Queryable } from '../../db/db.ts';
import { copyTextField } from '../../db/sql.ts';
import { wroteRows } from '../../engine/statistics.ts';

export interface GridRow {
  readonly id: number;
  readonly label: string | null;
  readonly formula_name: string;
  readonly key_number: number;
  readonly key_sources: unknown;
  readonly target_date: string | null;
  readonly inputs: Record<string, unknown>;
  readonly status: string;
  readonly jst_id: number | null;
  readonly run_id: number | null;
  readonly version: number;
}

const GRID_COLUMNS = `id, label, formula_name, key_number, key_sources,
  to_char(target_date, 'YYYY-MM-DD') AS target_date, inputs, status, jst_id, run_id, version`;

export async function gridById(
  q: Queryable,
  partitionId: number,
  id: number,
  lock: boolean | 'key share' = false,
): Promise<GridRow | undefined> {
  // 'key share': a delete of the grid waits, a change of its counts (migration 061) does not.
  const locking = lock === 'key share' ? ' FOR KEY SHARE' : lock ? ' FOR UPDATE' : '';
  const r = await q.query<GridRow>(
    `SELECT ${GRID_COLUMNS} FROM calc_grids WHERE partition_id = $1 AND id = $2${locking}`,
    [partitionId, id],
  );
  const g = r.rows[0];
  return g && { ...g, id: Number(g.id), run_id: g.run_id === null ? null : Number(g.run_id) };
}

export interface NewGrid {
  readonly label: string | null;
  readonly formulaName: string;
  readonly keyNumber: number;
  readonly keySources: unknown;
  readonly targetDate: string | null;
  readonly inputs: Record<string, unknown>;
  readonly resultTypes: Record<string, string>;
  readonly resultMeta: Record<string, unknown>;
}

export async function insertGrid(
  q: Queryable,
  partitionId: number,
  userId: number,
  g: NewGrid,
): Promise<number> {
  const r = await q.query<{ id: number }>(
    `INSERT INTO calc_grids (partition_id, label, formula_name, key_number, key_sources, target_date, inputs,
                             result_types, result_meta, created_by, last_update_by)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6::date, $7::jsonb, $8::jsonb, $9::jsonb, $10, $10) RETURNING id`,
    [
      partitionId,
      g.label,
      g.formulaName,
      g.keyNumber,
      JSON.stringify(g.keySources),
      g.targetDate,
      JSON.stringify(g.inputs),
      JSON.stringify(g.resultTypes),
      JSON.stringify(g.resultMeta),
      userId,
    ],
  );
  return Number(r.rows[0]!.id);
}

/** A grid's state as a calculation moves it (one statement; version bumped). */
export async function setGridState(
  q: Queryable,
  partitionId: number,
  id: number,
  s: {
    status: string;
    jstId?: number;
    runId?: number;
    resultTypes?: Record<string, string>;
    resultMeta?: Record<string, unknown>;
    counted?: boolean;
  },
): Promise<void> {
  await q.query(
    `UPDATE calc_grids g SET status = $3, jst_id = coalesce($4, jst_id), run_id = coalesce($5, run_id),
            result_types = coalesce($6::jsonb, result_types), result_meta = coalesce($8::jsonb, result_meta),
            item_count = CASE WHEN $7 THEN c.n ELSE item_count END,
            calculated_count = CASE WHEN $7 THEN c.ok ELSE calculated_count END,
            error_count = CASE WHEN $7 THEN c.failed ELSE error_count END,
            calculation_date = CASE WHEN $7 THEN now() ELSE calculation_date END,
            version = version + 1, last_update_at = now()
       FROM (SELECT count(*) AS n, count(*) FILTER (WHERE calculation_results IS NOT NULL) AS ok,
                    count(*) FILTER (WHERE error IS NOT NULL) AS failed FROM calc_grid_items
              WHERE partition_id = $1 AND grid_id = $2 AND $7) c
      WHERE g.partition_id = $1 AND g.id = $2`,
    [
      partitionId,
      id,
      s.status,
      s.jstId ?? null,
      s.runId ?? null,
      s.resultTypes === undefined ? null : JSON.stringify(s.resultTypes),
      s.counted === true,
      s.resultMeta === undefined ? null : JSON.stringify(s.resultMeta),
    ],
  );
}

export async function hasItems(q: Queryable, partitionId: number, gridId: number): Promise<boolean> {
  const r = await q.query(`SELECT 1 FROM calc_grid_items WHERE partition_id = $1 AND grid_id = $2 LIMIT 1`, [
    partitionId,
    gridId,
  ]);
  return r.rows.length > 0;
}

export const KEY_COLUMNS = ['key1', 'key2', 'key3', 'key4', 'key5', 'key6'] as const;

/** Six key texts ('' past the grid's key number): how items are keyed in SQL. */
export type Keys = readonly [string, string, string, string, string, string];

export function keysOf(given: readonly string[]): Keys {
  return [given[0] ?? '', given[1] ?? '', given[2] ?? '', given[3] ?? '', given[4] ?? '', given[5] ?? ''];
}

export const keyText = (k: Keys): string => k.join('\u0000');

export interface ExistingItem {
  readonly runId: number | null;
  readonly inputHash: string | null;
  readonly overrides: Record<string, unknown>;
  /** The overrides as the database writes them (what writeItems compares). */
  readonly overridesJson: string;
}

/**
 * The items of a batch that matter to a calculation: those done in this run (skipped when their
 * input hash is unchanged) and those with overrides (kept). Keyed by `keyText`.
 */
export async function existingOf(
  db: Db,
  partitionId: number,
  gridId: number,
  runId: number,
  keys: readonly Keys[],
): Promise<Map<string, ExistingItem>> {
  const cols = KEY_COLUMNS.map((_, i) => keys.map((k) => k[i]));
  const r = await db.transaction(async (tx) => {
    // One probe of the key index per key (`OFFSET 0` keeps the subquery a per-key probe): joined, the
    // planner took the new run for empty (statistics) and nested a scan of every item of the table
    // per key, so a recalculation of 50,000 items took 536 s against 9 s for the first. Which index
    // probes is still the planner's pick, and without fresh statistics of the items (written by the
    // previous calculation moments before) it took the grid's (partition, grid, id) index and
    // filtered every item of the grid per key (20,000 items: minutes, against 1 s for the first
    // calculation; any index on (partition, grid, ...) would do the same, e.g. indexedResults').
    // Analysing first would not settle it: items written since are unknown to any statistics. So
    // key6 is compared as a range and ordered by, with sorting disabled: the one plan without a sort
    // is the key index (partition, grid, key1..key6), down to the one item (an equality would make
    // the order trivial, open to any index). Deterministic on both databases, whatever the
    // statistics (as the condition-record splice, conditionrecords/splice-apply.ts).
    await tx.query(`SELECT set_config('enable_sort', 'off', true)`);
    return tx.query<{
      key1: string;
      key2: string;
      key3: string;
      key4: string;
      key5: string;
      key6: string;
      run_id: string | number | null;
      input_hash: string | null;
      overrides: Record<string, unknown>;
      overrides_json: string;
    }>(
      `SELECT i.key1, i.key2, i.key3, i.key4, i.key5, i.key6, i.run_id, i.input_hash, i.overrides,
              i.overrides::text AS overrides_json
         FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
              AS k(key1, key2, key3, key4, key5, key6)
         CROSS JOIN LATERAL (
           SELECT i.key1, i.key2, i.key3, i.key4, i.key5, i.key6, i.run_id, i.input_hash, i.overrides
             FROM calc_grid_items i
            WHERE i.partition_id = $1 AND i.grid_id = $2 AND i.key1 = k.key1 AND i.key2 = k.key2
              AND i.key3 = k.key3 AND i.key4 = k.key4 AND i.key5 = k.key5
              AND i.key6 >= k.key6 AND i.key6 <= k.key6
              AND (i.run_id = $3 OR i.overrides <> '{}'::jsonb)
            ORDER BY i.key6 OFFSET 0) i`,
      [partitionId, gridId, runId, ...cols],
    );
  });
  const out = new Map<string, ExistingItem>();
  for (const row of r.rows) {
    out.set(keyText([row.key1, row.key2, row.key3, row.key4, row.key5, row.key6]), {
      runId: row.run_id === null ? null : Number(row.run_id),
      inputHash: row.input_hash,
      overrides: row.overrides ?? {},
      overridesJson: row.overrides_json ?? '{}',
    });
  }
  return out;
}

/** Items of the grid not calculated in this run (added with /add/CGI, or no longer in the sources). */
export async function itemsOutsideRun(
  q: Queryable,
  partitionId: number,
  gridId: number,
  runId: number,
  afterId: number,
  limit: number,
): Promise<{ id: number; keys: Keys }[]> {
  const r = await q.query<{ id: string | number } & Record<(typeof KEY_COLUMNS)[number], string>>(
    `SELECT id, key1, key2, key3, key4, key5, key6 FROM calc_grid_items
      WHERE partition_id = $1 AND grid_id = $2 AND run_id IS DISTINCT FROM $3 AND id > $4
      ORDER BY id LIMIT $5`,
    [partitionId, gridId, runId, afterId, limit],
  );
  return r.rows.map((row) => ({
    id: Number(row.id),
    keys: [row.key1, row.key2, row.key3, row.key4, row.key5, row.key6],
  }));
}

/** One calculated item, ready to write. JSON columns are JSON texts (or null). */
export interface ItemRow {
  readonly keys: Keys;
  readonly calculationResults: string | null;
  readonly results: string;
  readonly warnings: string | null;
  readonly alerts: string | null;
  readonly error: string | null;
  readonly inputHash: string;
  /** The overrides the results were computed with (JSON). */
  readonly overrides: string;
}

const STAGE = 'calc_grid_stage';
/** The grids' items (one table for every grid). */
export const ITEMS_TABLE = 'calc_grid_items';
const STAGE_COLUMNS = [
  ...KEY_COLUMNS,
  'calculation_results',
  'results',
  'warnings',
  'alerts',
  'error',
  'input_hash',
  'overrides',
];

/**
 * A JSON text as a field of COPY's text format: JSON.stringify writes no raw tab, newline or
 * carriage return, so only backslashes (of its escapes) need doubling — most results have none, and
 * go as they are (quoting them for CSV doubled every quote of every result object).
 */
function jsonField(v: string | null): string {
  if (v === null) return '\\N';
  return v.includes('\\') ? v.replaceAll('\\', '\\\\') : v;
}

/**
 * `column = value`, except for an item waiting in a workflow, which keeps its own (see writeItems).
 * Its run and input hash are still the new ones: the run counts it as done (it was computed once;
 * left out of the run, the run's last pass took it up again, and again).
 */
const held = (column: string, value: string): string =>
  `${column} = CASE WHEN t.workflow_status = 'SUBMITTED' THEN t.${column} ELSE ${value} END`;

/** A decided item whose recalculated results differ: a new proposal (see writeItems). */
const REPROPOSED = `t.workflow_status IN ('APPROVED', 'DENIED') AND t.results IS DISTINCT FROM EXCLUDED.results`;

/** Columns a fresh batch is copied into directly (after the per-row ones of the stage). */
const DIRECT_COLUMNS = [
  'partition_id',
  'grid_id',
  'key_number',
  'run_id',
  'created_by',
  'last_update_by',
  'calculation_date',
  ...STAGE_COLUMNS,
];

/**
 * Writes a batch of items in one transaction. `insert` (items that cannot exist yet: the first
 * calculation of a grid that had none): one COPY into the items table. `upsert`: COPY to a stage,
 * then one INSERT ... ON CONFLICT DO UPDATE refreshing existing items — except those waiting in a
 * workflow (SUBMITTED: their approvers decide on the values submitted, as an override is refused
 * then). A decided item (APPROVED, DENIED) whose effective results change is a new proposal, as
 * after an override: back to DRAFT / NOT_APPROVED, to be accepted again.
 *
 * An item whose overrides changed since they were read (an override saved while the batch was
 * computed) is not written: its results would drop the new override. Answers the keys of those
 * items (none for `insert`), to compute again with the overrides they have now.
 */
export async function writeItems(
  db: Db,
  grid: { partitionId: number; id: number; keyNumber: number; runId: number; userId: number },
  rows: readonly ItemRow[],
  mode: 'insert' | 'upsert',
): Promise<Keys[]> {
  if (rows.length === 0) return [];
  const prefix =
    mode === 'insert'
      ? `${[grid.partitionId, grid.id, grid.keyNumber, grid.runId, grid.userId, grid.userId, new Date().toISOString()].join('\t')}\t`
      : '';
  let text = '';
  for (const r of rows) {
    let line = prefix;
    for (let k = 0; k < KEY_COLUMNS.length; k++) line += `${copyTextField(r.keys[k] ?? null)}\t`;
    line += `${jsonField(r.calculationResults)}\t${jsonField(r.results)}\t${jsonField(r.warnings)}\t`;
    line += `${jsonField(r.alerts)}\t${copyTextField(r.error)}\t${copyTextField(r.inputHash)}\t`;
    line += `${jsonField(r.overrides)}\n`;
    text += line;
  }
  const written = await db.transaction(async (tx) => {
    if (mode === 'insert') {
      await tx.copyFrom(ITEMS_TABLE, DIRECT_COLUMNS, text, 'text');
      return undefined;
    }
    await tx.query(
      `CREATE TEMP TABLE ${STAGE} (key1 text, key2 text, key3 text, key4 text, key5 text, key6 text,
         calculation_results jsonb, results jsonb, warnings jsonb, alerts jsonb, error text, input_hash text,
         overrides jsonb)
       ON COMMIT DROP`,
    );
    await tx.copyFrom(STAGE, STAGE_COLUMNS, text, 'text');
    return tx.query<Record<(typeof KEY_COLUMNS)[number], string>>(
      `INSERT INTO calc_grid_items AS t (partition_id, grid_id, key_number, key1, key2, key3, key4, key5, key6,
              calculation_results, results, warnings, alerts, error, input_hash, overrides, run_id,
              calculation_date, created_by, last_update_by)
       SELECT $1, $2, $3, coalesce(s.key1, ''), coalesce(s.key2, ''), coalesce(s.key3, ''), coalesce(s.key4, ''),
              coalesce(s.key5, ''), coalesce(s.key6, ''), s.calculation_results, s.results, s.warnings, s.alerts,
              s.error, s.input_hash, s.overrides, $4, now(), $5, $5
         FROM ${STAGE} s
       ON CONFLICT (partition_id, grid_id, key1, key2, key3, key4, key5, key6) DO UPDATE
          SET ${held('calculation_results', 'EXCLUDED.calculation_results')}, ${held('results', 'EXCLUDED.results')},
              ${held('warnings', 'EXCLUDED.warnings')}, ${held('alerts', 'EXCLUDED.alerts')},
              ${held('error', 'EXCLUDED.error')}, input_hash = EXCLUDED.input_hash, run_id = EXCLUDED.run_id,
              ${held('calculation_date', 'EXCLUDED.calculation_date')}, ${held('version', 't.version + 1')},
              ${held('last_update_at', 'now()')}, ${held('last_update_by', 'EXCLUDED.last_update_by')},
              workflow_status = CASE WHEN ${REPROPOSED} THEN 'DRAFT' ELSE t.workflow_status END,
              approval_state = CASE WHEN ${REPROPOSED} THEN 'NOT_APPROVED' ELSE t.approval_state END
        WHERE t.overrides = EXCLUDED.overrides
       RETURNING t.key1, t.key2, t.key3, t.key4, t.key5, t.key6`,
      [grid.partitionId, grid.id, grid.keyNumber, grid.runId, grid.userId],
    );
  });
  wroteRows(db, ITEMS_TABLE, rows.length);
  if (written === undefined || written.rows.length === rows.length) return [];
  const done = new Set(written.rows.map((r) => keyText(keysOf(KEY_COLUMNS.map((c) => r[c])))));
  return rows.flatMap((r) => (done.has(keyText(r.keys)) ? [] : [r.keys]));
}
