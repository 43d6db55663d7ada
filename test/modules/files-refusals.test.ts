// What the attachment and upload operations refuse, on both databases: an update of an attachment
// deleted while it waited for the row (404, not a version conflict; PostgreSQL only, where another
// connection can hold the row), text no column takes (unpaired surrogates, NUL) in whatever the
// update takes, and a body on an operation whose request the interface leaves empty (a -4 naming
// the field, nothing changed).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { assertError, assertOk, send, slotWith } from '../jobs/helpers.ts';

const json = { 'content-type': 'application/json' };

describe('attachment and upload refusals', () => {
  let h: Harness;

  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  async function attached(): Promise<{ typedId: string; id: number }> {
    const sku = uniqueName('sku');
    const [p] = assertOk(
      await send(h, '/add/P', { body: JSON.stringify({ data: { sku, label: 'x' } }), headers: json }),
    );
    const att = assertOk(
      await send(h, `/bdmanager.upload/${p.typedId}/${await slotWith(h, 'abc', 'a.txt')}`),
    );
    return { typedId: p.typedId, id: att[0].id };
  }

  const stored = async (id: number) =>
    (
      await h.db.query<{ file_name: string; metadata: unknown; version: number }>(
        'SELECT file_name, metadata, version FROM attachments WHERE partition_id = $1 AND id = $2',
        [h.partitionId, id],
      )
    ).rows[0];

  test(
    'an update waiting for the row of an attachment deleted meanwhile is a 404 (PostgreSQL)',
    { skip: !process.env.DATABASE_URL },
    async () => {
      for (const oldValues of [undefined, { version: 0 }, { version: 5 }]) {
        const { typedId, id } = await attached();
        // Another connection holds the row, as a delete does until it commits; the update passes
        // its first look-up (plain reads are not blocked) and waits at its FOR UPDATE.
        let release!: () => void;
        const released = new Promise<void>((r) => (release = r));
        let holding!: (pid: number) => void;
        const held = new Promise<number>((r) => (holding = r));
        const holder = h.db.transaction(async (tx) => {
          const r = await tx.query<{ pid: number }>(
            `SELECT pg_backend_pid() AS pid FROM attachments WHERE partition_id = $1 AND id = $2 FOR UPDATE`,
            [h.partitionId, id],
          );
          holding(r.rows[0]!.pid);
          await released;
          await tx.query('DELETE FROM attachments WHERE partition_id = $1 AND id = $2', [h.partitionId, id]);
        });
        const pid = await held;
        const update = send(h, `/bdmanager.update/${typedId}`, {
          body: JSON.stringify({ data: { id, fileName: 'z.txt' }, ...(oldValues ? { oldValues } : {}) }),
          headers: json,
        });
        for (let waiting = 0; waiting === 0;) {
          await new Promise((r) => setTimeout(r, 20));
          const r = await h.db.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
            [pid],
          );
          waiting = r.rows[0]!.n;
        }
        release();
        await holder;
        const res = await update;
        assertError(res, 404, -1);
        assert.equal(res.body.response.data, `Attachment ${id} not found`);
      }
    },
  );

  test('a stale version is still a conflict, the current one an update', async () => {
    const { typedId, id } = await attached();
    const update = (version: number) =>
      send(h, `/bdmanager.update/${typedId}`, {
        body: JSON.stringify({ data: { id, fileName: 'b.txt' }, oldValues: { version } }),
        headers: json,
      });
    const stale = await update(3);
    assertError(stale, 409, -1);
    assert.equal(stale.body.response.data, `Attachment ${id} is not at version 3`);
    assert.equal(assertOk(await update(0))[0].version, 1);
  });

  test('text no column takes (unpaired surrogates, NUL) is a -4 naming the field, nothing stored', async () => {
    const { typedId, id } = await attached();
    // Written as JSON text: JSON.stringify would escape a lone surrogate the same way.
    const cases: [string, string][] = [
      ['{"id":ID,"fileName":"a\\ud800"}', 'fileName'],
      ['{"id":ID,"fileName":"a\\udc00b"}', 'fileName'],
      ['{"id":ID,"fileName":"a\\u0000"}', 'fileName'],
      ['{"id":ID,"metadata":{"tag":"x\\ud800"}}', 'metadata.tag'],
      ['{"id":ID,"metadata":{"list":["ok","\\udfff"]}}', 'metadata.list.1'],
      ['{"id":ID,"metadata":{"k\\ud800":1}}', 'metadata.k\ud800'],
      ['{"id":ID,"metadata":{"tag":"a\\u0000"}}', 'metadata.tag'],
    ];
    for (const [data, field] of cases) {
      const res = await send(h, `/bdmanager.update/${typedId}`, {
        body: `{"data":${data.replace('ID', String(id))},"oldValues":{"version":0}}`,
        headers: json,
      });
      assertError(res, 400, -4);
      assert.deepEqual(Object.keys(res.body.response.errors), [field], data);
      assert.match(res.body.response.data, /must not contain (unpaired surrogates|NUL characters)$/);
    }
    assert.deepEqual(await stored(id), { file_name: 'a.txt', metadata: null, version: 0 });
    // A new name is a file name, as an upload keeps one: no directories, quotes or control characters
    // (the path and a CR LF were stored as given).
    for (const fileName of ['../../etc/passwd', 'a\\b.txt', 'a\r\nX: 1', 'say "hi".txt']) {
      const res = await send(h, `/bdmanager.update/${typedId}`, {
        body: JSON.stringify({ data: { id, fileName }, oldValues: { version: 0 } }),
        headers: json,
      });
      assertError(res, 400, -4);
      assert.deepEqual(Object.keys(res.body.response.errors), ['fileName'], fileName);
    }
    assert.deepEqual(await stored(id), { file_name: 'a.txt', metadata: null, version: 0 });
    // A pair is a character like any other.
    const ok = assertOk(
      await send(h, `/bdmanager.update/${typedId}`, {
        body: '{"data":{"id":' + id + ',"fileName":"a\\ud83d\\ude00.txt"},"oldValues":{"version":0}}',
        headers: json,
      }),
    );
    assert.equal(ok[0].fileName, 'a\u{1f600}.txt');
  });

  test('a file name of 255 characters beyond the BMP is kept whole, not cut inside a character', async () => {
    const { typedId, id } = await attached();
    const name = '\u{1f600}'.repeat(255);
    const ok = assertOk(
      await send(h, `/bdmanager.update/${typedId}`, {
        body: JSON.stringify({ data: { id, fileName: name } }),
        headers: json,
      }),
    );
    assert.equal(ok[0].fileName, name);
    assert.equal((await stored(id))!.file_name, name);
    // A name given longer is refused, not cut.
    const long = await send(h, `/bdmanager.update/${typedId}`, {
      body: JSON.stringify({ data: { id, fileName: `${name}x` } }),
      headers: json,
    });
    assertError(long, 400, -4);
    assert.deepEqual(Object.keys(long.body.response.errors), ['data.fileName']);
    assert.match(long.body.response.data, /more than 255 characters/);
    assert.equal((await stored(id))!.file_name, name);
    // The name of an uploaded file is cut at 255 characters, whole ones.
    const slot = await slotWith(h, 'abc', '\u{1f600}'.repeat(300));
    const att = assertOk(await send(h, `/bdmanager.upload/${typedId}/${slot}`))[0];
    assert.equal(att.fileName, name);
  });

  test('operations whose request is empty refuse any field and change nothing', async () => {
    const bodies: [string, string][] = [
      ['{"bogus":1}', 'bogus'],
      ['{"data":{"x":1}}', 'data'],
      ['{"data":"x"}', 'data'],
      ['[1]', 'body'],
    ];
    const { typedId, id } = await attached();
    const slot = await slotWith(h, 'abc', 'b.txt');
    const count = async () =>
      (
        await h.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM attachments WHERE partition_id = $1',
          [h.partitionId],
        )
      ).rows[0]!.n;
    const before = await count();
    for (const [body, field] of bodies) {
      for (const path of [
        `/bdmanager.upload/${typedId}/${slot}`,
        `/bdmanager.delete/${typedId}/${id}`,
        `/bdmanager.edit/${typedId}/${id}/${slot}`,
        `/bdmanager.download/${typedId}/${id}`,
        `/productimages.upload/${slot}/sku`,
        `/uploadmanager.deleteslot/${slot}`,
        `/uploadmanager.status/1`,
        `/importfile/PX/t/${slot}`,
        `/importfile/SX/t/${slot}`,
      ]) {
        const res = await send(h, path, { body, headers: json });
        assertError(res, 400, -4);
        assert.ok(field in res.body.response.errors, `${path} ${body}: ${JSON.stringify(res.body)}`);
      }
    }
    // A body this scope cannot read (not JSON) is refused too, not ignored.
    const text = await send(h, `/bdmanager.delete/${typedId}/${id}`, {
      body: 'x=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assertError(text, 415, -4);
    assert.ok(text.body.response.errors['Content-Type'], JSON.stringify(text.body));
    // bdmanager.update too: a 415 naming the header, not "body: must be object".
    const xml = await send(h, `/bdmanager.update/${typedId}`, {
      body: 'hello',
      headers: { 'content-type': 'application/xml' },
    });
    assertError(xml, 415, -4);
    assert.ok(xml.body.response.errors['Content-Type'], JSON.stringify(xml.body));
    // A file load sent as JSON: a 415 naming the header.
    const asJson = await send(h, '/loaddata.file/P', { body: '{}', headers: json });
    assertError(asJson, 415, -4);
    assert.ok(asJson.body.response.errors['Content-Type'], JSON.stringify(asJson.body));
    assert.equal(await count(), before, 'nothing attached or deleted');
    assert.equal((await stored(id))!.version, 0, 'nor replaced');
    assert.equal(assertOk(await send(h, `/uploadmanager.progress/${slot}`))[0].status, 'FINISHED');
    // What a client following the interface sends still works: nothing, {}, operationType, empty data.
    assertOk(await send(h, `/bdmanager.download/${typedId}/${id}`, { body: '{}', headers: json }));
    assertOk(await send(h, `/uploadmanager.progress/${slot}`, { body: '{"data":{}}', headers: json }));
    const att = assertOk(
      await send(h, `/bdmanager.upload/${typedId}/${slot}`, {
        body: '{"operationType":"add","data":{}}',
        headers: json,
      }),
    )[0];
    assertOk(await send(h, `/bdmanager.delete/${typedId}/${att.id}`, { body: 'null', headers: json }));
    assertOk(await send(h, `/bdmanager.delete/${typedId}/${id}`));
    const other = await slotWith(h, 'abc');
    assertOk(await send(h, `/uploadmanager.deleteslot/${other}`, { body: '{}', headers: json }));
    assertOk(await send(h, `/uploadmanager.deleteslot/${slot}`, { method: 'GET' }));
  });
});
