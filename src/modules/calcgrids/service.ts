// Calculation grids, the domain rules behind /calculationgridmanager.*: creating a grid (its logic,
// key sources and inputs checked), queueing its calculation (a CALCULATIONGRID job, ./job.ts) and
// overriding element results of one item (dependent elements recomputed for that item); accepting
// and rejecting items is ./decisions.ts. The general operations of the engine serve
// /fetch|update|delete/CG and /add|fetch|delete/CGI{k} (src/engine/registry-calcgrids.ts).

import type { Principal } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { fetchOne } from '../../engine/fetch.ts';
import { recordHistory } from '../../engine/history.ts';
import { GRID_TYPE, MAX_GRID_KEYS, gridItemType } from '../../engine/registry-calcgrids.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import { RESTRICTION_PARAM, restrictionOf } from '../../jobs/principal.ts';
import { createJob, jobState, type JobRow } from '../../jobs/store.ts';
import type { LogicLimits } from '../../logic/env.ts';
import { inputValue, type InputType } from '../../logic/logic.ts';
import {
  MAX_LIST_CHARACTERS,
  MAX_LIST_DEPTH,
  MAX_LIST_VALUES,
  listSize,
  parseIsoDate,
  toJson,
  toValue,
  type Value,
} from '../../logic/values.ts';
import { bulkLogic } from '../formulas/bulk.ts';
import { checkInputs, targetDateOf } from '../formulas/service.ts';
import {
  computeItems,
  itemOf,
  overrideKindOf,
  resultMetaOf,
  resultTypesOf,
  type OverrideKind,
} from './compute.ts';
import { CALCULATIONGRID, MAX_BATCH, type CalculationParams } from './job.ts';
import { createResultIndexes, parseIndexedResults } from './indexes.ts';
import { checkSources, parseSources, type KeySource } from './sources.ts';
import * as store from './store.ts';
import { checkVersion, checkVersionValue } from '../../engine/value-check.ts';
import { isObj, unstorableIn } from '../../engine/values.ts';

type Obj = Record<string, unknown>;

const GRID_FIELDS = [
  'label',
  'formulaName',
  'keyNumber',
  'productFilter',
  'keySources',
  'targetDate',
  'inputs',
  'indexedResults',
];

/** The logic of a grid at its target date, which must be of nature CALCULATIONGRID (-4 otherwise). */
async function gridLogic(q: Queryable, principal: Principal, formulaName: string, targetDate: string | null) {
  const date = targetDateOf(targetDate ?? undefined);
  try {
    const found = await bulkLogic(q, principal, formulaName, date);
    if (found.row.nature !== 'CALCULATIONGRID')
      throw validationError(
        'formulaName',
        `logic ${formulaName} is of nature ${found.row.nature}, not CALCULATIONGRID`,
      );
    return { ...found, date };
  } catch (err) {
    if (err instanceof AppError && err.code === 'NOT_FOUND')
      throw validationError('formulaName', `no active logic ${formulaName} valid at ${date.iso}`);
    throw err;
  }
}

/** `/calculationgridmanager.addgrid`: `{data: {label, formulaName, keyNumber, productFilter | keySources, targetDate, inputs}}`. */
export async function addGrid(db: Db, principal: Principal, data: Obj): Promise<Obj> {
  for (const k of Object.keys(data)) if (!GRID_FIELDS.includes(k)) throw validationError(k, 'unknown field');
  const { label, formulaName } = data;
  if (label !== undefined && label !== null && (typeof label !== 'string' || label.length > 1000))
    throw validationError('label', 'must be text of at most 1000 characters');
  if (typeof formulaName !== 'string' || formulaName === '')
    throw validationError('formulaName', 'is required (the name of a CALCULATIONGRID logic)');
  let targetDate: string | null = null;
  if (data.targetDate !== undefined && data.targetDate !== null) {
    if (typeof data.targetDate !== 'string' || !parseIsoDate(data.targetDate))
      throw validationError('targetDate', 'must be a date YYYY-MM-DD');
    targetDate = data.targetDate;
  }
  // (null is "not given", as everywhere in request bodies.)
  const given = (k: string): boolean => data[k] !== undefined && data[k] !== null;
  if (given('keySources') && given('productFilter'))
    throw validationError('productFilter', 'give productFilter or keySources, not both');
  // productFilter is short for one products source: its errors name productFilter, as sent.
  const productFilter = given('productFilter');
  const rawSources = given('keySources')
    ? data.keySources
    : [productFilter ? { type: 'products', filter: data.productFilter } : { type: 'products' }];
  const keyNumber = given('keyNumber') ? data.keyNumber : Array.isArray(rawSources) ? rawSources.length : 1;
  if (
    typeof keyNumber !== 'number' ||
    !Number.isInteger(keyNumber) ||
    keyNumber < 1 ||
    keyNumber > MAX_GRID_KEYS
  ) {
    // Without keyNumber, the number of key sources sent is at fault.
    if (!given('keyNumber'))
      throw validationError('keySources', `must have 1 to ${MAX_GRID_KEYS} key sources (one per key)`);
    throw validationError('keyNumber', `must be an integer from 1 to ${MAX_GRID_KEYS}`);
  }
  if (!given('keySources') && keyNumber !== 1)
    throw validationError(
      'keySources',
      `is required for a grid of ${keyNumber} keys, one source per key (${productFilter ? 'productFilter gives' : 'without it, the products give'} one key)`,
    );
  if (data.inputs !== undefined && data.inputs !== null && !isObj(data.inputs))
    throw validationError('inputs', 'must be an object of input values by name');
  const inputs: Obj = isObj(data.inputs) ? data.inputs : {};
  return db.transaction(async (tx) => {
    const { logic } = await gridLogic(tx, principal, formulaName, targetDate);
    const sources = parseSources(rawSources, keyNumber, logic.inputs, productFilter);
    // The grid's inputs against the declarations; those the sources give are checked per item.
    const bySources = new Set(sources.flatMap((s) => ('input' in s ? [s.input] : [])));
    for (const name of Object.keys(inputs))
      if (bySources.has(name)) throw validationError(`inputs.${name}`, 'is given by a key source');
    checkInputs(
      logic.inputs.filter((d) => !bySources.has(d.name)),
      inputs,
    );
    await checkSources(tx, principal, sources, productFilter);
    const types = resultTypesOf(logic);
    const indexed = parseIndexedResults(data.indexedResults, types);
    const grid = {
      label: (label as string | undefined) ?? null,
      formulaName,
      keyNumber,
      keySources: sources,
      targetDate,
      inputs,
    };
    const id = await store.insertGrid(tx, principal.partitionId, principal.userId, {
      ...grid,
      resultTypes: types,
      resultMeta: resultMetaOf(logic),
    });
    // Its ADD in record history, as every record added through the engine has (the fields set).
    const changes = Object.fromEntries(
      Object.entries(grid)
        .filter(([, v]) => v !== null)
        .map(([k, v]) => [k, { old: null, new: v }]),
    );
    await recordHistory(tx, principal, [
      { typeCode: 'CG', recordId: id, businessKey: String(id), action: 'ADD', changes, version: 0 },
    ]);
    await createResultIndexes(tx, indexed, types);
    return fetchOne(tx, principal, GRID_TYPE, String(id));
  });
}

function gridIdOf(text: string): number {
  const m = /^(\d{1,15})(?:\.CG)?$/.exec(text);
  if (!m) throw validationError('id', 'must be a calculation grid id or typedId (<id>.CG)');
  return Number(m[1]);
}

export function itemIdOf(text: unknown, field: string): { id: number; keyNumber?: number } {
  const s = typeof text === 'number' ? String(text) : text;
  const m = typeof s === 'string' ? /^(\d{1,15})(?:\.CGI([1-6]))?$/.exec(s) : null;
  if (!m) throw validationError(field, 'must be an item id or typedId (<id>.CGI<k>)');
  return { id: Number(m[1]), ...(m[2] === undefined ? {} : { keyNumber: Number(m[2]) }) };
}

export async function gridOrFail(
  q: Queryable,
  principal: Principal,
  idText: string,
  lock: boolean | 'key share' = false,
) {
  const grid = await store.gridById(q, principal.partitionId, gridIdOf(idText), lock);
  if (!grid) throw notFound(`Calculation grid ${idText}`, 'id');
  return grid;
}

/** `/calculationgridmanager.calculate/{id}`: queues the job (409 while one runs); answers it. */
export async function queueCalculation(
  db: Db,
  principal: Principal,
  idText: string,
  data: Obj,
): Promise<JobRow> {
  for (const k of Object.keys(data)) if (k !== 'batchSize') throw validationError(k, 'unknown field');
  const batch = data.batchSize;
  if (
    batch !== undefined &&
    (typeof batch !== 'number' || !Number.isInteger(batch) || batch < 1 || batch > MAX_BATCH)
  )
    throw validationError('batchSize', `must be an integer from 1 to ${MAX_BATCH}`);
  return db.transaction(async (tx) => {
    const grid = await gridOrFail(tx, principal, idText, true);
    let resume = false;
    if (grid.jst_id !== null) {
      const job = await jobState(tx, principal.partitionId, grid.jst_id);
      if (job?.ended === false)
        throw new AppError(
          'CONFLICT',
          `Calculation grid ${grid.id} is being calculated (job ${grid.jst_id}.JST)`,
          // The path parameter named the grid.
          { field: 'id' },
        );
      // A calculation that did not finish is continued: its finished items are not recomputed.
      resume = job !== undefined && job.status !== 'FINISHED';
    }
    const params: CalculationParams & Obj = {
      gridId: grid.id,
      ...(batch === undefined ? {} : { batchSize: batch }),
      [RESTRICTION_PARAM]: restrictionOf(principal),
    };
    const job = await createJob(tx, principal, {
      jobName: `Calculate grid ${grid.label ?? grid.id}`,
      trackerType: CALCULATIONGRID,
      targetObject: `${grid.id}.CG`,
      parameters: params,
      maxAttempts: 3,
    });
    const runId = resume && grid.run_id !== null ? grid.run_id : Number(job.id);
    await store.setGridState(tx, principal.partitionId, grid.id, {
      status: 'QUEUED',
      jstId: Number(job.id),
      runId,
    });
    return job;
  });
}

/** The input type whose checks an override of a scalar element takes. */
const OVERRIDE_INPUT: Readonly<Record<'number' | 'date' | 'boolean' | 'text', InputType>> = {
  number: 'NUMBER',
  date: 'DATE',
  boolean: 'BOOLEAN',
  text: 'TEXT',
};

/** The kind of a JSON value given for an element whose type only its values tell (`any`). */
function kindOfJson(v: unknown): Exclude<OverrideKind, 'any' | 'date'> {
  if (Array.isArray(v)) return 'list';
  if (isObj(v)) return 'record';
  return typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : 'text';
}

const VALUES_ARE: Readonly<Record<OverrideKind, string>> = {
  number: 'numbers',
  date: 'dates',
  boolean: 'true or false',
  text: 'text',
  list: 'lists',
  record: 'records (objects)',
  any: '',
};
/** Why a value is refused: the element's own type (an element typed by its values takes any). */
const valuesAre = (kind: OverrideKind): string =>
  kind === 'any' ? '' : ` (the element's values are ${VALUES_ARE[kind]})`;

/**
 * An override value, of the element's own kind (overrideKindOf): a scalar checked as the logic's
 * input of that type is (a number exact, as the logic reads numbers; a date; a boolean; text) in the
 * form the element's results have (toJson: a decimal past a double as its text); a list or record as
 * given, a list within the sizes of the logic's lists. Text the database cannot hold (NUL) is named
 * where it stands (`data.overrides.L.1`), not left to the database's refusal of the write.
 */
function overrideValue(kind: OverrideKind, v: unknown, field: string): unknown {
  if (v === null) return null;
  const unstorable = unstorableIn(v, kind !== 'number');
  if (unstorable !== undefined)
    throw validationError(unstorable.path === '' ? field : `${field}.${unstorable.path}`, unstorable.problem);
  const as = kind === 'any' ? kindOfJson(v) : kind;
  switch (as) {
    case 'list': {
      if (!Array.isArray(v)) throw validationError(field, `must be a list${valuesAre(kind)}`);
      const size = listSize(toValue(v) as readonly Value[]);
      if (
        size.values > MAX_LIST_VALUES ||
        size.characters > MAX_LIST_CHARACTERS ||
        size.depth > MAX_LIST_DEPTH
      )
        throw validationError(
          field,
          `holds more than a list may: ${MAX_LIST_VALUES} values, ${MAX_LIST_CHARACTERS} characters, ${MAX_LIST_DEPTH} lists deep`,
        );
      return v;
    }
    case 'record':
      if (!isObj(v)) throw validationError(field, `must be an object${valuesAre(kind)}`);
      return v;
    case 'number':
    case 'date':
    case 'boolean':
    case 'text': {
      const checked = inputValue({ name: field, type: OVERRIDE_INPUT[as] }, v);
      if ('error' in checked) throw validationError(field, `${checked.error}${valuesAre(kind)}`);
      return toJson(checked.value);
    }
  }
}

interface ItemLock {
  id: string;
  grid_id: string;
  key_number: number;
  keys: string[];
  overrides: Obj;
  version: number;
  workflow_status: string;
}

/**
 * `/calculationgridmanager.update/{id}`: `{data: {overrides: {<element>: value | null}}, oldValues?: {version}}`.
 * Sets (null: removes) manual values of overridable elements of one item, then evaluates the item
 * with those values fixed, so every element after them is recomputed; answers the item.
 */
export async function overrideItem(
  db: Db,
  principal: Principal,
  idText: string,
  body: Obj,
  limits: LogicLimits,
): Promise<Obj> {
  const ref = itemIdOf(idText, 'id');
  const data = body.data;
  if (!isObj(data)) throw validationError('data', 'must be {overrides: {<element>: value}}');
  for (const k of Object.keys(data))
    if (k !== 'overrides') throw validationError(`data.${k}`, 'unknown field');
  const given = data.overrides;
  if (!isObj(given) || Object.keys(given).length === 0)
    throw validationError('data.overrides', 'must name at least one element and its value');
  if (body.oldValues !== undefined && body.oldValues !== null && !isObj(body.oldValues))
    throw validationError('oldValues', 'must be an object');
  const oldValues = isObj(body.oldValues) ? body.oldValues : undefined;
  const old = oldValues?.version;
  checkVersionValue(old, 'oldValues.version');
  return db.transaction(async (tx) => {
    const r = await tx.query<ItemLock>(
      `SELECT id, grid_id, key_number, ARRAY[key1, key2, key3, key4, key5, key6] AS keys, overrides, version,
              workflow_status
         FROM calc_grid_items WHERE partition_id = $1 AND id = $2 FOR UPDATE`,
      [principal.partitionId, ref.id],
    );
    const item = r.rows[0];
    if (!item || (ref.keyNumber !== undefined && ref.keyNumber !== item.key_number))
      throw notFound(`Calculation grid item ${idText}`, 'id');
    checkVersion(oldValues, { typedId: `${item.id}.CGI${item.key_number}`, version: item.version }, false);
    // Under review, an item's values stay as submitted; decided (approved or denied), an override
    // makes it a new proposal: back to DRAFT / NOT_APPROVED, to be accepted again.
    if (item.workflow_status === 'SUBMITTED') {
      throw new AppError(
        'CONFLICT',
        `Item ${item.id}.CGI${item.key_number} is waiting in a workflow: deny or withdraw it before overriding`,
        { field: 'id' },
      );
    }
    const grid = (await store.gridById(tx, principal.partitionId, Number(item.grid_id)))!;
    const { logic, date } = await gridLogic(tx, principal, grid.formula_name, grid.target_date);
    const overrides: Obj = { ...item.overrides };
    for (const [name, v] of Object.entries(given)) {
      const field = `data.overrides.${name}`;
      // An override held is removed by null, whatever its element has become since.
      if (v === null && Object.hasOwn(overrides, name)) {
        delete overrides[name];
        continue;
      }
      const el = logic.elements.find((e) => e.def.elementName === name);
      if (!el) throw validationError(field, `${grid.formula_name} has no element ${name}`);
      if (el.def.overridable !== true) throw validationError(field, `element ${name} is not overridable`);
      const value = overrideValue(overrideKindOf(el), v, field);
      if (value === null) delete overrides[name];
      else overrides[name] = value;
    }
    const keys = item.keys.slice(0, item.key_number);
    const [row] = await computeItems(
      tx,
      principal,
      logic,
      [
        {
          keys: store.keysOf(keys),
          item: itemOf(grid.key_sources as KeySource[], grid.inputs ?? {}, keys),
          inputHash: '',
          overrides,
        },
      ],
      { targetDate: date, limits },
    );
    await tx.query(
      `UPDATE calc_grid_items SET overrides = $3::jsonb, calculation_results = $4::jsonb, results = $5::jsonb,
              warnings = $6::jsonb, alerts = $7::jsonb, error = $8, calculation_date = now(),
              workflow_status = 'DRAFT', approval_state = 'NOT_APPROVED',
              version = version + 1, last_update_at = now(), last_update_by = $9
        WHERE partition_id = $1 AND id = $2`,
      [
        principal.partitionId,
        item.id,
        JSON.stringify(overrides),
        row!.calculationResults,
        row!.results,
        row!.warnings,
        row!.alerts,
        row!.error,
        principal.userId,
      ],
    );
    await recordHistory(tx, principal, [
      {
        typeCode: `CGI${item.key_number}`,
        recordId: Number(item.id),
        action: 'UPDATE',
        changes: { overrides: { old: item.overrides, new: overrides } },
        version: item.version + 1,
      },
    ]);
    return fetchOne(tx, principal, gridItemType(item.key_number), String(item.id));
  });
}
