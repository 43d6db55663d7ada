// What the registry says about a type, as clients read it: the type list of `/fetch` and
// `/metadata.describe` (fields with their types; custom attributes typed by the partition's meta —
// for an extension type, by the meta of the table named, since each table types its own).

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { AppError, validationError } from '../http/errors.ts';
import { loadTypeContext, typedPerRow } from './context.ts';
import { requireAccess } from './access-check.ts';
import { extensionTableExists, type ExtensionKind } from './extension-tables.ts';
import { unstorableText } from './values.ts';
import { allTypes, type FieldDef, type TypeDef } from './registry.ts';

export function listTypes(): { typeCode: string; label: string }[] {
  return allTypes().map((t) => ({ typeCode: t.code, label: t.label }));
}

/** The extension table a describe names, and the request field that names it (for its errors). */
export interface DescribedTable {
  readonly name: unknown;
  readonly field: string;
}

/** The table's name, once it is known to name a table of `type` the principal sees (-4, 404 else). */
async function tableOf(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  table: DescribedTable,
): Promise<string> {
  const { name, field } = table;
  if (!typedPerRow(type)) {
    throw validationError(field, `${type.code} has no tables by name (only PX, CX and SX have)`);
  }
  if (typeof name !== 'string' || name === '') throw validationError(field, 'must be a table name');
  const bad = unstorableText(name);
  if (bad !== undefined) throw validationError(field, bad);
  if (!(await extensionTableExists(q, principal, type.code as ExtensionKind, name))) {
    throw new AppError('NOT_FOUND', `Extension table ${type.code}:${name} not found`, { field });
  }
  return name;
}

/**
 * `required`: an add must give the field — not when the server keeps it, nor when a default fills it
 * (`defaultOnAdd`: a status left out is OPEN) or a write of null stores a value (`nullAs`).
 */
function mustGive(f: FieldDef): boolean {
  return f.required === true && f.system !== true && f.defaultOnAdd !== true && f.nullAs === undefined;
}

/**
 * `updatable`: `/update` writes the field (value-check.ts `prepareValues`) — not a server field nor a
 * business key (both ignored there), unless a key the type lets an update move (`movableKeys`: a
 * seller extension row's `sellerId`); another name of a field (`formatType`) as the field it names.
 */
function updatable(type: TypeDef, fields: ReadonlyMap<string, FieldDef>, f: FieldDef): boolean {
  const target = f.aliasOf === undefined ? f : fields.get(f.aliasOf);
  if (target === undefined || target.system === true) return false;
  return target.key !== true || type.movableKeys?.includes(target.name) === true;
}

export async function describeType(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  table?: DescribedTable,
) {
  requireAccess(principal, type.access.fetch);
  const name = table === undefined ? undefined : await tableOf(q, principal, type, table);
  const tc = await loadTypeContext(q, principal, type, name);
  // The general writes refuse the type whole (its records are written by their own operations).
  const takesUpdate =
    type.writtenBy === undefined && type.managerOnly === undefined && type.updatedBy === undefined;
  return {
    name: type.label,
    typeCode: type.code,
    ...(name !== undefined ? { tableName: name } : {}),
    businessKey: type.businessKey,
    massEditable: type.massEditable,
    bulkLoadable: type.bulkLoadable || type.loadedBy !== undefined,
    deleteMode: type.deleteMode,
    fields: [
      { name: 'typedId', type: 'string', required: false, updatable: false },
      ...[...tc.fields.values()].map((f) => ({
        name: f.name,
        type: f.type,
        required: mustGive(f),
        updatable: takesUpdate && updatable(type, tc.fields, f),
        ...(f.custom ? { custom: true } : {}),
        // A list of such values (record history's `field`: the changed fields' names).
        ...(f.elements ? { list: true } : {}),
        ...(f.maxLength !== undefined ? { maxLength: f.maxLength } : {}),
        ...(f.oneOf ? { values: f.oneOf } : {}),
      })),
    ],
  };
}
