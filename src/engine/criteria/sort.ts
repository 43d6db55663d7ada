// `sortBy` → ORDER BY terms over the type's fields, by each field's declared type (the same typed
// expressions the compiled criteria use), NULLs lowest, the tie-breaker column last.

import { ident, qualified } from '../../db/sql.ts';
import { validationError } from '../../http/errors.ts';
import type { FieldSpec } from '../types.ts';
import { typedColumn } from './compile.ts';
import { isArray, isMissing, show } from './parse.ts';

// ---------------------------------------------------------------------------------------------
// Sorting

/**
 * ORDER BY terms for `sortBy` (a field name or an array of them, `-name` descending), by the
 * field's declared type, NULLs lowest as in the criteria (first ascending, last descending). The
 * tie-breaker column (the primary key) always comes last, so pages never overlap or skip.
 */
export function compileSort(
  sortBy: unknown,
  fields: ReadonlyMap<string, FieldSpec>,
  alias?: string,
  tieBreaker = 'id',
): string {
  const names = isMissing(sortBy) ? [] : isArray(sortBy) ? sortBy : [sortBy];
  const terms = names.map((entry) => {
    if (typeof entry !== 'string')
      throw validationError('sortBy', 'must be a field name or an array of them');
    const desc = entry.startsWith('-');
    const name = desc ? entry.slice(1) : entry;
    const field = fields.get(name) ?? (name === 'typedId' ? fields.get('id') : undefined);
    if (!field) throw validationError('sortBy', `unknown field ${show(name)}`);
    if (field.type === 'json') throw validationError('sortBy', `cannot sort by the json field ${show(name)}`);
    return `${typedColumn(field, alias).sql} ${desc ? 'DESC NULLS LAST' : 'ASC NULLS FIRST'}`;
  });
  const tie = alias === undefined ? ident(tieBreaker) : qualified(alias, tieBreaker);
  return [...terms, `${tie} ASC`].join(', ');
}
