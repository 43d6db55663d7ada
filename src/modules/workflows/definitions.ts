// Workflow definitions (type WFD): the checks of a definition written through the general
// operations, and the step list as the runtime reads it. A definition names the approvable type it
// applies to, an optional condition over the approvable, a priority (lower first) and its steps:
//   { name, approverUsers: [login...], approverGroups: [group...], rule: 'ANY' | 'ALL',
//     condition, watcherUsers, watcherGroups, denyReasonRequired }
// Conditions are the logic engine's expressions (src/logic/condition.ts), compiled on write so a
// broken one is refused with its line and column rather than found at the first submit.

import type { FieldErrors } from '../../http/errors.ts';
import { AppError } from '../../http/errors.ts';
import { compileCondition } from '../../logic/condition.ts';
import { approvableCodes, findApprovable } from './approvables.ts';
import { isObj } from '../../engine/values.ts';

export interface StepDef {
  readonly name: string | null;
  readonly approverUsers: readonly string[];
  readonly approverGroups: readonly string[];
  readonly rule: 'ANY' | 'ALL';
  readonly condition: string | null;
  readonly watcherUsers: readonly string[];
  readonly watcherGroups: readonly string[];
  readonly denyReasonRequired: boolean;
}

export const MAX_STEPS = 50;
const MAX_NAMES = 1000;
const STEP_KEYS = new Set([
  'name',
  'approverUsers',
  'approverGroups',
  'rule',
  'condition',
  'watcherUsers',
  'watcherGroups',
  'denyReasonRequired',
]);

type Obj = Record<string, unknown>;

function names(step: Obj, key: string, at: string, errors: FieldErrors): string[] {
  const v = step[key];
  if (v === undefined || v === null) return [];
  if (
    !Array.isArray(v) ||
    v.length > MAX_NAMES ||
    !v.every((n) => typeof n === 'string' && n !== '' && n.length <= 255)
  ) {
    errors[`${at}.${key}`] = { errorMessage: `must be a list of names (at most ${MAX_NAMES})` };
    return [];
  }
  return [...new Set(v as string[])];
}

function conditionProblem(text: string, fields: readonly string[] | undefined): string | undefined {
  try {
    compileCondition(text, fields);
    return undefined;
  } catch (err) {
    if (err instanceof AppError) return err.message.replace(/^condition: /, '');
    throw err;
  }
}

/** The steps of a definition, or the problems of each (keys such as `steps[1].rule`). */
export function parseSteps(
  raw: unknown,
  fields?: readonly string[],
): { steps: StepDef[]; errors: FieldErrors } {
  const errors: FieldErrors = {};
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_STEPS) {
    errors.steps = { errorMessage: `must be a list of 1 to ${MAX_STEPS} steps` };
    return { steps: [], errors };
  }
  const steps = raw.map((s: unknown, i): StepDef => {
    const at = `steps[${i}]`;
    const step = isObj(s) ? s : {};
    if (!isObj(s)) errors[at] = { errorMessage: 'must be an object' };
    for (const k of Object.keys(step)) {
      if (!STEP_KEYS.has(k)) errors[`${at}.${k}`] = { errorMessage: 'unknown field' };
    }
    const name = step.name ?? null;
    if (name !== null && (typeof name !== 'string' || name.length > 255)) {
      errors[`${at}.name`] = { errorMessage: 'must be text of at most 255 characters' };
    }
    const rule = step.rule ?? 'ANY';
    if (rule !== 'ANY' && rule !== 'ALL') errors[`${at}.rule`] = { errorMessage: 'must be ANY or ALL' };
    const approverUsers = names(step, 'approverUsers', at, errors);
    const approverGroups = names(step, 'approverGroups', at, errors);
    if (approverUsers.length + approverGroups.length === 0 && !errors[`${at}.approverUsers`]) {
      errors[`${at}.approverUsers`] = { errorMessage: 'a step needs approverUsers or approverGroups' };
    }
    const condition = step.condition ?? null;
    if (condition !== null) {
      const problem =
        typeof condition === 'string' ? conditionProblem(condition, fields) : 'must be an expression text';
      if (problem !== undefined) errors[`${at}.condition`] = { errorMessage: problem };
    }
    const deny = step.denyReasonRequired ?? false;
    if (typeof deny !== 'boolean')
      errors[`${at}.denyReasonRequired`] = { errorMessage: 'must be true or false' };
    return {
      name: typeof name === 'string' ? name : null,
      approverUsers,
      approverGroups,
      rule: rule === 'ALL' ? 'ALL' : 'ANY',
      condition: typeof condition === 'string' && condition.trim() !== '' ? condition : null,
      watcherUsers: names(step, 'watcherUsers', at, errors),
      watcherGroups: names(step, 'watcherGroups', at, errors),
      denyReasonRequired: deny === true,
    };
  });
  return { steps, errors };
}

/** The registry's `validate` of WFD: approvable type registered, conditions compile, steps well formed. */
export function checkDefinition(data: Readonly<Obj>): FieldErrors | undefined {
  const errors: FieldErrors = {};
  let fields: readonly string[] | undefined;
  if (data.approvableType !== undefined) {
    const a = typeof data.approvableType === 'string' ? findApprovable(data.approvableType) : undefined;
    // The approvable's own code: definitions are found by it (an alias, CGI2, would never apply).
    if (!a || a.typeCode !== data.approvableType) {
      const known = approvableCodes();
      errors.approvableType = {
        errorMessage: `is not an approvable type (registered: ${known.length > 0 ? known.join(', ') : 'none'})`,
      };
    } else fields = a.fields;
  }
  if (typeof data.condition === 'string' && data.condition.trim() !== '') {
    const problem = conditionProblem(data.condition, fields);
    if (problem !== undefined) errors.condition = { errorMessage: problem };
  }
  if (data.steps !== undefined) Object.assign(errors, parseSteps(data.steps, fields).errors);
  return Object.keys(errors).length > 0 ? errors : undefined;
}
