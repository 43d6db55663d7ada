// The embedded adapter's turns (src/db/pglite.ts): statements one at a time in the order asked for,
// a failed one not holding up the rest, and the event loop's turn between statements once they have
// run back to back for TURN_MS (so the server reads and accepts what has arrived meanwhile).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TURN_MS, turns } from '../../src/db/pglite.ts';

const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // a statement running on this thread
  }
};

test('in the order asked for, one at a time; a failure does not stop the queue', async () => {
  const inTurn = turns();
  const seen: string[] = [];
  let running = 0;
  const task = (name: string, fail = false) =>
    inTurn(async () => {
      assert.equal(running++, 0, 'one at a time');
      seen.push(`${name} start`);
      await new Promise((r) => setTimeout(r, 2));
      seen.push(`${name} end`);
      running--;
      if (fail) throw new Error(name);
      return name;
    });
  const results = await Promise.allSettled([task('a'), task('b', true), task('c')]);
  assert.deepEqual(seen, ['a start', 'a end', 'b start', 'b end', 'c start', 'c end']);
  assert.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
});

/**
 * Two statements in a row: the first runs `ms` on this thread, while an I/O callback arrives; the
 * order in which the first, the callback and the second ran.
 */
async function twoStatements(ms: number): Promise<string[]> {
  const inTurn = turns();
  await new Promise((r) => setImmediate(r)); // a fresh turn: the clock starts from here
  const seen: string[] = [];
  const a = inTurn(() => {
    setImmediate(() => seen.push('arrived'));
    busy(ms);
    seen.push('a');
    return Promise.resolve();
  });
  const b = inTurn(() => {
    seen.push('b');
    return Promise.resolve();
  });
  await Promise.all([a, b]);
  await new Promise((r) => setImmediate(r));
  return seen;
}

test('after TURN_MS of statements back to back, what arrived meanwhile runs before the next one', async () => {
  assert.deepEqual(await twoStatements(TURN_MS + 5), ['a', 'arrived', 'b']);
});

test('short statements run back to back, without waiting for a turn each', async () => {
  assert.deepEqual(await twoStatements(0), ['a', 'b', 'arrived']);
});

test("a long transaction's statements give the event loop its turns too", async () => {
  const { createEmbeddedDb } = await import('../../src/db/pglite.ts');
  const db = await createEmbeddedDb(':memory:');
  try {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    await db.transaction(async (tx) => {
      const end = performance.now() + 20 * TURN_MS;
      while (performance.now() < end) await tx.query('SELECT 1');
    });
    clearInterval(timer);
    // Without them, the statements followed each other as promise continuations: no timer ran.
    assert.ok(ticks >= 5, `${ticks} timer ticks during the transaction`);
  } finally {
    await db.close();
  }
});
