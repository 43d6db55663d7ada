// Operator CLI (`npm run cli -- ...`): partitions and passwords, on the database that the same
// environment variables select (embedded DATA_DIR or DATABASE_URL). Embedded mode takes the same
// lock as the server, so it refuses to run while a server holds the directory.

import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.ts';
import { createDb } from './db/db.ts';
import { LockError } from './db/lock.ts';
import { migrate } from './db/migrate.ts';
import { LOGIN_NAME } from './engine/registry.ts';
import { passwordProblem } from './modules/accounts/password-policy.ts';
import {
  PartitionError,
  createPartition,
  listPartitions,
  setUserPassword,
} from './modules/admin/partitions.ts';

const USAGE = `Ratecard operator CLI, on the database that DATABASE_URL (or DATA_DIR) selects.

usage: npm run cli -- <command> [options]

commands:
  partition create NAME --admin USER (--password PW | --password-stdin)
                        create a partition and its first user (role ADMIN); an existing user's
                        password is left unchanged
  partition list        list the partitions with their number of users
  user set-password PARTITION USER (PW | --password-stdin)
                        set a user's password and revoke the user's sessions

options:
  --password-stdin      read the password from the first line of standard input (keeps it out of
                        the shell history and the process list), e.g.
                        printf '%s\\n' "$PW" | npm run cli -- user set-password demo admin --password-stdin
  -h, --help            show this help`;

class UsageError extends Error {}

/** The first line of standard input, without its line ending. */
async function readPasswordLine(stdin: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stdin) {
    text += String(chunk);
    if (text.includes('\n')) break;
  }
  const line = text.split(/\r?\n/)[0] ?? '';
  if (line === '') throw new UsageError('--password-stdin: standard input holds no password');
  return line;
}

/**
 * The password of a command: from standard input, or from the command line — exactly one of them;
 * held to the password policy of the API (long enough, not containing the login name).
 */
async function passwordOf(
  given: string | undefined,
  fromStdin: boolean | undefined,
  login: string,
): Promise<string> {
  if (fromStdin === true && given !== undefined)
    throw new UsageError('give the password on the command line or with --password-stdin, not both');
  const password = fromStdin === true ? await readPasswordLine(process.stdin) : given;
  if (password === undefined) throw new UsageError(USAGE);
  const problem = passwordProblem(password, login);
  if (problem !== undefined) throw new UsageError(`the password ${problem}`);
  return password;
}

/** A login name the API would take: it travels in Basic credentials as `<partition>/<login>:<pw>`. */
function checkLoginName(login: string): void {
  if (!LOGIN_NAME.test(login))
    throw new UsageError(
      `invalid login name ${JSON.stringify(login)}: it must not be empty nor contain spaces, ":" or "/"`,
    );
}

async function run(argv: string[]): Promise<string> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      admin: { type: 'string' },
      password: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [area, verb, ...rest] = positionals;
  if (values.help === true || area === 'help' || area === undefined) return USAGE;
  const command = `${area} ${verb ?? ''}`;
  // The positionals each command takes after its two words: any more is a mistyped command line.
  const takes: Record<string, number> = {
    'partition create': 1,
    'partition list': 0,
    'user set-password': 3,
  };
  const most = takes[command];
  if (most === undefined || rest.length > most) throw new UsageError(USAGE);
  const fromStdin = values['password-stdin'];
  // Checked before the database is opened, so a usage mistake costs nothing.
  let password: string | undefined;
  if (command === 'partition create') {
    if (rest[0] === undefined || values.admin === undefined) throw new UsageError(USAGE);
    checkLoginName(values.admin);
    password = await passwordOf(values.password, fromStdin, values.admin);
  } else if (command === 'user set-password') {
    if (rest[0] === undefined || rest[1] === undefined) throw new UsageError(USAGE);
    password = await passwordOf(rest[2], fromStdin, rest[1]);
  }

  const config = loadConfig();
  const db = await createDb(config);
  try {
    await migrate(db);
    if (command === 'partition create') {
      const name = rest[0]!;
      const r = await createPartition(
        db,
        name,
        { login: values.admin!, password: password! },
        config.scryptCost,
      );
      return [
        r.partitionCreated ? `partition ${name} created` : `partition ${name} exists`,
        r.adminCreated
          ? `user ${values.admin} created with role ADMIN`
          : `user ${values.admin} exists (password unchanged)`,
      ].join('\n');
    }
    if (command === 'partition list') {
      const rows = await listPartitions(db);
      return (
        rows.map((p) => `${p.name}\tusers=${p.users}\tcreated=${p.createdAt.toISOString()}`).join('\n') ||
        '(none)'
      );
    }
    const [partition, login] = rest as [string, string];
    await setUserPassword(db, partition, login, password!, config.scryptCost);
    return `password of ${login} in ${partition} changed; the user's existing sessions are revoked`;
  } finally {
    await db.close();
  }
}

try {
  process.stdout.write(`${await run(process.argv.slice(2))}\n`);
} catch (e) {
  if (
    e instanceof UsageError ||
    e instanceof ConfigError ||
    e instanceof LockError ||
    e instanceof PartitionError
  ) {
    process.stderr.write(`ratecard: ${e.message}\n`);
    process.exitCode = 2;
  } else if (e instanceof TypeError && 'code' in e && String(e.code).startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`ratecard: ${e.message}\n\n${USAGE}\n`);
    process.exitCode = 2;
  } else {
    throw e;
  }
}
