// `null` means "absent" for the optional top-level fields of a JSON body: clients of the interface
// send `"endRow": null`, `"startRow": null`, `"sortBy": null` ... whenever their caller gave no
// value. Applied to every route whose body schema lists its properties (fetch-style bodies above
// all), before validation, so each route's schema and reader see the field as not given. Rejected
// alternative: `type: [..., 'null']` on every property of every schema, which each reader would
// then have to treat like absence again — and one forgotten property is a client-visible -4.

import type { preValidationHookHandler, RouteOptions } from 'fastify';

type Schema = Readonly<Record<string, unknown>>;
const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The optional properties of an object body schema whose schema does not itself allow null. */
function nullableAbsentees(body: unknown): ReadonlySet<string> {
  if (!isObj(body) || !isObj(body.properties)) return new Set();
  const required = new Set(Array.isArray(body.required) ? (body.required as unknown[]) : []);
  const names = Object.entries(body.properties as Record<string, Schema>)
    .filter(([name, s]) => !required.has(name) && !allowsNull(s))
    .map(([name]) => name);
  return new Set(names);
}

/** A property schema that states `null` as a value of its own keeps it (it means something there). */
function allowsNull(s: Schema): boolean {
  const t = s.type;
  if (t === 'null' || (Array.isArray(t) && t.includes('null'))) return true;
  const alternatives = [s.anyOf, s.oneOf].filter(Array.isArray) as Schema[][];
  return alternatives.some((list) => list.some((a) => isObj(a) && a.type === 'null'));
}

/**
 * Adds the hook to a route (from an `onRoute` hook) when its body schema has optional properties;
 * keeps the route's own preValidation hooks after it.
 */
export function treatNullAsAbsent(route: RouteOptions): void {
  const names = nullableAbsentees(route.schema?.body);
  if (names.size === 0) return;
  const dropNulls: preValidationHookHandler = function dropNulls(req, _reply, done) {
    const body = req.body;
    if (isObj(body)) {
      for (const name of names) if (body[name] === null) delete body[name];
    }
    done();
  };
  const own = route.preValidation;
  route.preValidation = own === undefined ? [dropNulls] : [dropNulls, ...(Array.isArray(own) ? own : [own])];
}
