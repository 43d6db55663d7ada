// The fields a request's criteria test with `regexp` / `iregexp`. PostgreSQL may refuse a pattern
// that the resolver's check let through (`(?<n>a)`, `\p{L}`, a pattern too complex for it): its
// refusal (SQLSTATE 2201B, raised by whichever statement runs the filter) then names the field, as
// any other invalid filter names its field — when the request tests one field so (its message does
// not say which pattern it refused). One list per request (AsyncLocalStorage, entered by the HTTP
// layer); jobs run outside it (the runner), so nothing is noted there.

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

/** Runs `fn` (a job started from a request) with no list: what it resolves is not the request's. */
export function outsidePatternScope<T>(fn: () => T): T {
  return noted.exit(fn);
}

/** The fields noted in this request, in the order first seen. */
export function patternFields(): readonly string[] {
  return noted.getStore() ?? [];
}
