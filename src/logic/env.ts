// The state one evaluation runs in: its limits (steps, deadline), the values it can read (element
// results, inputs, records, the target date), the data port through which look-ups reach prefetched
// rows, and the optional explanation trace. Pure types and small helpers; no I/O here.

import { LimitError } from './failures.ts';
import type { RoundingPolicy } from './rounding.ts';
import type { LogicDate, RecordValue, Value } from './values.ts';

/** Evaluation limits (settings `LOGIC_MAX_STEPS`, `LOGIC_MAX_MS`). */
export interface LogicLimits {
  readonly maxSteps: number;
  readonly maxMs: number;
}
export const DEFAULT_LIMITS: LogicLimits = { maxSteps: 100_000, maxMs: 1_000 };

/** Data a collecting pass found missing; the evaluator loads these set-based and runs again. */
export type DataRequest =
  | { readonly kind: 'lookup'; readonly table: string; readonly keys: readonly string[] }
  | {
      readonly kind: 'condition';
      readonly set: string;
      readonly keys: readonly string[];
      readonly date: string;
    }
  | { readonly kind: 'extension'; readonly owner: 'product' | 'customer'; readonly table: string };

/** A row a look-up found (or null), with what the explanation shows of it. */
export interface FoundRow {
  readonly row: RecordValue | null;
  /** For tables: `value` of SIMPLE/RANGE rows, `attribute1` of matrix rows. */
  readonly value: Value;
}

/**
 * Synchronous access to prefetched data. What is not loaded yet is recorded by the port and read as
 * null; the evaluator then loads everything recorded (set-based) and evaluates again.
 */
export interface DataPort {
  lookup(table: string, keys: readonly Value[]): FoundRow;
  conditionRecord(set: string, keys: readonly Value[], date: LogicDate): RecordValue | null;
  extension(owner: 'product' | 'customer', table: string): readonly RecordValue[];
  /**
   * The item's product competition rows (type PCOMP): per competitor, the latest one dated on or
   * before `date`, ordered by competitor. Empty without a product.
   */
  competition(date: LogicDate): readonly RecordValue[];
  /** The rounding policy by unique name, or null. */
  policy(name: string): RoundingPolicy | null;
  /** The rounding policy of a currency (the one without channel and customer group first), or null. */
  policyFor(currency: string): RoundingPolicy | null;
}

/** One entry of an element's explanation. */
export type TraceEntry = Readonly<Record<string, unknown>> & { readonly kind: string };

export interface ElementState {
  warnings: string[];
  alertType: 'CRITICAL' | 'WARNING' | null;
  alertMessage: string | null;
  /** Explanation entries of this element; undefined when not explaining (nothing is paid for it). */
  trace: TraceEntry[] | undefined;
}

export interface Env {
  steps: number;
  readonly maxSteps: number;
  readonly deadline: number;
  /** Results of the elements so far, by element index. */
  readonly values: Value[];
  readonly inputs: Readonly<Record<string, Value>>;
  /** Records by root name (`product`, `customer`, `seller`, `row`; a condition's record fields). */
  readonly roots: Readonly<Record<string, Value>>;
  readonly targetDate: LogicDate;
  readonly today: LogicDate;
  readonly data: DataPort | undefined;
  readonly explain: boolean;
  element: ElementState;
}

/** The warnings of an element that has none: shared, frozen; `addWarning` replaces it on first use. */
const NO_WARNINGS: string[] = Object.freeze([]) as unknown as string[];

export function newElementState(explain: boolean): ElementState {
  return { warnings: NO_WARNINGS, alertType: null, alertMessage: null, trace: explain ? [] : undefined };
}

/**
 * Makes `state` the fresh state of the next element (what newElementState gives): one state object
 * serves every element of an evaluation. The outcome of the element before keeps its own warnings
 * and trace arrays (they are replaced here, never cleared).
 */
export function resetElementState(state: ElementState, explain: boolean): void {
  state.warnings = NO_WARNINGS;
  state.alertType = null;
  state.alertMessage = null;
  state.trace = explain ? [] : undefined;
}

/** Adds a warning to the current element (its own list is made on the first one). */
export function addWarning(env: Env, message: string): void {
  if (env.element.warnings === NO_WARNINGS) env.element.warnings = [];
  env.element.warnings.push(message);
}

/** Counts a step; every 1,024 steps also checks the clock. */
export function step(env: Env, n = 1): void {
  env.steps += n;
  if (env.steps > env.maxSteps) throw new LimitError(`step limit of ${env.maxSteps} exceeded`);
  if ((env.steps & 1023) < n && performance.now() > env.deadline) throw new LimitError('time limit exceeded');
}

export function traceEntry(env: Env, entry: TraceEntry): void {
  env.element.trace?.push(entry);
}
