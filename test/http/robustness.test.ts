// Malformed and hostile bodies on every general operation: always an envelope, never a 500 or a
// success that failed. Slow answers are reported too (a pattern must not hang the database).

import { test } from 'node:test';
import { connect } from 'node:net';
import { once } from 'node:events';
import assert from 'node:assert/strict';
import { startHarness } from '../helpers/app.ts';
import { expectError } from '../helpers/envelope.ts';
test('odd bodies on the general operations answer 4xx envelopes, never 500', async () => {
  const h = await startHarness();
  const s = await h.login();
  const H = { 'X-Ratecard-jwt': s.token };
  const bodies: unknown[] = [
    null,
    1,
    'x',
    [],
    [1],
    {},
    { data: null },
    { data: 'x' },
    { data: [] },
    { data: [null] },
    { data: { sku: { a: 1 } } },
    { data: { sku: ['a'] } },
    { data: { sku: 'a', attribute1: { x: 1 } } },
    { data: { sku: 'a', label: 12 } },
    { data: { sku: 'a\u0000' } },
    { startRow: 1e15 },
    { endRow: 1e15 },
    { sortBy: 5 },
    { sortBy: [null] },
    {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'sku', operator: 'equals', value: { a: 1 } }],
      },
    },
    {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'sku', operator: 'inSet', value: [{}, []] }],
      },
    },
    {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'sku', operator: 'regexp', value: '(' }],
      },
    },
    {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'id', operator: 'greaterThan', value: '99999999999999999999' }],
      },
    },
    {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'createDate', operator: 'greaterThan', value: '2024-02-30' }],
      },
    },
    {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'label', operator: 'regexp', value: 'a{99999}' }],
      },
    },
    {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'label', operator: 'iregexp', value: '[[:alpha:]' }],
      },
    },
    {
      data: {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'label', operator: 'regexp', value: 'y'.repeat(300_000) }],
      },
    },
    { data: { sku: 'a', typedId: 'x' } },
    { data: { typedId: '1.P', id: 'zz' } },
    { oldValues: 5, data: { sku: 'a' } },
    { data: { sku: 'a' }, oldValues: { version: 'x' } },
    {
      filterCriteria: 5,
      massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: { x: 1 } }],
    },
  ];
  const paths = [
    '/fetch/P',
    '/add/P',
    '/update/P',
    '/integrate/P',
    '/delete/P',
    '/delete/P/batch',
    '/delete/P/batch/forcefilter',
    '/massedit/P',
    '/fetch/P/x',
    '/resetcolumn/P/x',
    '/metadata.describe',
    '/fetch/PX',
    '/update/SX',
    '/add/PAM',
  ];
  const bad: string[] = [];
  for (const p of paths)
    for (const b of bodies) {
      const t0 = Date.now();
      const r = await h.call(p, { headers: H, raw: JSON.stringify(b) });
      if (Date.now() - t0 > 10_000) bad.push('SLOW ' + p + ' ' + JSON.stringify(b) + ' ' + (Date.now() - t0));
      if (r.status >= 500 || (r.status === 200 && r.body.response.status !== 0))
        bad.push(`${p} ${JSON.stringify(b)} -> ${r.status} ${r.text.slice(0, 200)}`);
    }
  assert.deepEqual(bad, []);
  await h.close();
});

test('a write without typedId, of a type without a business key (JST), is a -4, never a 500', async () => {
  const h = await startHarness();
  const s = await h.login();
  const H = { 'X-Ratecard-jwt': s.token };
  try {
    for (const p of [
      '/update/JST',
      '/update/JST/returnolddata',
      '/integrate/JST',
      '/integrate/JST/returnolddata',
      '/delete/JST',
    ]) {
      for (const data of [{}, { jobName: 'x' }]) {
        const r = await h.call(p, { headers: H, body: { data } });
        // Jobs are never updated or integrated (refused before the address is read); deleted by id.
        expectError(r, 400, -4, p === '/delete/JST' ? 'typedId' : 'typeCode');
        assert.doesNotMatch(r.body.response.data, /undefined/, `${p}: ${r.text}`);
      }
    }
  } finally {
    await h.close();
  }
});

test('operations that take no arguments refuse unknown fields (-4 naming them); POST /fetch pages', async () => {
  const h = await startHarness({ env: { MAX_PAGE_SIZE: '50' } });
  try {
    const s = await h.login();
    const call = (path: string, body: unknown) =>
      h.call(path, { headers: { 'X-Ratecard-jwt': s.token }, body });
    const [p] = (await call('/add/P', { data: { sku: 'NOARG-1' } })).body.response.data;
    for (const path of [
      '/fetch',
      `/fetch/P/${p.id}`,
      '/resetcolumn/P/label',
      '/admin.indexes/P',
      '/bdmanager.checkifexists/1',
      '/lookuptablemanager.findref/1',
      '/uploadmanager.progress/abc',
      '/uploadmanager.newuploadslot',
    ]) {
      expectError(await call(path, { bogus: true }), 400, -4, 'bogus');
      expectError(await call(path, [1]), 400, -4);
    }
    // a fetch body says operationType fetch, if anything
    expectError(await call('/fetch/P', { operationType: 'remove' }), 400, -4, 'operationType');
    assert.equal((await call('/fetch/P', { operationType: 'fetch' })).status, 200);
    // the type codes: a page of them, the total beside it; the largest page holds
    const all = await call('/fetch', {});
    const total = all.body.response.totalRows as number;
    assert.ok(total > 50);
    assert.equal(all.body.response.data.length, 50);
    const page = await call('/fetch', { startRow: 2, endRow: 4 });
    assert.deepEqual(page.body.response.data, all.body.response.data.slice(2, 4));
    assert.deepEqual(
      [page.body.response.startRow, page.body.response.endRow, page.body.response.totalRows],
      [2, 4, total],
    );
    expectError(await call('/fetch', { endRow: 51 }), 400, -4, 'endRow');
    expectError(await call('/fetch', { data: { typeCode: 'P' } }), 400, -4);
    // A client's nulls are "not given", the fields such clients send are taken; a sort is refused.
    const nulls = { startRow: null, endRow: null, sortBy: null, resultFields: null, valueFields: null };
    const asClients = await call('/fetch', { ...nulls, distinctResults: null, componentId: 'grid1' });
    assert.deepEqual(asClients.body.response.data, all.body.response.data);
    expectError(await call('/fetch', { sortBy: 'code' }), 400, -4, 'sortBy');
  } finally {
    await h.close();
  }
});

test('a client that stops sending in the middle of its body loses the connection after IDLE_TIMEOUT_SECONDS', async () => {
  const h = await startHarness({ env: { IDLE_TIMEOUT_SECONDS: '1' } });
  const { hostname, port } = new URL(h.url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  try {
    const s = await h.login();
    const t0 = performance.now();
    // authenticated, so the server waits for the body (without credentials it answers 401 at once)
    socket.write(
      `POST /service/${h.partition}/fetch/P HTTP/1.1\r\nHost: x\r\nX-Ratecard-jwt: ${s.token}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"startRow"',
    );
    let answered = '';
    socket.on('data', (d: Buffer) => (answered += String(d)));
    // (a server that never closes it fails the test after 15 s instead of hanging it)
    await once(socket, 'close', { signal: AbortSignal.timeout(15_000) });
    const seconds = (performance.now() - t0) / 1000;
    assert.ok(seconds >= 0.9 && seconds < 10, `closed after ${seconds} s`);
    assert.equal(answered, '');
    // the server goes on answering others
    assert.equal((await fetch(`${h.url}/health`)).status, 200);
  } finally {
    socket.destroy();
    h.app.server.closeAllConnections(); // a request still waiting for its body would hold close()
    await h.close();
  }
});
