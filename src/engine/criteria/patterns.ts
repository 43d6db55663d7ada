// The fields a request's criteria test with `regexp` / `iregexp`. PostgreSQL may refuse a pattern
// that the resolver's check let through (`(?<n>a)`, `\p{L}`, a pattern too complex for it): its
// refusal (SQLSTATE 2201B, raised by whichever statement runs the filter) then names these fields,
// as any other invalid filter names its field. One list per request (AsyncLocalStorage, entered by
// the HTTP layer); outside a request nothing is noted.

import { AsyncLocalStorage } from 'node:async_hooks';

const noted = new AsyncLocalStorage<string[]>();

/** Gives the rest of the current async context (one request) a list of its own. */
export function enterPatternScope(): void {
  noted.enterWith([]);
}

export function notePatternField(name: string): void {
  const list = noted.getStore();
  if (list !== undefined && !list.includes(name)) list.push(name);
}

/** The fields noted in this request, in the order first seen. */
export function patternFields(): readonly string[] {
  return noted.getStore() ?? [];
}
