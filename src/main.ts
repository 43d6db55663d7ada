// Start-up: config → database → migrations → bootstrap → listen; and a clean stop on SIGTERM/SIGINT
// (drain in-flight requests, then checkpoint and close the database, releasing the embedded lock).

import './runtime-flags.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createDb, type Db } from './db/db.ts';
import { LockError } from './db/lock.ts';
import { migrate } from './db/migrate.ts';
import { syncOutdatedIndexes } from './engine/indexes.ts';
import { bootstrap } from './modules/admin/partitions.ts';
import { buildApp } from './app.ts';
import { buildJobRunner } from './modules/files/runner-setup.ts';

const SHUTDOWN_DEADLINE_MS = 30_000;

/** Writes a generated bootstrap password where the operator can read it (embedded mode only). */
function keepGeneratedPassword(
  config: Config,
  partition: string,
  login: string,
  password: string,
): string | null {
  if (config.databaseUrl !== undefined || config.dataDir === ':memory:') return null;
  const file = join(config.dataDir, `initial-password-${partition}.txt`);
  writeFileSync(file, `${partition}/${login}:${password}\n`, { mode: 0o600 });
  return file;
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`ratecard: configuration error: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }

  let db: Db;
  try {
    db = await createDb(config);
  } catch (e) {
    if (e instanceof LockError) {
      process.stderr.write(`ratecard: ${e.message}\n`);
      process.exit(3);
    }
    throw e;
  }
  const app = await buildApp({ config, db });
  const log = app.log;
  const applied = await migrate(db);
  if (applied.length > 0) log.info({ applied }, 'migrations applied');

  for (const r of await bootstrap(db, config)) {
    if (r.partitionCreated) log.info({ partition: r.partition }, 'bootstrap: partition created');
    if (r.adminCreated && r.generatedPassword !== undefined) {
      const file = keepGeneratedPassword(config, r.partition, config.bootstrapAdmin, r.generatedPassword);
      log.warn(
        { partition: r.partition, user: config.bootstrapAdmin, password: r.generatedPassword, file },
        'bootstrap: admin created with a generated password (set BOOTSTRAP_PASSWORD to choose one)',
      );
    }
  }

  // Every process is also a worker: it claims jobs from the shared jobs table.
  const runner = buildJobRunner(db, config, { log });
  // Attribute indexes an older version built from another definition are built again, in the
  // background (the filters work meanwhile, through the old index or none).
  void syncOutdatedIndexes(db)
    .then((synced) => {
      for (const [table, result] of synced) log.info({ table, ...result }, 'attribute indexes synced');
    })
    .catch((err: unknown) => log.warn({ err }, 'attribute index sync at start-up failed'));

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: draining requests');
    const deadline = setTimeout(() => {
      log.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS);
    deadline.unref();
    try {
      await app.close();
      // Running jobs stop at their next check and are retried by another node (or after a restart).
      await runner.stop();
      await db.close();
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'error while stopping');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  const address = await app.listen({ port: config.port, host: config.host });
  runner.start();
  log.info(
    { db: db.kind, basePath: config.basePath, partitions: config.bootstrapPartitions },
    `Ratecard listening on ${address}`,
  );
}

await main();
