// The operator table of the criteria pipeline: every AdvancedCriteria operator as a base test plus
// its flags (i-, not-, …Field forms). parse checks names against it, resolve reads each operator's
// test and flags, compile dispatches on the test's `kind`. No SQL, no field types here.

// ---------------------------------------------------------------------------------------------
// Operators: one table. Each operator is a base test plus flags, so the i-, not- and …Field forms
// are derived rather than written out again; resolve and compile dispatch on the test's `kind`.

export type Comparison = 'eq' | 'lt' | 'le' | 'gt' | 'ge';
export type Anchor = 'whole' | 'start' | 'end' | 'anywhere';

export type Test =
  | { readonly kind: 'compare'; readonly cmp: Comparison }
  | { readonly kind: 'range'; readonly inclusive: boolean }
  | { readonly kind: 'like'; readonly anchor: Anchor; readonly glob: boolean }
  | { readonly kind: 'regexp' }
  | { readonly kind: 'set' }
  | { readonly kind: 'null'; readonly blank: boolean };

interface OperatorDef {
  readonly test: Test;
  /** i-forms: case-insensitive, text fields only. */
  readonly ci: boolean;
  /** not-forms: the negation, which matches NULLs unless strict. */
  readonly negate: boolean;
  /** …Field forms: `value` names another field of the same record. */
  readonly field: boolean;
}

type Flag = 'i' | 'not' | 'field';
const op = (test: Test, ...flags: Flag[]): OperatorDef => ({
  test,
  ci: flags.includes('i'),
  negate: flags.includes('not'),
  field: flags.includes('field'),
});
const EQ: Test = { kind: 'compare', cmp: 'eq' };
const LT: Test = { kind: 'compare', cmp: 'lt' };
const LE: Test = { kind: 'compare', cmp: 'le' };
const GT: Test = { kind: 'compare', cmp: 'gt' };
const GE: Test = { kind: 'compare', cmp: 'ge' };
const BETWEEN: Test = { kind: 'range', inclusive: false };
const BETWEEN_INCL: Test = { kind: 'range', inclusive: true };
const like = (anchor: Anchor, glob = false): Test => ({ kind: 'like', anchor, glob });
const CONTAINS = like('anywhere');
const STARTS = like('start');
const ENDS = like('end');

export const OPERATORS = {
  equals: op(EQ),
  notEqual: op(EQ, 'not'),
  iEquals: op(EQ, 'i'),
  iNotEqual: op(EQ, 'i', 'not'),
  greaterThan: op(GT),
  lessThan: op(LT),
  greaterOrEqual: op(GE),
  lessOrEqual: op(LE),
  between: op(BETWEEN),
  betweenInclusive: op(BETWEEN_INCL),
  iBetween: op(BETWEEN, 'i'),
  iBetweenInclusive: op(BETWEEN_INCL, 'i'),
  contains: op(CONTAINS),
  startsWith: op(STARTS),
  endsWith: op(ENDS),
  iContains: op(CONTAINS, 'i'),
  iStartsWith: op(STARTS, 'i'),
  iEndsWith: op(ENDS, 'i'),
  notContains: op(CONTAINS, 'not'),
  notStartsWith: op(STARTS, 'not'),
  notEndsWith: op(ENDS, 'not'),
  iNotContains: op(CONTAINS, 'i', 'not'),
  iNotStartsWith: op(STARTS, 'i', 'not'),
  iNotEndsWith: op(ENDS, 'i', 'not'),
  matchesPattern: op(like('whole', true)),
  containsPattern: op(like('anywhere', true)),
  startsWithPattern: op(like('start', true)),
  endsWithPattern: op(like('end', true)),
  iMatchesPattern: op(like('whole', true), 'i'),
  iContainsPattern: op(like('anywhere', true), 'i'),
  iStartsWithPattern: op(like('start', true), 'i'),
  iEndsWithPattern: op(like('end', true), 'i'),
  regexp: op({ kind: 'regexp' }),
  iregexp: op({ kind: 'regexp' }, 'i'),
  isNull: op({ kind: 'null', blank: false }),
  notNull: op({ kind: 'null', blank: false }, 'not'),
  isBlank: op({ kind: 'null', blank: true }),
  notBlank: op({ kind: 'null', blank: true }, 'not'),
  inSet: op({ kind: 'set' }),
  notInSet: op({ kind: 'set' }, 'not'),
  equalsField: op(EQ, 'field'),
  notEqualField: op(EQ, 'field', 'not'),
  iEqualsField: op(EQ, 'field', 'i'),
  iNotEqualField: op(EQ, 'field', 'i', 'not'),
  greaterThanField: op(GT, 'field'),
  lessThanField: op(LT, 'field'),
  greaterOrEqualField: op(GE, 'field'),
  lessOrEqualField: op(LE, 'field'),
  containsField: op(CONTAINS, 'field'),
  startsWithField: op(STARTS, 'field'),
  endsWithField: op(ENDS, 'field'),
  iContainsField: op(CONTAINS, 'field', 'i'),
  iStartsWithField: op(STARTS, 'field', 'i'),
  iEndsWithField: op(ENDS, 'field', 'i'),
  notContainsField: op(CONTAINS, 'field', 'not'),
  notStartsWithField: op(STARTS, 'field', 'not'),
  notEndsWithField: op(ENDS, 'field', 'not'),
  iNotContainsField: op(CONTAINS, 'field', 'i', 'not'),
  iNotStartsWithField: op(STARTS, 'field', 'i', 'not'),
  iNotEndsWithField: op(ENDS, 'field', 'i', 'not'),
} as const satisfies Record<string, OperatorDef>;

export type Operator = keyof typeof OPERATORS;
export const OPERATOR_NAMES: readonly Operator[] = Object.keys(OPERATORS) as Operator[];

export const isOperator = (name: string): name is Operator => Object.hasOwn(OPERATORS, name);
