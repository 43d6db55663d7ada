// Mass changes of a DCR (`/dcrmanager.addmassop|fetchmassop|updatemassop|deletemassop`): a filter
// (AdvancedCriteria) plus mass-edit operations (the operators of `/massedit`), checked against the
// target type when stored and evaluated by the engine's massEdit when the DCR is applied.

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { loadTypeContext } from '../../engine/context.ts';
import { parseCriteria, resolveCriteria } from '../../engine/criteria.ts';
import { fetchRecords, planEdits, type FetchBody, type FetchResult } from '../../engine/crud.ts';
import { filterMetaName } from '../../engine/meta-name.ts';
import { findType } from '../../engine/registry.ts';
import { checkVersionValue, refuseUnknownFields } from '../../engine/value-check.ts';
import { AppError, validationError } from '../../http/errors.ts';
import { checkLabel, editableDcr, readableDcr, restrictTo, type DcrScope } from './service.ts';
import * as store from './store.ts';
import { checkProposal } from './target.ts';
import { isObj } from '../../engine/values.ts';

type Obj = Record<string, unknown>;

const DCRM = findType('DCRM')!;

/** Checks a mass change against the target type now (the engine checks it again when applied). */
async function checkMassOp(
  q: Queryable,
  principal: Principal,
  s: DcrScope,
  data: Obj,
  prefix: string,
): Promise<{ label: string | null; filter: unknown; operations: Obj[] }> {
  for (const k of Object.keys(data))
    if (!['label', 'filterCriteria', 'massEditRecords'].includes(k))
      throw validationError(prefix + k, 'unknown field (label, filterCriteria, massEditRecords)');
  // Required, as by /massedit: `{}` names every record, leaving it out is a mistake.
  const filter = data.filterCriteria;
  if (filter === undefined || filter === null)
    throw validationError(prefix + 'filterCriteria', 'is required ({} changes every record)');
  // Extension rows and condition record items: typed by the table (set) the filter names, as
  // /massedit types them (a value of the wrong type is refused now, not when the DCR is applied).
  const name = await filterMetaName(q, principal, s.type, filter);
  const tc = name === undefined ? s.tc : await loadTypeContext(q, principal, s.type, name);
  resolveCriteria(parseCriteria(filter), tc.fields);
  const ops = data.massEditRecords;
  if (!Array.isArray(ops) || ops.length === 0)
    throw validationError(prefix + 'massEditRecords', 'must name at least one change');
  if (!s.type.massEditable) throw validationError('dcrType', `${s.type.code} is not mass-editable`);
  const operations = ops.map((op: unknown, i) => {
    const at = `${prefix}massEditRecords.${i}`;
    if (!isObj(op)) throw validationError(at, 'must be {fieldName, massEditOperator, fieldValue}');
    const extra = Object.keys(op).find((k) => !['fieldName', 'massEditOperator', 'fieldValue'].includes(k));
    if (extra !== undefined) throw validationError(`${at}.${extra}`, 'unknown field');
    const name = op.fieldName;
    if (typeof name !== 'string' || !s.tc.fields.has(name))
      throw validationError(`${at}.fieldName`, `unknown field ${JSON.stringify(name)}`);
    if (!s.allowed.has(name))
      throw validationError(`${at}.fieldName`, `${name} may not be changed by this DCR type`);
    if (op.massEditOperator === '=') checkProposal(tc, s.allowed, { [name]: op.fieldValue }, `${at}.`);
    // The operator is checked with the rest by /massedit's own checks (planEdits) below.
    const massEditOperator = typeof op.massEditOperator === 'string' ? op.massEditOperator : '';
    return { fieldName: name, massEditOperator, fieldValue: op.fieldValue ?? null };
  });
  // The checks of /massedit itself (numeric fields for arithmetic, operands, division by zero, keys):
  // a mass change that could never apply is refused now, not when the DCR is submitted.
  try {
    planEdits(tc, { massEditRecords: operations });
  } catch (err) {
    if (!(err instanceof AppError) || err.errors === undefined || prefix === '') throw err;
    const errors = Object.fromEntries(Object.entries(err.errors).map(([k, v]) => [prefix + k, v]));
    throw new AppError('VALIDATION', `${prefix}${err.message}`, { errors });
  }
  return { label: checkLabel(data.label, prefix + 'label'), filter, operations };
}

async function massOpViews(
  db: Queryable,
  principal: Principal,
  dcrId: number,
  ids: readonly number[],
): Promise<Obj[]> {
  const r = await fetchRecords(db, principal, DCRM, { startRow: 0, endRow: 10_000 }, 10_000, {
    _constructor: 'AdvancedCriteria',
    operator: 'and',
    criteria: [restrictTo(dcrId), { fieldName: 'id', operator: 'inSet', value: ids }],
  });
  return r.rows as Obj[];
}

export async function addMassOps(
  db: Db,
  principal: Principal,
  idText: string,
  list: readonly Obj[],
): Promise<Obj[]> {
  return db.transaction(async (tx) => {
    const s = await editableDcr(tx, principal, idText);
    const ids: number[] = [];
    for (const [i, d] of list.entries()) {
      const m = await checkMassOp(tx, principal, s, d, list.length > 1 ? `${i}.` : '');
      ids.push(await store.insertMassOp(tx, principal.partitionId, s.dcr.id, principal.userId, m));
    }
    return massOpViews(tx, principal, s.dcr.id, ids);
  });
}

export async function fetchMassOps(
  db: Db,
  principal: Principal,
  idText: string,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  const dcr = await readableDcr(db, principal, idText);
  return fetchRecords(db, principal, DCRM, body, maxPageSize, restrictTo(dcr.id));
}

export async function updateMassOps(
  db: Db,
  principal: Principal,
  idText: string,
  list: readonly { data: Obj; oldValues?: Obj | null }[],
): Promise<Obj[]> {
  return db.transaction(async (tx) => {
    const s = await editableDcr(tx, principal, idText);
    const ids: number[] = [];
    for (const [i, e] of list.entries()) {
      const prefix = list.length > 1 ? `${i}.` : '';
      const ref = e.data.typedId ?? e.data.id;
      if (ref === undefined || ref === null)
        throw validationError(prefix + 'typedId', 'names the mass change (…DCRM)');
      const id = store.parseDcrId(ref, 'DCRM', prefix + 'typedId');
      const [old] = await store.massOpsOf(tx, principal.partitionId, s.dcr.id, [id]);
      if (!old)
        throw new AppError('NOT_FOUND', `Mass change ${id}.DCRM of ${s.dcr.unique_name} not found`, {
          field: prefix + 'typedId',
        });
      const v = e.oldValues?.version;
      checkVersionValue(v, `${prefix}oldValues.version`);
      if (v !== undefined && v !== null && v !== old.version) {
        throw new AppError(
          'VERSION_CONFLICT',
          `Mass change ${id}.DCRM is at version ${old.version}, not ${JSON.stringify(v)}`,
          { field: `${prefix}oldValues.version` },
        );
      }
      for (const k of Object.keys(e.data))
        if (!['typedId', 'id', 'label', 'filterCriteria', 'massEditRecords', 'version'].includes(k))
          throw validationError(`${prefix}${k}`, 'unknown field (label, filterCriteria, massEditRecords)');
      const merged: Obj = { label: old.label, filterCriteria: old.filter, massEditRecords: old.operations };
      // null is "not given" for the filter and the operations (they cannot be cleared), as for any
      // optional field of a body; a null label clears it.
      for (const k of ['label', 'filterCriteria', 'massEditRecords'])
        if (k in e.data && (e.data[k] !== null || k === 'label')) merged[k] = e.data[k];
      await store.updateMassOp(
        tx,
        principal.partitionId,
        id,
        principal.userId,
        await checkMassOp(tx, principal, s, merged, prefix),
      );
      ids.push(id);
    }
    return massOpViews(tx, principal, s.dcr.id, ids);
  });
}

export async function deleteMassOps(
  db: Db,
  principal: Principal,
  idText: string,
  list: readonly Obj[],
): Promise<Obj[]> {
  refuseUnknownFields(DCRM, list);
  return db.transaction(async (tx) => {
    const s = await editableDcr(tx, principal, idText);
    const ids = list.map((d, i) => {
      const ref = d.typedId ?? d.id;
      const prefix = list.length > 1 ? `${i}.` : '';
      if (ref === undefined || ref === null)
        throw validationError(prefix + 'typedId', 'names the mass change (…DCRM)');
      return store.parseDcrId(ref, 'DCRM', prefix + 'typedId');
    });
    const views = await massOpViews(tx, principal, s.dcr.id, ids);
    const gone = await store.deleteRows(tx, 'dcr_massops', principal.partitionId, s.dcr.id, ids);
    const missing = ids.find((w) => !gone.includes(w));
    if (missing !== undefined) {
      const at = list.length > 1 ? `${ids.indexOf(missing)}.` : '';
      throw new AppError('NOT_FOUND', `Mass change ${missing}.DCRM not found`, { field: `${at}typedId` });
    }
    return views;
  });
}
