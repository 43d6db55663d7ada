// Changes by filter: delete-by-filter, massedit and resetcolumn, each as plan → compile → run: the
// plan checks the request against the type (filter resolved, edits validated), compile makes one
// statement (with its record history), run executes it in one transaction.

import type { Principal } from '../access/access.ts';
import { batchTransaction, type Db, type Tx } from '../db/db.ts';
import { Params, ident } from '../db/sql.ts';
import { AppError, validationError } from '../http/errors.ts';
import { requireWrite } from './access-check.ts';
import {
  compileCriteria,
  parseCriteria,
  resolveCriteria,
  type CriteriaNode,
  type ResolvedCriteria,
} from './criteria.ts';
import { loadTypeContext, rowScope, selectList, type TypeContext } from './context.ts';
import type { FetchBody } from './fetch.ts';
import { filterMetaName } from './meta-name.ts';
import type { FieldDef, TypeDef } from './registry.ts';
import { checkValue, editableField } from './value-check.ts';
import { MAX_DECIMAL_TEXT, coerceValue, isWholeNumber } from './values.ts';
import { countWritten, setDeleteActor } from './write.ts';
import { written } from './write-rows.ts';

function countLeaves(node: CriteriaNode): number {
  if (node.kind === 'leaf' || node.kind === 'match' || node.kind === 'invalid') return 1;
  return node.children.reduce((n: number, c) => n + countLeaves(c), 0);
}

export interface BatchResult {
  readonly count: number;
  readonly ignored: readonly { field: string; message: string }[];
}

/** A change by filter checked against its type; `sets` empty means delete. */
interface BulkPlan {
  readonly tc: TypeContext;
  readonly principal: Principal;
  readonly filter: ResolvedCriteria;
  readonly edits: readonly Edit[];
}

/** One validated massedit change. */
type Edit =
  | { readonly field: FieldDef; readonly op: 'null' }
  | { readonly field: FieldDef; readonly op: '='; readonly value: unknown }
  | { readonly field: FieldDef; readonly op: '+' | '-' | '*' | '/'; readonly operand: string | number };

/** The statement of a plan (record history included): a delete, or an update of the edits. */
function compileBulk(plan: BulkPlan): { sql: string; params: Params } {
  const { tc, principal } = plan;
  const table = ident(tc.type.table);
  const params = new Params();
  const sets = plan.edits.map((e) => {
    const col = ident(e.field.column);
    if (e.op === 'null') return `${col} = NULL`;
    if (e.op === '=') return `${col} = ${params.add(e.value)}`;
    // (Added only where used: an unused parameter has no type, which PostgreSQL refuses.)
    let fieldParam: string | undefined;
    const field = () => (fieldParam ??= `${params.add(e.field.name)}::text`);
    // A stored attribute that is not a number (written before its meta said NUMERIC) is refused,
    // naming the field, rather than becoming NULL; a blank one stays blank, as NULL does.
    const current = e.field.storedAsText
      ? `(CASE WHEN btrim(${col}) <> '' AND rc_try_numeric(${col}) IS NULL
           THEN rc_refuse_value(${field()}, 'record ' || t.id || ' holds ' || quote_literal(${col})
                || ', not a number: ' || ${params.add(e.op)}::text || ' cannot change it')
           ELSE rc_try_numeric(${col}) END)`
      : col;
    let expr = `${current} ${e.op} ${params.add(e.operand)}::numeric`;
    // An integer stays one: past its column's range (or int64's, stored as text) it is refused,
    // naming the field, instead of storing a number no write would accept.
    if (e.field.type === 'integer') {
      const [lo, hi] = e.field.int32
        ? ['-2147483648', '2147483647']
        : ['-9223372036854775808', '9223372036854775807'];
      const r = `round(${expr})`;
      expr = `(CASE WHEN ${r} NOT BETWEEN ${lo} AND ${hi}
                THEN rc_refuse_value(${field()}, 'record ' || t.id || ' would hold ' || ${r}
                     || ', outside ${lo}..${hi}')
                ELSE ${r} END)::${e.field.int32 ? 'integer' : 'bigint'}`;
    }
    // A decimal stays one a write would take (at most MAX_DECIMAL_TEXT characters): repeated products
    // grow it past what the client could send back.
    if (e.field.type === 'decimal') {
      expr = `(CASE WHEN length((${expr})::text) > ${MAX_DECIMAL_TEXT}
                THEN rc_refuse_value(${field()}, 'record ' || t.id || ' would hold a number of more than '
                     || ${MAX_DECIMAL_TEXT} || ' characters')
                ELSE ${expr} END)`;
    }
    return `${col} = (${expr})${e.field.storedAsText ? '::text' : ''}`;
  });
  const audit = () =>
    `version = t.version + 1, last_update_at = now(), last_update_by = ${params.add(principal.userId)}`;
  let stmt: string;
  if (sets.length > 0) {
    stmt = `UPDATE ${table} t SET ${[...sets, audit()].join(', ')} WHERE `;
  } else if (tc.type.deleteMode === 'soft') {
    stmt = `UPDATE ${table} t SET deleted_at = now(), ${audit()} WHERE `;
  } else {
    stmt = `DELETE FROM ${table} t WHERE `;
  }
  stmt += `${rowScope(tc, principal, params, 't', { forEdit: true })} AND ${compileCriteria(plan.filter, params, 't')}`;
  return { sql: written(stmt, tc, principal, params, 'count'), params };
}

/** Runs a plan's statement in one transaction; answers the number of records changed. */
async function runBulk(db: Db, load: (tx: Tx) => Promise<BulkPlan>): Promise<number> {
  return batchTransaction(db, async (tx) => {
    const plan = await load(tx);
    await refuseUneditable(tx, plan.tc, plan.principal, (params) =>
      compileCriteria(plan.filter, params, 't'),
    );
    const { sql, params } = compileBulk(plan);
    return countWritten(tx, sql, params);
  });
}

/**
 * A change by filter takes every record the caller sees that matches, or none: one he sees but may
 * not change (its `userGroupEdit`, or its parent's) is a 403, as for a change of that record alone —
 * not left out of a change that answers 200 (a delete by filter deleted the others and kept it).
 */
async function refuseUneditable(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  filter: (params: Params) => string,
): Promise<void> {
  // Only where the edit scope is narrower than the view scope (types with user groups, non-admins).
  const same =
    rowScope(tc, principal, new Params(), 't') ===
    rowScope(tc, principal, new Params(), 't', { forEdit: true });
  if (same) return;
  const params = new Params();
  const r = await tx.query<{ id: string | number }>(
    `SELECT t.id FROM ${ident(tc.type.table)} t
      WHERE ${rowScope(tc, principal, params, 't')} AND ${filter(params)}
        AND NOT (${rowScope(tc, principal, params, 't', { forEdit: true })})
      ORDER BY t.id LIMIT 1`,
    params.values,
  );
  const id = r.rows[0]?.id;
  if (id !== undefined)
    throw new AppError(
      'FORBIDDEN',
      `Not allowed to change ${id}.${tc.type.code} (user group): nothing changed`,
    );
}

/**
 * Deletes every visible, editable record matching the filter. `lenient` is the legacy
 * `/delete/{TC}/batch`: invalid clauses are dropped and reported — but a filter whose clauses were
 * all invalid is refused rather than deleting the whole type.
 */
export async function deleteByFilter(
  db: Db,
  principal: Principal,
  type: TypeDef,
  body: FetchBody,
  lenient: boolean,
): Promise<BatchResult> {
  requireWrite(principal, type, 'delete');
  // Every path (/delete/{TC}/batch[/forcefilter], a lookup table's, ...): no criteria is no request
  // to delete everything — `{data: {}}` is, as `filterCriteria: {}` is for massedit. (An empty body
  // deleted every record of the type or table.)
  if (body.data === undefined || body.data === null)
    throw validationError('data', 'a filter is required (send {"data": {}} to delete every record)');
  let ignored: BatchResult['ignored'] = [];
  const count = await runBulk(db, async (tx) => {
    const tc = await loadTypeContext(
      tx,
      principal,
      type,
      await filterMetaName(tx, principal, type, body.data, body.textMatchStyle),
    );
    const tree = parseCriteria(body.data, {
      lenient,
      field: 'data',
      ...(body.textMatchStyle === undefined ? {} : { textMatchStyle: body.textMatchStyle }),
    });
    const { criteria, dropped } = resolveCriteria(tree, tc.fields, {
      lenient,
      typeCode: type.code,
      typedIdAliases: type.typedIdAliases,
    });
    if (lenient && dropped.length > 0 && dropped.length >= countLeaves(tree.root)) {
      throw new AppError(
        'VALIDATION',
        'Every filter clause is invalid: refusing to delete without a filter',
        {
          errors: Object.fromEntries(dropped.map((d) => [d.field, { errorMessage: d.message }])),
        },
      );
    }
    ignored = dropped;
    await guardEach(tx, tc, principal, criteria);
    await setDeleteActor(tx, principal);
    return { tc, principal, filter: criteria, edits: [] };
  });
  return { count, ignored };
}

/**
 * The state rules of a type (beforeChange: a job not ended, a locked rebate record group, the trust
 * option) hold for each record a delete by filter takes, as for one `/delete`: the matches are read
 * (locked) and checked first; one refused, nothing is deleted. A job deleted so while it ran left its
 * load PROCESSING for ever.
 */
async function guardEach(
  tx: Tx,
  tc: TypeContext,
  principal: Principal,
  filter: ResolvedCriteria,
): Promise<void> {
  const guard = tc.type.beforeChange;
  if (guard === undefined) return;
  const params = new Params();
  const r = await tx.query<Record<string, unknown>>(
    `SELECT ${selectList(tc)} FROM ${ident(tc.type.table)} t
      WHERE ${rowScope(tc, principal, params, 't', { forEdit: true })} AND ${compileCriteria(filter, params, 't')}
      ORDER BY t.id FOR UPDATE`,
    params.values,
  );
  for (const old of r.rows) await guard(tx, principal, old, undefined);
}

export interface MassEditBody {
  readonly filterCriteria?: unknown;
  /** How simple criteria in `filterCriteria` match text, as in a fetch body (default `exact`). */
  readonly textMatchStyle?: string;
  readonly massEditRecords: readonly { fieldName: string; massEditOperator: string; fieldValue?: unknown }[];
}

/**
 * The massedit changes, each checked against its field (a -4 naming `massEditRecords.<i>...`): also
 * for mass changes stored to be applied later (a DCR's), so that they are refused when written.
 */
export function planEdits(tc: TypeContext, body: MassEditBody): Edit[] {
  const seen = new Set<string>();
  return body.massEditRecords.map((edit, i): Edit => {
    const at = `massEditRecords.${i}`;
    const field = editableField(tc, edit.fieldName, `${at}.fieldName`);
    if (seen.has(field.name)) throw validationError(`${at}.fieldName`, `${field.name} is changed twice`);
    seen.add(field.name);
    const op = edit.massEditOperator;
    if (op === 'null') {
      // A field whose null means a value (an item's open end) is set to it, as by /update.
      if (field.nullAs !== undefined) return { field, op: '=', value: field.nullAs };
      if (field.required) throw validationError(`${at}.massEditOperator`, `${field.name} is required`);
      return { field, op };
    }
    if (op === '=') {
      const v = checkValue(field, edit.fieldValue);
      if (typeof v === 'string') throw validationError(`${at}.fieldValue`, v);
      return { field, op, value: v.value };
    }
    if (op === '+' || op === '-' || op === '*' || op === '/') {
      if (field.type !== 'decimal' && field.type !== 'integer') {
        throw validationError(
          `${at}.massEditOperator`,
          `${op} needs a numeric field; ${field.name} is ${field.type}`,
        );
      }
      const operand = coerceValue('decimal', edit.fieldValue);
      if (operand === undefined || typeof operand === 'boolean')
        throw validationError(`${at}.fieldValue`, 'must be a number');
      // An integer plus a fraction is no integer: refused, not rounded back to the value it was.
      // (A product or quotient is rounded half away from zero: a price list's "× 1.1" stays usable.)
      if (field.type === 'integer' && (op === '+' || op === '-') && !isWholeNumber(String(operand)))
        throw validationError(`${at}.fieldValue`, `must be an integer: ${field.name} is an integer field`);
      // Zero by its digits: 1e-400 is a number (Number() would read it as 0).
      if (op === '/' && /^[-+]?0*\.?0*(?:e[-+]?\d+)?$/i.test(String(operand)))
        throw validationError(`${at}.fieldValue`, 'division by zero');
      return { field, op, operand };
    }
    throw validationError(
      `${at}.massEditOperator`,
      `unknown operator ${JSON.stringify(op)} (=, +, -, *, /, null)`,
    );
  });
}

export async function massEdit(
  db: Db,
  principal: Principal,
  type: TypeDef,
  body: MassEditBody,
): Promise<number> {
  requireWrite(principal, type);
  if (!type.massEditable) throw validationError('typeCode', `${type.code} is not mass-editable`);
  if (body.massEditRecords.length === 0)
    throw validationError('massEditRecords', 'must name at least one change');
  // Every path (/massedit, a lookup table's, a DCR's, an import's): no criteria is no request to
  // edit everything — `{}` is. (A lookup table's massedit without them edited every value.)
  if (body.filterCriteria === undefined || body.filterCriteria === null)
    throw validationError('filterCriteria', 'is required ({} edits every record)');
  return runBulk(db, async (tx) => {
    const name = await filterMetaName(tx, principal, type, body.filterCriteria, body.textMatchStyle);
    const tc = await loadTypeContext(tx, principal, type, name);
    const edits = planEdits(tc, body);
    // Custom attributes of a type with attribute meta per table (extension rows) or per set
    // (condition record items) are typed by it: the filter must name the one table whose types
    // check the new values, or they would be written unchecked into rows typed otherwise.
    if (type.metaPerName && name === undefined && edits.some((e) => e.field.custom)) {
      const field = type.metaNameField ?? 'name';
      throw validationError(
        'filterCriteria',
        `name one ${field} (${field} equals ..., alone or in a top-level and; case-insensitively or in part only when one ${field} with attribute meta matches) to edit custom attributes of ${type.code}: its attribute meta types them`,
      );
    }
    const style = {
      field: 'filterCriteria',
      ...(body.textMatchStyle === undefined ? {} : { textMatchStyle: body.textMatchStyle }),
    };
    const filter = resolveCriteria(parseCriteria(body.filterCriteria, style), tc.fields, {
      typeCode: type.code,
      typedIdAliases: type.typedIdAliases,
    }).criteria;
    return { tc, principal, filter, edits };
  });
}

export async function resetColumn(
  db: Db,
  principal: Principal,
  type: TypeDef,
  column: string,
): Promise<number> {
  requireWrite(principal, type);
  // Records with state rules (beforeChange: a locked rebate record group, ...) are changed one by one,
  // where the rules are checked; one UPDATE over the whole column would pass them by.
  if (type.beforeChange)
    throw validationError('typeCode', `${type.code} records are changed one by one (/update/${type.code})`);
  const tc = await loadTypeContext(db, principal, type);
  const f = editableField(tc, column, 'columnName');
  if (f.required) throw validationError('columnName', `${column} is required and cannot be emptied`);
  // A column emptied in every record is a mass edit: refused where /massedit is (after the column's
  // own refusals, which hold whatever the type).
  if (!type.massEditable) throw validationError('typeCode', `${type.code} is not mass-editable`);
  return batchTransaction(db, async (tx) => {
    await refuseUneditable(tx, tc, principal, () => `t.${ident(f.column)} IS NOT NULL`);
    const params = new Params();
    const update = `UPDATE ${ident(type.table)} t SET ${ident(f.column)} = NULL, version = t.version + 1, last_update_at = now(),
              last_update_by = ${params.add(principal.userId)}
        WHERE ${rowScope(tc, principal, params, 't', { forEdit: true })} AND t.${ident(f.column)} IS NOT NULL`;
    return countWritten(tx, written(update, tc, principal, params, 'count'), params);
  });
}
