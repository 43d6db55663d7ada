// The synchronous time-out of a request, carried to the database layer without threading it through
// every call: the HTTP layer opens a deadline scope per request (AsyncLocalStorage), and the Db
// adapters refuse to COMMIT past it (and, on PostgreSQL, cut a statement that would run past it).
// Work outside a request (the job runner) has no deadline.

import { AsyncLocalStorage } from 'node:async_hooks';

const scope = new AsyncLocalStorage<{ readonly deadline: number }>();

export class DeadlineError extends Error {
  constructor(message = 'synchronous time-out passed; the transaction was rolled back') {
    super(message);
    this.name = 'DeadlineError';
  }
}

/**
 * The time-out of a call that commits in chunks (bulk loads), after some of its rows (`taken`, e.g.
 * "the first 10000 rows") were written in whole chunks that stay committed (`counts` says what became
 * of them): the chunk in progress is rolled back.
 */
export function committedBeforeDeadline(taken: string, counts: string): DeadlineError {
  return new DeadlineError(
    'synchronous time-out passed: the chunk in progress was rolled back and later rows were not loaded; ' +
      `${taken} were taken in whole chunks that stay committed (${counts})`,
  );
}

/** Gives the rest of the current request (this async context) a deadline `ms` from now. */
export function enterDeadline(ms: number): void {
  scope.enterWith({ deadline: Date.now() + ms });
}

/** Milliseconds left before the current request's deadline; undefined outside a request. */
export function remainingMs(): number | undefined {
  const s = scope.getStore();
  return s === undefined ? undefined : s.deadline - Date.now();
}

/** Throws when the current request's deadline has passed. */
export function checkDeadline(): void {
  const left = remainingMs();
  if (left !== undefined && left <= 0) throw new DeadlineError();
}

/** Runs `fn` outside any request's deadline (background work started from a request). */
export function outsideRequest<T>(fn: () => T): T {
  return scope.exit(fn);
}
