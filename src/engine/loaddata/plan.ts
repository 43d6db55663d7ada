// Bulk loads, stage 1, plan: the header and options of a load → LoadPlan (no database, no rows read):
// the registry fields in header order, the join fields, the business key and what stops an insert.
// Also the request shapes of a load (LoadBody, LoadOptions).

import { validationError } from '../../http/errors.ts';
import type { FieldDef, TypeDef } from '../registry.ts';

export interface LoadOptions {
  readonly detectJoinFields?: boolean;
  readonly joinFields?: readonly string[];
  /** Only for CRCP loads (condition records, a later area): refused with a -4 for every type there is. */
  readonly conditionRecords?: unknown;
  /**
   * A soft-deleted match is replaced by the row (columns absent from the header become NULL)
   * instead of being restored with its old values; needs join fields (file loads).
   */
  readonly replaceSoftDeleted?: boolean;
}

export interface LoadBody {
  readonly header: readonly string[];
  readonly data: readonly unknown[];
  readonly options?: LoadOptions;
}

/** Everything decided from the header and options, before any row is read. */
export interface LoadPlan {
  readonly type: TypeDef;
  /** Registry fields in header order (custom attributes are re-typed per context when checked). */
  readonly header: readonly FieldDef[];
  /** Join fields (as header positions); empty: every row is an insert of an entire record. */
  readonly join: readonly number[];
  /** Header positions of the business key; a duplicate key within the call is a row error. */
  readonly key: readonly number[];
  /** A required field absent from the header: rows can update, never insert. */
  readonly missingForInsert: FieldDef | undefined;
  /** Header position of the extension table `name` (types with attribute meta per table). */
  readonly nameAt: number | undefined;
  readonly replaceSoftDeleted: boolean;
}

// ---------------------------------------------------------------------------------------------
// Plan: header and options → LoadPlan (no database)

export function planLoad(type: TypeDef, body: LoadBody, maxBatchRows: number): LoadPlan {
  if (!type.bulkLoadable) throw validationError('typeCode', `${type.code} cannot be bulk-loaded`);
  const options = body.options ?? {};
  if (options.conditionRecords !== undefined && type.code !== 'CRCP') {
    throw validationError('options.conditionRecords', 'applies only to CRCP loads');
  }
  if (body.data.length > maxBatchRows) {
    throw validationError('data', `at most ${maxBatchRows} rows per call (got ${body.data.length})`);
  }
  if (body.header.length === 0) throw validationError('header', 'must name at least one field');

  const byName = new Map(type.fields.map((f) => [f.name, f]));
  const seen = new Map<string, number>();
  const header = body.header.map((name, i) => {
    const f = byName.get(name);
    if (name === 'typedId' || f?.system)
      throw validationError(`header.${i}`, `${name} is set by the server, not loaded`);
    if (!f) throw validationError(`header.${i}`, `unknown field ${JSON.stringify(name)} of ${type.code}`);
    if (seen.has(name)) throw validationError(`header.${i}`, `${name} is already column ${seen.get(name)}`);
    seen.set(name, i);
    return f;
  });
  const at = (name: string) => seen.get(name);

  const nameAt = type.metaPerName ? at('name') : undefined;
  if (type.metaPerName && nameAt === undefined) {
    throw validationError('header', 'must contain name (the extension table each row belongs to)');
  }

  // detectJoinFields: the server's join fields (the business key); otherwise the given ones.
  const detect = options.detectJoinFields === true;
  const join: number[] = [];
  (detect ? type.businessKey : (options.joinFields ?? [])).forEach((name, i) => {
    const pos = at(name);
    if (pos === undefined) {
      throw validationError(
        detect ? 'header' : `options.joinFields.${i}`,
        `join field ${name} must appear in the header`,
      );
    }
    if (!join.includes(pos)) join.push(pos);
  });
  // An extension row belongs to one table: matching across tables would update the wrong ones.
  if (join.length > 0 && nameAt !== undefined && !join.includes(nameAt)) join.unshift(nameAt);

  if (options.replaceSoftDeleted === true && join.length === 0) {
    throw validationError(
      'replaceSoftDeleted',
      'needs join fields: give joinFields or set detectJoinFields to true',
    );
  }

  const key = type.businessKey.map((k) => at(k));
  // A field with a default on add (a to-do's status, an item's open validity end) may be left out,
  // as on /add: new rows take the column's default.
  const missingForInsert = type.fields.find(
    (f) =>
      ((f.required && !f.defaultOnAdd) || type.businessKey.includes(f.name)) &&
      !f.system &&
      at(f.name) === undefined,
  );
  if (join.length === 0 && missingForInsert !== undefined) {
    throw validationError(
      'header',
      `must contain ${missingForInsert.name}: without join fields every row is a new record`,
    );
  }
  return {
    type,
    header,
    join,
    key: key.every((k) => k !== undefined) ? key : [],
    missingForInsert,
    nameAt,
    replaceSoftDeleted: options.replaceSoftDeleted === true,
  };
}
