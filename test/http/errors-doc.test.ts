// docs/errors.md documents exactly the codes of the catalogue, with the same HTTP and envelope status.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERRORS } from '../../src/http/errors.ts';

test('every error code is documented, and the document names no other', () => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  const rows = [...doc.matchAll(/^\|\s*`([A-Z_]+)`\s*\|\s*(\d+)\s*\|\s*(-?\d+)\s*\|/gm)].map((m) => ({
    code: m[1]!,
    http: Number(m[2]),
    status: Number(m[3]),
  }));
  assert.deepEqual(rows.map((r) => r.code).sort(), Object.keys(ERRORS).sort());
  for (const r of rows) {
    const spec = ERRORS[r.code as keyof typeof ERRORS];
    assert.equal(r.http, spec.http, `${r.code} HTTP status`);
    assert.equal(r.status, spec.status, `${r.code} envelope status`);
  }
});
