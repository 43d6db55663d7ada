// Element outcomes → the calculation result objects of the interface (`resultName`, `result`,
// `resultType`, `formatType`, `alertType`, `warnings`, ...). Hidden elements (displayOptions 0) are
// left out unless the caller explains, in which case each result also carries its `explanation`.

import type { ElementOutcome } from './evaluate.ts';
import type { CompiledLogic, ElementDef } from './logic.ts';
import { RecordValue, staticTypeOf, toJson, type Value } from './values.ts';

export interface ResultObject {
  readonly resultName: string;
  readonly resultLabel: string;
  readonly result: unknown;
  readonly resultType: string;
  readonly formatType: string;
  readonly suffix: string | null;
  readonly alertType: string | null;
  readonly alertMessage: string | null;
  readonly warnings: readonly string[];
  readonly overridable: boolean;
  readonly overridden: boolean;
  readonly resultGroup: string | null;
  readonly displayOptions: number;
  /** Fields of the interface's result object that logics here do not set: always these defaults. */
  readonly cssProperties: null;
  readonly userGroup: null;
  readonly labelTranslations: null;
  readonly resultDescription: null;
  readonly excludeFromExport: false;
  readonly overrideAllowEmpty: false;
  readonly overrideValueOptions: readonly never[];
  readonly explanation?: unknown;
}

/** The interface's result-object fields that no element sets, with their defaults (in its order). */
export const UNSET_RESULT_FIELDS = Object.freeze({
  cssProperties: null,
  userGroup: null,
  labelTranslations: null,
  resultDescription: null,
  excludeFromExport: false,
  overrideAllowEmpty: false,
  overrideValueOptions: Object.freeze([]),
} as const);

const RESULT_TYPES: Readonly<Record<string, string>> = {
  number: 'NUMBER',
  text: 'STRING',
  boolean: 'BOOLEAN',
  date: 'DATE',
  list: 'LIST',
  record: 'MAP',
  criteria: 'MAP',
  null: 'NULL',
  any: 'ANY',
};

function defaultFormat(v: Value): string {
  const t = staticTypeOf(v);
  return t === 'number' ? 'NUMERIC' : t === 'date' ? 'DATE' : t === 'boolean' ? 'BOOLEAN' : 'TEXT';
}

export function isVisible(def: ElementDef): boolean {
  return (def.displayOptions ?? 1) !== 0;
}

/** What every result object of an element shares, worked out once per compiled logic. */
interface ElementStatics {
  readonly resultName: string;
  readonly resultLabel: string;
  readonly formatType: string | undefined;
  readonly suffix: string | null;
  readonly overridable: boolean;
  readonly resultGroup: string | null;
  readonly displayOptions: number;
  readonly visible: boolean;
}

const STATICS = new WeakMap<CompiledLogic, readonly ElementStatics[]>();

function staticsOf(logic: CompiledLogic): readonly ElementStatics[] {
  let statics = STATICS.get(logic);
  if (!statics) {
    statics = logic.elements.map(({ def }) => ({
      resultName: def.elementName,
      resultLabel: def.label ?? def.elementName,
      formatType: def.formatType,
      suffix: def.suffix ?? null,
      overridable: def.overridable ?? false,
      resultGroup: def.resultGroup ?? null,
      displayOptions: def.displayOptions ?? 1,
      visible: isVisible(def),
    }));
    STATICS.set(logic, statics);
  }
  return statics;
}

export function resultObjects(
  logic: CompiledLogic,
  outcomes: readonly ElementOutcome[],
  explain: boolean,
  /** Hidden elements too (explanations always include them; bulk callers may ask). */
  includeHidden = explain,
  /**
   * Results of an element equal to one made before (bulk callers): that object again, frozen. Read
   * only; their JSON is the same as unshared ones'.
   */
  share = false,
): ResultObject[] {
  const statics = staticsOf(logic);
  // Sized once (a list grown from empty reserves room for 17), cut to the results made.
  const out = new Array<ResultObject>(includeHidden ? statics.length : visibleCount(statics));
  let n = 0;
  for (let i = 0; i < statics.length; i++) {
    const o = outcomes[i];
    const st = statics[i]!;
    if (!o || (!includeHidden && !st.visible)) continue;
    const value = o.value;
    // A result like one made before for this element (the same value, no alert, no warning): that
    // object again, e.g. a margin or discount every item of a bulk run shares.
    const shared =
      !share || explain || o.alertType !== null || o.warnings.length > 0 ? undefined : sharingOf(logic, i);
    // The very value of the element's last shared result (the same decimal, record or text): that
    // result, which its JSON's look-up would find again, without converting the value.
    if (shared !== undefined && shared.last !== undefined && value === shared.lastValue) {
      shared.lookups++;
      shared.hits++;
      out[n++] = shared.last;
      continue;
    }
    const json = toJson(value);
    const key = shared === undefined ? undefined : shareKey(value, json);
    if (key !== undefined) {
      const found = shared!.results.get(key);
      shared!.lookups++;
      if (found !== undefined) {
        shared!.hits++;
        shared!.lastValue = value;
        shared!.last = found;
        out[n++] = found;
        continue;
      }
    }
    // A plain literal (no spread) when not explaining: built many thousand times per bulk batch.
    const result: ResultObject = {
      resultName: st.resultName,
      resultLabel: st.resultLabel,
      result: json,
      resultType: RESULT_TYPES[staticTypeOf(value)] ?? 'ANY',
      formatType: st.formatType ?? defaultFormat(value),
      suffix: st.suffix,
      alertType: o.alertType,
      alertMessage: o.alertMessage,
      warnings: o.warnings,
      overridable: st.overridable,
      overridden: false,
      resultGroup: st.resultGroup,
      displayOptions: st.displayOptions,
      cssProperties: null,
      userGroup: null,
      labelTranslations: null,
      resultDescription: null,
      excludeFromExport: false,
      overrideAllowEmpty: false,
      overrideValueOptions: UNSET_RESULT_FIELDS.overrideValueOptions,
    };
    if (key !== undefined) keep(shared!, key, value, result);
    out[n++] = explain
      ? {
          ...result,
          explanation: {
            hidden: !st.visible,
            expression: logic.elements[i]!.def.expression,
            reads: o.trace ?? [],
          },
        }
      : result;
  }
  if (n < out.length) out.length = n;
  return out;
}

function visibleCount(statics: readonly ElementStatics[]): number {
  let n = 0;
  for (const st of statics) if (st.visible) n++;
  return n;
}

/**
 * Result objects of one element kept for sharing, by shareKey. Sharing stops (and the kept objects
 * are dropped) for an element whose results seldom repeat: after 4,096 look-ups with fewer than half
 * of them found.
 */
interface Sharing {
  readonly results: Map<unknown, ResultObject>;
  lookups: number;
  hits: number;
  off: boolean;
  /** The value of the last result found or kept (`last`, which `results` holds), or undefined. */
  lastValue: Value | undefined;
  last: ResultObject | undefined;
}

const SHARING = new WeakMap<CompiledLogic, Sharing[]>();
const SHARE_MAX = 256;

function sharingOf(logic: CompiledLogic, i: number): Sharing | undefined {
  let all = SHARING.get(logic);
  if (!all) {
    all = logic.elements.map(() => ({
      results: new Map<unknown, ResultObject>(),
      lookups: 0,
      hits: 0,
      off: false,
      lastValue: undefined,
      last: undefined,
    }));
    SHARING.set(logic, all);
  }
  const s = all[i]!;
  if (s.off) return undefined;
  if (s.lookups >= 4_096 && s.hits * 2 < s.lookups) {
    s.off = true;
    s.results.clear();
    s.lastValue = undefined;
    s.last = undefined;
    return undefined;
  }
  return s;
}

/**
 * What tells results of an element apart when their value's JSON does (resultType and formatType
 * follow from it): numbers, booleans and null by their JSON, texts by themselves, a record's JSON
 * kept frozen (shared by the record) by its identity; undefined for anything else.
 */
function shareKey(value: Value, json: unknown): unknown {
  if (typeof json === 'number' || typeof json === 'boolean' || json === null) return json;
  if (typeof value === 'string') return value.length <= 100 ? value : undefined;
  if (value instanceof RecordValue && typeof json === 'object' && Object.isFrozen(json)) return json;
  return undefined;
}

function keep(s: Sharing, key: unknown, value: Value, result: ResultObject): void {
  if (s.results.size >= SHARE_MAX) return;
  s.results.set(key, Object.freeze(result));
  s.lastValue = value;
  s.last = result;
}
