// Runs a compiled logic on one item: elements in order, each under the evaluation's step and time
// limits. A run-time problem of one element (division by zero, a wrong value) makes that element null
// with a CRITICAL alert and the later elements go on; a limit stops the whole evaluation. Element
// rounding policies are applied here. With `explain`, each element also records what it read.

import { EvalError, LimitError, elementFailure } from './failures.ts';
import {
  addWarning,
  newElementState,
  resetElementState,
  traceEntry,
  type DataPort,
  type Env,
  type LogicLimits,
  type TraceEntry,
} from './env.ts';
import type { CompiledLogic } from './logic.ts';
import { applyPolicy } from './rounding.ts';
import {
  asDec,
  listSize,
  MAX_RESULT_CHARACTERS,
  MAX_RESULT_VALUES,
  RecordValue,
  toJson,
  type LogicDate,
  type Value,
} from './values.ts';

export interface ItemContext {
  readonly inputs: Readonly<Record<string, Value>>;
  readonly roots: Readonly<Record<string, Value>>;
  readonly targetDate: LogicDate;
  readonly today: LogicDate;
  readonly data: DataPort;
  readonly explain: boolean;
  readonly limits: LogicLimits;
  /** Element values given by the caller (manual overrides): used as they are, the element not run. */
  readonly fixed?: ReadonlyMap<string, Value> | undefined;
}

export interface ElementOutcome {
  readonly value: Value;
  readonly warnings: readonly string[];
  readonly alertType: 'CRITICAL' | 'WARNING' | null;
  readonly alertMessage: string | null;
  readonly trace: readonly TraceEntry[] | undefined;
}

type MutableEnv = { -readonly [K in keyof Env]: Env[K] };

/**
 * The state of the last evaluation, taken by the next one (a bulk run evaluates thousands of items in
 * a row): its object and value list are set afresh instead of made per item. Taken while in use, so
 * an evaluation started inside another one makes its own.
 */
let spare: MutableEnv | undefined;

function envFor(logic: CompiledLogic, item: ItemContext): MutableEnv {
  const n = logic.elements.length;
  const env = spare;
  spare = undefined;
  if (env === undefined)
    return {
      steps: 0,
      maxSteps: item.limits.maxSteps,
      deadline: performance.now() + item.limits.maxMs,
      values: new Array<Value>(n).fill(null),
      inputs: item.inputs,
      roots: item.roots,
      targetDate: item.targetDate,
      today: item.today,
      data: item.data,
      explain: item.explain,
      element: newElementState(false),
    };
  env.steps = 0;
  env.maxSteps = item.limits.maxSteps;
  env.deadline = performance.now() + item.limits.maxMs;
  // Cleared when given back (no value of the item before is kept alive or seen).
  if (env.values.length !== n) env.values = new Array<Value>(n).fill(null);
  env.inputs = item.inputs;
  env.roots = item.roots;
  env.targetDate = item.targetDate;
  env.today = item.today;
  env.data = item.data;
  env.explain = item.explain;
  return env;
}

/** Adds an element's result to what the evaluation's results hold; past the bounds, a LimitError. */
function countResult(size: { characters: number; values: number }, value: Value, element: string): void {
  if (typeof value === 'string') size.characters += value.length;
  else if (Array.isArray(value)) {
    const list = listSize(value as readonly Value[]);
    size.characters += list.characters;
    size.values += list.values;
  } else return;
  if (size.characters > MAX_RESULT_CHARACTERS || size.values > MAX_RESULT_VALUES)
    throw new LimitError(
      `element ${element}: the results hold more than ${MAX_RESULT_CHARACTERS} characters of text or ${MAX_RESULT_VALUES} list values in all`,
    );
}

type MutableOutcome = { -readonly [K in keyof ElementOutcome]: ElementOutcome[K] };

/**
 * The element outcomes in element order; throws `LimitError` when a limit is hit. With `into` (a list
 * the caller keeps for this logic), the outcomes are written into its objects and it is returned: a
 * caller evaluating many items reads each item's outcomes before the next evaluation overwrites them.
 */
export function evaluateItem(
  logic: CompiledLogic,
  item: ItemContext,
  into?: ElementOutcome[],
): ElementOutcome[] {
  const env = envFor(logic, item);
  const out = into ?? new Array<ElementOutcome>(logic.elements.length);
  const size = { characters: 0, values: 0 };
  for (const el of logic.elements) {
    resetElementState(env.element, item.explain);
    let value: Value;
    try {
      if (item.fixed !== undefined && item.fixed.has(el.def.elementName)) {
        value = item.fixed.get(el.def.elementName)!;
      } else {
        value = el.run(env);
        if (el.def.rounding !== undefined) value = roundByPolicy(env, el.def.rounding, value);
      }
    } catch (thrown) {
      const err = elementFailure(thrown);
      if (err === undefined) {
        if (thrown instanceof LimitError)
          throw new LimitError(`element ${el.def.elementName}: ${thrown.message}`);
        throw thrown;
      }
      value = null;
      env.element.alertType = 'CRITICAL';
      env.element.alertMessage = err.message;
      addWarning(env, err.message);
    }
    env.values[el.index] = value;
    countResult(size, value, el.def.elementName);
    // The values an explanation repeats count as results do: one list read by 60 elements was
    // answered 60 times (a 500 past the longest string, hundreds of MB before it).
    if (item.explain) explainReads(env, el.reads, logic, (v) => countResult(size, v, el.def.elementName));
    const kept: MutableOutcome | undefined = into?.[el.index];
    if (kept !== undefined) {
      kept.value = value;
      kept.warnings = env.element.warnings;
      kept.alertType = env.element.alertType;
      kept.alertMessage = env.element.alertMessage;
      kept.trace = env.element.trace;
    } else
      out[el.index] = {
        value,
        warnings: env.element.warnings,
        alertType: env.element.alertType,
        alertMessage: env.element.alertMessage,
        trace: env.element.trace,
      };
  }
  env.values.fill(null);
  spare = env;
  return out;
}

function roundByPolicy(env: Env, name: string, value: Value): Value {
  if (value === null) return null;
  const x = asDec(value);
  if (x === undefined) throw new EvalError(`rounding ${name}: the value is not a number`);
  const policy = env.data?.policy(name) ?? null;
  if (policy === null) throw new EvalError(`rounding policy ${name} does not exist`);
  const after = applyPolicy(x, policy);
  // Explanations only: without one, nothing of the entry is built.
  if (env.element.trace)
    traceEntry(env, {
      kind: 'rounding',
      policy: policy.uniqueName,
      step: policy.step.toFixed(),
      mode: policy.mode,
      priceEnding: policy.priceEnding,
      endingRule: policy.endingRule,
      before: toJson(x),
      after: toJson(after),
    });
  return after;
}

/** The fields, inputs and elements an element read, with their values (explanations only). */
function explainReads(
  env: Env,
  reads: CompiledLogic['elements'][number]['reads'],
  logic: CompiledLogic,
  counted: (value: Value) => void,
): void {
  for (const path of reads.fields) {
    const [root, ...rest] = path.split('.') as [string, ...string[]];
    const rec = Object.hasOwn(env.roots, root) ? env.roots[root] : null;
    let v: Value = rec ?? null;
    for (const f of rest) v = v instanceof RecordValue ? v.get(f) : null;
    counted(v);
    traceEntry(env, {
      kind: 'field',
      record: root,
      typedId: rec instanceof RecordValue ? (rec.ref?.typedId ?? null) : null,
      version: rec instanceof RecordValue ? (rec.ref?.version ?? null) : null,
      field: rest.join('.'),
      value: toJson(v),
    });
  }
  for (const name of reads.inputs) {
    const v = Object.hasOwn(env.inputs, name) ? (env.inputs[name] ?? null) : null;
    counted(v);
    traceEntry(env, { kind: 'input', name, value: toJson(v) });
  }
  for (const name of reads.elements) {
    const el = logic.elements.find((e) => e.def.elementName === name);
    const v = el ? (env.values[el.index] ?? null) : null;
    counted(v);
    traceEntry(env, { kind: 'element', name, value: toJson(v) });
  }
}
