// Criteria bodies the suites send: an AdvancedCriteria of all given criteria, an `equals` leaf, a
// leaf of any operator (no `value` member when none is given; `extra` for start/end and the like),
// and the fetch body with every field null.

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

/** Every field of a fetch body (interface.md "Filter and paging body") as null, "not given". */
export const NULL_FETCH_BODY = {
  operationType: null,
  textMatchStyle: null,
  startRow: null,
  endRow: null,
  sortBy: null,
  resultFields: null,
  valueFields: null,
  distinctResults: null,
  oldValues: null,
  data: null,
  componentId: null,
  dataSource: null,
  operationId: null,
} as const;
