// A logic definition (declared inputs + ordered elements) → a compiled logic: every element parsed,
// checked against the names before it (earlier elements, inputs, record roots) and compiled to a
// closure. Used on write (a logic that saves, runs) and, through the cache, on every execution.
// Also answers what a logic reads (tables, condition-record sets, extensions): findref and prefetch.

import { AppError, type FieldErrors } from '../http/errors.ts';
import { checkExpression, emptyReads, type Reads } from './expression/check.ts';
import { compile, type Closure } from './expression/compile.ts';
import { ExpressionError, isForbiddenName, lineColumn, parseExpression } from './expression/parse.ts';
import type { FnDef } from './functions/types.ts';
import { asDec, parseIsoDate, type StaticType, type Value } from './values.ts';
import { isObj } from '../engine/values.ts';

export const INPUT_TYPES = ['NUMBER', 'MONEY', 'PERCENT', 'TEXT', 'DATE', 'BOOLEAN', 'OPTION'] as const;
export type InputType = (typeof INPUT_TYPES)[number];
export const FORMAT_TYPES = ['NUMERIC', 'MONEY', 'PERCENT', 'TEXT', 'DATE', 'BOOLEAN'] as const;
export const NATURES = [
  'PRICING',
  'CALCULATIONGRID',
  'REBATE',
  'FILTER',
  'RECOMMENDATION',
  'WORKFLOW',
] as const;

export interface InputDef {
  readonly name: string;
  readonly label?: string;
  readonly type: InputType;
  readonly required?: boolean;
  readonly default?: unknown;
  readonly options?: readonly string[];
}

export interface ElementDef {
  readonly elementName: string;
  readonly label?: string;
  readonly expression: string;
  readonly formatType?: (typeof FORMAT_TYPES)[number];
  readonly suffix?: string;
  /** 0: hidden (only in explanations); any other value: visible. Default 1. */
  readonly displayOptions?: number;
  readonly resultGroup?: string;
  readonly overridable?: boolean;
  /** The unique name of a rounding policy (type RP) applied to the element's value. */
  readonly rounding?: string;
}

export interface CompiledElement {
  readonly def: ElementDef;
  readonly index: number;
  readonly run: Closure;
  readonly type: StaticType;
  readonly reads: Reads;
}

export interface CompiledLogic {
  readonly inputs: readonly InputDef[];
  readonly elements: readonly CompiledElement[];
  /** Lookup tables named by lookup()/lookupRow(), condition-record sets, extension tables, policies. */
  readonly tables: ReadonlySet<string>;
  readonly conditionSets: ReadonlySet<string>;
  readonly policies: ReadonlySet<string>;
  /** Extension tables read, as `product:<name>` / `customer:<name>` (prefetched per batch). */
  readonly extensions: ReadonlySet<string>;
  /** Whether it reads product competition data (competition(), competitionPrices()). */
  readonly competition: boolean;
}

/** Record roots every logic may read: `product.sku`, `customer.name`, `seller.name`, `row.attribute2`. */
export const RECORD_ROOTS: ReadonlySet<string> = new Set(['product', 'customer', 'seller', 'row']);
const RESERVED = new Set([
  ...RECORD_ROOTS,
  'input',
  'out',
  'targetDate',
  'true',
  'false',
  'null',
  'and',
  'or',
  'not',
  'in',
]);
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
const MAX_ELEMENTS = 500;
const MAX_INPUTS = 200;

export function inputStaticType(t: InputType): StaticType {
  switch (t) {
    case 'NUMBER':
    case 'MONEY':
    case 'PERCENT':
      return 'number';
    case 'TEXT':
    case 'OPTION':
      return 'text';
    case 'DATE':
      return 'date';
    case 'BOOLEAN':
      return 'boolean';
  }
}

const fail = (field: string, message: string): AppError =>
  new AppError('VALIDATION', `${field}: ${message}`, { errors: { [field]: { errorMessage: message } } });

/**
 * A value given for an input (or its declared default) as the logic reads it, or why it is not one
 * of the input's type.
 */
export function inputValue(d: InputDef, v: unknown): { value: Value } | { error: string } {
  switch (d.type) {
    case 'NUMBER':
    case 'MONEY':
    case 'PERCENT': {
      const n =
        typeof v === 'number' || typeof v === 'string'
          ? asDec(typeof v === 'number' ? String(v) : v)
          : undefined;
      if (n !== undefined) return { value: n };
      // A JSON number past a double (1e400) arrives as Infinity: say so, not "null" (its JSON).
      if (typeof v === 'number' && !Number.isFinite(v))
        return { error: 'is a number beyond the range of a double: send it as text ("1e400")' };
      return { error: `${JSON.stringify(v)} is not a number` };
    }
    case 'TEXT':
    case 'OPTION':
      if (typeof v !== 'string') return { error: 'must be text' };
      if (v.length > 10_000) return { error: 'must be text of at most 10,000 characters' };
      if (d.type === 'OPTION' && !(d.options ?? []).includes(v))
        return { error: `must be one of ${(d.options ?? []).join(', ')}` };
      return { value: v };
    case 'DATE': {
      const dt = typeof v === 'string' ? parseIsoDate(v) : undefined;
      return dt ? { value: dt } : { error: 'must be a date YYYY-MM-DD' };
    }
    case 'BOOLEAN':
      return typeof v === 'boolean' ? { value: v } : { error: 'must be true or false' };
  }
}

/** Declared inputs from stored/written JSON, or a -4 naming the one at fault. */
export function readInputs(raw: unknown): InputDef[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw fail('inputs', 'must be a list of {name, type, ...}');
  if (raw.length > MAX_INPUTS) throw fail('inputs', `at most ${MAX_INPUTS} inputs`);
  const seen = new Set<string>();
  return raw.map((x: unknown, i) => {
    const at = `inputs[${i}]`;
    if (!isObj(x)) throw fail(at, 'must be an object');
    const { name, type, label, required, options } = x;
    if (typeof name !== 'string' || !NAME.test(name) || isForbiddenName(name))
      throw fail(`${at}.name`, 'must be a name of letters, digits and _ (not starting with a digit or __)');
    if (seen.has(name)) throw fail(`${at}.name`, `${name} is declared twice`);
    seen.add(name);
    if (typeof type !== 'string' || !(INPUT_TYPES as readonly string[]).includes(type))
      throw fail(`${at}.type`, `must be one of ${INPUT_TYPES.join(', ')}`);
    if (label !== undefined && label !== null && typeof label !== 'string')
      throw fail(`${at}.label`, 'must be text');
    if (required !== undefined && required !== null && typeof required !== 'boolean')
      throw fail(`${at}.required`, 'must be true or false');
    if (
      options !== undefined &&
      options !== null &&
      (!Array.isArray(options) || !options.every((o) => typeof o === 'string'))
    )
      throw fail(`${at}.options`, 'must be a list of texts');
    if (type === 'OPTION' && (!Array.isArray(options) || options.length === 0))
      throw fail(`${at}.options`, 'an OPTION input needs its options');
    for (const k of Object.keys(x))
      if (!['name', 'type', 'label', 'required', 'default', 'options'].includes(k))
        throw fail(`${at}.${k}`, 'unknown field');
    const def: InputDef = {
      name,
      type: type as InputType,
      ...(typeof label === 'string' ? { label } : {}),
      ...(required === true ? { required } : {}),
      ...(x.default !== undefined && x.default !== null ? { default: x.default } : {}),
      ...(Array.isArray(options) ? { options: options } : {}),
    };
    // A default is a value of the input's type, checked when the logic is written: never an error
    // of every later run, blamed on an input the caller did not send.
    if (def.default !== undefined) {
      const checked = inputValue(def, def.default);
      if ('error' in checked) throw fail(`${at}.default`, checked.error);
    }
    return def;
  });
}

const ELEMENT_FIELDS = [
  'elementName',
  'label',
  'expression',
  'formatType',
  'suffix',
  'displayOptions',
  'resultGroup',
  'overridable',
  'rounding',
];

/** Elements from stored/written JSON (shape only; expressions are checked by `compileLogic`). */
export function readElements(raw: unknown): ElementDef[] {
  if (!Array.isArray(raw)) throw fail('elements', 'must be a list of {elementName, expression, ...}');
  if (raw.length > MAX_ELEMENTS) throw fail('elements', `at most ${MAX_ELEMENTS} elements`);
  const seen = new Set<string>();
  return raw.map((x: unknown, i) => {
    const at = `elements[${i}]`;
    if (!isObj(x)) throw fail(at, 'must be an object');
    const name = x.elementName;
    if (typeof name !== 'string' || !NAME.test(name) || isForbiddenName(name) || RESERVED.has(name))
      throw fail(`${at}.elementName`, 'must be a name of letters, digits and _, not a reserved word');
    if (seen.has(name)) throw fail(`${at}.elementName`, `${name} is used twice`);
    seen.add(name);
    if (typeof x.expression !== 'string') throw fail(`${at}.expression`, 'must be text');
    for (const k of Object.keys(x))
      if (!ELEMENT_FIELDS.includes(k)) throw fail(`${at}.${k}`, 'unknown field');
    for (const k of ['label', 'suffix', 'resultGroup', 'rounding'] as const)
      if (x[k] !== undefined && x[k] !== null && typeof x[k] !== 'string')
        throw fail(`${at}.${k}`, 'must be text');
    if (
      x.formatType !== undefined &&
      x.formatType !== null &&
      !(FORMAT_TYPES as readonly unknown[]).includes(x.formatType)
    )
      throw fail(`${at}.formatType`, `must be one of ${FORMAT_TYPES.join(', ')}`);
    if (x.displayOptions !== undefined && x.displayOptions !== null && !Number.isInteger(x.displayOptions))
      throw fail(`${at}.displayOptions`, 'must be an integer (0 hides the element)');
    if (x.overridable !== undefined && x.overridable !== null && typeof x.overridable !== 'boolean')
      throw fail(`${at}.overridable`, 'must be true or false');
    const def: Record<string, unknown> = {};
    for (const k of ELEMENT_FIELDS) if (x[k] !== undefined && x[k] !== null) def[k] = x[k];
    return def as unknown as ElementDef;
  });
}

/** Every reference between elements by bare name or out.X, for the cycle message. */
function cycleThrough(defs: readonly ElementDef[], from: number): string[] | undefined {
  const names = new Map(defs.map((d, i) => [d.elementName, i]));
  const refs = (i: number): number[] => {
    const text = defs[i]?.expression ?? '';
    const out: number[] = [];
    for (const m of text.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)) {
      const j = names.get(m[0]);
      if (j !== undefined) out.push(j);
    }
    return out;
  };
  // Depth-first from `from` through the (approximate, name-based) references back to `from`.
  const path: number[] = [];
  const seen = new Set<number>();
  const walk = (i: number): boolean => {
    for (const j of refs(i)) {
      if (j === from) {
        path.push(j);
        return true;
      }
      if (seen.has(j)) continue;
      seen.add(j);
      path.push(j);
      if (walk(j)) return true;
      path.pop();
    }
    return false;
  };
  return walk(from) ? [defs[from]!.elementName, ...path.map((j) => defs[j]!.elementName)] : undefined;
}

/** Compiles a logic; a -4 naming element, line and column for the first problem found. */
export function compileLogic(
  inputsRaw: unknown,
  elementsRaw: unknown,
  functions: ReadonlyMap<string, FnDef>,
  /** When saving: the fields `product.`, `customer.`, `seller.`, `row.` may name (a typo is a -4). */
  rootFields?: ReadonlyMap<string, ReadonlySet<string>>,
): CompiledLogic {
  const inputs = readInputs(inputsRaw);
  const defs = readElements(elementsRaw);
  const inputTypes = new Map(inputs.map((i) => [i.name, inputStaticType(i.type)]));
  const known = new Map<string, { index: number; type: StaticType }>();
  const elements: CompiledElement[] = [];
  const tables = new Set<string>();
  const conditionSets = new Set<string>();
  const policies = new Set<string>();
  const extensions = new Set<string>();
  let competition = false;
  defs.forEach((def, index) => {
    const reads = emptyReads();
    let checked;
    try {
      const tree = parseExpression(def.expression);
      checked = checkExpression(
        tree,
        {
          functions,
          elements: known,
          currentElement: def.elementName,
          laterElements: new Set(defs.slice(index + 1).map((d) => d.elementName)),
          inputs: inputTypes,
          roots: RECORD_ROOTS,
          ...(rootFields === undefined ? {} : { rootFields }),
          targetDate: true,
        },
        reads,
      );
    } catch (err) {
      if (!(err instanceof ExpressionError)) throw err;
      const cycle = /comes later|refers to itself/.test(err.message) ? cycleThrough(defs, index) : undefined;
      const problem = cycle ? `${err.message} (cycle ${cycle.join(' → ')})` : err.message;
      throw elementError(index, def, problem, err.pos);
    }
    for (const call of reads.calls) {
      if (call.name === 'competition' || call.name === 'competitionPrices') competition = true;
      const name = call.literals[0];
      if (name === undefined) continue;
      if (call.name === 'lookup' || call.name === 'lookupRow') tables.add(name);
      if (call.name === 'conditionRecord') conditionSets.add(name);
      if (call.name === 'productExtension') extensions.add(`product:${name}`);
      if (call.name === 'customerExtension') extensions.add(`customer:${name}`);
    }
    if (def.rounding !== undefined) policies.add(def.rounding);
    const type = def.rounding !== undefined ? 'number' : checked.type;
    elements.push({ def, index, run: compile(checked), type, reads });
    known.set(def.elementName, { index, type });
  });
  return { inputs, elements, tables, conditionSets, policies, extensions, competition };
}

function elementError(index: number, def: ElementDef, problem: string, pos: number): AppError {
  const { line, column } = lineColumn(def.expression, pos);
  const message = `element ${def.elementName}, line ${line}, column ${column}: ${problem}`;
  const errors: FieldErrors = { [`elements[${index}].expression`]: { errorMessage: message } };
  return new AppError('VALIDATION', `elements: ${message}`, {
    errors,
    details: { element: def.elementName, line, column, problem },
  });
}
