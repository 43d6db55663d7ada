// The SQL that applies a checked chunk of a `/loaddata/CRCP` load, in one transaction: lock the
// chunk's sets, COPY into a staging table, find the existing items each new one overlaps, and either
// report those rows (no splicing options) or cut them (`splice`: covered items removed, to CRCIH when
// `supersedeRecords`, the others shrunk to their first remaining piece, further pieces inserted),
// then insert the new items. Set-based, never row by row; record history by the same statements.

import type { Principal } from '../../access/access.ts';
import type { Tx } from '../../db/db.ts';
import { Params, ident } from '../../db/sql.ts';
import type { TypeContext } from '../../engine/context.ts';
import { setDeleteActor } from '../../engine/crud.ts';
import { withHistory } from '../../engine/history.ts';
import { csvLine, type RowError } from '../../engine/loaddata.ts';
import { conditionKeySig } from './lookup.ts';
import { DATA_FIELDS, KEYS, type Checked, type Plan, type Splicing } from './splice-plan.ts';

const STAGE = 'rc_crcp_stage';

const dataColumns = DATA_FIELDS.map((f) => f.column);

const STAGE_COLUMNS_BEFORE = ['rownum', 'condition_record_set_id', 'key_size_ref'];
const STAGE_COLUMNS_AFTER = ['user_group_edit', 'user_group_view_details', 'key_sig'];

/**
 * The item fields a load stages and inserts: those of its header, and the validity (validTo is set
 * when left out). The others are NULL in every row (checkRows): the INSERT leaves them to the
 * table, whose columns have no other default — so a load of 7 columns copies and writes 7, not 52.
 */
function stagedFields(plan: Plan): { readonly column: string; readonly at: number }[] {
  const named = new Set(plan.header.map((f) => f.name));
  return DATA_FIELDS.flatMap((f, at) =>
    named.has(f.name) || f.name === 'validFrom' || f.name === 'validTo' ? [{ column: f.column, at }] : [],
  );
}

/**
 * The names of the fields every row of the chunk sets, when they are the same for all rows (the
 * fields not staged are NULL in every row): the new items' ADD rows then point to the list, stored
 * once (`setFields` of the history), instead of each naming them.
 */
function sameFieldsSet(
  rows: readonly Checked[],
  staged: readonly { readonly at: number }[],
): string[] | undefined {
  const first = rows[0];
  if (first === undefined) return undefined;
  for (const r of rows) {
    for (const { at } of staged)
      if ((r.values[at] === null) !== (first.values[at] === null)) return undefined;
  }
  return [
    'conditionRecordSetId',
    ...staged.filter(({ at }) => first.values[at] !== null).map(({ at }) => DATA_FIELDS[at]!.name),
  ];
}

export interface ChunkCounts {
  inserted: number;
  cut: number;
  split: number;
  superseded: number;
}

export async function runChunk(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  plan: Plan,
  rows: readonly Checked[],
  errors: RowError[],
): Promise<ChunkCounts> {
  const p = principal.partitionId;
  const setsById = new Map(rows.map((r) => [r.set.id, r.set]));
  const sets = [...setsById.keys()].sort((a, b) => a - b);
  // One writer per set at a time (migration 038): a load reads the items it checks or cuts with this
  // lock held, single-item writers take it shared; so no overlap can be written behind its back.
  await tx.query(
    `SELECT pg_advisory_xact_lock(hashtextextended('rc_crc:' || $1::text || ':' || s::text, 0)) FROM unnest($2::bigint[]) s ORDER BY s`,
    [p, sets],
  );
  // What the items' row trigger does for other writers, once for the chunk (migration 069): the sets
  // locked FOR KEY SHARE and checked (a set deleted meanwhile is the foreign-key error, 23503), and
  // noted for the logic engine's read versions.
  const keySizes = sets.map((id) => String(setsById.get(id)!.keySize));
  await tx.query(`SELECT rc_condition_records_sets_written($1, $2::bigint[], $3::text[])`, [
    p,
    sets,
    keySizes,
  ]);
  // (No JIT: the server's PostgreSQL connections run without it, src/db/pg.ts; the chunk's statements
  // are estimated costly enough to be compiled, seconds of LLVM for plans that run in milliseconds.)
  await tx.query(`SELECT set_config('rc.crci_checked', 'on', true), set_config('rc.actor', $1, true)`, [
    String(principal.userId),
  ]);
  const staged = stagedFields(plan);
  const stagedColumns = staged.map((f) => f.column);
  await tx.query(`CREATE TEMP TABLE ${STAGE} ON COMMIT DROP AS
    SELECT NULL::int AS rownum, condition_record_set_id, key_size_ref, ${stagedColumns.map(ident).join(', ')},
           user_group_edit, user_group_view_details, key_sig
      FROM condition_records WITH NO DATA`);
  let csv = '';
  for (const r of rows) {
    const sig = conditionKeySig(r.keys);
    const values = staged.map((f) => r.values[f.at]!);
    csv += `${csvLine([r.row, r.set.id], [String(r.set.keySize), ...values, r.set.edit, r.set.view, sig])}\n`;
  }
  await tx.copyFrom(STAGE, STAGE_COLUMNS_BEFORE.concat(stagedColumns, STAGE_COLUMNS_AFTER), csv);
  // Existing items each new row overlaps (partition, set, key signature, validity): one probe of
  // the key index per staged row (the key signature is computed as the database does, lookup.ts).
  // A plain LATERAL was pulled up into a hash join over every item of the partition (the planner's
  // pick with statistics: linear in the table, ~1 s a chunk at 1,000,000 items); `OFFSET 0` keeps
  // the subquery a per-row probe. Which index probes it is still the planner's pick, and without
  // fresh statistics of condition_records (a table just bulk-loaded) it took the key1 index and
  // filtered the whole set per row (minutes). `ORDER BY valid_from` with sorting disabled leaves one
  // plan without a sort: the key index (partition, set, key_sig, valid_from). Deterministic on both
  // databases, whatever the statistics.
  await tx.query(`SELECT set_config('enable_sort', 'off', true)`);
  await tx.query(
    `CREATE TEMP TABLE rc_crcp_hit ON COMMIT DROP AS
    SELECT c.id, c.valid_from AS e_from, c.valid_to AS e_to, s.valid_from AS n_from, s.valid_to AS n_to, s.rownum
      FROM ${STAGE} s CROSS JOIN LATERAL (
        SELECT c.id, c.valid_from, c.valid_to FROM condition_records c
         WHERE c.partition_id = $1 AND c.condition_record_set_id = s.condition_record_set_id
           AND c.key_sig = s.key_sig AND c.valid_from <= s.valid_to AND c.valid_to >= s.valid_from
         ORDER BY c.valid_from OFFSET 0) c`,
    [p],
  );
  await tx.query(`SELECT set_config('enable_sort', 'on', true)`);
  // Temporary tables have no statistics until analysed: without them the planner joined the pieces
  // to condition_records by nested loops over a scan (minutes for 10,000 pieces instead of ms).
  await tx.query('ANALYZE rc_crcp_hit');
  const counts: ChunkCounts = { inserted: 0, cut: 0, split: 0, superseded: 0 };
  if (plan.splicing === undefined) {
    const hits = await tx.query<{ rownum: number; id: number; e_from: string; e_to: string }>(
      `SELECT DISTINCT ON (rownum) rownum, id, e_from, e_to FROM rc_crcp_hit ORDER BY rownum, e_from`,
    );
    for (const h of hits.rows) {
      errors.push({
        row: h.rownum,
        field: 'validFrom',
        message: `overlaps item ${h.id}.CRCI (valid ${h.e_from}..${h.e_to}) with the same keys`,
      });
    }
    if (hits.rows.length > 0)
      await tx.query(`DELETE FROM ${STAGE} WHERE rownum IN (SELECT rownum FROM rc_crcp_hit)`);
  } else {
    Object.assign(counts, await splice(tx, tc, principal, plan.splicing));
  }
  const params = new Params();
  const uid = params.add(principal.userId);
  const names = sameFieldsSet(rows, staged);
  const cols = [
    'condition_record_set_id',
    'key_size_ref',
    ...stagedColumns,
    'user_group_edit',
    'user_group_view_details',
  ];
  const insert = withHistory(
    `INSERT INTO condition_records AS t (partition_id, ${cols.map(ident).join(', ')}, created_by, last_update_by)
     SELECT ${params.add(p)}::bigint, ${cols.map((c) => `s.${ident(c)}`).join(', ')}, ${uid}::bigint, ${uid}::bigint
       FROM ${STAGE} s ORDER BY s.rownum`,
    // New items: their ADD rows name the fields set (values rebuilt from the item when read).
    {
      tc,
      principal,
      params,
      kind: 'add',
      setFields: names === undefined ? undefined : `${params.add(names)}::text[]`,
    },
    'count(*)::int AS n',
  );
  counts.inserted = (await tx.query<{ n: number }>(insert, params.values)).rows[0]!.n;
  return counts;
}

/** Cuts the existing items the stage overlaps; answers what happened to them. */
async function splice(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  s: Splicing,
): Promise<Omit<ChunkCounts, 'inserted'>> {
  const p = principal.partitionId;
  // The pieces of each hit item that no new item covers: the gap before each new item (after the
  // previous one), and the tail after the last. New items of one key never overlap each other.
  await tx.query(`CREATE TEMP TABLE rc_crcp_piece ON COMMIT DROP AS
    WITH g AS (
      SELECT id, e_from, e_to, n_from, n_to,
             lag(n_to) OVER (PARTITION BY id ORDER BY n_from) AS prev_to,
             row_number() OVER (PARTITION BY id ORDER BY n_from DESC) AS rn_desc
        FROM rc_crcp_hit
    ), p AS (
      SELECT id, coalesce(prev_to + 1, e_from) AS p_from, n_from - 1 AS p_to FROM g
      UNION ALL
      SELECT id, n_to + 1, e_to FROM g WHERE rn_desc = 1
    )
    SELECT id, p_from, p_to, row_number() OVER (PARTITION BY id ORDER BY p_from) AS k,
           count(*) OVER (PARTITION BY id) AS pieces
      FROM p WHERE p_from <= p_to`);
  await tx.query('ANALYZE rc_crcp_piece');
  const stats = await tx.query<{ cut: number; split: number; removed: number }>(
    `SELECT (SELECT count(*) FROM rc_crcp_piece WHERE k = 1 AND pieces = 1)::int AS cut,
            (SELECT count(*) FROM rc_crcp_piece WHERE k = 1 AND pieces > 1)::int AS split,
            (SELECT count(DISTINCT id) FROM rc_crcp_hit h
              WHERE NOT EXISTS (SELECT 1 FROM rc_crcp_piece x WHERE x.id = h.id))::int AS removed`,
  );
  const { cut, split, removed } = stats.rows[0]!;
  if (cut + split + removed === 0) return { cut, split, superseded: removed };

  if (s.supersede) {
    // The state before the cut of every cut or split item; removed ones go by the delete trigger.
    const cols = [
      'condition_record_set_id',
      'key_size_ref',
      ...KEYS,
      'valid_from',
      'valid_to',
      ...dataColumns.filter((c) => !KEYS.includes(c) && c !== 'valid_from' && c !== 'valid_to'),
      'user_group_edit',
      'user_group_view_details',
      'version',
      'created_at',
      'created_by',
      'last_update_at',
      'last_update_by',
    ];
    await tx.query(
      `INSERT INTO condition_records_history (partition_id, item_id, ${cols.map(ident).join(', ')}, reason, superseded_by)
       SELECT c.partition_id, c.id, ${cols.map((c) => `c.${ident(c)}`).join(', ')}, 'SUPERSEDED', $2::bigint
         FROM condition_records c WHERE c.partition_id = $1 AND c.id = ANY(ARRAY(SELECT id FROM rc_crcp_piece WHERE k = 1))`,
      [p, principal.userId],
    );
    await tx.query(`SELECT set_config('rc.crci_reason', 'SUPERSEDED', true)`);
  } else {
    await tx.query(`SELECT set_config('rc.crci_history', 'off', true)`);
  }
  if (removed > 0) {
    await setDeleteActor(tx, principal); // the delete trigger names the loader, not the last editor
    const params = new Params();
    const del = withHistory(
      `DELETE FROM condition_records t WHERE t.partition_id = ${params.add(p)}
          AND t.id = ANY(ARRAY(SELECT h.id FROM rc_crcp_hit h
                                WHERE NOT EXISTS (SELECT 1 FROM rc_crcp_piece x WHERE x.id = h.id)))`,
      { tc, principal, params, kind: 'delete' },
      'count(*)::int AS n',
    );
    await tx.query(del, params.values);
  }
  await tx.query(`SELECT set_config('rc.crci_history', '', true), set_config('rc.crci_reason', '', true)`);
  // The statements below name the items they write by an id array (`= ANY(ARRAY(...))`): the
  // primary key finds them, whatever the planner estimates of a table it has no fresh statistics
  // of (a join planned as a scan of the whole table per row of the other side hung a bench run).
  if (cut + split > 0) {
    const params = new Params();
    const sets = [
      'valid_from = x.p_from',
      'valid_to = x.p_to',
      ...[...s.set].map(([f, v]) => `${ident(f.column)} = ${params.add(v)}`),
      ...s.reset.map((f) => `${ident(f.column)} = NULL`),
      'version = t.version + 1',
      'last_update_at = now()',
      `last_update_by = ${params.add(principal.userId)}`,
    ];
    const upd = withHistory(
      `UPDATE condition_records t SET ${sets.join(', ')} FROM rc_crcp_piece x
        WHERE x.k = 1 AND t.partition_id = ${params.add(p)} AND t.id = x.id
          AND t.id = ANY(ARRAY(SELECT id FROM rc_crcp_piece WHERE k = 1))`,
      // Only the validity and the spliced fields can change: the history diff is over those.
      {
        tc,
        principal,
        params,
        kind: 'write',
        changing: [
          'validFrom',
          'validTo',
          ...[...s.set.keys()].map((f) => f.name),
          ...s.reset.map((f) => f.name),
        ],
      },
      'count(*)::int AS n',
    );
    await tx.query(upd, params.values);
  }
  if (split > 0) {
    // Further pieces of split items: copies of the (already cut and edited) first piece.
    const params = new Params();
    const copy = [
      'condition_record_set_id',
      'key_size_ref',
      ...dataColumns.filter((c) => c !== 'valid_from' && c !== 'valid_to'),
      'user_group_edit',
      'user_group_view_details',
    ];
    const uid = params.add(principal.userId);
    const ins = withHistory(
      `INSERT INTO condition_records AS t (partition_id, ${copy.map(ident).join(', ')}, valid_from, valid_to, created_by, last_update_by)
       SELECT c.partition_id, ${copy.map((c) => `c.${ident(c)}`).join(', ')}, x.p_from, x.p_to, ${uid}::bigint, ${uid}::bigint
         FROM rc_crcp_piece x JOIN condition_records c ON c.partition_id = ${params.add(p)} AND c.id = x.id
        WHERE x.k > 1 AND c.id = ANY(ARRAY(SELECT id FROM rc_crcp_piece WHERE k > 1))`,
      { tc, principal, params, kind: 'add' },
      'count(*)::int AS n',
    );
    await tx.query(ins, params.values);
  }
  return { cut, split, superseded: removed };
}
