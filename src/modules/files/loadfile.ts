// File loads, the checks before anything is read: which types of the interface's file bulk-load list
// load (all of them: lookup values through the lookup table manager's loader, ./loadlookups.ts, the
// others through the engine's loader), the permission of a load, and its options. The load itself
// is ./loadfile-run.ts, its asynchronous job ./loadfile-job.ts, its status record ./upload-status.ts.

import type { Principal } from '../../access/access.ts';
import { requireAccess } from '../../engine/crud.ts';
import { findType, type TypeDef } from '../../engine/registry.ts';
import { valueDeclaration } from '../../engine/registry-lookup.ts';
import { TO_DO_CODE } from '../../engine/registry-master-more.ts';
import { notFound, validationError } from '../../http/errors.ts';
import { DELIMITERS } from './rows.ts';
import { isLookupFileCode, requireLookupLoadAccess } from './loadlookups.ts';

/** The type codes of the interface's file bulk-load list, verbatim (TO_DO_CODE: to-do items). */
export const FILE_LOAD_CODES: readonly string[] = [
  'C', 'CDESC', 'CX', 'JLTV', 'LTV', 'MLTV', 'P', 'PBOME', 'PCOMP', 'PDESC', 'PR', 'PX', 'PXREF', 'SL', 'SX',
  TO_DO_CODE, 'UG',
]; // prettier-ignore

/**
 * A type of the file-load list that the loader can take, or a -4 saying why not. For lookup values
 * (LTV, MLTV, JLTV) it is the bare declaration: the table is named by the call or by the rows.
 */
export function fileLoadType(code: string): TypeDef {
  // A code no type has is unknown (404, as everywhere); a known one the files cannot load is a -4.
  if (!isLookupFileCode(code) && findType(code) === undefined)
    throw notFound(`Type code ${code}`, 'typeCode');
  if (!FILE_LOAD_CODES.includes(code)) {
    throw validationError('typeCode', `${code} is not a file-load type (${FILE_LOAD_CODES.join(', ')})`);
  }
  if (isLookupFileCode(code)) return valueDeclaration(code)!;
  const type = findType(code);
  // Every listed code is registered (a test loads each): a miss is a programming error, not the user's.
  if (!type) throw new Error(`file-load type ${code} is not in the registry`);
  if (!type.bulkLoadable || type.managerOnly !== undefined) {
    throw validationError('typeCode', `${code} cannot be loaded from a file`);
  }
  return type;
}

/** The permission of a file load into `type`, checked before the file is read. */
export function requireFileLoadAccess(principal: Principal, type: TypeDef, syncOnTargetTable = false): void {
  if (isLookupFileCode(type.code)) requireLookupLoadAccess(principal, syncOnTargetTable);
  else requireAccess(principal, type.access.write);
}

export interface FileLoadOptions {
  readonly joinFields: readonly string[];
  readonly detectJoinFields: boolean;
  readonly replaceSoftDeleted: boolean;
  readonly syncOnTargetTable: boolean;
  /**
   * Extension table (PX/CX/SX) of rows without a `name` column; restricts rows that have one. For
   * lookup values: the `uniqueName` of the table.
   */
  readonly name?: string;
  /** Lookup values: the id of the table (instead of `name`). */
  readonly tableId?: string;
  readonly delimiter?: string;
}

/** `joinFields` as a JSON array or a comma-separated list. */
export function parseJoinFields(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  const text = raw.trim();
  if (text.startsWith('[')) {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw validationError('joinFields', 'is neither a JSON array nor a comma-separated list');
    }
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
      throw validationError('joinFields', 'must be an array of field names');
    }
    return v.map((x) => x.trim());
  }
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Types whose records only their own operation deletes (with what goes with them): no sync delete. */
const DELETED_BY: Readonly<Record<string, string>> = {
  UG: '/accountmanager.deletegroup (which removes the memberships too)',
};

export function checkFileLoadOptions(type: TypeDef, o: FileLoadOptions): void {
  const deletedBy = DELETED_BY[type.code];
  if (o.syncOnTargetTable && deletedBy !== undefined)
    throw validationError('syncOnTargetTable', `${type.code} records are deleted with ${deletedBy}`);
  if (o.replaceSoftDeleted && !o.detectJoinFields && o.joinFields.length === 0) {
    throw validationError(
      'replaceSoftDeleted',
      'needs join fields: give joinFields or set detectJoinFields to true',
    );
  }
  const lookup = isLookupFileCode(type.code);
  if (o.name !== undefined && !type.metaPerName && !lookup) {
    throw validationError(
      'name',
      `applies to extension tables (PX, CX, SX) and lookup values (LTV, MLTV, JLTV), not to ${type.code}`,
    );
  }
  if (o.tableId !== undefined) {
    if (!lookup) {
      throw validationError('tableId', `applies to lookup values (LTV, MLTV, JLTV), not to ${type.code}`);
    }
    if (!/^\d{1,15}$/.test(o.tableId)) throw validationError('tableId', 'must be a table id');
    if (o.name !== undefined)
      throw validationError('tableId', 'name the table by name or by tableId, not both');
  }
  if (o.delimiter !== undefined && DELIMITERS[o.delimiter] === undefined) {
    throw validationError('delimiter', 'must be , ; or tab');
  }
}
