// What the workflow runtime checks its inputs with: the texts of a decision (comment, reason) and
// the conditions of a definition and its steps, evaluated on the document.

import { optionalText } from '../../engine/value-check.ts';
import { AppError, validationError } from '../../http/errors.ts';
import { compileCondition, evaluateCondition } from '../../logic/condition.ts';
import type { ApprovableRecord } from './approvables.ts';

/** A comment or reason: null when absent or empty; text the database stores as given, else a -4. */
export function textOf(v: unknown, field: string, max = 4000): string | null {
  const text = optionalText(v, field, max);
  return text === '' ? null : text;
}

/**
 * Whether a condition holds; one that cannot be evaluated on the document (a wrong type, a name the
 * document does not have: `ApprovableRecord.names`) says where, and what to do.
 */
export function holds(condition: string, record: ApprovableRecord, where: string, fix: string): boolean {
  try {
    const names = record.names === undefined ? undefined : new Set(record.names);
    return evaluateCondition(compileCondition(condition), { ...record.fields }, undefined, names);
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'VALIDATION') throw err;
    throw validationError('condition', `${where}: ${err.message.replace(/^condition: /, '')} (${fix})`);
  }
}

/** Whether workflow definition `d` applies to the document: it has no condition, or its condition holds. */
export function definitionApplies(
  d: { readonly name: string; readonly condition: string | null },
  record: ApprovableRecord,
): boolean {
  return (
    d.condition === null ||
    d.condition.trim() === '' ||
    holds(
      d.condition,
      record,
      `the condition of workflow definition ${d.name}`,
      'correct the workflow definition',
    )
  );
}

/** Whether the condition of step `n` (1-based) of definition `definitionName` holds on the document. */
export function stepHolds(
  condition: string,
  record: ApprovableRecord,
  n: number,
  definitionName: string,
): boolean {
  return holds(
    condition,
    record,
    `the condition of step ${n} of workflow definition ${definitionName}`,
    'correct the definition, then withdraw and submit again',
  );
}
