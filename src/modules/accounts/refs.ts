// How account-manager requests name things: users by id or typedId (`12` or `"12.U"`), user groups
// and business roles by id, typedId (`"3.UG"`) or unique name, roles by name from the catalogue.
// In lists of groups and business roles a JSON number or a typedId string is an id and any other
// string is a name, so a group called "42" is still addressable (as the string "42"). Malformed input is a -4 naming the field; a well-formed
// reference to nothing is a 404 (the caller looks it up).

import { isKnownRole, type Role } from '../../access/catalogue.ts';
import { notFound, validationError } from '../../http/errors.ts';
import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { addressOf, selectOne } from '../../engine/addressing.ts';
import { loadTypeContext } from '../../engine/context.ts';
import type { TypeDef } from '../../engine/types.ts';
import { namedByRef, type NamedRow } from './store.ts';

type Obj = Record<string, unknown>;

const ID = /^(\d{1,15})(?:\.([A-Za-z0-9]+))?$/;
const TYPED_ID = /^\d{1,15}\.[A-Za-z0-9]+$/;

/** An id of type `code` from a number, `"12"` or `"12.<code>"`, or undefined if it is none. */
export function idOf(v: unknown, code: string): number | undefined {
  const text = typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim() : '';
  const m = ID.exec(text);
  if (!m || (m[2] !== undefined && m[2] !== code)) return undefined;
  const id = Number(m[1]);
  return id > 0 ? id : undefined;
}

export function userIdOf(v: unknown, field: string): number {
  const id = idOf(v, 'U');
  if (id === undefined) throw validationError(field, `${JSON.stringify(v)} is not a user id or typedId`);
  return id;
}

/** A non-empty list of distinct user ids, in the order given. */
export function userIdsOf(list: readonly unknown[], field: string): number[] {
  if (list.length === 0) throw validationError(field, 'must name at least one user');
  return [...new Set(list.map((v, i) => userIdOf(v, `${field}.${i}`)))];
}

/**
 * The id of the record a write's body addresses, found as the engine finds it (addressing.ts: typedId,
 * id, or the business key; null is absent), so that a guard checks the record the engine writes: a
 * `"typedId": null` beside a loginName passed every guard of an ADMIN's account by. Undefined when the
 * body addresses nothing or nothing the principal sees (the engine answers that -4 or 404).
 */
export async function addressedRecordId(
  q: Queryable,
  principal: Principal,
  type: TypeDef,
  data: Obj,
): Promise<number | undefined> {
  const address = addressOf(type, data);
  if (address === undefined) return undefined;
  if ('id' in address) return address.id;
  const row = await selectOne(q, await loadTypeContext(q, principal, type), principal, address, false);
  return row === undefined ? undefined : Number(row.id);
}

/** The id a record body addresses (`typedId`, `id`), when it addresses one by id. */
export function addressedId(data: Obj, code: string): number | undefined {
  if (data.typedId !== undefined && data.typedId !== null) return idOf(data.typedId, code);
  if (data.id !== undefined && data.id !== null) return idOf(data.id, code);
  return undefined;
}

/** Role names, each from the catalogue; an unknown one is a -4 naming it. */
export function roleNamesOf(list: readonly unknown[], field: string): Role[] {
  return [
    ...new Set(
      list.map((v, i) => {
        if (typeof v !== 'string' || !isKnownRole(v)) {
          throw validationError(`${field}.${i}`, `unknown role ${JSON.stringify(v)}`);
        }
        return v;
      }),
    ),
  ];
}

const TABLE = { UG: 'user_groups', BR: 'business_roles' } as const;
const LABEL = { UG: 'User group', BR: 'Business role' } as const;

/**
 * Groups (`UG`) or business roles (`BR`) by id, typedId or name, locked against deletion (the caller
 * is assigning them, inside its transaction); a missing one is a 404.
 */
export async function namedRefsOf(
  q: Queryable,
  partitionId: number,
  code: 'UG' | 'BR',
  list: readonly unknown[],
  field: string,
): Promise<NamedRow[]> {
  const ids: number[] = [];
  const names: string[] = [];
  const wanted = list.map((v, i): { id: number } | { name: string } => {
    const byId =
      typeof v === 'number' || (typeof v === 'string' && TYPED_ID.test(v.trim())) ? idOf(v, code) : null;
    if (byId === undefined) {
      throw validationError(`${field}.${i}`, `${JSON.stringify(v)} is not an id or typedId of ${code}`);
    }
    if (byId !== null) {
      ids.push(byId);
      return { id: byId };
    }
    if (typeof v !== 'string' || v === '')
      throw validationError(`${field}.${i}`, 'must be a name, an id or a typedId');
    names.push(v);
    return { name: v };
  });
  if (wanted.length === 0) return [];
  const rows = await namedByRef(q, partitionId, TABLE[code], ids, names, true);
  const out = new Map<number, NamedRow>();
  for (const [i, w] of wanted.entries()) {
    const row = rows.find((r) => ('id' in w ? r.id === w.id : r.uniqueName === w.name));
    if (!row) throw notFound(`${LABEL[code]} ${JSON.stringify('id' in w ? w.id : w.name)}`, `${field}.${i}`);
    out.set(row.id, row);
  }
  return [...out.values()];
}
