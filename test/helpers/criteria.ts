// Criteria bodies the suites send: an AdvancedCriteria of all given criteria, an `equals` leaf, and a
// leaf of any operator (no `value` member when none is given; `extra` for start/end and the like).

export const adv = (...criteria: object[]) => ({
  _constructor: 'AdvancedCriteria',
  operator: 'and',
  criteria,
});
export const eq = (fieldName: string, value: unknown) => ({ fieldName, operator: 'equals', value });
export const leaf = (fieldName: string, operator: string, value?: unknown, extra: object = {}) => ({
  fieldName,
  operator,
  ...(value === undefined ? {} : { value }),
  ...extra,
});
