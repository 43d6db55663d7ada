// The criteria compiler's public entry point, a facade only: the code lives in src/engine/criteria/,
// one file per stage — parseCriteria (JSON → CriteriaTree) → resolveCriteria (tree + the type's fields
// → ResolvedCriteria) → compileCriteria (→ SQL boolean expression, values in Params); compileSort
// turns `sortBy` into ORDER BY terms. Nothing there touches HTTP or the database. The stage files
// import each other directly, never this file.

export { OPERATOR_NAMES, type Operator } from './criteria/operators.ts';
export {
  MAX_CRITERIA,
  MAX_CRITERIA_DEPTH,
  parseCriteria,
  type CriteriaNode,
  type CriteriaTree,
  type LeafNode,
  type LogicalOperator,
  type Scalar,
  type TextMatchStyle,
} from './criteria/parse.ts';
export {
  resolveCriteria,
  type DroppedCriterion,
  type Resolution,
  type ResolvedCriteria,
  type ResolvedLeaf,
  type ResolvedNode,
  type Value,
} from './criteria/resolve.ts';
export { compileCriteria, jsonKeyLiteral, typedColumn } from './criteria/compile.ts';
export { compileSort } from './criteria/sort.ts';
