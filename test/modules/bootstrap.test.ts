// Start-up partitions (BOOTSTRAP_PARTITIONS, BOOTSTRAP_ADMIN): created when missing, with their
// first admin; an existing partition is left as its admins keep it — a deleted bootstrap admin is
// not re-created at the next start, nor is a newly configured admin name added to it.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from '../../src/db/db.ts';
import { bootstrap } from '../../src/modules/admin/partitions.ts';
import { uniqueName } from '../helpers/app.ts';
import { migratedDb } from '../helpers/database.ts';

let db: Db;
before(async () => {
  db = await migratedDb();
});
after(() => db.close());

const users = async (partition: string) =>
  (
    await db.query<{ login: string }>(
      `SELECT u.login_name AS login FROM users u JOIN partitions p ON p.id = u.partition_id
        WHERE p.name = $1 ORDER BY 1`,
      [partition],
    )
  ).rows.map((r) => r.login);

test('an existing partition keeps its users across starts', async () => {
  const name = uniqueName('boot');
  const start = (admin: string) =>
    bootstrap(db, {
      bootstrapPartitions: [name],
      bootstrapAdmin: admin,
      bootstrapPassword: 'Passw0rd-123456',
      scryptCost: 1024,
    });
  const [first] = await start('admin');
  assert.deepEqual([first!.partitionCreated, first!.adminCreated], [true, true]);
  assert.deepEqual(await users(name), ['admin']);
  await db.query(
    `DELETE FROM users WHERE partition_id = (SELECT id FROM partitions WHERE name = $1) AND login_name = 'admin'`,
    [name],
  );
  const [again] = await start('admin');
  assert.deepEqual([again!.partitionCreated, again!.adminCreated], [false, false]);
  assert.deepEqual(await users(name), [], 'the deleted admin is not re-created');
  const [renamed] = await start('boss');
  assert.equal(renamed!.adminCreated, false);
  assert.deepEqual(await users(name), [], 'nor a newly configured admin added');
  await db.query('DELETE FROM partitions WHERE name = $1', [name]);
});
