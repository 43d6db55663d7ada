// One proposed DCR item as sent to `/dcrmanager.add/{id}`, before the database is read: its change
// type, the record it names (typedId/id and/or business key) and its values. The checks that need
// the target record (a key that names another record than typedId, an UPDATE that changes nothing)
// run once ./service.ts has found it.

import type { TypeContext } from '../../engine/context.ts';
import { isConditionRecordItemCode, isLookupValueCode, CHANGE_TYPES } from '../../engine/registry-dcr.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { refuseKeyChanges } from '../../engine/value-check.ts';
import { AppError, validationError } from '../../http/errors.ts';
import { parseDcrId } from './store.ts';
import { keyFieldsOf, keyText } from './target.ts';

type Obj = Record<string, unknown>;

export interface Proposal {
  readonly changeType: (typeof CHANGE_TYPES)[number];
  readonly id: number | undefined;
  readonly key: string[] | undefined;
  readonly values: Obj;
}

/** The field a proposal named its record by: `typedId` (or `id`), else the last of its key fields. */
export function addressField(type: TypeDef, p: Proposal): string {
  return p.id !== undefined ? 'typedId' : (keyFieldsOf(type, p.values).at(-1) ?? 'typedId');
}

export function parseProposal(type: TypeDef, tc: TypeContext, data: Obj, prefix: string): Proposal {
  const ct = data.changeType ?? 'UPDATE';
  if (typeof ct !== 'string' || !(CHANGE_TYPES as readonly string[]).includes(ct)) {
    throw validationError(prefix + 'changeType', `must be one of ${CHANGE_TYPES.join(', ')}`);
  }
  let id: number | undefined;
  const ref = data.typedId ?? data.id;
  if (ref !== undefined && ref !== null) {
    // A condition record item keeps its id under every item type: `7.CRCI2` or `7.CRCI`.
    const itemCode = typeof ref === 'string' ? /\.(CRCI\d*)$/.exec(ref)?.[1] : undefined;
    const other = isConditionRecordItemCode(type.code) && itemCode !== undefined ? itemCode : type.code;
    id = parseDcrId(ref, other, prefix + 'typedId');
  }
  const keyFields = keyFieldsOf(type, data);
  const hasKey = keyFields.every((k) => data[k] !== undefined && data[k] !== null && data[k] !== '');
  const key = hasKey ? keyFields.map((k) => keyText(tc.fields.get(k)!, data[k], prefix + k)) : undefined;
  if (ct === 'ADD' && key === undefined) {
    const missing = keyFields.find((k) => data[k] === undefined || data[k] === null || data[k] === '');
    throw validationError(prefix + (missing ?? 'typedId'), 'is required to add a record');
  }
  // An ADD makes a record: a typedId/id beside its key named an existing one, and was ignored.
  if (ct === 'ADD' && id !== undefined) {
    throw validationError(
      prefix + 'typedId',
      'an ADD item names no existing record: leave out typedId and id',
    );
  }
  if (ct !== 'ADD' && id === undefined && key === undefined) {
    throw validationError(prefix + 'typedId', `give typedId or ${keyFields.join(' + ')}`);
  }
  const values: Obj = {};
  for (const [k, v] of Object.entries(data)) {
    if (k === 'changeType' || k === 'typedId' || k === 'id') continue;
    values[k] = v;
  }
  refuseOtherTable(type, values, prefix);
  if (ct === 'DELETE') {
    const extra = Object.keys(values).find((k) => !keyFields.includes(k));
    if (extra !== undefined) throw validationError(prefix + extra, 'a DELETE item proposes no values');
  }
  return { changeType: ct as Proposal['changeType'], id, key, values };
}

/**
 * A lookup value's table (`lookupTableId` or `tableId`: server fields, otherwise skipped like
 * `version`) names the DCR type's table or is a -4 naming the field: an item meant for another table
 * is never silently taken for this one.
 */
function refuseOtherTable(type: TypeDef, values: Readonly<Obj>, prefix: string): void {
  if (!isLookupValueCode(type.code)) return;
  const table = type.fixed?.value;
  for (const name of ['lookupTableId', 'tableId']) {
    const v = values[name];
    if (v === undefined || v === null) continue;
    const same = (typeof v === 'number' || typeof v === 'string') && String(v).trim() === table;
    if (!same) {
      throw validationError(
        prefix + name,
        `names another lookup table than the DCR type's (${JSON.stringify(v)}; the DCR type's is ${table})`,
      );
    }
  }
}

/**
 * An item that names its record by typedId/id and also gives key fields: the keys must be that
 * record's (the engine's `refuseKeyChanges`, as a direct /update answers), else a -4 naming the key
 * field — it was silently the typedId's record that changed.
 */
export function refuseOtherRecord(tc: TypeContext, values: Obj, row: Readonly<Obj>, prefix: string): void {
  try {
    refuseKeyChanges(tc, values, row);
  } catch (err) {
    const field = err instanceof AppError && err.errors ? Object.keys(err.errors)[0] : undefined;
    if (field === undefined) throw err;
    const had = row[field];
    const shown = JSON.stringify(had instanceof Date ? had.toISOString().slice(0, 10) : had);
    throw validationError(
      prefix + field,
      `names another record than typedId: ${String(row.typedId)} has ${field} ${shown} (a key cannot be changed by a DCR)`,
    );
  }
}

/** An UPDATE item whose checked values (`proposed`) change no field: a -4 naming its address. */
export function refuseEmptyUpdate(p: Proposal, proposed: Readonly<Obj>, addressField: string): void {
  if (p.changeType !== 'UPDATE' || Object.keys(proposed).length > 0) return;
  throw validationError(
    addressField,
    'names no field to change (give the values to change, or changeType DELETE to remove the record)',
  );
}
