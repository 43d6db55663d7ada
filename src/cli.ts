// Operator CLI (`npm run cli -- ...`): partitions and passwords, on the database that the same
// environment variables select (embedded DATA_DIR or DATABASE_URL). Embedded mode takes the same
// lock as the server, so it refuses to run while a server holds the directory.

import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.ts';
import { createDb } from './db/db.ts';
import { LockError } from './db/lock.ts';
import { migrate } from './db/migrate.ts';
import {
  PartitionError,
  createPartition,
  listPartitions,
  setUserPassword,
} from './modules/admin/partitions.ts';

const USAGE = `usage:
  npm run cli -- partition create NAME --admin USER --password PW
  npm run cli -- partition list
  npm run cli -- user set-password PARTITION USER PW`;

class UsageError extends Error {}

async function run(argv: string[]): Promise<string> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { admin: { type: 'string' }, password: { type: 'string' } },
  });
  const [area, verb, ...rest] = positionals;
  const command = `${area ?? ''} ${verb ?? ''}`;
  if (!['partition create', 'partition list', 'user set-password'].includes(command))
    throw new UsageError(USAGE);

  const config = loadConfig();
  const db = await createDb(config);
  try {
    await migrate(db);
    if (command === 'partition create') {
      const [name] = rest;
      if (name === undefined || values.admin === undefined || values.password === undefined)
        throw new UsageError(USAGE);
      if (values.password.length < 8) throw new UsageError('the password must have at least 8 characters');
      const r = await createPartition(
        db,
        name,
        { login: values.admin, password: values.password },
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
    const [partition, login, password] = rest;
    if (partition === undefined || login === undefined || password === undefined) throw new UsageError(USAGE);
    if (password.length < 8) throw new UsageError('the password must have at least 8 characters');
    await setUserPassword(db, partition, login, password, config.scryptCost);
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
    process.stderr.write(`ratecard: ${e.message}\n${USAGE}\n`);
    process.exitCode = 2;
  } else {
    throw e;
  }
}
