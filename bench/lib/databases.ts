// The two databases the bench runs on. Each gives the server's environment and opens the peer: the
// same driver (the project's `createDb`) without the API, holding a plain copy of the products table.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { createDb, type Db } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';

export type DbKind = 'embedded' | 'postgres';
export type Defer = (cleanup: () => Promise<void>) => void;

export interface Target {
  readonly kind: DbKind;
  /** Environment of the server: DATA_DIR or DATABASE_URL. */
  readonly serverEnv: Record<string, string>;
  /** How the peer relates to the server's database, for the report. */
  readonly peerNote: string;
  openPeer(): Promise<Db>;
}

/** The peers' tables (bench/lib/peers.ts): products' shape, no foreign keys, no triggers. */
export const PEER_TABLE = 'bench_peer_products';
export const PEER_LOAD_TABLE = 'bench_peer_load';
/** The server's pool size; the PostgreSQL peer uses the same. */
const POOL_SIZE = loadConfig({}).dbPoolSize;

async function withPeerTable(db: Db): Promise<Db> {
  await migrate(db); // creates `products` in the peer's PGlite; a no-op on the server's PostgreSQL
  return db;
}

async function embedded(defer: Defer): Promise<Target> {
  const dir = await mkdtemp(join(tmpdir(), 'ratecard-bench-'));
  defer(() => rm(dir, { recursive: true, force: true, maxRetries: 3 }));
  const [serverDir, peerDir] = [join(dir, 'server'), join(dir, 'peer')];
  return {
    kind: 'embedded',
    serverEnv: { DATA_DIR: serverDir },
    peerNote:
      'The server holds its PGlite data directory (one process only), so the peers run in a second, ' +
      'file-backed PGlite inside the bench process (same adapter, migrations and rows; on the ' +
      "bench's core). Not in-memory: in-memory PGlite measured 3–10× slower at COPY here, which would " +
      'overstate the load ratio.',
    openPeer: async () =>
      withPeerTable(await createDb({ databaseUrl: undefined, dataDir: peerDir, dbPoolSize: 1 })),
  };
}

function timeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    p,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: timed out`)), ms).unref()),
  ]);
}

/** A fresh database on `adminUrl`'s server, dropped by the deferred cleanup; a string when unreachable. */
async function postgres(adminUrl: string, defer: Defer): Promise<Target | string> {
  const admin = await createDb({ databaseUrl: adminUrl, dataDir: '', dbPoolSize: 1 });
  try {
    await timeout(admin.query('SELECT 1'), 5000, 'connect');
  } catch (e) {
    await admin.close().catch(() => {});
    return `PostgreSQL at ${adminUrl} is unreachable (${(e as Error).message})`;
  }
  const name = `ratecard_bench_${process.pid}_${Date.now()}`;
  await admin.query(`CREATE DATABASE ${name}`);
  defer(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.close();
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    kind: 'postgres',
    serverEnv: { DATABASE_URL: url.href },
    peerNote:
      `The peers use the server's database (a plain copy of products beside it) through \`pg\` with a ` +
      `pool of ${POOL_SIZE}, like the server. PostgreSQL's own processes are not pinned.`,
    openPeer: async () =>
      withPeerTable(await createDb({ databaseUrl: url.href, dataDir: '', dbPoolSize: POOL_SIZE })),
  };
}

export function openTarget(kind: DbKind, pgUrl: string, defer: Defer): Promise<Target | string> {
  return kind === 'embedded' ? embedded(defer) : postgres(pgUrl, defer);
}
