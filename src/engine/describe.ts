// What the registry says about a type, as clients read it: the type list of `/fetch` and
// `/metadata.describe` (fields with their types; custom attributes typed by the partition's meta).

import type { Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { loadTypeContext } from './context.ts';
import { requireAccess } from './access-check.ts';
import { allTypes, type TypeDef } from './registry.ts';

export function listTypes(): { typeCode: string; label: string }[] {
  return allTypes().map((t) => ({ typeCode: t.code, label: t.label }));
}

export async function describeType(q: Queryable, principal: Principal, type: TypeDef) {
  requireAccess(principal, type.access.fetch);
  const tc = await loadTypeContext(q, principal, type);
  return {
    name: type.label,
    typeCode: type.code,
    businessKey: type.businessKey,
    massEditable: type.massEditable,
    bulkLoadable: type.bulkLoadable || type.loadedBy !== undefined,
    deleteMode: type.deleteMode,
    fields: [
      { name: 'typedId', type: 'string', required: false, updatable: false },
      ...[...tc.fields.values()].map((f) => ({
        name: f.name,
        type: f.type,
        required: f.required === true,
        updatable: f.system !== true && f.key !== true,
        ...(f.custom ? { custom: true } : {}),
        // A list of such values (record history's `field`: the changed fields' names).
        ...(f.elements ? { list: true } : {}),
        ...(f.maxLength !== undefined ? { maxLength: f.maxLength } : {}),
        ...(f.oneOf ? { values: f.oneOf } : {}),
      })),
    ],
  };
}
