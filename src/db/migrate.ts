// Numbered `.sql` migrations in ./migrations, applied at start-up in one transaction and recorded in
// `schema_migrations`. A transaction-scoped advisory lock makes nodes that start together apply each
// migration exactly once: the others wait, then find nothing left to do.

import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.ts';

const DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
/** Arbitrary constant naming "Ratecard migrations" among advisory locks. */
const MIGRATION_LOCK = 72_657_401;

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export function listMigrations(dir = DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 3)), name: f, sql: readFileSync(dir + f, 'utf8') }));
}

/** Applies the missing migrations; answers the names applied now. */
export async function migrate(db: Db, migrations = listMigrations()): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await tx.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map(
        (r) => r.version,
      ),
    );
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await tx.execScript(m.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.name);
    }
    return applied;
  });
}
