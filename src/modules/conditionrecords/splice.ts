// `/loaddata/CRCP`: bulk loads of condition record items, with or without splicing. The flow:
// `planCrcp` (header + options → plan, no database) → sets of the call resolved in one query →
// every row checked in JS (values through the engine's checkValue, the set's keys and groups,
// overlaps between rows of the load) → per chunk, one transaction: lock the chunk's sets, COPY into
// a staging table, then set-based SQL — find the existing items each new one overlaps, and either
// report those rows (no splicing options) or cut them: covered items removed (to CRCIH when
// `supersedeRecords`), the others shrunk to their first remaining piece, further pieces inserted
// (splits), then the new items inserted. Nothing is done row by row; record history (issue 12) is
// written by the same statements (historyCte).

import type { Principal } from '../../access/access.ts';
import type { Db, Tx } from '../../db/db.ts';
import { Params, ident } from '../../db/sql.ts';
import { validationError } from '../../http/errors.ts';
import { loadTypeContext, type TypeContext } from '../../engine/context.ts';
import { checkValue, requireAccess, setDeleteActor } from '../../engine/crud.ts';
import { withHistory } from '../../engine/history.ts';
import { csvLine, type LoadBody, type RowError, type Stored } from '../../engine/loaddata.ts';
import { ITEM_TYPE, MAX_KEY_SIZE } from '../../engine/registry-condrec.ts';
import { conditionKeySig } from './lookup.ts';
import type { FieldDef } from '../../engine/types.ts';

export interface CrcpResult {
  readonly inserted: number;
  readonly cut: number;
  readonly split: number;
  readonly superseded: number;
  readonly invalid: number;
  readonly total: number;
  readonly errors: readonly RowError[];
  readonly errorsTruncated: boolean;
}

interface Splicing {
  readonly set: ReadonlyMap<FieldDef, unknown>;
  readonly reset: readonly FieldDef[];
  readonly supersede: boolean;
}

interface Plan {
  readonly header: readonly FieldDef[];
  readonly setAt: number;
  readonly splicing: Splicing | undefined;
}

const KEYS = Array.from({ length: MAX_KEY_SIZE }, (_, i) => `key${i + 1}`);
/** Fields a splice never sets or resets: what identifies an item and its validity. */
const FIXED = new Set(['conditionRecordSetId', ...KEYS, 'validFrom', 'validTo']);
/** Every writable item field, in stage column order after rownum, set, key size. */
const DATA_FIELDS = ITEM_TYPE.fields.filter((f) => !f.system && f.name !== 'conditionRecordSetId');
const STAGE = 'rc_crcp_stage';
const CHUNK_ROWS = 10_000;
const MAX_ERRORS = 1_000;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function planCrcp(tc: TypeContext, body: LoadBody, maxBatchRows: number, via: string): Plan {
  if (body.data.length > maxBatchRows) {
    throw validationError('data', `at most ${maxBatchRows} rows per call (got ${body.data.length})`);
  }
  const opts = body.options ?? {};
  if (opts.joinFields !== undefined || opts.detectJoinFields === true) {
    throw validationError(
      opts.joinFields !== undefined ? 'options.joinFields' : 'options.detectJoinFields',
      `${via} loads match items by set, keys and validity, not join fields: a row that overlaps ` +
        'existing items is an error, or with /loaddata/CRCP and options.conditionRecords.splicing ' +
        'cuts them to fit',
    );
  }
  if (via !== 'CRCP' && opts.conditionRecords !== undefined) {
    throw validationError(
      'options.conditionRecords',
      `applies only to CRCP loads: send the same header and rows to /loaddata/CRCP to splice (${via} ` +
        'loads report rows that overlap existing items as errors)',
    );
  }
  const seen = new Set<string>();
  const header = body.header.map((name, i) => {
    const f = tc.fields.get(name);
    if (name === 'typedId' || f?.system)
      throw validationError(`header.${i}`, `${name} is set by the server, not loaded`);
    if (!f)
      throw validationError(`header.${i}`, `unknown field ${JSON.stringify(name)} of condition record items`);
    if (seen.has(name)) throw validationError(`header.${i}`, `${name} appears twice`);
    seen.add(name);
    return f;
  });
  for (const need of ['conditionRecordSetId', 'validFrom', 'key1']) {
    if (!seen.has(need)) throw validationError('header', `must contain ${need}`);
  }
  return {
    header,
    setAt: body.header.indexOf('conditionRecordSetId'),
    splicing: splicingOf(tc, opts.conditionRecords),
  };
}

function splicingOf(tc: TypeContext, raw: unknown): Splicing | undefined {
  if (raw === undefined) return undefined;
  if (!isObj(raw)) throw validationError('options.conditionRecords', 'must be an object');
  const s = raw.splicing;
  if (s === undefined) return undefined;
  if (!isObj(s)) throw validationError('options.conditionRecords.splicing', 'must be an object');
  const at = 'options.conditionRecords.splicing';
  const field = (name: string, where: string): FieldDef => {
    const f = tc.fields.get(name);
    if (!f || f.system || FIXED.has(name))
      throw validationError(where, `${JSON.stringify(name)} is not a field a splice can change`);
    return f;
  };
  const set = new Map<FieldDef, unknown>();
  if (s.setFields !== undefined) {
    if (!isObj(s.setFields)) throw validationError(`${at}.setFields`, 'must be an object');
    for (const [name, v] of Object.entries(s.setFields)) {
      const f = field(name, `${at}.setFields.${name}`);
      const checked = checkValue(f, v);
      if (typeof checked === 'string') throw validationError(`${at}.setFields.${name}`, checked);
      set.set(f, checked.value);
    }
  }
  const reset: FieldDef[] = [];
  if (s.resetFields !== undefined) {
    if (!Array.isArray(s.resetFields))
      throw validationError(`${at}.resetFields`, 'must be an array of field names');
    s.resetFields.forEach((name: unknown, i) => {
      if (typeof name !== 'string') throw validationError(`${at}.resetFields.${i}`, 'must be a field name');
      const f = field(name, `${at}.resetFields.${i}`);
      if (set.has(f)) throw validationError(`${at}.resetFields.${i}`, `${name} is in setFields too`);
      reset.push(f);
    });
  }
  return { set, reset, supersede: s.supersedeRecords === true };
}

interface SetInfo {
  readonly id: number;
  readonly name: string;
  readonly keySize: number;
  readonly edit: string | null;
  readonly view: string | null;
}

/** The sets the rows name (by id or uniqueName), one query for the call. */
async function resolveSets(db: Db, principal: Principal, plan: Plan, rows: readonly unknown[]) {
  const ids = new Set<number>();
  const names = new Set<string>();
  for (const r of rows) {
    const v: unknown = Array.isArray(r) ? r[plan.setAt] : undefined;
    if (typeof v === 'number' && Number.isSafeInteger(v)) ids.add(v);
    else if (typeof v === 'string' && /^\d+$/.test(v)) ids.add(Number(v));
    else if (typeof v === 'string' && v !== '') names.add(v);
  }
  const r = await db.query<{
    id: number;
    name: string;
    key_size: number;
    edit: string | null;
    view: string | null;
  }>(
    `SELECT id, unique_name AS name, key_size, user_group_edit AS edit, user_group_view_details AS view
       FROM condition_record_sets WHERE partition_id = $1 AND (id = ANY($2::bigint[]) OR unique_name = ANY($3::text[]))`,
    [principal.partitionId, [...ids], [...names]],
  );
  const byRef = new Map<string, SetInfo>();
  for (const s of r.rows) {
    const info = { id: Number(s.id), name: s.name, keySize: s.key_size, edit: s.edit, view: s.view };
    byRef.set(String(info.id), info);
    byRef.set(`name:${info.name}`, info);
  }
  const setOf = (v: unknown): SetInfo | undefined =>
    typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v))
      ? byRef.get(String(Number(v)))
      : typeof v === 'string'
        ? byRef.get(`name:${v}`)
        : undefined;
  return { setOf, sets: [...new Set(byRef.values())] };
}

interface Checked {
  readonly row: number;
  readonly set: SetInfo;
  readonly keys: readonly string[];
  readonly from: string;
  readonly to: string;
  /** Stage values in DATA_FIELDS order. */
  readonly values: readonly Stored[];
}

/** An item without validTo is open-ended (the column's default, migration 037). */
export const OPEN_END = '9999-12-31';

function checkRows(
  principal: Principal,
  plan: Plan,
  setOf: (v: unknown) => SetInfo | undefined,
  fieldsOf: (set: SetInfo) => ReadonlyMap<string, FieldDef>,
  rows: readonly unknown[],
  errors: RowError[],
  sized: number | undefined,
): Checked[] {
  const member = (g: string | null) =>
    principal.admin || g === null || g === '' || principal.groups.includes(g);
  const out: Checked[] = [];
  rows.forEach((raw, row) => {
    if (!Array.isArray(raw) || raw.length !== plan.header.length) {
      return void errors.push({ row, message: `must be an array of ${plan.header.length} values` });
    }
    const set = setOf(raw[plan.setAt]);
    if (!set || !member(set.view)) {
      return void errors.push({
        row,
        field: 'conditionRecordSetId',
        message: `no condition record set ${JSON.stringify(raw[plan.setAt])}`,
      });
    }
    if (!member(set.edit)) {
      return void errors.push({
        row,
        field: 'conditionRecordSetId',
        message: `not allowed to change the items of set ${set.name}`,
      });
    }
    if (sized !== undefined && set.keySize !== sized) {
      return void errors.push({
        row,
        field: 'conditionRecordSetId',
        message: `set ${set.name} has ${set.keySize} keys: its items are CRCI${set.keySize}, not CRCI${sized}`,
      });
    }
    // Custom attributes typed by the set's own attribute meta (CRCIAM rows of the set).
    const fields = fieldsOf(set);
    const byName = new Map<string, Stored>();
    for (let i = 0; i < plan.header.length; i++) {
      const f = fields.get(plan.header[i]!.name)!;
      if (i === plan.setAt) continue;
      // An empty validTo is an open-ended item, as is a load without the column.
      const given: unknown = raw[i];
      const v = f.name === 'validTo' && (given === null || given === '') ? OPEN_END : given;
      const checked = checkValue(f, v);
      if (typeof checked === 'string') return void errors.push({ row, field: f.name, message: checked });
      byName.set(f.name, checked.value as Stored);
    }
    for (let k = 1; k <= MAX_KEY_SIZE; k++) {
      const v = byName.get(`key${k}`);
      const given = v !== undefined && v !== null && v !== '';
      if (k <= set.keySize && !given)
        return void errors.push({
          row,
          field: `key${k}`,
          message: `is required (set ${set.name} has ${set.keySize} keys)`,
        });
      if (k > set.keySize && given)
        return void errors.push({
          row,
          field: `key${k}`,
          message: `must be empty (set ${set.name} has ${set.keySize} keys)`,
        });
    }
    const from = byName.get('validFrom');
    const given = byName.get('validTo');
    if (typeof from !== 'string')
      return void errors.push({ row, field: 'validFrom', message: 'is required' });
    const to = typeof given === 'string' ? given : OPEN_END;
    byName.set('validTo', to);
    if (to < from)
      return void errors.push({ row, field: 'validTo', message: `must not be before validFrom (${from})` });
    out.push({
      row,
      set,
      keys: KEYS.slice(0, set.keySize).map((k) => byName.get(k) as string),
      from,
      to,
      values: DATA_FIELDS.map((f) => byName.get(f.name) ?? null),
    });
  });
  return out;
}

/** Rows of the load that overlap each other (same set and keys): the later ones are errors. */
function dropOverlapsWithinLoad(rows: readonly Checked[], errors: RowError[]): Checked[] {
  const groups = new Map<string, Checked[]>();
  for (const r of rows) {
    const k = JSON.stringify([r.set.id, r.keys]);
    const g = groups.get(k);
    if (g) g.push(r);
    else groups.set(k, [r]);
  }
  const bad = new Set<number>();
  for (const g of groups.values()) {
    if (g.length < 2) continue;
    g.sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : a.row - b.row));
    let last = g[0]!;
    for (const r of g.slice(1)) {
      if (r.from <= last.to) {
        bad.add(r.row);
        errors.push({
          row: r.row,
          field: 'validFrom',
          message: `overlaps row ${last.row} of this load (same set and keys)`,
        });
      } else last = r;
    }
  }
  return rows.filter((r) => !bad.has(r.row));
}

const dataColumns = DATA_FIELDS.map((f) => f.column);
const STAGE_COLUMNS = [
  'rownum',
  'condition_record_set_id',
  'key_size_ref',
  ...dataColumns,
  'user_group_edit',
  'user_group_view_details',
  'key_sig',
];

interface ChunkCounts {
  inserted: number;
  cut: number;
  split: number;
  superseded: number;
}

async function runChunk(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  plan: Plan,
  rows: readonly Checked[],
  errors: RowError[],
): Promise<ChunkCounts> {
  const p = principal.partitionId;
  const sets = [...new Set(rows.map((r) => r.set.id))].sort((a, b) => a - b);
  // One writer per set at a time (migration 038): a load reads the items it checks or cuts with this
  // lock held, single-item writers take it shared; so no overlap can be written behind its back.
  await tx.query(
    `SELECT pg_advisory_xact_lock(hashtextextended('rc_crc:' || $1::text || ':' || s::text, 0)) FROM unnest($2::bigint[]) s ORDER BY s`,
    [p, sets],
  );
  await tx.query(`SELECT set_config('rc.crci_checked', 'on', true), set_config('rc.actor', $1, true)`, [
    String(principal.userId),
  ]);
  await tx.query(`CREATE TEMP TABLE ${STAGE} ON COMMIT DROP AS
    SELECT NULL::int AS rownum, condition_record_set_id, key_size_ref, ${dataColumns.map(ident).join(', ')},
           user_group_edit, user_group_view_details, key_sig
      FROM condition_records WITH NO DATA`);
  let csv = '';
  for (const r of rows) {
    const sig = conditionKeySig(r.keys);
    csv += `${csvLine([r.row, r.set.id], [String(r.set.keySize), ...r.values, r.set.edit, r.set.view, sig])}\n`;
  }
  await tx.copyFrom(STAGE, STAGE_COLUMNS, csv);
  // Existing items each new row overlaps (partition, set, key signature, validity): one probe of
  // the key index per staged row — LATERAL, so no plan can turn it around into a scan of the table
  // (the stage has no statistics; the key signature is computed as the database does, lookup.ts).
  await tx.query(
    `CREATE TEMP TABLE rc_crcp_hit ON COMMIT DROP AS
    SELECT c.id, c.valid_from AS e_from, c.valid_to AS e_to, s.valid_from AS n_from, s.valid_to AS n_to, s.rownum
      FROM ${STAGE} s CROSS JOIN LATERAL (
        SELECT c.id, c.valid_from, c.valid_to FROM condition_records c
         WHERE c.partition_id = $1 AND c.condition_record_set_id = s.condition_record_set_id
           AND c.key_sig = s.key_sig AND c.valid_from <= s.valid_to AND c.valid_to >= s.valid_from) c`,
    [p],
  );
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
  const cols = [
    'condition_record_set_id',
    'key_size_ref',
    ...dataColumns,
    'user_group_edit',
    'user_group_view_details',
  ];
  const insert = withHistory(
    `INSERT INTO condition_records AS t (partition_id, ${cols.map(ident).join(', ')}, created_by, last_update_by)
     SELECT ${params.add(p)}::bigint, ${cols.map((c) => `s.${ident(c)}`).join(', ')}, ${uid}::bigint, ${uid}::bigint
       FROM ${STAGE} s ORDER BY s.rownum`,
    // New items: their ADD rows name the fields set (values rebuilt from the item when read).
    { tc, principal, params, kind: 'add' },
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

/**
 * `setFields` values checked with the attribute meta of every set the load writes (a value must suit
 * each); sets that would store it differently (typed apart) need loads of their own.
 */
function typedSplicing(
  plan: Plan,
  sets: readonly SetInfo[],
  fieldsOf: (set: SetInfo) => ReadonlyMap<string, FieldDef>,
): Plan {
  const s = plan.splicing;
  if (s === undefined || s.set.size === 0 || sets.length === 0) return plan;
  const at = 'options.conditionRecords.splicing.setFields';
  const set = new Map<FieldDef, unknown>();
  for (const [f, raw] of s.set) {
    let value: unknown;
    sets.forEach((info, i) => {
      const checked = checkValue(fieldsOf(info).get(f.name)!, raw);
      if (typeof checked === 'string')
        throw validationError(`${at}.${f.name}`, `${checked} (set ${info.name})`);
      if (i > 0 && checked.value !== value) {
        throw validationError(
          `${at}.${f.name}`,
          'the sets of this load type it differently: load them apart',
        );
      }
      value = checked.value;
    });
    set.set(f, value);
  }
  return { ...plan, splicing: { ...s, set } };
}

/**
 * `/loaddata/CRCP` (and `/loaddata/CRCI`, `/loaddata/CRCIn`: the same load without splicing; CRCIn
 * only into sets of that key size): the whole flow of a load; chunks are transactions of their own.
 */
export async function loadConditionRecords(
  db: Db,
  principal: Principal,
  body: LoadBody,
  limits: {
    maxBatchRows: number;
    chunkRows?: number;
    onChunkError?: (err: unknown, first: number, last: number) => void;
  },
  via = 'CRCP',
): Promise<CrcpResult> {
  requireAccess(principal, ITEM_TYPE.access.write);
  const tc = await loadTypeContext(db, principal, ITEM_TYPE);
  const sized = /^CRCI(\d+)$/.exec(via);
  let plan = planCrcp(tc, body, limits.maxBatchRows, via);
  const errors: RowError[] = [];
  const { setOf, sets } = await resolveSets(db, principal, plan, body.data);
  const contexts = new Map<number, TypeContext>();
  for (const set of sets) {
    contexts.set(set.id, await loadTypeContext(db, principal, ITEM_TYPE, String(set.id)));
  }
  const fieldsOf = (set: SetInfo) => contexts.get(set.id)!.fields;
  const member = (g: string | null) =>
    principal.admin || g === null || g === '' || principal.groups.includes(g);
  const writable = sets.filter(
    (x) => member(x.view) && member(x.edit) && (sized === null || x.keySize === Number(sized[1])),
  );
  plan = typedSplicing(plan, writable, fieldsOf);
  const rows = dropOverlapsWithinLoad(
    checkRows(principal, plan, setOf, fieldsOf, body.data, errors, sized ? Number(sized[1]) : undefined),
    errors,
  );
  rows.sort((a, b) => a.row - b.row);
  const total: ChunkCounts = { inserted: 0, cut: 0, split: 0, superseded: 0 };
  const chunkRows = limits.chunkRows ?? CHUNK_ROWS;
  for (let start = 0; start < rows.length; start += chunkRows) {
    const chunk = rows.slice(start, start + chunkRows);
    const chunkErrors: RowError[] = [];
    try {
      const c = await db.transaction((tx) => runChunk(tx, tc, principal, plan, chunk, chunkErrors));
      total.inserted += c.inserted;
      total.cut += c.cut;
      total.split += c.split;
      total.superseded += c.superseded;
      errors.push(...chunkErrors);
    } catch (err) {
      // Only database refusals become row errors; anything else (a time-out) fails the call.
      const sqlState = isObj(err) && typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code);
      if (!sqlState) throw err;
      limits.onChunkError?.(err, chunk[0]!.row, chunk.at(-1)!.row);
      const message =
        isObj(err) && err.code === '23P01'
          ? 'overlaps an item written at the same time by another load (nothing of this chunk was written)'
          : 'the chunk could not be written (nothing of it was)';
      for (const r of chunk) errors.push({ row: r.row, message });
    }
  }
  errors.sort((a, b) => a.row - b.row);
  return {
    ...total,
    invalid: errors.length,
    total: body.data.length,
    errors: errors.slice(0, MAX_ERRORS),
    errorsTruncated: errors.length > MAX_ERRORS,
  };
}
