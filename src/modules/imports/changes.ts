// The staged changes of an import: saved one by one (by their identity), fetched, mass edited and
// mass deleted with the engine's filter on type IMC, always within the import named in the path
// (its scope, and each write in a transaction that locks the import against a submit, from
// ./service.ts).

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import {
  deleteByFilter,
  fetchRecords,
  massEdit,
  type FetchBody,
  type FetchResult,
} from '../../engine/crud.ts';
import { findType } from '../../engine/registry.ts';
import { IMPORT_KEY_COUNT } from '../../engine/registry-imports.ts';
import { AppError, validationError } from '../../http/errors.ts';
import { CHANGE_TYPES, changingImport, scopeOf } from './service.ts';
import * as store from './store.ts';
import { isObj } from '../../engine/values.ts';

type Obj = Record<string, unknown>;

const IMC = findType('IMC')!;

/** `{changeType?, targetColumn, <key fields by name> or key1..keyN, value}`: the staged change by its identity. */
export async function saveChanges(
  db: Db,
  principal: Principal,
  idText: string,
  list: readonly Obj[],
): Promise<Obj[]> {
  const s = await scopeOf(db, principal, idText, true);
  const batch = list.length > 1;
  const changes = list.map((d, i): store.NewChange => {
    const at = batch ? `${i}.` : '';
    const changeType = d.changeType ?? 'UPDATE';
    if (typeof changeType !== 'string' || !CHANGE_TYPES.includes(changeType)) {
      throw validationError(`${at}changeType`, `must be one of ${CHANGE_TYPES.join(', ')}`);
    }
    const known = new Set(['changeType', 'targetColumn', 'value']);
    s.type.businessKey.forEach((k, n) => known.add(k).add(`key${n + 1}`));
    const unknown = Object.keys(d).find((name) => !known.has(name));
    if (unknown !== undefined) throw validationError(`${at}${unknown}`, 'unknown field');
    const keys = s.type.businessKey.map((k, n) => {
      const byNumber = d[`key${n + 1}`];
      const byName = d[k];
      const given = (x: unknown) => (typeof x === 'string' && x !== '') || typeof x === 'number';
      if (given(byName) && given(byNumber) && `${byName as string}` !== `${byNumber as string}`)
        throw validationError(`${at}key${n + 1}`, `names another ${k} than ${k} does`);
      const v = given(byName) ? byName : byNumber;
      if (v === undefined || v === null || v === '')
        throw validationError(`${at}${k}`, 'is required (part of the business key)');
      if (typeof v !== 'string' && typeof v !== 'number')
        throw validationError(`${at}${k}`, 'must be text or a number');
      return String(v);
    });
    let targetColumn = '';
    if (changeType !== 'DELETE') {
      const f = typeof d.targetColumn === 'string' ? s.tc.fields.get(d.targetColumn) : undefined;
      if (!f || f.system || f.key)
        throw validationError(`${at}targetColumn`, `must name a writable field of ${s.type.code}`);
      targetColumn = f.name;
    }
    const v = d.value;
    if (
      v !== undefined &&
      v !== null &&
      typeof v !== 'string' &&
      typeof v !== 'number' &&
      typeof v !== 'boolean'
    ) {
      throw validationError(`${at}value`, 'must be text, a number or a boolean');
    }
    return {
      changeType,
      targetColumn,
      keys,
      value: v === undefined || v === null ? null : String(v),
      rowNumber: null,
    };
  });
  const ids = await changingImport(db, principal, s.im.id, (within) =>
    store.upsertChanges(within, principal.partitionId, s.im.id, principal.userId, changes),
  );
  const r = await fetchRecords(
    db,
    principal,
    IMC,
    { startRow: 0, endRow: ids.length },
    Math.max(ids.length, 1),
    {
      _constructor: 'AdvancedCriteria',
      operator: 'and',
      criteria: [restrictTo(s.im.id), { fieldName: 'id', operator: 'inSet', value: ids }],
    },
  );
  return r.rows as Obj[];
}

const restrictTo = (importId: number): Obj => ({
  fieldName: 'importId',
  operator: 'equals',
  value: importId,
});

/**
 * The client's filter restricted to the changes of this import, as the engine reads it for a mass
 * edit or delete (one filter: those take no separate restriction, as fetch does). Advanced criteria
 * are ANDed to the restriction; simple criteria get one more key, `importId`, so that the engine
 * still reads them with their textMatchStyle (written out as leaves here they lost it). A simple
 * `importId` of the client's holds for all changes of this import or none: the engine says which
 * (refusing a value that is no id, as fetch does), and none is the empty list, which matches nothing.
 */
async function withinImport(
  q: Queryable,
  principal: Principal,
  importId: number,
  filter: unknown,
  param: string,
): Promise<Obj> {
  if (filter === undefined || filter === null) return restrictTo(importId);
  if (!isObj(filter)) throw validationError(param, 'must be criteria (an object)');
  const advanced =
    Object.hasOwn(filter, '_constructor') ||
    Object.hasOwn(filter, 'criteria') ||
    (Object.hasOwn(filter, 'fieldName') && Object.hasOwn(filter, 'operator'));
  if (advanced)
    return { _constructor: 'AdvancedCriteria', operator: 'and', criteria: [restrictTo(importId), filter] };
  let holds = true;
  if (Object.hasOwn(filter, 'importId')) {
    const named = await fetchRecords(
      q,
      principal,
      IMC,
      { data: { importId: filter.importId }, startRow: 0, endRow: 0 },
      1,
      restrictTo(importId),
    );
    holds = named.totalRows > 0;
  }
  return { ...filter, importId: holds ? importId : [] };
}

export async function fetchChanges(
  db: Db,
  principal: Principal,
  idText: string,
  body: FetchBody,
  maxPageSize: number,
): Promise<FetchResult> {
  const s = await scopeOf(db, principal, idText, false);
  return fetchRecords(db, principal, IMC, body, maxPageSize, restrictTo(s.im.id));
}

/**
 * One `massEditRecords` element, as save checks a change: the server's fields are not edited, keys
 * past the target type's (`key2` of a one-key type) do not exist, and what a change requires — its
 * change type, target column and keys — is only set (`=`) to what save takes: a change type, a
 * writable field of the target type, a non-empty key. (Set to NULL they were a 500.)
 */
function checkEdit(s: Awaited<ReturnType<typeof scopeOf>>, op: unknown, at: string): void {
  if (!isObj(op)) return; // the engine says what an element must be
  const name = op.fieldName;
  if (name === 'validationState' || name === 'message' || name === 'importId')
    throw validationError(`${at}.fieldName`, `${String(name)} is set by the server`);
  // A staged value is text (the cell as given): set or emptied, never computed.
  if (name === 'value' && op.massEditOperator !== '=' && op.massEditOperator !== 'null')
    throw validationError(`${at}.massEditOperator`, 'value (text) is only set (=) or emptied (null)');
  const keys = s.type.businessKey.map((_, n) => `key${n + 1}`);
  if (typeof name === 'string' && /^key\d+$/.test(name) && !keys.includes(name))
    throw validationError(`${at}.fieldName`, `${s.type.code} has ${keys.length} key(s): ${keys.join(', ')}`);
  if (name !== 'changeType' && name !== 'targetColumn' && !keys.includes(name as string)) return;
  if (op.massEditOperator !== '=')
    throw validationError(`${at}.massEditOperator`, `${String(name)} is required: it is only set (=)`);
  const v = op.fieldValue;
  if (name === 'changeType' && (typeof v !== 'string' || !CHANGE_TYPES.includes(v)))
    throw validationError(`${at}.fieldValue`, `must be one of ${CHANGE_TYPES.join(', ')}`);
  if (name === 'targetColumn') {
    const f = typeof v === 'string' ? s.tc.fields.get(v) : undefined;
    if (!f || f.system || f.key)
      throw validationError(`${at}.fieldValue`, `must name a writable field of ${s.type.code}`);
  }
  if (keys.includes(name as string) && !((typeof v === 'string' && v !== '') || typeof v === 'number'))
    throw validationError(`${at}.fieldValue`, 'is required (part of the business key): text or a number');
}

/** The operators of `/massedit` on the staged changes; every edited change is NEW again. */
export async function massEditChanges(
  db: Db,
  principal: Principal,
  idText: string,
  body: Obj,
): Promise<number> {
  const s = await scopeOf(db, principal, idText, true);
  const ops = body.massEditRecords;
  if (!Array.isArray(ops) || ops.length === 0)
    throw validationError('massEditRecords', 'must name at least one change');
  ops.forEach((op: unknown, i) => checkEdit(s, op, `massEditRecords.${i}`));
  // Required, as by /massedit: `{}` names every change, leaving it out is a mistake.
  if (body.filterCriteria === undefined || body.filterCriteria === null)
    throw validationError('filterCriteria', 'is required ({} edits every change)');
  const edits = ops as { fieldName: string; massEditOperator: string; fieldValue?: unknown }[];
  const at = (name: string) => edits.findIndex((e) => e.fieldName === name);
  const typeAt = at('changeType');
  const newType = typeAt < 0 ? undefined : edits[typeAt]!.fieldValue;
  // The shape `save` gives a change: a DELETE names no column and holds no value (set so here); an
  // ADD or UPDATE names its column (one made from a DELETE needs targetColumn set too).
  if (newType === 'DELETE' && at('targetColumn') >= 0)
    throw validationError(
      `massEditRecords.${at('targetColumn')}.fieldName`,
      'a DELETE names no targetColumn',
    );
  const shape =
    newType === 'DELETE'
      ? [
          { fieldName: 'targetColumn', massEditOperator: '=', fieldValue: '' },
          { fieldName: 'value', massEditOperator: 'null' },
        ]
      : [];
  try {
    return await changingImport(db, principal, s.im.id, async (within) => {
      const filterCriteria = await withinImport(
        within,
        principal,
        s.im.id,
        body.filterCriteria,
        'filterCriteria',
      );
      if (newType !== undefined && newType !== 'DELETE' && at('targetColumn') < 0) {
        const columnless = await fetchRecords(
          within,
          principal,
          IMC,
          { data: { targetColumn: '' }, textMatchStyle: 'exactCase', startRow: 0, endRow: 0 },
          1,
          filterCriteria,
        );
        if (columnless.totalRows > 0)
          throw validationError(
            `massEditRecords.${typeAt}.fieldValue`,
            `${columnless.totalRows} of the changes are DELETEs, which name no column: set targetColumn too`,
          );
      }
      return massEdit(within, principal, IMC, {
        filterCriteria,
        massEditRecords: [
          ...edits,
          ...shape,
          { fieldName: 'validationState', massEditOperator: '=', fieldValue: 'NEW' },
          { fieldName: 'message', massEditOperator: 'null' },
        ],
      });
    });
  } catch (e) {
    const duplicate =
      (e as { code?: unknown }).code === '23505' || (e instanceof AppError && e.code === 'DUPLICATE_KEY');
    if (!duplicate) throw e;
    throw (await sharedIdentity(db, principal, s.im.id, body.filterCriteria, edits)) ?? e;
  }
}

const IDENTITY = [
  'changeType',
  'targetColumn',
  ...Array.from({ length: IMPORT_KEY_COUNT }, (_, n) => `key${n + 1}`),
];

/**
 * Why a massedit was refused as a duplicate (its transaction is rolled back by then): the first two
 * changes the edit would give one identity (change type, target column, keys), as a 409 naming them
 * and the edited identity fields. (The 409 named neither.) Undefined when the edit no longer collides.
 */
async function sharedIdentity(
  db: Db,
  principal: Principal,
  importId: number,
  filterCriteria: unknown,
  edits: readonly { fieldName: string; fieldValue?: unknown }[],
): Promise<AppError | undefined> {
  const sets = edits.filter((op) => IDENTITY.includes(op.fieldName));
  if (sets.length === 0) return undefined;
  const data = await withinImport(db, principal, importId, filterCriteria, 'filterCriteria');
  const count = await fetchRecords(db, principal, IMC, { data, startRow: 0, endRow: 0 }, 1);
  const n = Math.max(count.totalRows, 1);
  const rows = (await fetchRecords(db, principal, IMC, { data, startRow: 0, endRow: n }, n)).rows as Obj[];
  const matched = new Set(rows.map((r) => Number(r.id)));
  const taken = new Map<string, number>();
  for (const c of await store.changesOf(db, principal.partitionId, importId)) {
    const identity: Record<string, string> = { changeType: c.change_type, targetColumn: c.target_column };
    c.keys.forEach((k, i) => (identity[`key${i + 1}`] = k));
    if (matched.has(c.id)) for (const op of sets) identity[op.fieldName] = String(op.fieldValue);
    const text = JSON.stringify(IDENTITY.map((f) => identity[f]));
    const other = taken.get(text);
    if (other === undefined) {
      taken.set(text, c.id);
      continue;
    }
    const keys = IDENTITY.slice(2)
      .map((f) => identity[f])
      .filter((k) => k !== '');
    const what = `${identity.changeType} ${identity.targetColumn || '(record)'} of ${JSON.stringify(keys)}`;
    const message = `the massedit would make ${other}.IMC and ${c.id}.IMC the same change (${what}): an import holds one change per change type, target column and key`;
    const errors: Record<string, { errorMessage: string }> = {
      [`${other}.IMC`]: { errorMessage: message },
      [`${c.id}.IMC`]: { errorMessage: message },
    };
    for (const op of sets) errors[op.fieldName] = { errorMessage: message };
    return new AppError('DUPLICATE_KEY', message, { errors });
  }
  return undefined;
}

/** `data` is required: `{}` names every change, no criteria is no request to delete them all. */
export async function massDeleteChanges(
  db: Db,
  principal: Principal,
  idText: string,
  body: FetchBody,
): Promise<number> {
  const s = await scopeOf(db, principal, idText, true);
  if (!isObj(body.data))
    throw validationError('data', 'is required: criteria (an object; {} names every change)');
  const { textMatchStyle } = body;
  const r = await changingImport(db, principal, s.im.id, async (within) =>
    deleteByFilter(
      within,
      principal,
      IMC,
      {
        data: await withinImport(within, principal, s.im.id, body.data, 'data'),
        ...(textMatchStyle === undefined ? {} : { textMatchStyle }),
      },
      false,
    ),
  );
  return r.count;
}
