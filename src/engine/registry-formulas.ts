// Pricing logics (type F) and rounding policies (type RP), served by the general operations. A logic
// is checked on every write by compiling it (src/logic/logic.ts): unknown names or functions, forward
// references, wrong arity and static type errors are a -4 naming element, line and column — a logic
// that saves, runs. Inputs and elements are checked together, so an update that changes either sends
// both.

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { AppError, validationError, type FieldErrors } from '../http/errors.ts';
import { LOGIC_FUNCTIONS } from '../logic/functions/registry.ts';
import { compileLogic, NATURES } from '../logic/logic.ts';
import { ENDING_RULES, endingProblem, ROUND_MODES } from '../logic/rounding.ts';
import type { TypeDef } from './types.ts';
import { SYSTEM, defaulted, key, text } from './registry-fields.ts';
import { AUTHENTICATED } from '../access/catalogue.ts';

/**
 * The fields a logic may read from `product.`, `customer.`, `seller.` and `row.` (also as
 * `product("<field>")`): the registry's fields of P, C, SL and RRG, given by registry.ts once it
 * has them (it imports this file, so not the other way).
 */
let rootFields: ReadonlyMap<string, ReadonlySet<string>> | undefined;
export function setLogicRootFields(fields: ReadonlyMap<string, ReadonlySet<string>>): void {
  rootFields = fields;
}

function logicRules(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  if (!('elements' in data) && !('inputs' in data)) return undefined;
  if (!('elements' in data))
    return { elements: { errorMessage: 'send elements together with inputs: they are checked together' } };
  // Elements alone are checked with the inputs the logic will have (checkElementsAlone).
  if (!('inputs' in data)) return undefined;
  try {
    compileLogic(data.inputs, data.elements, LOGIC_FUNCTIONS, rootFields);
  } catch (err) {
    if (err instanceof AppError && err.errors) return err.errors;
    throw err;
  }
  return undefined;
}

/**
 * Elements sent without inputs: checked with the logic's stored inputs (an update, an integrate onto
 * it), or none (an add) — against no inputs at all, an update's elements naming an input it has were
 * refused as naming an unknown one.
 */
async function checkElementsAlone(
  q: Queryable,
  principal: Principal,
  stored: Readonly<Record<string, unknown>> | undefined,
  data: Readonly<Record<string, unknown>>,
): Promise<void> {
  if (!('elements' in data) || 'inputs' in data) return;
  let inputs = stored?.inputs;
  if (
    stored === undefined &&
    typeof data.uniqueName === 'string' &&
    typeof data.validAfter === 'string' &&
    /^\d{4}-\d{2}-\d{2}(T00:00:00(\.0+)?Z)?$/.test(data.validAfter)
  ) {
    // An integrate onto a stored logic (add/integrate name it by its key).
    const r = await q.query<{ inputs: unknown }>(
      `SELECT inputs FROM formulas WHERE partition_id = $1 AND unique_name = $2 AND valid_after = $3::date`,
      [principal.partitionId, data.uniqueName, data.validAfter],
    );
    inputs = r.rows[0]?.inputs;
  }
  compileLogic(inputs, data.elements, LOGIC_FUNCTIONS, rootFields);
}

function policyRules(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const ending = data.priceEnding;
  if (typeof ending === 'string' && ending !== '') {
    const problem = endingProblem(ending);
    if (problem) return { priceEnding: { errorMessage: problem } };
    // An ending with more decimals than the step (".999" on 0.01) makes prices off the step.
    const places = (t: string) => (t.includes('.') ? t.replace(/0+$/, '').length - t.indexOf('.') - 1 : 0);
    const step =
      typeof data.step === 'number' || typeof data.step === 'string' ? String(data.step) : undefined;
    if (step !== undefined && /^\d*\.?\d+$/.test(step) && places(ending) > places(step)) {
      return {
        priceEnding: { errorMessage: `has more decimals than the step ${step}: prices would leave the step` },
      };
    }
  }
  return undefined;
}

/**
 * A policy's step and ending are checked together also when a write gives only one of them: with the
 * stored policy's other value (an update, an integrate onto it), or the step's default 0.01 (an add).
 */
async function checkPolicyWhole(
  q: Queryable,
  principal: Principal,
  stored: Readonly<Record<string, unknown>> | undefined,
  data: Readonly<Record<string, unknown>>,
): Promise<void> {
  if (!('step' in data) && !('priceEnding' in data)) return;
  let old = stored;
  if (old === undefined && typeof data.uniqueName === 'string') {
    const r = await q.query<{ step: string; priceEnding: string | null }>(
      `SELECT step, price_ending AS "priceEnding" FROM rounding_policies WHERE partition_id = $1 AND unique_name = $2`,
      [principal.partitionId, data.uniqueName],
    );
    old = r.rows[0];
  }
  const whole = {
    step: data.step ?? old?.step ?? '0.01',
    priceEnding: 'priceEnding' in data ? data.priceEnding : old?.priceEnding,
  };
  const [field, problem] = Object.entries(policyRules(whole) ?? {})[0] ?? [];
  if (field !== undefined && problem !== undefined) throw validationError(field, problem.errorMessage);
}

export const FORMULA_TYPES: readonly TypeDef[] = [
  {
    code: 'F',
    label: 'Pricing logic',
    table: 'formulas',
    fields: [
      key('uniqueName', 'unique_name'),
      { name: 'validAfter', column: 'valid_after', type: 'date', required: true, key: true },
      text('label', 'label'),
      defaulted(text('nature', 'nature', { oneOf: NATURES, maxLength: 20 })),
      defaulted(text('status', 'status', { oneOf: ['ACTIVE', 'INACTIVE'], maxLength: 10 })),
      defaulted({ name: 'inputs', column: 'inputs', type: 'json' }),
      { name: 'elements', column: 'elements', type: 'json', required: true },
      ...SYSTEM,
    ],
    businessKey: ['uniqueName', 'validAfter'],
    uniqueColumns: ['unique_name', 'valid_after'],
    deleteMode: 'hard',
    massEditable: false,
    bulkLoadable: false,
    userGroups: false,
    // Anyone who may fetch products may read and run logics; writing them is FORMULA_EDIT.
    access: { fetch: AUTHENTICATED, write: 'FORMULA_EDIT' },
    validate: logicRules,
    beforeInsert: (q, principal, data) => checkElementsAlone(q, principal, undefined, data),
    beforeChange: async (q, principal, old, data) => {
      if (data !== undefined) await checkElementsAlone(q, principal, old, data);
    },
  },
  {
    code: 'RP',
    label: 'Rounding policy',
    table: 'rounding_policies',
    fields: [
      key('uniqueName', 'unique_name'),
      text('label', 'label'),
      text('currency', 'currency', { required: true, maxLength: 10 }),
      text('channel', 'channel', { maxLength: 255 }),
      text('customerGroup', 'customer_group', { maxLength: 255 }),
      defaulted({ name: 'step', column: 'step', type: 'decimal' }),
      defaulted(text('mode', 'mode', { oneOf: Object.keys(ROUND_MODES), maxLength: 20 })),
      text('priceEnding', 'price_ending', { maxLength: 12 }),
      defaulted(text('endingRule', 'ending_rule', { oneOf: ENDING_RULES, maxLength: 10 })),
      ...SYSTEM,
    ],
    businessKey: ['uniqueName'],
    uniqueColumns: ['unique_name'],
    deleteMode: 'hard',
    massEditable: false,
    bulkLoadable: false,
    userGroups: false,
    access: { fetch: AUTHENTICATED, write: 'FORMULA_EDIT' },
    validate: policyRules,
    beforeInsert: (q, principal, data) => checkPolicyWhole(q, principal, undefined, data),
    beforeChange: async (q, principal, old, data) => {
      if (data !== undefined) await checkPolicyWhole(q, principal, old, data);
    },
  },
];
