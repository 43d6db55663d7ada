// Built-ins of FILTER logics: they build an AdvancedCriteria (the interface's filter language) that
// the fetch then compiles into its one SQL statement through the criteria compiler — a filter logic
// runs once per request, never once per row. Field names and operators are checked by the compiler
// (a -4 naming the field), exactly as in a client's own filter.

import { EvalError } from '../failures.ts';
import { CriteriaValue, toJson, type Value } from '../values.ts';
import { spread, text } from './args.ts';
import { fn, type CallSite, type FnDef } from './types.ts';

function combine(
  operator: 'and' | 'or' | 'not',
  args: readonly Value[],
  env: Parameters<FnDef['run']>[1],
  site: CallSite,
): Value {
  const criteria: unknown[] = [];
  for (const v of spread(args, env)) {
    if (v === null) continue; // an optional part: if(cond, filter(...), null)
    if (!(v instanceof CriteriaValue)) throw new EvalError(`${site.name}: every argument must be a filter`);
    criteria.push(v.criteria);
  }
  return new CriteriaValue({ _constructor: 'AdvancedCriteria', operator, criteria });
}

export const CRITERIA: readonly FnDef[] = [
  fn({
    name: 'filter',
    min: 2,
    max: 3,
    params: ['text', 'text', 'any'],
    returns: 'criteria',
    doc: 'A filter on one field with an operator of the filter language (`equals`, `greaterThan`, `inSet` with a list, `between` with [start, end], `isNull` without value, ...).',
    example: 'filter("attribute3", "greaterOrEqual", input.MinMargin)',
    run(args, _env, site) {
      const fieldName = text(args, 0, site);
      const operator = text(args, 1, site);
      if (fieldName === undefined || operator === undefined)
        throw new EvalError('filter: field and operator are required');
      const value = args[2] ?? null;
      if (/^i?between(Inclusive)?$/.test(operator)) {
        const pair = Array.isArray(value) ? (value as readonly Value[]) : [];
        if (pair.length !== 2) throw new EvalError(`filter: ${operator} needs a list [start, end]`);
        return new CriteriaValue({
          fieldName,
          operator,
          start: toJson(pair[0] ?? null),
          end: toJson(pair[1] ?? null),
        });
      }
      return new CriteriaValue(
        args.length > 2 ? { fieldName, operator, value: toJson(value) } : { fieldName, operator },
      );
    },
  }),
  fn({
    name: 'allOf',
    min: 1,
    max: 1_000,
    params: ['criteria'],
    returns: 'criteria',
    doc: 'All of the filters (and); null arguments are skipped.',
    example: 'allOf(filter("currency", "equals", "EUR"), filter("attribute1", "greaterThan", 10))',
    run(args, env, site) {
      return combine('and', args, env, site);
    },
  }),
  fn({
    name: 'anyOf',
    min: 1,
    max: 1_000,
    params: ['criteria'],
    returns: 'criteria',
    doc: 'Any of the filters (or); null arguments are skipped.',
    example: 'anyOf(filter("sku", "startsWith", "MB-"), filter("label", "iContains", "bolt"))',
    run(args, env, site) {
      return combine('or', args, env, site);
    },
  }),
  fn({
    name: 'noneOf',
    min: 1,
    max: 1_000,
    params: ['criteria'],
    returns: 'criteria',
    doc: 'None of the filters (not); null arguments are skipped.',
    example: 'noneOf(filter("attribute2", "equals", "discontinued"))',
    run(args, env, site) {
      return combine('not', args, env, site);
    },
  }),
];
