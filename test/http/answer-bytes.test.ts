// Answers written as JSON bytes into pooled buffers (src/http/answer-bytes.ts): a buffer goes back to
// the pool only when its response has closed. Here a client that does not read a large page (~14 MB,
// more than the sockets hold, so the server's write of it waits) must still get every byte of its
// own answer after other large answers were written and sent meanwhile; a client that goes away
// while its answer waits leaves the server answering the next ones. (Each answer's values against
// the JavaScript path: test/engine/fetch-json.test.ts.)

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';

let h: Harness;
let api: Client;
let token: string;
before(async () => {
  h = await startHarness();
  api = await clientOf(h);
  token = (await h.login()).token;
});
after(() => h.close());

const PRODUCTS = 120;
const ATTRIBUTES = 30;
/** Each attribute 3,900 characters: a page of PRODUCTS rows is ~14 MB. */
const attribute = (sku: string, i: number) => `${sku}/${i}:`.padEnd(3900, sku.charAt(4));
const sku = (group: string, n: number) => `BIG-${group}-${String(n).padStart(4, '0')}`;

async function addGroup(group: string): Promise<void> {
  for (let from = 0; from < PRODUCTS; from += 30) {
    const items = Array.from({ length: 30 }, (_, k) => {
      const s = sku(group, from + k);
      const data: Record<string, string> = { sku: s, label: s };
      for (let i = 1; i <= ATTRIBUTES; i++) data[`attribute${i}`] = attribute(s, i);
      return { data };
    });
    const r = await api('/add/P', items);
    assert.equal(r.status, 200, r.text.slice(0, 500));
  }
}

const pageBody = (group: string) => ({
  data: { sku: `BIG-${group}-` },
  textMatchStyle: 'startsWith',
  startRow: 0,
  endRow: PRODUCTS,
});

/** Every row of a group's page holds its own values. */
function assertGroupPage(group: string, response: any): void {
  assert.equal(response.status, 0);
  assert.equal(response.totalRows, PRODUCTS);
  assert.equal(response.data.length, PRODUCTS);
  for (const [n, row] of response.data.entries()) {
    assert.equal(row.sku, sku(group, n));
    for (let i = 1; i <= ATTRIBUTES; i++) assert.equal(row[`attribute${i}`], attribute(row.sku, i));
  }
}

/** A fetch of a group's page sent on a raw socket that reads nothing until told to. */
async function slowFetch(group: string): Promise<{ socket: Socket; read: () => Promise<string> }> {
  const port = Number(new URL(h.url).port);
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const body = JSON.stringify(pageBody(group));
  const first = once(socket, 'data');
  socket.write(
    `POST ${h.config.basePath}/${h.partition}/fetch/P HTTP/1.1\r\nhost: x\r\n` +
      `content-type: application/json\r\nx-ratecard-jwt: ${token}\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  const [chunk] = (await first) as [Buffer];
  socket.pause(); // the answer has begun; the rest waits in the kernel and in the server's write
  const chunks = [chunk];
  return {
    socket,
    async read() {
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.resume();
      for (;;) {
        const all = Buffer.concat(chunks);
        const end = all.indexOf('\r\n\r\n');
        const length = /content-length: (\d+)/i.exec(all.subarray(0, end).toString('latin1'));
        assert.ok(end > 0 && length, 'an answer with a content length');
        if (all.length >= end + 4 + Number(length[1])) {
          assert.match(all.subarray(0, 12).toString('latin1'), /^HTTP\/1\.1 200/);
          return all.subarray(end + 4, end + 4 + Number(length[1])).toString('utf8');
        }
        await once(socket, 'data');
      }
    },
  };
}

test('an answer a client has not read yet keeps its bytes while other answers are written', async () => {
  await addGroup('A');
  await addGroup('B');
  const slow = await slowFetch('A');
  // Other large answers meanwhile, each written into a buffer of the pool and sent.
  for (let k = 0; k < 3; k++) {
    const r = await api('/fetch/P', pageBody('B'));
    assert.equal(r.status, 200);
    assertGroupPage('B', r.body.response);
  }
  const text = await slow.read();
  assertGroupPage('A', JSON.parse(text).response);
  slow.socket.destroy();
});

test('a client that goes away before reading its answer leaves the next answers whole', async () => {
  const gone = await slowFetch('A');
  gone.socket.destroy();
  await once(gone.socket, 'close');
  const slow = await slowFetch('B');
  const [a, b] = await Promise.all([api('/fetch/P', pageBody('A')), api('/fetch/P', pageBody('A'))]);
  assertGroupPage('A', a.body.response);
  assertGroupPage('A', b.body.response);
  assertGroupPage('B', JSON.parse(await slow.read()).response);
  slow.socket.destroy();
  // One record by id goes the same way.
  const one = await api(`/fetch/P/${a.body.response.data[0].id}`);
  assert.equal(one.body.response.data[0].attribute30, attribute(sku('A', 0), 30));
});
