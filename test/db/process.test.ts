// What only separate processes show: the embedded lock file, restarts on an existing database,
// and kill -9 in the middle of writes (no acknowledged commit lost; the embedded database reopens).

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { createDb, type Db } from '../../src/db/db.ts';
import { basic, runCli, startServer, stopServer, type Server } from '../helpers/process.ts';
import { uniqueName } from '../helpers/app.ts';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'ratecard-test-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function login(s: Server, user: string, password: string, partition = 'p1'): Promise<number> {
  const r = await fetch(`${s.url}/service/${partition}/login/extended`, {
    method: 'POST',
    headers: { authorization: basic(partition, user, password) },
  });
  await r.arrayBuffer();
  return r.status;
}

describe('embedded database in a data directory', () => {
  test('a second process is refused by the lock; a clean stop releases it; a restart keeps the data', async () => {
    const dir = tempDir();
    const env = { DATA_DIR: dir };
    const first = await startServer(env);
    try {
      assert.ok(existsSync(join(dir, 'ratecard.lock')));
      const cli = await runCli(['partition', 'list'], env);
      assert.equal(cli.code, 2);
      assert.match(cli.out, /in use by process \d+/);
      const second = spawnSync(process.execPath, ['src/main.ts'], {
        env: { PATH: process.env.PATH, DATA_DIR: dir, PORT: '0' },
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(second.status, 3, second.stderr);
      assert.match(second.stderr, /in use by process/);
      assert.equal(await login(first, 'admin', 'admin-password-1'), 200, 'the first server still works');
    } finally {
      assert.equal(await stopServer(first), 0, first.output());
    }
    assert.ok(!existsSync(join(dir, 'ratecard.lock')), 'lock released on SIGTERM');

    // Change the password offline, then restart with the same BOOTSTRAP_PASSWORD: never overwritten.
    const changed = await runCli(['user', 'set-password', 'p1', 'admin', 'changed-password'], env);
    assert.equal(changed.code, 0, changed.out);
    const created = await runCli(
      ['partition', 'create', 'acme', '--admin', 'boss', '--password', 'a-long-password'],
      env,
    );
    assert.match(created.out, /partition acme created/);
    const listed = await runCli(['partition', 'list'], env);
    assert.match(listed.out, /^acme\tusers=1/m);
    assert.match(listed.out, /^p1\tusers=1/m);

    const again = await startServer(env);
    try {
      assert.doesNotMatch(again.output(), /migrations applied/, 'nothing left to migrate');
      assert.equal(await login(again, 'admin', 'admin-password-1'), 401);
      assert.equal(await login(again, 'admin', 'changed-password'), 200);
      assert.equal(await login(again, 'boss', 'a-long-password', 'acme'), 200);
    } finally {
      await stopServer(again);
    }
  });

  test('a stale lock left by a dead process is taken over', async () => {
    const dir = tempDir();
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    });
    writeFileSync(join(dir, 'ratecard.lock'), `${dead.stdout}\n`);
    const s = await startServer({ DATA_DIR: dir });
    assert.equal(await stopServer(s), 0);
  });

  test('a bad setting stops start-up with a message naming it', () => {
    const r = spawnSync(process.execPath, ['src/main.ts'], {
      env: { PATH: process.env.PATH, PORT: 'eighty' },
      encoding: 'utf8',
    });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /PORT must be a whole number/);
  });
});

/** Fires failing logins (each one a committed insert) until killed; answers how many were acknowledged. */
async function writeUntilKilled(s: Server, key: string, killAfterMs: number): Promise<number> {
  let acked = 0;
  let stop = false;
  const worker = async (): Promise<void> => {
    while (!stop) {
      try {
        if ((await failedLogin(s, key)) === -5) acked++;
      } catch {
        return; // connection refused/reset: the server is gone
      }
    }
  };
  const workers = Array.from({ length: 4 }, worker);
  await new Promise((r) => setTimeout(r, killAfterMs));
  s.child.kill('SIGKILL');
  stop = true;
  await Promise.all(workers);
  return acked;
}
/** One failed login; answers the envelope status (-5 = failure recorded and committed). */
async function failedLogin(s: Server, user: string): Promise<number> {
  const r = await fetch(`${s.url}/service/p1/login/extended`, {
    method: 'POST',
    headers: { authorization: basic('p1', user, 'wrong-password') },
  });
  const body = (await r.json()) as { response: { status: number } };
  return body.response.status;
}

async function failuresOf(db: Awaited<ReturnType<typeof createDb>>, login: string): Promise<number> {
  const r = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM login_failures WHERE login_key = $1',
    [login],
  );
  return r.rows[0]!.n;
}

describe('start-up', () => {
  test('an attribute index an older version built from another definition is built again', async () => {
    const dir = tempDir();
    await stopServer(await startServer({ DATA_DIR: dir }));
    const definition = async (db: Db) =>
      (await db.query<{ d: string }>(`SELECT pg_get_indexdef('rcx_products_attribute2_num'::regclass) AS d`))
        .rows[0]!.d;
    const db = await createDb({ databaseUrl: undefined, dataDir: dir, dbPoolSize: 1 });
    try {
      await db.query(
        `INSERT INTO attribute_meta (partition_id, owner_type, field_name, field_type, indexed)
         SELECT id, 'P', 'attribute2', 'NUMERIC', true FROM partitions WHERE name = 'p1'`,
      );
      // What versions before the INCLUDE built.
      await db.query(
        'CREATE INDEX rcx_products_attribute2_num ON products (partition_id, rc_try_numeric(attribute2))',
      );
      assert.doesNotMatch(await definition(db), /INCLUDE/);
    } finally {
      await db.close();
    }
    const s = await startServer({ DATA_DIR: dir });
    try {
      const deadline = Date.now() + 30_000;
      while (!/attribute indexes synced/.test(s.output()) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.match(s.output(), /attribute indexes synced/);
    } finally {
      assert.equal(await stopServer(s), 0, s.output());
    }
    const reopened = await createDb({ databaseUrl: undefined, dataDir: dir, dbPoolSize: 1 });
    try {
      assert.match(
        await definition(reopened),
        /rc_try_numeric\(attribute2\) NULLS FIRST\) INCLUDE \(attribute2, id\)/,
      );
    } finally {
      await reopened.close();
    }
  });
});

describe('kill -9 during writes', () => {
  const env = { LOGIN_MAX_FAILURES: '10000' };

  test('embedded: the database reopens and keeps the acknowledged writes', async () => {
    const dir = tempDir();
    const key = uniqueName('crash');
    const s = await startServer({ ...env, DATA_DIR: dir });
    const acked = await writeUntilKilled(s, key, 1500);
    assert.ok(acked > 10, `only ${acked} writes acknowledged`);
    assert.ok(existsSync(join(dir, 'ratecard.lock')), 'kill -9 leaves the lock behind');
    const again = await startServer({ ...env, DATA_DIR: dir });
    try {
      assert.equal(await login(again, 'admin', 'admin-password-1'), 200);
    } finally {
      assert.equal(await stopServer(again), 0);
    }
    const db = await createDb({ databaseUrl: undefined, dataDir: dir, dbPoolSize: 1 });
    try {
      const kept = await failuresOf(db, key);
      process.stdout.write(`# embedded kill -9: ${acked} acknowledged, ${kept} found after restart\n`);
      assert.ok(kept >= acked, `${acked} acknowledged but ${kept} kept`);
    } finally {
      await db.close();
    }
  });

  test(
    'PostgreSQL: no acknowledged commit is lost',
    { skip: process.env.DATABASE_URL === undefined },
    async () => {
      const url = process.env.DATABASE_URL!;
      const key = uniqueName('crash');
      const s = await startServer({ ...env, DATABASE_URL: url });
      const acked = await writeUntilKilled(s, key, 1500);
      assert.ok(acked > 10, `only ${acked} writes acknowledged`);
      const db = await createDb({ databaseUrl: url, dataDir: '', dbPoolSize: 1 });
      try {
        const kept = await failuresOf(db, key);
        process.stdout.write(`# postgres kill -9: ${acked} acknowledged, ${kept} found after the kill\n`);
        assert.ok(kept >= acked, `${acked} acknowledged but ${kept} kept`);
        await db.query('DELETE FROM login_failures WHERE login_key = $1', [key]);
      } finally {
        await db.close();
      }
    },
  );
});
