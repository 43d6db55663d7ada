// `null` means "absent" for the optional fields of a JSON body: clients of the interface send
// `"endRow": null`, `"startRow": null`, `"sortBy": null` ... whenever their caller gave no value, at
// the top level and inside nested objects (`data: {source, startRow: null}` of /queryapi.execute,
// `data: {options: null}` of /loaddata, `data: {pipeline: null}` of /queryapi.meta). Applied to every
// route whose body schema declares properties, before validation, so each route's schema and reader
// see the field as not given.
//
// The rule, the same at every depth: where the route's schema declares an object's properties, a
// property that is not required and whose schema does not state `null` as a value of its own is
// deleted when it is null; declared properties holding objects (and the items of declared arrays) are
// walked the same way. What the schema does not declare is left alone — record values in `data` of
// an add or update (`{attribute1: null}` clears the field) are not declared properties — and so is a
// null the schema states (`type: [..., 'null']`, a `null` alternative or enum value), which means
// something there. A required property that is null stays, so validation names it.
// Rejected alternative: `type: [..., 'null']` on every property of every schema, which each reader
// would then have to treat like absence again — and one forgotten property is a client-visible -4.

import type { preValidationHookHandler, RouteOptions } from 'fastify';
import { isObj } from '../engine/values.ts';

type Schema = Readonly<Record<string, unknown>>;

/** What to do with one value of a schema: the nulls to drop, the properties and items to walk. */
export interface NullPlan {
  /** Optional, non-nullable properties: deleted when null. */
  readonly drop: ReadonlySet<string>;
  /** Declared properties with a plan of their own (objects with declared properties, arrays of them). */
  readonly nested: ReadonlyMap<string, NullPlan>;
  /** The plan of each item, when the value is an array whose items declare properties. */
  readonly items?: NullPlan;
}

/** Deeper than any route's body schema: a guard against a self-referencing schema object. */
const MAX_DEPTH = 16;

/** A property schema that states `null` as a value of its own keeps it (it means something there). */
function allowsNull(s: Schema): boolean {
  const t = s.type;
  if (t === 'null' || (Array.isArray(t) && t.includes('null'))) return true;
  if (s.const === null || (Array.isArray(s.enum) && s.enum.includes(null))) return true;
  const alternatives = [s.anyOf, s.oneOf].filter(Array.isArray) as unknown[][];
  return alternatives.some((list) => list.some((a) => isObj(a) && allowsNull(a)));
}

/** The plan of a schema, or undefined when there is nothing to drop at any depth. */
export function nullPlan(schema: unknown, depth = 0): NullPlan | undefined {
  if (!isObj(schema) || depth > MAX_DEPTH) return undefined;
  const items = nullPlan(schema.items, depth + 1);
  const drop = new Set<string>();
  const nested = new Map<string, NullPlan>();
  if (isObj(schema.properties)) {
    const required = new Set(Array.isArray(schema.required) ? (schema.required as unknown[]) : []);
    for (const [name, s] of Object.entries(schema.properties)) {
      if (!isObj(s)) continue;
      if (!required.has(name) && !allowsNull(s)) drop.add(name);
      const inner = nullPlan(s, depth + 1);
      if (inner !== undefined) nested.set(name, inner);
    }
  }
  if (drop.size === 0 && nested.size === 0 && items === undefined) return undefined;
  return items === undefined ? { drop, nested } : { drop, nested, items };
}

/** Applies a plan to a parsed body, in place. */
export function dropAbsentNulls(value: unknown, plan: NullPlan): void {
  if (Array.isArray(value)) {
    if (plan.items !== undefined) for (const item of value) dropAbsentNulls(item, plan.items);
    return;
  }
  if (!isObj(value)) return;
  for (const name of plan.drop) if (value[name] === null) delete value[name];
  for (const [name, inner] of plan.nested) {
    const v = value[name];
    if (v !== null && typeof v === 'object') dropAbsentNulls(v, inner);
  }
}

/**
 * Adds the hook to a route (from an `onRoute` hook) when its body schema has optional properties at
 * any depth; keeps the route's own preValidation hooks after it.
 */
export function treatNullAsAbsent(route: RouteOptions): void {
  const plan = nullPlan(route.schema?.body);
  if (plan === undefined) return;
  const dropNulls: preValidationHookHandler = function dropNulls(req, _reply, done) {
    dropAbsentNulls(req.body, plan);
    done();
  };
  const own = route.preValidation;
  route.preValidation = own === undefined ? [dropNulls] : [dropNulls, ...(Array.isArray(own) ? own : [own])];
}
