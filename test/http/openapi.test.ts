// The OpenAPI document as client tools read it (GET /openapi.json): every operation has a unique,
// URL-safe operationId and a summary, `servers` is set, and bodies reference the shared component
// schemas (envelope, error envelope, filter body with criteria, records) instead of `{}`.
// Redocly lints the same document in `npm run lint` (scripts/lint-openapi.ts).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { operationIdOf } from '../../src/http/openapi.ts';

describe('OpenAPI document', () => {
  let h: Harness;
  let doc: any;
  before(async () => {
    h = await startHarness();
    const r = await h.call('//openapi.json', { method: 'GET' });
    assert.equal(r.status, 200, r.text);
    doc = r.body;
  });
  after(() => h.close());

  const operations = (): [string, string, any][] =>
    Object.entries<any>(doc.paths).flatMap(([path, ops]) =>
      Object.entries<any>(ops).map(([method, op]): [string, string, any] => [method, path, op]),
    );

  test('servers, and the shared component schemas', () => {
    assert.ok(Array.isArray(doc.servers) && doc.servers.length > 0);
    for (const name of [
      'Envelope',
      'ErrorEnvelope',
      'FetchBody',
      'Criteria',
      'AdvancedCriteria',
      'Record',
      'RecordsBody',
    ])
      assert.ok(doc.components.schemas[name], name);
  });

  test('every operation: a unique URL-safe operationId, a summary, a 2xx answer', () => {
    const seen = new Set<string>();
    assert.ok(operations().length > 100);
    for (const [method, path, op] of operations()) {
      assert.match(op.operationId ?? '', /^[A-Za-z0-9._~-]+$/, `${method} ${path}`);
      assert.ok(!seen.has(op.operationId), `duplicate ${op.operationId}`);
      seen.add(op.operationId);
      assert.ok(typeof op.summary === 'string' && op.summary !== '', `${method} ${path}`);
      assert.ok(
        Object.keys(op.responses).some((c) => c.startsWith('2')),
        `${method} ${path}`,
      );
    }
    assert.equal(
      operationIdOf('POST', '/service/:partition/fetch/:typeCode', '/service'),
      'post.fetch.by-typeCode',
    );
  });

  test('no request or response body is an open {}; fetch bodies and record bodies use the components', () => {
    for (const [method, path, op] of operations()) {
      const schema = op.requestBody?.content?.['application/json']?.schema;
      if (schema !== undefined) assert.notDeepEqual(schema, {}, `${method} ${path}`);
    }
    const fetch = doc.paths['/service/{partition}/fetch/{typeCode}'].post;
    // Nor is any response body: each has a schema that says something (an envelope, a file's
    // description), never an open {}.
    let described = 0;
    for (const [method, path, op] of operations()) {
      for (const [code, response] of Object.entries<any>(op.responses)) {
        for (const [type, content] of Object.entries<any>(response.content ?? {})) {
          assert.ok(content.schema !== undefined, `${method} ${path} ${code} ${type}: no schema`);
          assert.notDeepEqual(content.schema, {}, `${method} ${path} ${code} ${type}`);
          described++;
        }
      }
    }
    assert.ok(described > operations().length, `${described} response bodies`);
    // An answer that is an envelope in one form and a file in another documents the envelope.
    const details = doc.paths['/service/{partition}/bdmanager.download/{typedId}/{binaryDataId}'].post;
    assert.match(JSON.stringify(details.responses['200']), /#\/components\/schemas\/Envelope/);
    // checkifexists: `data` is the boolean itself.
    const exists = doc.paths['/service/{partition}/bdmanager.checkifexists/{binaryDataId}'].post;
    assert.deepEqual(
      exists.responses['200'].content['application/json'].schema.properties.response.properties.data,
      { type: 'boolean' },
    );
    assert.match(JSON.stringify(fetch.requestBody), /#\/components\/schemas\/FetchBody/);
    assert.match(JSON.stringify(fetch.responses['200']), /#\/components\/schemas\/Envelope/);
    assert.match(JSON.stringify(fetch.responses['400']), /#\/components\/schemas\/ErrorEnvelope/);
    const add = doc.paths['/service/{partition}/add/{typeCode}'].post;
    assert.match(JSON.stringify(add.requestBody), /#\/components\/schemas\/RecordsBody/);
    assert.match(JSON.stringify(doc.components.schemas.FetchBody.properties.data), /Criteria/);
  });
});
