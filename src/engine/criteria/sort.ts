// `sortBy` → ORDER BY terms over the type's fields, by each field's declared type (the same typed
// expressions the compiled criteria use), NULLs lowest, the tie-breaker column last.

import { ident, qualified } from '../../db/sql.ts';
import { validationError } from '../../http/errors.ts';
import type { FieldSpec } from '../types.ts';
import { typedColumn } from './compile.ts';
import { isArray, isMissing, show } from './parse.ts';

// ---------------------------------------------------------------------------------------------
// Sorting

const NONE: ReadonlySet<string> = new Set();

/**
 * ORDER BY terms for `sortBy` (a field name or an array of them, `-name` descending), by the
 * field's declared type, NULLs lowest as in the criteria (first ascending, last descending). The
 * tie-breaker column (the primary key) always comes last, so pages never overlap or skip.
 * A column of `notNull` (the table's NOT NULL columns, db/columns.ts) is sorted without a NULLS
 * clause, as its plain indexes hold it; the indexes of nullable columns a sort may use are built
 * `NULLS FIRST` (migration 060, engine/indexes.ts), and serve both directions.
 */
export function compileSort(
  sortBy: unknown,
  fields: ReadonlyMap<string, FieldSpec>,
  alias?: string,
  tieBreaker = 'id',
  notNull: ReadonlySet<string> = NONE,
  /** The tie-breaker may be NULL (a group's value): it sorts lowest, as every sort's NULLs. */
  nullableTie = false,
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
    const { sql } = typedColumn(field, alias);
    const plain =
      notNull.has(field.column) &&
      sql === (alias === undefined ? ident(field.column) : qualified(alias, field.column));
    if (plain) return `${sql} ${desc ? 'DESC' : 'ASC'}`;
    return `${sql} ${desc ? 'DESC NULLS LAST' : 'ASC NULLS FIRST'}`;
  });
  const tie = alias === undefined ? ident(tieBreaker) : qualified(alias, tieBreaker);
  return [...terms, `${tie} ASC${nullableTie ? ' NULLS FIRST' : ''}`].join(', ');
}
