// The criterion a filter ANDs at its top on one field (`{field: value}` in simple criteria, an
// AdvancedCriteria `equals` leaf, alone or in a top-level `and`): the table whose attribute meta
// types a request (meta-name.ts), the one grid whose element types type its results (context.ts).

import { isObj } from './values.ts';

/**
 * A meta name from a value: text as it is; for an id field (condition record items name their set,
 * kept as the set id's digits in the meta's `name`) also a number, and digits normalised.
 */
export function metaNameText(v: unknown, integer: boolean): string | undefined {
  if (typeof v === 'number' && integer) return Number.isSafeInteger(v) ? String(v) : undefined;
  if (typeof v !== 'string') return undefined;
  return integer && /^\d{1,15}$/.test(v) ? String(Number(v)) : v;
}

export type NameMatch = 'equals' | 'iEquals' | 'iContains' | 'iStartsWith';

export interface NameCriterion {
  readonly value: string;
  readonly match: NameMatch;
}

const BY_STYLE: Readonly<Record<string, NameMatch>> = {
  exact: 'iEquals',
  exactCase: 'equals',
  substring: 'iContains',
  startsWith: 'iStartsWith',
};

/**
 * The criterion on the meta-name field that the filter ANDs at its top: in simple criteria (matched
 * by `textMatchStyle`, case-insensitive equality by default) or an AdvancedCriteria `equals` leaf
 * (case-sensitive), alone or in a top-level `and`. A name given by id (condition record sets,
 * `metaNameIsId`) is always an equality.
 */
export function nameCriterionOf(
  criteria: unknown,
  field: string,
  integer: boolean,
  style: string | undefined,
): NameCriterion | undefined {
  if (!isObj(criteria)) return undefined;
  const simple = metaNameText(criteria[field], integer);
  if (simple !== undefined) {
    return { value: simple, match: integer ? 'equals' : (BY_STYLE[style ?? 'exact'] ?? 'iEquals') };
  }
  if (criteria.fieldName === field && criteria.operator === 'equals') {
    const v = metaNameText(criteria.value, integer);
    if (v !== undefined) return { value: v, match: 'equals' };
  }
  if (criteria.operator === 'and' && Array.isArray(criteria.criteria)) {
    for (const c of criteria.criteria) {
      const n = nameCriterionOf(c, field, integer, style);
      if (n !== undefined) return n;
    }
  }
  return undefined;
}

/** The id a filter's top-level equality on an integer field names (`calculationGridId: 5`). */
export function filterIdOf(criteria: unknown, field: string): number | undefined {
  const v = nameCriterionOf(criteria, field, true, undefined)?.value;
  return v !== undefined && /^\d{1,15}$/.test(v) ? Number(v) : undefined;
}
