// Criteria bodies the suites send: an AdvancedCriteria of all given criteria, and an `equals` leaf.

export const adv = (...criteria: object[]) => ({
  _constructor: 'AdvancedCriteria',
  operator: 'and',
  criteria,
});
export const eq = (fieldName: string, value: unknown) => ({ fieldName, operator: 'equals', value });
