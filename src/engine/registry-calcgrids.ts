// Calculation grids (migration 030, src/modules/calcgrids/): grids (`CG`) and their items
// `CGI1`..`CGI6` (items of grids with that many keys, scoped by the `fixed` column `key_number`).
// Grids are created by `/calculationgridmanager.addgrid` (the general add is refused); the general
// update changes the label only (every other field is the server's). Items carry, besides their
// declared fields, one field per logic element of the partition's grids with that key number:
// `result.<elementName>`, the element's effective value (override applied) from the `results` map,
// typed by the element's values (numbers compare as numbers) — see `extraFields`.

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { qualified } from '../db/sql.ts';
import { AppError, notFound, validationError } from '../http/errors.ts';
import { SYSTEM, text } from './registry-fields.ts';
import type { FieldDef, FieldType, TypeDef } from './types.ts';

export const MAX_GRID_KEYS = 6;
export const GRID_TABLE = 'calc_grids';
export const GRID_ITEM_TABLE = 'calc_grid_items';
/** Prefix of the result fields of items: `result.ListPrice`. */
export const RESULT_PREFIX = 'result.';
const MANAGER_ADD = '/calculationgridmanager.addgrid';

const system = (name: string, column: string, type: FieldType = 'string'): FieldDef => ({
  name,
  column,
  type,
  system: true,
});

export const GRID_TYPE: TypeDef = {
  code: 'CG',
  label: 'Calculation grid',
  table: GRID_TABLE,
  fields: [
    text('label', 'label'),
    system('formulaName', 'formula_name'),
    system('keyNumber', 'key_number', 'integer'),
    system('keySources', 'key_sources', 'json'),
    system('targetDate', 'target_date', 'date'),
    system('inputs', 'inputs', 'json'),
    system('status', 'status'),
    system('jstId', 'jst_id', 'integer'),
    system('itemCount', 'item_count', 'integer'),
    system('calculatedCount', 'calculated_count', 'integer'),
    system('errorCount', 'error_count', 'integer'),
    system('calculationDate', 'calculation_date', 'datetime'),
    ...SYSTEM,
  ],
  businessKey: ['id'],
  uniqueColumns: [],
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  userGroups: false,
  access: { fetch: 'CALCULATIONGRID_FETCH', write: 'CALCULATIONGRID_EDIT' },
  beforeInsert: () => {
    throw new AppError('VALIDATION', `Calculation grids are created with ${MANAGER_ADD}`, {
      errors: { typeCode: { errorMessage: `use ${MANAGER_ADD}` } },
    });
  },
};

/** Before an item is added: its grid exists in the partition and has this many keys. */
function itemGuard(keyNumber: number) {
  return async function checkItemGrid(
    q: Queryable,
    principal: Principal,
    data: Readonly<Record<string, unknown>>,
  ): Promise<void> {
    const id = Number(data.calculationGridId);
    // Ids are below 2^53 (the engine takes integers up to 2^63, which name no grid).
    if (!Number.isSafeInteger(id))
      throw validationError(
        'calculationGridId',
        `there is no calculation grid ${String(data.calculationGridId)}`,
      );
    const r = await q.query<{ key_number: number }>(
      `SELECT key_number FROM calc_grids WHERE partition_id = $1 AND id = $2`,
      [principal.partitionId, id],
    );
    const grid = r.rows[0];
    if (!grid) throw notFound(`Calculation grid ${id}`, 'calculationGridId');
    if (grid.key_number !== keyNumber) {
      throw validationError(
        'calculationGridId',
        `grid ${id} has ${grid.key_number} keys: its items are CGI${grid.key_number}, not CGI${keyNumber}`,
      );
    }
  };
}

/**
 * `result.<element>` fields of the partition's grids with this key number (conflicting types: text);
 * a request on one grid's items (`calculationGridId` equals it) types its elements as that grid does,
 * whatever other grids' elements of the same name are.
 */
function resultFields(keyNumber: number) {
  return async function loadResultFields(
    q: Queryable,
    partitionId: number,
    idOf: (field: string) => number | undefined,
  ): Promise<FieldDef[]> {
    const r = await q.query<{ id: string | number; result_types: Record<string, string> }>(
      `SELECT id, result_types FROM calc_grids WHERE partition_id = $1 AND key_number = $2`,
      [partitionId, keyNumber],
    );
    const grid = idOf('calculationGridId');
    const types = new Map<string, FieldType>();
    const own = new Map<string, FieldType>();
    for (const row of r.rows) {
      for (const [name, t] of Object.entries(row.result_types ?? {})) {
        if (!ELEMENT_NAME.test(name) || !isFieldType(t)) continue;
        const seen = types.get(name);
        types.set(name, seen === undefined || seen === t ? t : 'string');
        if (Number(row.id) === grid) own.set(name, t);
      }
    }
    for (const [name, t] of own) types.set(name, t);
    return [...types].map(([name, type]) => ({
      name: `${RESULT_PREFIX}${name}`,
      column: 'results',
      type,
      jsonKey: name,
      system: true,
    }));
  };
}

const ELEMENT_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
const RESULT_FIELD_TYPES: readonly string[] = ['string', 'decimal', 'boolean', 'date'];
const isFieldType = (t: string): t is FieldType => RESULT_FIELD_TYPES.includes(t);

function itemType(keyNumber: number): TypeDef {
  const keys: FieldDef[] = Array.from({ length: keyNumber }, (_, i) => ({
    ...text(`key${i + 1}`, `key${i + 1}`, { maxLength: 255 }),
    required: true,
    key: true,
  }));
  return {
    code: `CGI${keyNumber}`,
    label: `Calculation grid item (${keyNumber} key${keyNumber > 1 ? 's' : ''})`,
    table: GRID_ITEM_TABLE,
    fields: [
      { name: 'calculationGridId', column: 'grid_id', type: 'integer', required: true, key: true },
      ...keys,
      {
        ...system('calculationResults', 'calculation_results', 'json'),
        // Stored compactly (migration 032): expanded with the grid's result meta when read.
        readSql: (a) =>
          `rc_grid_results(${qualified(a, 'calculation_results')}, (SELECT g.result_meta FROM calc_grids g
             WHERE g.partition_id = ${qualified(a, 'partition_id')} AND g.id = ${qualified(a, 'grid_id')}))`,
      },
      system('overrides', 'overrides', 'json'),
      system('approvalState', 'approval_state'),
      system('workflowStatus', 'workflow_status'),
      system('calculationDate', 'calculation_date', 'datetime'),
      system('warnings', 'warnings', 'json'),
      system('alerts', 'alerts', 'json'),
      system('error', 'error'),
      ...SYSTEM,
    ],
    businessKey: ['calculationGridId', ...keys.map((k) => k.name)],
    uniqueColumns: ['grid_id', 'key1', 'key2', 'key3', 'key4', 'key5', 'key6'],
    fixed: { column: 'key_number', value: String(keyNumber) },
    deleteMode: 'hard',
    massEditable: false,
    bulkLoadable: false,
    userGroups: false,
    access: { fetch: 'CALCULATIONGRID_FETCH', write: 'CALCULATIONGRID_EDIT' },
    beforeInsert: itemGuard(keyNumber),
    extraFields: resultFields(keyNumber),
  };
}

export const ITEM_TYPES: readonly TypeDef[] = Array.from({ length: MAX_GRID_KEYS }, (_, i) =>
  itemType(i + 1),
);

/** The item type of a grid with this many keys. */
export function gridItemType(keyNumber: number): TypeDef {
  return ITEM_TYPES[keyNumber - 1]!;
}

export const CALC_GRID_TYPES: readonly TypeDef[] = [GRID_TYPE, ...ITEM_TYPES];
