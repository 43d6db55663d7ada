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

export function resultObjects(
  logic: CompiledLogic,
  outcomes: readonly ElementOutcome[],
  explain: boolean,
  /** Hidden elements too (explanations always include them; bulk callers may ask). */
  includeHidden = explain,
): ResultObject[] {
  const out: ResultObject[] = [];
  logic.elements.forEach((el, i) => {
    const o = outcomes[i];
    if (!o || (!includeHidden && !isVisible(el.def))) return;
    const def = el.def;
    // A plain literal (no spread) when not explaining: built many thousand times per bulk batch.
    const result: ResultObject = {
      resultName: def.elementName,
      resultLabel: def.label ?? def.elementName,
      result: toJson(o.value),
      resultType: RESULT_TYPES[staticTypeOf(o.value)] ?? 'ANY',
      formatType: def.formatType ?? defaultFormat(o.value),
      suffix: def.suffix ?? null,
      alertType: o.alertType,
      alertMessage: o.alertMessage,
      warnings: o.warnings,
      overridable: def.overridable ?? false,
      overridden: false,
      resultGroup: def.resultGroup ?? null,
      displayOptions: def.displayOptions ?? 1,
    };
    out.push(
      explain
        ? {
            ...result,
            explanation: { hidden: !isVisible(def), expression: def.expression, reads: o.trace ?? [] },
          }
        : result,
    );
  });
  return out;
}
