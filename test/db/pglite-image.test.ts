// The embedded database started from an image of another (the test harness's migrated cluster):
// what the image's cluster held is there, and the two databases are apart from then on.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEmbeddedDb } from '../../src/db/pglite.ts';

test('an in-memory PGlite started from an image holds what the imaged one held, and no more', async () => {
  const first = await createEmbeddedDb(':memory:');
  let second: Awaited<ReturnType<typeof createEmbeddedDb>> | undefined;
  try {
    await first.query('CREATE TABLE imaged (n integer PRIMARY KEY, t text)');
    await first.query(`INSERT INTO imaged VALUES (1, 'one'), (2, 'two')`);
    const image = await first.dumpImage();
    second = await createEmbeddedDb(':memory:', image);
    const rows = await second.query<{ n: number; t: string }>('SELECT n, t FROM imaged ORDER BY n');
    assert.deepEqual(rows.rows, [
      { n: 1, t: 'one' },
      { n: 2, t: 'two' },
    ]);
    // Each its own cluster from now on.
    await second.query(`INSERT INTO imaged VALUES (3, 'three')`);
    await first.query('DELETE FROM imaged WHERE n = 1');
    assert.deepEqual((await first.query('SELECT n FROM imaged ORDER BY n')).rows, [{ n: 2 }]);
    assert.deepEqual((await second.query('SELECT n FROM imaged ORDER BY n')).rows, [
      { n: 1 },
      { n: 2 },
      { n: 3 },
    ]);
  } finally {
    await second?.close();
    await first.close();
  }
});
