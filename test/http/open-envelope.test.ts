// Open success envelopes are serialized natively (src/http/open-envelope.ts) instead of by the
// schema's fast-json-stringify serializer: the bytes must be the same for every envelope shape.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyReply } from 'fastify';
import { envelopeSchema } from '../../src/http/envelope.ts';
import { openEnvelopeKeys, serializeOpenEnvelopes } from '../../src/http/open-envelope.ts';

const when = new Date('2026-11-23T10:00:00.123Z');
const record = (i: number) => ({
  typedId: `${i}.P`,
  id: i,
  sku: `SKU "${i}" ü\n`,
  label: null,
  version: 0,
  createdAt: when,
  weight: 1.5,
  active: true,
  json: { a: [1, 'two', null], b: { c: false } },
  missing: undefined,
});

const envelopes: [string, unknown, boolean][] = [
  [
    'list page',
    {
      response: { node: 'n1', status: 0, data: [record(1), record(2)], startRow: 0, endRow: 2, totalRows: 9 },
    },
    true,
  ],
  ['records', { response: { node: 'n1', status: 0, data: [record(3)] } }, false],
  ['csrf token', { response: { node: 'n1', status: 0, data: [], csrfToken: 'tok' } }, false],
  ['null data', { response: { node: 'n1', status: 0, data: null } }, false],
  [
    'undeclared keys dropped',
    { response: { node: 'n1', status: 0, data: [], columns: ['x'] }, extra: 1 },
    false,
  ],
];

async function serve(native: boolean, list: boolean, payload: unknown, status = 200, item?: object) {
  const app = Fastify();
  if (native) app.addHook('onRoute', serializeOpenEnvelopes);
  const schema = { response: { 200: envelopeSchema(item, list) } };
  app.get('/x', { schema }, async (_req, reply: FastifyReply) => {
    void reply.code(status);
    return payload;
  });
  const r = await app.inject({ method: 'GET', url: '/x' });
  await app.close();
  return r;
}

test('native serialization writes the same bytes as the schema serializer', async () => {
  // Items as open objects (records) and as any value (`{}`: /fetch pages).
  for (const item of [undefined, {}]) {
    for (const [name, payload, list] of envelopes) {
      const schema = await serve(false, list, payload, 200, item);
      const native = await serve(true, list, payload, 200, item);
      assert.equal(native.statusCode, 200, name);
      assert.equal(native.body, schema.body, name);
      assert.equal(native.headers['content-type'], schema.headers['content-type'], name);
    }
  }
});

test('other statuses are written as they are', async () => {
  const error = {
    response: { node: 'n1', status: -4, data: 'bad', errors: { f: { errorMessage: 'x' } }, requestId: 'r' },
  };
  const native = await serve(true, false, error, 400);
  assert.equal(native.statusCode, 400);
  assert.deepEqual(JSON.parse(native.body), error);
});

test('only envelopes with open items qualify', () => {
  assert.deepEqual(openEnvelopeKeys(envelopeSchema()), ['node', 'status', 'data', 'csrfToken']);
  assert.deepEqual(openEnvelopeKeys(envelopeSchema({}, true)), [
    'node',
    'status',
    'data',
    'csrfToken',
    'startRow',
    'endRow',
    'totalRows',
  ]);
  assert.equal(
    openEnvelopeKeys(envelopeSchema({ type: 'object', properties: { a: { type: 'string' } } })),
    undefined,
  );
  assert.equal(openEnvelopeKeys({ type: 'object' }), undefined);
  assert.equal(openEnvelopeKeys(undefined), undefined);
});
