// `/rebaterecordgroup.calculate/{typedId}`: in ONE transaction, the fields given in
// `data.rebateRecordGroup` update the group first (the engine's general update: values, edit group,
// version check when `version` is given, state rules), then the group's logic — its own `formulaName`
// or its rebate type's, a logic of nature REBATE valid at the group's `targetDate` (today without
// one) — runs over the group: `input.<name>` from the group's `inputs` ([{name, value}]), `row.<field>`
// the group itself (dates, attributes typed by the rebate type's RBTAM, every other field),
// `targetDate` the group's. Results, alerts, warnings and the message fields are stored on the group;
// the answer is the group. A logic stopped by a limit is a -4 and nothing is written. Errors name a
// field the body gave by its path there (`data.rebateRecordGroup.attribute7`), a stored field of the
// group it did not give by its name (`formulaName`), the group itself as the path named it.

import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { inTransaction } from '../../db/views.ts';
import { parseId, requireAccess, updateRecords } from '../../engine/crud.ts';
import { loadTypeContext } from '../../engine/context.ts';
import { AppError, renamedFields, validationError } from '../../http/errors.ts';
import type { LogicLimits } from '../../logic/env.ts';
import { LimitError } from '../../logic/failures.ts';
import type { ElementOutcome } from '../../logic/evaluate.ts';
import { resultObjects, type ResultObject } from '../../logic/results.ts';
import type { Value } from '../../logic/values.ts';
import { BatchData } from '../formulas/data.ts';
import { evaluateItems } from '../formulas/evaluate-items.ts';
import { checkInputs, limitError, loadLogic, policiesFor, targetDateOf } from '../formulas/service.ts';
import { attributeTypesOf, recordOf } from '../formulas/master-store.ts';
import * as store from './store.ts';
import { isObj } from '../../engine/values.ts';

type Obj = Record<string, unknown>;

/**
 * `calculationStatus`: 0 never calculated, 1 calculated without alerts or warnings, 2 with warnings
 * or WARNING alerts, 3 with a CRITICAL alert (an element failed).
 */
export const CALCULATION_STATUS = { NONE: 0, OK: 1, WARNINGS: 2, CRITICAL: 3 } as const;

/** `data.rebateRecordGroup` of the body, or undefined; a -4 naming it when it is not an object. */
export function groupFieldsOf(body: unknown): Obj | undefined {
  if (body === undefined || body === null) return undefined;
  if (!isObj(body)) throw validationError('body', 'must be {data: {rebateRecordGroup: {...}}}');
  const data = body.data;
  if (data === undefined || data === null) return undefined;
  if (!isObj(data)) throw validationError('data', 'must be {rebateRecordGroup: {...}}');
  for (const k of Object.keys(data))
    if (k !== 'rebateRecordGroup') throw validationError(`data.${k}`, 'unknown field');
  const g = data.rebateRecordGroup;
  if (g === undefined || g === null) return undefined;
  if (!isObj(g)) throw validationError('data.rebateRecordGroup', 'must be an object of group fields');
  return g;
}

/** Where the body holds the group's fields: errors about a field it gave name it there. */
const SENT = 'data.rebateRecordGroup';

/**
 * An error of the general update that step 1 runs, naming the fields as the request gave them: a
 * field of `data.rebateRecordGroup` by its path in the body (`data.rebateRecordGroup.attribute7`,
 * `data.rebateRecordGroup.inputs[1].name`), the version check's `oldValues.version` as the
 * `data.rebateRecordGroup.version` it came from, and the group's address (the update is given its
 * `id`) as the path named it (`pathField`).
 */
function asSent(err: unknown, pathField: string): unknown {
  if (!(err instanceof AppError) || err.errors === undefined) return err;
  const sent = (k: string): string =>
    k === 'oldValues.version'
      ? `${SENT}.version`
      : k === 'id' || k === 'typedId'
        ? pathField
        : `${SENT}.${k}`;
  return renamedFields(err, sent);
}

/** The group's stored `inputs` ([{name, value}]) as values by name. */
function inputValues(raw: unknown): Obj {
  // No prototype: an input named `__proto__` is a key like any other (refused as no input of the
  // logic), not a prototype set and silently lost.
  const out = Object.create(null) as Obj;
  if (!Array.isArray(raw)) return out;
  for (const x of raw as unknown[]) if (isObj(x) && typeof x.name === 'string') out[x.name] = x.value;
  return out;
}

interface Summary {
  readonly status: number;
  readonly alerts: string | null;
  readonly warnings: string | null;
  readonly messages: { level: string; resultName: string; message: string }[];
}

function summarise(results: readonly ResultObject[]): Summary {
  const alerts: string[] = [];
  const warnings: string[] = [];
  const messages: Summary['messages'] = [];
  let status: number = CALCULATION_STATUS.OK;
  for (const r of results) {
    if (r.alertType !== null) {
      alerts.push(`${r.resultName}: ${r.alertMessage ?? r.alertType}`);
      messages.push({ level: r.alertType, resultName: r.resultName, message: r.alertMessage ?? '' });
      status = Math.max(
        status,
        r.alertType === 'CRITICAL' ? CALCULATION_STATUS.CRITICAL : CALCULATION_STATUS.WARNINGS,
      );
    }
    for (const w of r.warnings) {
      warnings.push(`${r.resultName}: ${w}`);
      // The alert's own message (warning() and critical() also list it in warnings) is one server
      // message, at the alert's level.
      if (r.alertType === null || w !== r.alertMessage)
        messages.push({ level: 'WARNING', resultName: r.resultName, message: w });
      status = Math.max(status, CALCULATION_STATUS.WARNINGS);
    }
  }
  return {
    status,
    alerts: alerts.length > 0 ? alerts.join('\n') : null,
    warnings: warnings.length > 0 ? warnings.join('\n') : null,
    messages,
  };
}

export async function calculateGroup(
  db: Db,
  principal: Principal,
  idText: string,
  body: unknown,
  limits: LogicLimits,
): Promise<Obj> {
  requireAccess(principal, 'REBATERECORD_EDIT');
  const group = await store.groupOf(db, principal, idText);
  const { id } = group;
  const given = groupFieldsOf(body);
  // A field the body gave is named by its path there; one it did not (the stored group's) by its name.
  const named = (field: string): string =>
    given !== undefined && Object.hasOwn(given, field) ? `${SENT}.${field}` : field;
  let ended = false;
  try {
    return await db.transaction(async (tx) => {
      if (given !== undefined) {
        const { version, ...fields } = given;
        // The group is the one of the path: a body naming another is refused, not ignored.
        for (const k of ['typedId', 'id'] as const) {
          if (
            fields[k] !== undefined &&
            fields[k] !== null &&
            parseId(store.RRG, fields[k], `${SENT}.${k}`) !== id
          )
            throw validationError(`${SENT}.${k}`, `names another group than the path's (${id}.RRG)`);
          delete fields[k];
        }
        if (Object.keys(fields).length > 0 || version !== undefined) {
          const within = inTransaction(db, tx, () => ended);
          const oldValues = version === undefined ? null : { version };
          await updateRecords(
            within,
            principal,
            store.RRG,
            [{ data: { ...fields, id }, oldValues }],
            false,
          ).catch((err: unknown) => {
            throw asSent(err, group.field);
          });
        }
      }
      const row = await store.lockGroupOrFail(tx, principal, group);
      store.requireEditGroup(principal, row, group.field);
      const name = `${id}.RRG`;
      if (row.locked === true)
        throw new AppError('CONFLICT', `${name} is locked: unlock it to calculate it`, {
          field: group.field,
        });
      if (row.workflow_status === 'SUBMITTED' || row.workflow_status === 'APPROVED') {
        throw new AppError(
          'CONFLICT',
          `${name} is ${String(row.workflow_status)}: its results are what its workflow decides on`,
          { field: group.field },
        );
      }
      const rebateType =
        typeof row.rebate_type === 'string' && row.rebate_type !== '' ? row.rebate_type : null;
      let formulaName =
        typeof row.formula_name === 'string' && row.formula_name !== '' ? row.formula_name : null;
      if (formulaName === null && rebateType !== null) {
        if (row.rc_type_id === null)
          throw validationError(named('rebateType'), `there is no rebate type ${JSON.stringify(rebateType)}`);
        formulaName =
          typeof row.rc_type_formula === 'string' && row.rc_type_formula !== '' ? row.rc_type_formula : null;
      }
      if (formulaName === null)
        throw validationError(
          named('formulaName'),
          'the group has no logic: set formulaName or a rebate type with one',
        );
      const targetDate = targetDateOf(
        row.target_date instanceof Date ? row.target_date.toISOString().slice(0, 10) : row.target_date,
      );
      let loaded;
      try {
        loaded = await loadLogic(tx, principal.partitionId, formulaName, targetDate);
      } catch (err) {
        if (err instanceof AppError && err.code === 'NOT_FOUND')
          throw validationError(
            named('formulaName'),
            `no logic ${formulaName} is valid at ${targetDate.iso}`,
          );
        throw err;
      }
      const { row: logicRow, logic } = loaded;
      if (logicRow.nature !== 'REBATE')
        throw validationError(
          named('formulaName'),
          `logic ${formulaName} is a ${logicRow.nature} logic, not a REBATE logic`,
        );
      const inputs = checkInputs(logic.inputs, inputValues(row.inputs), named('inputs'));
      const meta = await attributeTypesOf(tx, principal, 'RRG', rebateType ?? '');
      const roots: Record<string, Value> = Object.create(null) as Record<string, Value>;
      roots.row = recordOf('RRG', row, meta);
      const batch = new BatchData(
        tx,
        principal.partitionId,
        await policiesFor(tx, principal.partitionId, logic),
        principal.metaVersion,
      );
      let outcomes: ElementOutcome[];
      try {
        [outcomes = []] = await evaluateItems(logic, [{ roots, inputs }], batch, {
          targetDate,
          explain: false,
          limits,
        });
      } catch (err) {
        if (err instanceof LimitError) throw limitError(err);
        throw err;
      }
      const visible = resultObjects(logic, outcomes, false);
      const all = resultObjects(logic, outcomes, false, true);
      const s = summarise(all);
      // The answer comes back from the UPDATE, typed by the group's rebate type (as /fetch/RRG/{id}).
      const answer = await loadTypeContext(tx, principal, store.RRG, rebateType ?? undefined);
      const updated = await store.setGroupState(
        tx,
        principal,
        id,
        {
          calculation_results: JSON.stringify(visible),
          all_calculation_results: JSON.stringify(all),
          calculation_status: s.status,
          calculated_msg: s.status === CALCULATION_STATUS.OK ? 'SUCCESS' : null,
          calculated_with_errors_msg:
            s.status === CALCULATION_STATUS.CRITICAL
              ? 'CRITICAL'
              : s.status === CALCULATION_STATUS.WARNINGS
                ? 'WARNING'
                : null,
          ongoing_calculation_msg: null,
          alerts: s.alerts,
          warnings: s.warnings,
          server_messages_extended: JSON.stringify(s.messages),
        },
        { calculation_date: 'now()' },
        answer,
      );
      return updated!;
    });
  } finally {
    ended = true;
  }
}
