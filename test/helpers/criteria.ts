// Criteria bodies the suites send: an AdvancedCriteria of all given criteria, an `equals` leaf, a
// leaf of any operator (no `value` member when none is given; `extra` for start/end and the like),
// the fetch body with every field null, and the body a client sends to read one record.

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

/** What a client sends to every fetch-style operation, for a read of one record: nothing to page. */
export const CLIENT_READ_BODY = {
  operationType: 'fetch',
  textMatchStyle: 'exact',
  startRow: null,
  endRow: null,
  oldValues: null,
  data: {},
} as const;
