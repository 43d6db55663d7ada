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
