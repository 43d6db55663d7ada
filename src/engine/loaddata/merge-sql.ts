// Bulk loads, stage 3, the SQL of a chunk, built once per call from the plan (identifiers from the
// registry only): the temporary staging table, the CSV lines COPY fills it with, then the set-based
// UPDATE of the matches and INSERT ... ON CONFLICT of the rest, each with its record history.

import type { Principal } from '../../access/access.ts';
import { Params, ident, qualified } from '../../db/sql.ts';
import { parentScope, rowScope, type TypeContext } from '../context.ts';
import { historyCte, withHistory } from '../history.ts';
import type { Stored } from './check.ts';
import type { LoadPlan } from './plan.ts';

export const STAGE = 'rc_load_stage';
const ROWNUM = 'rownum';

// ---------------------------------------------------------------------------------------------
// CSV for COPY

/** A value that must be quoted in CSV: empty (unquoted, it would read as NULL) or with `"` `,` CR LF. */
const NEEDS_QUOTES = /^$|[",\r\n]/;

/**
 * One CSV line: `prefix` (numbers: the row number, or the id, partition and audit ids) then every non-null
 * value, quoted (quotes doubled) where CSV needs it; NULL is an unquoted empty field.
 */
export function csvLine(prefix: number | readonly (number | string)[], values: readonly Stored[]): string {
  let line = typeof prefix === 'number' ? String(prefix) : prefix.join(',');
  for (const v of values) {
    line += ',';
    if (v === null) continue;
    // checkValue refuses NUL, which no PostgreSQL text can hold.
    const text = typeof v === 'string' ? v : String(v);
    line += NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  }
  return line;
}

/**
 * Rows per piece of the CSV a COPY is fed (`ChunkCheck.pieces`): pieces are made as COPY asks for
 * them, so PostgreSQL parses and indexes the first ones while later rows are checked and encoded
 * (the check and the encoding took ~110 ms of a 10,000-row chunk whose COPY took ~250 ms, one after
 * the other).
 */
export const PIECE_ROWS = 500;

// ---------------------------------------------------------------------------------------------
// Merge: the SQL of one chunk (built once per call; identifiers from the registry only)

/** A statement of the merge; with `rowsParam`, `$1` is the chunk's row numbers it works on. */
export interface Stmt {
  readonly sql: string;
  readonly params: readonly unknown[];
  readonly rowsParam: boolean;
}

export function paramsOf(stmt: Stmt, rows: readonly number[]): readonly unknown[] {
  return stmt.rowsParam ? [rows, ...stmt.params.slice(1)] : stmt.params;
}

export interface MergeSql {
  readonly create: string;
  readonly columns: readonly string[];
  /**
   * Statistics for the join of the update (a fresh temp table has none): `ANALYZE` of the columns
   * the statements join, filter and group the stage by (all 30-odd columns took ~0.1 s per 10,000-row
   * chunk on PostgreSQL; these a few ms), or undefined without join fields.
   */
  readonly analyze: string | undefined;
  /**
   * Join mode: locks the matches in id order before the update (which locks them in its join's
   * order): two loads updating the same records then queue instead of deadlocking (PostgreSQL).
   */
  readonly lockMatches: Stmt | undefined;
  /** Join mode: the matches the principal may edit get the header columns (RETURNING rownum). */
  readonly update: Stmt | undefined;
  /**
   * Join mode: the same UPDATE of the rows numbered by $1 only — those the insert found taken by a
   * load that committed meanwhile (on PostgreSQL, the INSERT waits for it), now matches.
   */
  readonly updateLeft: Stmt | undefined;
  /** The given rows as new records (RETURNING rownum); absent when the header lacks a key field. */
  readonly insert: Stmt | undefined;
  /** Of the given rows, those matching a record the principal may not edit (user groups). */
  readonly matched: Stmt | undefined;
  /** Of the given rows, those describing a parent record the principal may not edit (`scopedBy`). */
  readonly parentRefused: Stmt | undefined;
}

export function buildMergeSql(plan: LoadPlan, base: TypeContext, principal: Principal): MergeSql {
  const { type } = plan;
  const table = ident(type.table);
  const stage = ident(STAGE);
  const rownum = ident(ROWNUM);
  const cols = plan.header.map((f) => f.column);
  if (cols.includes(ROWNUM)) throw new Error(`${type.table} has a column named ${ROWNUM}`);
  const joinCols = plan.join.map((i) => cols[i]!);
  const keyCols = type.businessKey.map((k) => type.fields.find((f) => f.name === k)!.column);
  const joinMatch = joinCols.map((c) => `${qualified('t', c)} = ${qualified('s', c)}`).join(' AND ');
  // Can a match be one the principal may not edit? Only through user groups, for a non-admin; else
  // "matched" and "updated" are the same rows and the insert needs no anti-join.
  const restricted = (type.userGroups || type.scopedBy !== undefined) && !principal.admin;
  // A new row describing a parent record (scopedBy) needs that parent editable, as on /add. Rows
  // without the parent's column (a load joining by other fields) name no parent: nothing to check.
  const parentOk = (p: Params, alias: string) =>
    type.scopedBy && !principal.admin && cols.includes(type.scopedBy.column)
      ? parentScope(
          type.scopedBy,
          principal,
          p,
          alias,
          { forEdit: true },
          `${p.add(principal.partitionId)}::bigint`,
        )
      : undefined;

  // Column types of the staging table = those of the target (CTAS copies no constraints), so COPY
  // parses each value as the column's type and the merge needs no casts.
  const create = `CREATE TEMP TABLE ${stage} ON COMMIT DROP AS
    SELECT NULL::int AS ${rownum}, ${cols.map((c) => qualified('t', c)).join(', ')}
      FROM ${table} t WITH NO DATA`;

  // A record of the partition matching the join fields, whether or not the principal may edit it.
  // Joined by other fields than the business key, only the records the principal may see: a hidden
  // one does not exist for them (else the row's answer told whether a hidden record held the
  // values, whatever field they were). The business key of a hidden record is taken all the same
  // (the insert's unique index says so), as on /add and /integrate.
  const byKey = joinCols.length === keyCols.length && keyCols.every((c) => joinCols.includes(c));
  const matchExists = (p: Params) =>
    `EXISTS (SELECT 1 FROM ${table} t WHERE ${
      byKey
        ? `t.partition_id = ${p.add(principal.partitionId)}::bigint${
            type.fixed ? ` AND ${qualified('t', type.fixed.column)} = ${p.add(type.fixed.value)}::text` : ''
          }`
        : rowScope(base, principal, p, 't', { includeDeleted: true })
    } AND ${joinMatch})`;

  let lockMatches: Stmt | undefined;
  let update: Stmt | undefined;
  let updateLeft: Stmt | undefined;
  let matched: Stmt | undefined;
  // The UPDATE of the matches: of the whole stage, or (`only`) of the rows numbered by $1.
  const buildUpdate = (only: boolean): Stmt => {
    const p = new Params();
    const rows = only ? `s.${rownum} = ANY(${p.add(null)}::int[]) AND ` : '';
    const sets = plan.header
      .filter((f, i) => !f.key && !plan.join.includes(i))
      .map((f) => `${ident(f.column)} = ${qualified('s', f.column)}`);
    sets.push(
      'version = t.version + 1',
      'last_update_at = now()',
      `last_update_by = ${p.add(principal.userId)}`,
    );
    if (type.deleteMode === 'soft' && plan.replaceSoftDeleted) {
      // Replaced, not restored: what the row does not carry is emptied on soft-deleted matches.
      for (const f of type.fields) {
        if (f.system || f.key || plan.header.includes(f)) continue;
        sets.push(`${ident(f.column)} = CASE WHEN t.deleted_at IS NULL THEN t.${ident(f.column)} END`);
      }
    }
    if (type.deleteMode === 'soft') sets.push('deleted_at = NULL'); // a soft-deleted match is restored
    const scope = rowScope(base, principal, p, 't', { forEdit: true, includeDeleted: true });
    // Join fields other than the key may match several records: a row matching one the principal sees
    // but may not edit changes none of them (its refusal names it), not the others alone.
    const shielded =
      restricted && !byKey
        ? ` AND NOT EXISTS (SELECT 1 FROM ${table} o WHERE ${rowScope(base, principal, p, 'o', { includeDeleted: true })}
              AND ${joinCols.map((c) => `${qualified('o', c)} = ${qualified('s', c)}`).join(' AND ')}
              AND NOT (${rowScope(base, principal, p, 'o', { forEdit: true, includeDeleted: true })}))`
        : '';
    // With its record history (src/engine/history.ts): old values from the statement's snapshot.
    return {
      sql: withHistory(
        `UPDATE ${table} t SET ${sets.join(', ')} FROM ${stage} s WHERE ${rows}${scope} AND ${joinMatch}${shielded}`,
        {
          tc: base,
          principal,
          params: p,
          kind: 'write',
          // Only the header's fields can change (all of them when soft-deleted matches are replaced).
          changing: plan.replaceSoftDeleted ? undefined : plan.header.map((f) => f.name),
        },
        `w.${rownum}`,
        `s.${rownum}`,
      ),
      params: p.values,
      rowsParam: only,
    };
  };
  if (joinCols.length > 0) {
    const p = new Params();
    const scope = rowScope(base, principal, p, 't', { forEdit: true, includeDeleted: true });
    lockMatches = {
      sql: `SELECT t.id FROM ${table} t WHERE ${scope} AND EXISTS (SELECT 1 FROM ${stage} s WHERE ${joinMatch})
             ORDER BY t.id FOR UPDATE OF t`,
      params: p.values,
      rowsParam: false,
    };
    update = buildUpdate(false);
    updateLeft = buildUpdate(true);
    if (restricted) {
      // Refused for a user group: a match the principal sees (a hidden one, matched by its business
      // key, leaves the row to the duplicate-key error /add answers — not "user group", which told it).
      const m = new Params();
      const rows = m.add(null);
      const seen = `EXISTS (SELECT 1 FROM ${table} t WHERE ${rowScope(base, principal, m, 't', { includeDeleted: true })} AND ${joinMatch})`;
      matched = {
        sql: `SELECT s.${rownum} FROM ${stage} s WHERE s.${rownum} = ANY(${rows}::int[]) AND ${seen}`,
        params: m.values,
        rowsParam: true,
      };
    }
  }

  let insert: Stmt | undefined;
  if (plan.missingForInsert === undefined) {
    const p = new Params();
    const where: string[] = [];
    if (joinCols.length > 0) {
      // Only the rows the update did not take; a row matching a record the principal may not
      // edit must not become a new record either.
      where.push(`s.${rownum} = ANY(${p.add(null)}::int[])`);
      if (restricted) where.push(`NOT ${matchExists(p)}`);
    }
    const parentWhere = parentOk(p, 's');
    if (parentWhere !== undefined) where.push(parentWhere);
    const values = [`${p.add(principal.partitionId)}::bigint`];
    const targetCols = ['partition_id'];
    if (type.fixed) {
      targetCols.push(type.fixed.column);
      values.push(`${p.add(type.fixed.value)}::text`);
    }
    const uid = `${p.add(principal.userId)}::bigint`;
    targetCols.push('created_by', 'last_update_by', ...cols);
    values.push(uid, uid, ...cols.map((c) => qualified('src', c)));
    const distinct = keyCols.map((c) => qualified('s', c)).join(', ');
    const conflictTarget = ['partition_id', ...type.uniqueColumns].map(ident).join(', ');
    let conflict = 'DO NOTHING';
    if (type.deleteMode === 'soft') {
      // As /add: a new row for the key of a soft-deleted record replaces that record whole.
      const replace = type.fields
        .filter((f) => !f.system && !f.key)
        .map((f) => `${ident(f.column)} = EXCLUDED.${ident(f.column)}`);
      replace.push(
        'deleted_at = NULL',
        'version = t.version + 1',
        'last_update_at = now()',
        'last_update_by = EXCLUDED.last_update_by',
      );
      const scope = rowScope(base, principal, p, 't', { forEdit: true, includeDeleted: true });
      conflict = `DO UPDATE SET ${replace.join(', ')} WHERE t.deleted_at IS NOT NULL AND ${scope}`;
    }
    const keyJoin = keyCols.map((c) => `${qualified('ins', c)} = ${qualified('src', c)}`).join(' AND ');
    const insertFrom = (source: string) =>
      `INSERT INTO ${table} AS t (${targetCols.map(ident).join(', ')})
       SELECT ${values.join(', ')} FROM ${source} ORDER BY ${keyCols.map((c) => qualified('src', c)).join(', ')}
       ON CONFLICT (${conflictTarget}) ${conflict}
       RETURNING t.*`;
    // Only a soft-deleted record restored by ON CONFLICT has old values; every other returned row is
    // new. Probing the table for each row's old version, on a table without planner statistics (the
    // first load into it), went through another partition-leading index and read the chunk's own new
    // entries once per row: 5.6 s for 10,000 lookup values, 14 s for 10,000 products, 6.8 s for
    // 10,000 extension rows. So new rows of a hard-deleted type are recorded as a bulk ADD, and a
    // soft-deleted type probes only the restored rows: those the restore gave a version above a new
    // row's (0, every table's default).
    const history = historyCte(
      'h',
      'ins',
      type.deleteMode === 'soft'
        ? { tc: base, principal, params: p, kind: 'write', oldRowIf: 'w.version > 0' }
        : { tc: base, principal, params: p, kind: 'add' },
    );
    // INSERT ... RETURNING cannot name the staging row, so the inserted keys are joined back to it.
    // Without join fields the keys of the stage are unique already (checked in JS). With join
    // fields, DISTINCT ON the business key: of rows sharing a new key the first is inserted and the
    // others are duplicates (ON CONFLICT never meets the same key twice in one command). Either way
    // inserted in the order of their keys, as every load inserts them: two loads of the same new
    // keys in other row orders then wait for each other instead of deadlocking halfway (new ids
    // follow the keys within a chunk; row order deadlocked 8 concurrent loads of 200 of 300 keys).
    const stageRows =
      where.length === 0 ? `${stage} src` : `(SELECT * FROM ${stage} s WHERE ${where.join(' AND ')}) src`;
    const sql =
      joinCols.length === 0
        ? `WITH ins AS (${insertFrom(stageRows)}), ${history}
           SELECT src.${rownum} FROM ${stage} src JOIN ins ON ${keyJoin}`
        : `WITH src AS (
             SELECT DISTINCT ON (${distinct}) s.* FROM ${stage} s WHERE ${where.join(' AND ')}
              ORDER BY ${distinct}, s.${rownum}
           ), ins AS (${insertFrom('src')}), ${history}
           SELECT src.${rownum} FROM src JOIN ins ON ${keyJoin}`;
    insert = {
      sql,
      params: p.values,
      rowsParam: joinCols.length > 0,
    };
  }
  let parentRefused: Stmt | undefined;
  const r = new Params();
  const rows = r.add(null);
  const allowed = parentOk(r, 's');
  if (allowed !== undefined) {
    parentRefused = {
      sql: `SELECT s.${rownum} FROM ${stage} s WHERE s.${rownum} = ANY(${rows}::int[]) AND NOT (${allowed})`,
      params: r.values,
      rowsParam: true,
    };
  }
  return {
    create,
    lockMatches,
    columns: [ROWNUM, ...cols],
    analyze:
      joinCols.length > 0
        ? `ANALYZE ${stage} (${[...new Set([ROWNUM, ...joinCols, ...keyCols.filter((c) => cols.includes(c))])].map(ident).join(', ')})`
        : undefined,
    update,
    updateLeft,
    insert,
    matched,
    parentRefused,
  };
}
