// inSavepoint (src/db/savepoint.ts) on both databases: what `fn` writes is kept when it resolves,
// undone when it throws (the error thrown again, the transaction going on and committing what came
// before), and undone in either case as a trial run (`keep` false). Nested savepoints of one name.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { inSavepoint } from '../../src/db/savepoint.ts';

let h: Harness;
let table: string;
before(async () => {
  h = await startHarness();
  table = uniqueName('sp');
  await h.db.query(`CREATE TABLE ${table} (v text PRIMARY KEY)`);
});
after(async () => {
  await h.db.query(`DROP TABLE ${table}`);
  await h.close();
});

const values = async () =>
  (await h.db.query<{ v: string }>(`SELECT v FROM ${table} ORDER BY v`)).rows.map((r) => r.v);

test('kept when fn resolves, undone when it throws, undone as a trial run', async () => {
  const answers = await h.db.transaction(async (tx) => {
    const put = (v: string) => tx.query(`INSERT INTO ${table} (v) VALUES ($1)`, [v]);
    await put('a');
    const kept = await inSavepoint(tx, 'sp_test', async () => {
      await put('b');
      return 'kept';
    });
    const boom = new Error('boom');
    await assert.rejects(
      inSavepoint(tx, 'sp_test', async () => {
        await put('c');
        throw boom;
      }),
      (e) => e === boom,
    );
    // A database error inside: the transaction is usable again after it.
    await assert.rejects(
      inSavepoint(tx, 'sp_test', () => put('a')),
      /duplicate key|unique/,
    );
    const trial = await inSavepoint(
      tx,
      'sp_test',
      async () => {
        await put('d');
        return (await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
      },
      false,
    );
    // The same name nested: the inner one is undone, the outer one kept.
    await inSavepoint(tx, 'sp_test', async () => {
      await put('e');
      await assert.rejects(
        inSavepoint(tx, 'sp_test', async () => {
          await put('f');
          throw new Error('inner');
        }),
        /inner/,
      );
    });
    await put('g');
    return { kept, trial };
  });
  assert.deepEqual(answers, { kept: 'kept', trial: 3 });
  assert.deepEqual(await values(), ['a', 'b', 'e', 'g']);
});

test('a name that is not a plain identifier is refused before any statement', async () => {
  await h.db.transaction(async (tx) => {
    await assert.rejects(
      inSavepoint(tx, 'x; DROP TABLE y', () => Promise.resolve(1)),
      /bad name/,
    );
  });
});
