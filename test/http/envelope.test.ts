// The envelope and every status of the error table, over real HTTP.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness, type Reply } from '../helpers/app.ts';
import { probeRoutes } from '../helpers/probe.ts';
import { PARTITION_MODULES } from '../../src/app.ts';
import { toAppError } from '../../src/http/envelope.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

function assertError(r: { status: number; body: any }, http: number, status: number): void {
  assert.equal(r.status, http, JSON.stringify(r.body));
  assert.equal(r.body.response.status, status);
  assert.equal(r.body.response.node, 'test-node');
  assert.equal(typeof r.body.response.data, 'string');
}

describe('envelope and errors', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({
      modules: [...PARTITION_MODULES, probeRoutes],
      env: { MAX_BODY_BYTES: '2048', RATE_LIMIT_PER_MINUTE: '0' },
    });
  });
  after(() => h.close());

  test('success envelope has node, status 0 and data', async () => {
    const r = await h.call('/probe.strict', { basic: admin, body: { name: 'x', n: 2 } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.response.data, [{ name: 'x', n: 2 }]);
    assert.equal(r.body.response.status, 0);
    assert.equal(r.body.response.node, 'test-node');
    assert.match(r.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/);
  });

  test('requests the HTTP parser refuses (headers too large, a bad request line) get the envelope', async () => {
    const { port } = new URL(h.url);
    const raw = (request: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(request));
        let text = '';
        socket.on('data', (d) => (text += d.toString('utf8')));
        // The server closes the connection once it answered (a reset when the request was not read).
        socket.on('error', () => {});
        socket.on('close', () => resolve(text));
      });
    const cases: [string, number][] = [
      [
        `POST /service/${h.partition}/fetch/P HTTP/1.1\r\nHost: x\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`,
        431,
      ],
      ['GARBAGE\r\n\r\n', 400],
    ];
    for (const [request, http] of cases) {
      const text = await raw(request);
      assert.match(text, new RegExp(`^HTTP/1.1 ${http} `), text);
      const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
      assertError({ status: http, body }, http, -4);
    }
  });

  test('errors is in every error envelope: {} where no field is at fault', async () => {
    const cases: [Reply, number][] = [
      [await h.call('/no.such.operation', { basic: admin, body: {} }), 404],
      [await h.call('//service/no-such-partition/fetch/P', { body: {} }), 404],
      [await h.call('/fetch/P', { body: {} }), 401],
    ];
    for (const [r, http] of cases) {
      assert.equal(r.status, http, r.text);
      assert.deepEqual(r.body.response.errors, {}, r.text);
    }
  });

  test('400/-4 names the field: unknown field, wrong type, missing field', async () => {
    const unknown = await h.call('/probe.strict', { basic: admin, body: { name: 'x', bogus: 1 } });
    assertError(unknown, 400, -4);
    assert.deepEqual(Object.keys(unknown.body.response.errors), ['bogus']);
    const wrongType = await h.call('/probe.strict', { basic: admin, body: { name: 'x', n: 'two' } });
    assertError(wrongType, 400, -4);
    assert.ok(wrongType.body.response.errors.n.errorMessage);
    const missing = await h.call('/probe.strict', { basic: admin, body: {} });
    assertError(missing, 400, -4);
    assert.ok(missing.body.response.errors.name);
  });

  test('malformed JSON is 400/-4 on field body', async () => {
    const r = await h.call('/probe.strict', { basic: admin, raw: '{"name": ' });
    assertError(r, 400, -4);
    assert.ok(r.body.response.errors.body);
  });

  test('a key taken as a prototype (__proto__, constructor.prototype) is refused as such, not as malformed JSON', async () => {
    for (const raw of [
      '{"name":"x","__proto__":{"a":1}}',
      '{"name":{"constructor":{"prototype":{"a":1}}}}',
    ]) {
      const r = await h.call('/probe.strict', {
        basic: admin,
        raw,
        headers: { 'content-type': 'application/json' },
      });
      assertError(r, 400, -4);
      assert.match(r.body.response.errors.body.errorMessage, /__proto__/);
    }
  });

  test('a JSON body that is not UTF-8 is 400/-4 on field body (not stored as U+FFFD)', async () => {
    const auth = Buffer.from(`${h.partition}/${ADMIN}:${ADMIN_PASSWORD}`).toString('base64');
    const res = await fetch(`${h.url}${h.config.basePath}/${h.partition}/probe.strict`, {
      method: 'POST',
      headers: { authorization: `Basic ${auth}`, 'content-type': 'application/json' },
      body: Buffer.concat([Buffer.from('{"name":"U-'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
    });
    const body = (await res.json()) as any;
    assertError({ status: res.status, body }, 400, -4);
    assert.ok(body.response.errors.body);
    const ok = await h.call('/probe.strict', { basic: admin, body: { name: 'Grüße 😀' } });
    assert.equal(ok.status, 200, ok.text);
  });

  test('an empty JSON body is no body, not an error', async () => {
    const r = await h.call('/login/extended', { basic: admin, raw: '' });
    assert.equal(r.status, 200);
  });

  test('413/-12 for a body over the limit', async () => {
    const r = await h.call('/probe.strict', { basic: admin, body: { name: 'x'.repeat(5000) } });
    assertError(r, 413, -12);
  });

  test('415 for a body that is not JSON', async () => {
    const r = await h.call('/probe.strict', {
      basic: admin,
      raw: 'name=x',
      headers: { 'content-type': 'text/csv' },
    });
    assertError(r, 415, -4);
  });

  test('415 for a compressed body (Content-Encoding other than identity), naming the header', async () => {
    for (const coding of ['gzip', 'br', 'deflate, gzip']) {
      const r = await h.call('/probe.strict', {
        basic: admin,
        raw: '{"name":"x","n":1}',
        headers: { 'content-type': 'application/json', 'content-encoding': coding },
      });
      assertError(r, 415, -4);
      assert.ok(r.body.response.errors['Content-Encoding'], r.text);
    }
    const plain = await h.call('/probe.strict', {
      basic: admin,
      raw: '{"name":"x","n":1}',
      headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
    });
    assert.equal(plain.status, 200, plain.text);
  });

  test('415 for JSON sent as text/plain (not a misleading "must be object")', async () => {
    const r = await h.call('/probe.strict', {
      basic: admin,
      raw: '{"name":"x"}',
      headers: { 'content-type': 'text/plain' },
    });
    assertError(r, 415, -4);
    // the field at fault is the header
    assert.match(r.body.response.errors['Content-Type'].errorMessage, /application\/json/);
  });

  test('a URL the router cannot take is the envelope: 400/-4 on path, with the request id', async () => {
    for (const path of ['/fetch/P/%E0%A4%A', `/fetch/P/${'1'.repeat(1001)}`, '//service/%ZZ/fetch/P']) {
      const r = await h.call(path, { basic: admin, body: {} });
      assertError(r, 400, -4);
      assert.ok(r.body.response.errors.path, JSON.stringify(r.body));
      assert.equal(r.headers.get('x-request-id'), r.body.response.requestId);
    }
    // A parameter of 255 characters (a SKU in a path) is no error of the router.
    const long = await h.call(`/fetch/P/${'1'.repeat(255)}`, { basic: admin, body: {} });
    assert.equal(long.body.response.errors?.path, undefined, JSON.stringify(long.body));
  });

  test('401/-7 without credentials, 403/-3 without the permission', async () => {
    assertError(await h.call('/probe.strict', { body: { name: 'x' } }), 401, -7);
    await h.newUser('plain', 'plain-password-1');
    const r = await h.call('/probe.perm', { basic: { user: 'plain', password: 'plain-password-1' } });
    assertError(r, 403, -3);
    assert.match(r.body.response.data, /USER_FETCH/);
    assert.equal((await h.call('/probe.perm', { basic: admin })).status, 200);
  });

  test('a PUBLIC route needs no credentials but still a real partition', async () => {
    assert.equal((await h.call('/probe.public')).status, 200);
    assertError(await h.call('//service/no_such_partition/probe.public'), 404, -1);
  });

  test('404/-1 for an unknown partition and an unknown operation', async () => {
    const p = await h.call('//service/no_such_partition/login/extended', {
      basic: { ...admin, partition: 'no_such_partition' },
    });
    assertError(p, 404, -1);
    assertError(await h.call('/no.such.operation', { basic: admin }), 404, -1);
    assertError(await h.call('//nowhere', { method: 'GET' }), 404, -1);
  });

  test('409/-1 for a version conflict and for a duplicate key, with nothing half-written', async () => {
    assertError(await h.call('/probe.conflict', { basic: admin }), 409, -1);
    const dup = await h.call('/probe.duplicate', { basic: admin });
    assertError(dup, 409, -1);
    const left = await h.db.query(
      `SELECT 1 FROM login_failures WHERE partition_id = $1 AND login_key = 'dup'`,
      [h.partitionId],
    );
    assert.equal(left.rows.length, 0, 'the first insert of the failed transaction was rolled back');
  });

  test('a foreign key broken by a concurrent delete is 404/-1 naming the field, not a 500', async () => {
    // What a write meets when a record it names is deleted between its check and its insert.
    const refused = async (sql: string) => {
      const err = await h.db.query(sql, [h.partitionId]).then(
        () => assert.fail('the database took it'),
        (e: unknown) => e,
      );
      return toAppError(err);
    };
    const recipient = await refused(
      `INSERT INTO notifications (partition_id, user_id, title) VALUES ($1, 999999, 't')`,
    );
    assert.deepEqual(
      [recipient.http, recipient.status, Object.keys(recipient.errors ?? {})],
      [404, -1, ['recipients']],
    );
    const set = await refused(
      `INSERT INTO attribute_meta (partition_id, owner_type, condition_record_set_id, field_name)
       VALUES ($1, 'CRCI', 999999, 'attribute1')`,
    );
    assert.deepEqual(
      [set.http, set.status, Object.keys(set.errors ?? {})],
      [404, -1, ['conditionRecordSetId']],
    );
    // An item whose set is gone (a forced delete of the set meanwhile): the bulk loader's check of
    // its sets (migration 069) raises the foreign key's error, named by the set, not by an internal
    // column; so does the items' row trigger for every other writer.
    const item = await h.db
      .transaction(async (tx) => {
        await tx.query(`SELECT rc_condition_records_sets_written($1, ARRAY[999999]::bigint[], ARRAY['1'])`, [
          h.partitionId,
        ]);
      })
      .then(
        () => assert.fail('the database took it'),
        (e: unknown) => toAppError(e),
      );
    assert.deepEqual(
      [item.http, item.status, Object.keys(item.errors ?? {})],
      [404, -1, ['conditionRecordSetId']],
    );
    const row = await refused(
      `INSERT INTO condition_records (partition_id, condition_record_set_id, key_size_ref, key1, valid_from)
       VALUES ($1, 999999, '1', 'k', '2026-01-01')`,
    );
    assert.deepEqual(
      [row.http, row.status, Object.keys(row.errors ?? {})],
      [404, -1, ['conditionRecordSetId']],
    );
  });

  test('a limit of the database other than an index entry is a -4 saying what was too large', async () => {
    const err = await h.db.query('SELECT array_fill(1, ARRAY[20000, 20000])').then(
      () => assert.fail('the database took it'),
      (e: unknown) => e,
    );
    const e = toAppError(err);
    assert.deepEqual([e.http, e.status, Object.keys(e.errors ?? {})], [400, -4, ['data']]);
    assert.match(e.message, /^data: is too large to store \(array size exceeds the maximum allowed/);
    assert.doesNotMatch(e.message, /index/);
  });

  test('500/-1 with a request id and no internals', async () => {
    const r = await h.call('/probe.crash', { basic: admin, headers: { 'x-request-id': 'req-42' } });
    assertError(r, 500, -1);
    assert.equal(r.body.response.requestId, 'req-42');
    assert.match(r.body.response.data, /req-42/);
    assert.doesNotMatch(r.text, /SELECT|password_hash|at .*\.ts/);
  });

  test('operational endpoints: health, ready, metrics, openapi, docs', async () => {
    const health = await h.call('//health', { method: 'GET' });
    assert.deepEqual(health.body, { status: 'ok', node: 'test-node' });
    assert.equal((await h.call('//ready', { method: 'GET' })).body.status, 'ready');
    const metrics = await h.call('//metrics', { method: 'GET' });
    assert.equal(metrics.status, 200);
    assert.match(
      metrics.text,
      /ratecard_http_requests_total\{method="POST",route="\/service\/:partition\/probe.strict",status="200"\}/,
    );
    assert.match(metrics.text, /ratecard_http_request_duration_seconds_bucket/);
    assert.match(metrics.text, /ratecard_db_pool_connections\{state="total"\}/);
    const spec = await h.call('//openapi.json', { method: 'GET' });
    assert.equal(spec.body.openapi, '3.1.0');
    assert.ok(spec.body.paths['/service/{partition}/login/extended']);
    const docs = await h.call('//docs', { method: 'GET' });
    assert.equal(docs.status, 200);
    assert.match(docs.text, /swagger/i);
  });

  test('graceful shutdown drains a request in flight', async () => {
    const other = await startHarness({ modules: [...PARTITION_MODULES, probeRoutes] });
    const pending = other.call('/probe.slow', { basic: admin });
    await new Promise((r) => setTimeout(r, 150));
    const closing = other.close();
    const r = await pending;
    await closing;
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.response.data, [{ slow: true }]);
  });
});

describe('rate limit', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { RATE_LIMIT_PER_MINUTE: '3' } });
  });
  after(() => h.close());

  test('429/-1 past the configured rate', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await h.call('/login/extended', { basic: admin })).status);
    assert.deepEqual(statuses.slice(0, 3), [200, 200, 200]);
    const r = await h.call('/login/extended', { basic: admin });
    assertError(r, 429, -1);
  });

  test('requests without or with wrong credentials count too (per client address, before authentication)', async () => {
    const fresh = await startHarness({ env: { RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const statuses: number[] = [];
      statuses.push((await fresh.call('/fetch/P', { body: {} })).status);
      statuses.push((await fresh.call('/login/extended', { basic: { ...admin, password: 'wrong' } })).status);
      statuses.push((await fresh.call('/fetch/P', { body: {} })).status);
      assert.deepEqual(statuses, [401, 401, 401]);
      assertError(await fresh.call('/fetch/P', { body: {} }), 429, -1);
      assertError(await fresh.call('/login/extended', { basic: admin }), 429, -1);
    } finally {
      await fresh.close();
    }
  });
});
