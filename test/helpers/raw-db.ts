// A bare database for tests of SQL built outside the app (the criteria compiler): PGlite in memory,
// or PostgreSQL in a schema of its own (functions included) dropped on close, so a suite can run
// twice in a row on the same server.

import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

export interface RawDb {
  query(sql: string, params?: readonly unknown[]): Promise<readonly Record<string, unknown>[]>;
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

export async function openPglite(): Promise<RawDb> {
  const db = await PGlite.create();
  return {
    query: async (sql, params = []) => (await db.query<Record<string, unknown>>(sql, [...params])).rows,
    exec: async (sql) => void (await db.exec(sql)),
    close: () => db.close(),
  };
}

export async function openPostgres(url: string, prefix: string): Promise<RawDb> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const schema = `${prefix}_${process.pid}_${Date.now()}`;
  await client.query(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
  return {
    query: async (sql, params = []) => (await client.query<Record<string, unknown>>(sql, [...params])).rows,
    exec: async (sql) => void (await client.query(sql)),
    close: async () => {
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}

/** The databases a suite runs on: PGlite always, PostgreSQL when DATABASE_URL is set. */
export function rawDatabases(prefix: string): Array<[string, () => Promise<RawDb>]> {
  const url = process.env.DATABASE_URL;
  return [
    ['PGlite', openPglite],
    ...(url ? [['PostgreSQL', () => openPostgres(url, prefix)] as [string, () => Promise<RawDb>]] : []),
  ];
}
