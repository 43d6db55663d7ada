// Element outcomes → the calculation result objects of the interface (`resultName`, `result`,
// `resultType`, `formatType`, `alertType`, `warnings`, ...). Hidden elements (displayOptions 0) are
// left out unless the caller explains, in which case each result also carries its `explanation`.

import type { ElementOutcome } from './evaluate.ts';
import type { CompiledLogic, ElementDef } from './logic.ts';
import { staticTypeOf, toJson, type Value } from './values.ts';

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
  readonly explanation?: unknown;
}

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
    // A plain literal (no spread) when not explaining: built many thousand times per bulk batch.
    const result: ResultObject = {
      resultName: st.resultName,
      resultLabel: st.resultLabel,
      result: toJson(value),
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
    };
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
