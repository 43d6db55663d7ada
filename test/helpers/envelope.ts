// Assertions on the response envelope, shared by the HTTP test suites.

import assert from 'node:assert/strict';
import type { Reply } from './app.ts';

/** The `data` of a successful answer (HTTP 200, status 0). */
export function okData(r: Reply): any[] {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.response.status, 0, r.text);
  return r.body.response.data;
}

/** An error answer with this HTTP and envelope status, naming `field` in `errors` when given. */
export function expectError(r: Reply, http: number, status: number, field?: string): void {
  assert.equal(r.status, http, r.text);
  assert.equal(r.body.response.status, status, r.text);
  if (field !== undefined) assert.ok(r.body.response.errors?.[field], `error names ${field}: ${r.text}`);
}
