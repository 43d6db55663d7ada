// Workflow (and other) conditions: one expression of the logic language over the fields of a record,
// e.g. `totalAmount > 10000 and customer.country in ["DE", "AT"]`. Bare names are the record's
// fields (dotted access reaches nested objects); decimal semantics; no data access; the same step and
// time limits as logics. Compile once, evaluate many times.

import { AppError } from '../http/errors.ts';
import { DEFAULT_LIMITS, newElementState, type Env, type LogicLimits } from './env.ts';
import { EvalError, LimitError, elementFailure } from './failures.ts';
import { checkExpression, emptyReads } from './expression/check.ts';
import { compile, type Closure } from './expression/compile.ts';
import { ExpressionError, parseExpression } from './expression/parse.ts';
import { logicTextError } from './errors.ts';
import { PURE_FUNCTIONS } from './functions/index.ts';
import { LogicDate, staticTypeOf, toValue, type Value } from './values.ts';

export interface CompiledCondition {
  readonly text: string;
  /** The record fields the condition reads (first segment of each name). */
  readonly fields: readonly string[];
  readonly run: Closure;
}

/**
 * Compiles a condition. With `fieldNames`, a name outside the list is refused. Throws the project's
 * validation error (-4, field `condition`) with line and column on bad text.
 */
export function compileCondition(text: string, fieldNames?: readonly string[]): CompiledCondition {
  try {
    const tree = parseExpression(text);
    const reads = emptyReads();
    const checked = checkExpression(
      tree,
      { functions: PURE_FUNCTIONS, recordFields: fieldNames === undefined ? 'any' : new Set(fieldNames) },
      reads,
    );
    if (checked.type !== 'boolean' && checked.type !== 'any' && checked.type !== 'null')
      throw new ExpressionError(`a condition must be true/false, this one gives ${checked.type}`, 0);
    const fields = [...new Set([...reads.fields].map((f) => f.split('.')[0] as string))];
    return Object.freeze({ text, fields, run: compile(checked) });
  } catch (err) {
    if (err instanceof ExpressionError) throw logicTextError('condition', text, err);
    throw err;
  }
}

const NAMES_SHOWN = 20;

function unknownName(name: string, names: ReadonlySet<string>): never {
  const known = [...names].slice(0, NAMES_SHOWN).join(', ');
  const more = names.size > NAMES_SHOWN ? ', ...' : '';
  throw new EvalError(
    `unknown name ${name}: the document has no such field or element (it has ${known === '' ? 'none' : known + more})`,
  );
}

/**
 * Evaluates a compiled condition on a record: true or false (null counts as false). `names`: every
 * name the record has, those with no value included; a condition that reads another name fails
 * (-4 "unknown name ...") instead of reading null, when it reads it (`a and b` reads `b` only when
 * `a` holds). Without `names`, a name the record lacks reads as null.
 */
export function evaluateCondition(
  c: CompiledCondition,
  record: Record<string, unknown>,
  limits: LogicLimits = DEFAULT_LIMITS,
  names?: ReadonlySet<string>,
): boolean {
  const roots: Record<string, Value> = Object.create(null) as Record<string, Value>;
  for (const f of c.fields) {
    if (Object.hasOwn(record, f)) roots[f] = toValue(record[f]);
    else if (names !== undefined && !names.has(f))
      // Read when evaluated, so that the failure is the condition's, at the point it reads the name.
      Object.defineProperty(roots, f, { enumerable: true, get: () => unknownName(f, names) });
  }
  const today = new LogicDate(new Date().toISOString().slice(0, 10));
  const env: Env = {
    steps: 0,
    maxSteps: limits.maxSteps,
    deadline: performance.now() + limits.maxMs,
    values: [],
    inputs: {},
    roots,
    targetDate: today,
    today,
    data: undefined,
    explain: false,
    element: newElementState(false),
  };
  let v: Value;
  try {
    v = c.run(env);
  } catch (thrown) {
    const err = thrown instanceof LimitError ? thrown : elementFailure(thrown);
    if (err === undefined) throw thrown;
    throw new AppError('VALIDATION', `condition: ${err.message}`, { field: 'condition' });
  }
  if (v === null) return false;
  if (typeof v !== 'boolean')
    throw new AppError('VALIDATION', `condition: must be true/false, gave ${staticTypeOf(v)}`, {
      field: 'condition',
    });
  return v;
}
