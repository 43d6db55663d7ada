// The database of a test file, migrated: a new pool on DATABASE_URL when it is set; otherwise an
// in-memory PGlite started from an image of a freshly migrated cluster. PGlite's initdb costs
// seconds per file, loading the image a few hundred milliseconds; the image is built once per set
// of migrations and PGlite version and kept in the system's temporary directory, shared by the
// test files of a run (and of later runs) — `migrate` still runs, so a stale image cannot hide a
// migration.

import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb, type Db } from '../../src/db/db.ts';
import { createEmbeddedDb } from '../../src/db/pglite.ts';
import { listMigrations, migrate } from '../../src/db/migrate.ts';

const IMAGES = join(tmpdir(), 'ratecard-test-pglite');

function imageKey(): string {
  const hash = createHash('sha256');
  hash.update(readFileSync(new URL('../../node_modules/@electric-sql/pglite/package.json', import.meta.url)));
  for (const m of listMigrations()) hash.update(`\0${m.name}\0${m.sql}`);
  return hash.digest('hex').slice(0, 24);
}

async function migratedImage(): Promise<Blob> {
  const name = `${imageKey()}.tar`;
  const file = join(IMAGES, name);
  try {
    return new Blob([readFileSync(file)]);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const db = await createEmbeddedDb(':memory:');
  try {
    await migrate(db);
    const image = await db.dumpImage();
    mkdirSync(IMAGES, { recursive: true });
    // Images of other migrations (older checkouts) go; a file that reads one as it goes builds its own.
    for (const old of readdirSync(IMAGES)) {
      if (old.endsWith('.tar') && old !== name) rmSync(join(IMAGES, old), { force: true });
    }
    // Written aside, then renamed: a file running at the same time reads a whole image or none.
    const part = `${file}.${process.pid}.part`;
    writeFileSync(part, Buffer.from(await image.arrayBuffer()));
    renameSync(part, file);
    return image;
  } finally {
    await db.close();
  }
}

/** No pool-wide statement cap here: a suite with a 1 s time-out must still wait for migrations. */
export async function migratedDb(databaseUrl = process.env.DATABASE_URL, poolSize = 4): Promise<Db> {
  const db = databaseUrl
    ? await createDb({ databaseUrl, dataDir: '', dbPoolSize: poolSize })
    : await createEmbeddedDb(':memory:', await migratedImage());
  await migrate(db);
  return db;
}
