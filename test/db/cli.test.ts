// The operator CLI as an operator runs it (a child process on an embedded database directory):
// `--help` prints the commands without touching a database, and passwords can come from standard
// input (`--password-stdin`) instead of the command line, checked like command-line ones.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../helpers/process.ts';
import { createDb } from '../../src/db/db.ts';
import { loadConfig } from '../../src/config.ts';
import { verifyPassword } from '../../src/auth/password.ts';

const dir = mkdtempSync(join(tmpdir(), 'ratecard-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));
// Embedded, whatever DATABASE_URL the suite runs with: the CLI's own logic is what is tested here.
const env = { DATA_DIR: dir, DATABASE_URL: '', BOOTSTRAP_PARTITIONS: '' };

async function passwordMatches(partition: string, login: string, password: string): Promise<boolean> {
  const db = await createDb(loadConfig({ DATA_DIR: dir, DATABASE_URL: '' }));
  try {
    const r = await db.query<{ h: string }>(
      `SELECT u.password_hash AS h FROM users u JOIN partitions p ON p.id = u.partition_id
        WHERE p.name = $1 AND u.login_name = $2`,
      [partition, login],
    );
    return verifyPassword(password, r.rows[0]!.h);
  } finally {
    await db.close();
  }
}

describe('operator CLI', () => {
  test('--help, -h and no command print the commands and exit 0, without a database', async () => {
    for (const args of [['--help'], ['-h'], [], ['help']]) {
      const r = await runCli(args, { DATA_DIR: join(dir, 'never-created') });
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.out}`);
      assert.match(r.out, /partition create NAME --admin USER/);
      assert.match(r.out, /user set-password PARTITION USER/);
      assert.match(r.out, /--password-stdin/);
    }
    const bad = await runCli(['partition', 'explode'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.out, /usage: npm run cli/);
    // An argument more than the command takes is a mistyped command line: refused, nothing done.
    for (const args of [
      ['partition', 'list', 'extra'],
      ['partition', 'create', 'p1', 'p2', '--admin', 'root', '--password', 'A-good-pass-1'],
      ['user', 'set-password', 'demo', 'jane', 'A-good-pass-1', 'extra'],
    ]) {
      const r = await runCli(args, { DATA_DIR: join(dir, 'never-created') });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.out}`);
      assert.match(r.out, /usage: npm run cli/);
    }
  });

  test('passwords from standard input: create a partition, then change the password', async () => {
    const created = await runCli(
      ['partition', 'create', 'acme', '--admin', 'boss', '--password-stdin'],
      env,
      'stdin-password-1\n',
    );
    assert.equal(created.code, 0, created.out);
    assert.match(created.out, /partition acme created/);
    assert.equal(await passwordMatches('acme', 'boss', 'stdin-password-1'), true);

    const changed = await runCli(
      ['user', 'set-password', 'acme', 'boss', '--password-stdin'],
      env,
      'stdin-password-2\r\nignored second line\n',
    );
    assert.equal(changed.code, 0, changed.out);
    assert.equal(await passwordMatches('acme', 'boss', 'stdin-password-2'), true);

    // Checked like a command-line password; never both; an empty input is refused.
    const short = await runCli(['user', 'set-password', 'acme', 'boss', '--password-stdin'], env, 'short\n');
    assert.equal(short.code, 2);
    assert.match(short.out, /at least 8 characters/);
    const both = await runCli(
      ['user', 'set-password', 'acme', 'boss', 'cmdline-password', '--password-stdin'],
      env,
      'stdin-password-3\n',
    );
    assert.equal(both.code, 2);
    assert.match(both.out, /not both/);
    const empty = await runCli(['user', 'set-password', 'acme', 'boss', '--password-stdin'], env, '');
    assert.equal(empty.code, 2);
    assert.match(empty.out, /holds no password/);
    assert.equal(await passwordMatches('acme', 'boss', 'stdin-password-2'), true);
  });

  test("the API's password policy and login-name rules hold; a CLI password change is in the history", async () => {
    const refusals: Array<[string[], RegExp]> = [
      [['partition', 'create', 'pwname', '--admin', 'bossman', '--password', 'xxBOSSMANxx'], /login name/],
      [
        ['partition', 'create', 'weird', '--admin', 'a:b', '--password', 'a-long-password'],
        /invalid login name/,
      ],
      [
        ['partition', 'create', 'weird', '--admin', 'a b', '--password', 'a-long-password'],
        /invalid login name/,
      ],
      [['user', 'set-password', 'acme', 'boss', 'bossXXXXXX'], /must not contain the login name/],
      [['user', 'set-password', 'acme', 'boss', 'short'], /at least 8 characters/],
    ];
    for (const [args, message] of refusals) {
      const r = await runCli(args, env);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.out}`);
      assert.match(r.out, message);
    }
    const listed = await runCli(['partition', 'list'], env);
    assert.doesNotMatch(listed.out, /pwname|weird/);

    const changed = await runCli(['user', 'set-password', 'acme', 'boss', 'third-password-3'], env);
    assert.equal(changed.code, 0, changed.out);
    const db = await createDb(loadConfig({ DATA_DIR: dir, DATABASE_URL: '' }));
    try {
      const r = await db.query<{ changes: unknown; version: number; current: number; operation: string }>(
        `SELECT h.changes, h.record_version AS version, u.version AS current, h.operation
           FROM record_history h JOIN users u ON u.partition_id = h.partition_id AND u.id = h.record_id
           JOIN partitions p ON p.id = u.partition_id
          WHERE p.name = 'acme' AND u.login_name = 'boss' AND h.type_code = 'U' ORDER BY h.id DESC LIMIT 1`,
      );
      const last = r.rows[0]!;
      assert.deepEqual(last.changes, { password: { old: null, new: '(changed)' } });
      assert.equal(last.version, last.current);
      assert.equal(last.operation, 'cli user set-password');
    } finally {
      await db.close();
    }
  });
});
