// Condition record sets and look-ups beyond the general operations: `conditionrecordset.update`
// (label and user groups only, version-checked, its own permission), the delete of sets (refused
// while a set holds items unless `force`), the general update/integrate of CRCS refused with a
// pointer, and the look-up of items at a date for clients (the set's view group applies).

import { inUserGroup, type Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { validationError } from '../../http/errors.ts';
import { parseId } from '../../engine/addressing.ts';
import { deleteRecords, requireAccess, updateRecords } from '../../engine/crud.ts';
import { SET_TYPE } from '../../engine/registry-condrec.ts';
import type { JsonWrite } from '../../engine/record-json.ts';
import type { TypeDef } from '../../engine/types.ts';
import { findConditionRecordsJson } from './lookup.ts';
import { isObj } from '../../engine/values.ts';

type Obj = Record<string, unknown>;

const SET_UPDATE_TYPE: TypeDef = {
  ...SET_TYPE,
  access: { ...SET_TYPE.access, write: 'CONDITIONRECORDSET_UPDATE' },
};

export function refuseGeneralSetWrite(): never {
  throw validationError(
    'typeCode',
    `CRCS is changed with ${SET_TYPE.updatedBy!} (label and user groups only)`,
  );
}

/** `/conditionrecordset.update/{id}`: `{data: {label?, userGroupViewDetails?, userGroupEdit?}, oldValues: {version}}`. */
export async function updateSet(db: Db, principal: Principal, id: string, body: unknown): Promise<Obj[]> {
  requireAccess(principal, 'CONDITIONRECORDSET_UPDATE');
  const b = isObj(body) ? body : {};
  if (!isObj(b.data)) throw validationError('data', 'must be an object');
  const data: Obj = {};
  const setId = /^\d{1,15}(\.CRCS)?$/.test(id) ? id.split('.')[0]! : undefined;
  if (setId === undefined) throw validationError('id', 'must be a set id or typedId (<id>.CRCS)');
  // A set as fetched may come back whole: of its fields, only label and user groups change; the
  // engine takes the server-kept ones as an echo and those fixed at creation (uniqueName, keySize,
  // wildcardKeys: keys) while unchanged, and a changed one is a -4 naming it.
  for (const [k, v] of Object.entries(b.data)) {
    // The path addresses the set; an echoed id or typedId must be its own (a set fetched and sent to
    // another set's path would otherwise overwrite that one).
    if (k === 'id' || k === 'typedId') {
      refuseOtherSet(`data.${k}`, v, setId);
      continue;
    }
    if (!SET_TYPE.fields.some((f) => f.name === k)) throw validationError(`data.${k}`, 'unknown field');
    data[k] = v;
  }
  if (!isObj(b.oldValues) || b.oldValues.version === undefined) {
    throw validationError('oldValues.version', 'is required');
  }
  // oldValues: the set as fetched (its version is what counts); a name no set field has is a typo.
  for (const [k, v] of Object.entries(b.oldValues)) {
    if (k === 'id' || k === 'typedId') refuseOtherSet(`oldValues.${k}`, v, setId);
    else if (!SET_TYPE.fields.some((f) => f.name === k))
      throw validationError(`oldValues.${k}`, 'unknown field');
  }
  return updateRecords(
    db,
    principal,
    SET_UPDATE_TYPE,
    [{ data: { ...data, typedId: `${setId}.CRCS` }, oldValues: b.oldValues }],
    false,
  );
}

/** An `id` or `typedId` beside the path's set id: absent (null), or naming that set (a -4 otherwise). */
function refuseOtherSet(field: string, value: unknown, setId: string): void {
  if (value === null || value === undefined) return;
  const named = parseId(SET_TYPE, value, field);
  if (named !== Number(setId)) {
    throw validationError(
      field,
      `names set ${named}, not the set of the path (${setId}): leave it out or send it to that set's path`,
    );
  }
}

/**
 * `/delete/CRCS`: the general delete; a set that holds items is refused unless `force` is true (by
 * the database, migration 045, on every delete path: forced sets are named to it per row).
 */
export async function deleteSets(db: Db, principal: Principal, body: unknown): Promise<Obj[]> {
  requireAccess(principal, SET_TYPE.access.write);
  const entries: unknown[] = Array.isArray(body) ? body : [body];
  const topForce = isObj(body) && body.force === true;
  const items = entries.map((e, i) => {
    const at = entries.length > 1 ? `${i}.` : '';
    const data = isObj(e) && isObj(e.data) ? { ...e.data } : undefined;
    if (data === undefined) throw validationError(`${at}data`, 'must be an object');
    // `force` is a boolean wherever it is given ("yes" must not read as "no" in silence).
    if (isObj(e) && e.force !== undefined && typeof e.force !== 'boolean')
      throw validationError(`${at}force`, 'must be true or false');
    if (data.force !== undefined && typeof data.force !== 'boolean')
      throw validationError(`${at}data.force`, 'must be true or false');
    const force = topForce || data.force === true || (isObj(e) && e.force === true);
    delete data.force;
    return { data, force };
  });
  const forced = items.filter((i) => i.force).map((i) => i.data);
  const isForced = (old: Readonly<Obj>) =>
    forced.some(
      (d) => idOf(d) === Number(old.id) || (d.uniqueName !== undefined && d.uniqueName === old.uniqueName),
    );
  const type: TypeDef = {
    ...SET_TYPE,
    async beforeChange(tx, p, old, data) {
      await SET_TYPE.beforeChange?.(tx, p, old, data);
      await tx.query(`SELECT set_config('rc.crcs_force', $1, true)`, [isForced(old) ? 'on' : '']);
    },
  };
  return deleteRecords(
    db,
    principal,
    type,
    items.map((i) => i.data),
  );
}

function idOf(data: Readonly<Obj>): number | null {
  const v = data.typedId ?? data.id;
  const m =
    typeof v === 'number'
      ? [String(v), String(v)]
      : typeof v === 'string'
        ? /^(\d+)(\.CRCS)?$/.exec(v)
        : null;
  return m ? Number(m[1]) : null;
}

const isTextKey = (k: unknown) => typeof k !== 'number' && typeof k !== 'boolean';

/**
 * Key tuples with keys given as JSON numbers or booleans as their text, as a write of an item takes
 * them (a tuple of text keys as it is: a look-up of thousands copies none).
 */
function textKeys(tuples: readonly unknown[]): string[][] {
  const mapped = tuples.map((t) =>
    Array.isArray(t) && !t.every(isTextKey) ? t.map((k: unknown) => (isTextKey(k) ? k : String(k))) : t,
  );
  return mapped as string[][];
}

/**
 * `/conditionrecordset.lookup/{set}`: the items valid at `date` for each key tuple (null where none),
 * as the writer of the answer's `data`.
 */
export async function lookupForClient(
  db: Db,
  principal: Principal,
  setUniqueName: string,
  body: unknown,
): Promise<JsonWrite> {
  // No set name holds NUL (checkValue refuses it), and the database cannot take it as text.
  if (setUniqueName.includes('\u0000'))
    throw validationError('setUniqueName', 'must not contain NUL characters');
  const data = isObj(body) && isObj(body.data) ? body.data : undefined;
  if (data === undefined) throw validationError('data', 'must be {keys: [[...], ...], date}');
  if (!Array.isArray(data.keys)) throw validationError('keys', 'must be an array of key tuples');
  if (typeof data.date !== 'string') throw validationError('date', 'must be a date (YYYY-MM-DD)');
  // A set the caller does not see is a 404, as an unknown one (checked on the look-up's own row).
  return findConditionRecordsJson(db, {
    partitionId: principal.partitionId,
    setUniqueName,
    tuples: textKeys(data.keys),
    date: data.date,
    canView: (g) => inUserGroup(principal, g),
  });
}
