// Migrations: applied once, recorded, idempotent on an existing database, and applied exactly once
// when several nodes start together (PostgreSQL: two pools racing on a fresh database).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createDb } from '../../src/db/db.ts';
import { listMigrations, migrate } from '../../src/db/migrate.ts';
import { uniqueName } from '../helpers/app.ts';

test('migrations are numbered, unique and applied once on an existing database', async () => {
  const all = listMigrations();
  assert.ok(all.length >= 2);
  assert.equal(new Set(all.map((m) => m.version)).size, all.length);
  const db = await createDb({ databaseUrl: undefined, dataDir: ':memory:', dbPoolSize: 1 });
  try {
    assert.deepEqual(
      await migrate(db),
      all.map((m) => m.name),
    );
    assert.deepEqual(await migrate(db), []);
    const rows = await db.query<{ version: number }>(
      'SELECT version FROM schema_migrations ORDER BY version',
    );
    assert.deepEqual(
      rows.rows.map((r) => r.version),
      all.map((m) => m.version),
    );
  } finally {
    await db.close();
  }
});

test('a failing migration leaves nothing behind', async () => {
  const db = await createDb({ databaseUrl: undefined, dataDir: ':memory:', dbPoolSize: 1 });
  try {
    const broken = [
      { version: 1, name: '001_ok.sql', sql: 'CREATE TABLE a (x int);' },
      { version: 2, name: '002_bad.sql', sql: 'CREATE TABLE b (x int); SELECT no_such_function();' },
    ];
    await assert.rejects(migrate(db, broken));
    const t = await db.query(`SELECT 1 FROM information_schema.tables WHERE table_name IN ('a', 'b')`);
    assert.equal(t.rows.length, 0);
  } finally {
    await db.close();
  }
});

test(
  'nodes starting together apply each migration once',
  { skip: process.env.DATABASE_URL === undefined },
  async () => {
    const base = new URL(process.env.DATABASE_URL!);
    const name = uniqueName('ratecard_mig');
    const admin = new pg.Client({ connectionString: base.toString() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    try {
      const url = new URL(base.toString());
      url.pathname = `/${name}`;
      const nodes = await Promise.all(
        [1, 2, 3].map(() => createDb({ databaseUrl: url.toString(), dataDir: '', dbPoolSize: 2 })),
      );
      try {
        const applied = await Promise.all(nodes.map((db) => migrate(db)));
        assert.deepEqual(
          applied.flat().sort(),
          listMigrations()
            .map((m) => m.name)
            .sort(),
          'each applied by exactly one node',
        );
      } finally {
        await Promise.all(nodes.map((db) => db.close()));
      }
    } finally {
      await admin.query(`DROP DATABASE ${name}`);
      await admin.end();
    }
  },
);

test('052: a label stored before the covering prefix index that does not fit it keeps the plain index', async () => {
  const all = listMigrations();
  const db = await createDb({ databaseUrl: undefined, dataDir: ':memory:', dbPoolSize: 1 });
  try {
    await migrate(
      db,
      all.filter((m) => m.version < 52),
    );
    // 700 random CJK characters (2,100 bytes, not compressible): one index entry held it, two do not.
    const label = Array.from({ length: 700 }, (_, i) =>
      String.fromCodePoint(0x4e00 + ((i * 7919) % 20000)),
    ).join('');
    await db.query(`INSERT INTO partitions (name, jwt_secret) VALUES ('mig052', '\\x00')`);
    await db.query(
      `INSERT INTO products (partition_id, sku, label) SELECT id, 'S1', $1 FROM partitions WHERE name = 'mig052'`,
      [label],
    );
    assert.deepEqual(
      await migrate(db),
      all.filter((m) => m.version >= 52).map((m) => m.name),
    );
    const defs = new Map(
      (
        await db.query<{ indexname: string; indexdef: string }>(
          `SELECT indexname, indexdef FROM pg_indexes WHERE indexname IN ('rc_products_label_lower', 'rc_products_sku_lower')`,
        )
      ).rows.map((r) => [r.indexname, r.indexdef]),
    );
    assert.doesNotMatch(defs.get('rc_products_label_lower')!, /INCLUDE/);
    assert.match(defs.get('rc_products_sku_lower')!, /INCLUDE \(sku, id\)/);
  } finally {
    await db.close();
  }
});
