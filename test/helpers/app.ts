// Test harness: a real server on port 0 over a real database — PostgreSQL when DATABASE_URL is set,
// otherwise an in-memory PGlite — with a fresh partition per harness, so suites never see each
// other's rows and pass again on the same database.

import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../../src/config.ts';
import type { Db } from '../../src/db/db.ts';
import { migratedDb } from './database.ts';
import { buildApp, type PartitionModule } from '../../src/app.ts';
import { createPartition } from '../../src/modules/admin/partitions.ts';
import { hashPassword } from '../../src/auth/password.ts';
import type { FastifyInstance } from 'fastify';
import { permissionsOfRoles, type Principal } from '../../src/access/access.ts';

export const ADMIN = 'admin';
export const ADMIN_PASSWORD = 'admin-password-1';

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any;
  readonly text: string;
}

export interface CallOptions {
  readonly body?: unknown;
  readonly raw?: string;
  readonly method?: string;
  readonly basic?: { user: string; password: string; partition?: string };
  readonly headers?: Record<string, string>;
}

export interface Harness {
  readonly config: Config;
  readonly db: Db;
  readonly app: FastifyInstance;
  readonly url: string;
  readonly partition: string;
  readonly partitionId: number;
  /** POST (by default) to `/service/<partition><path>`, or to `path` itself when it starts with `//`. */
  call(path: string, opts?: CallOptions): Promise<Reply>;
  /** Logs in with Basic and answers the session token, the CSRF token and the raw cookie header. */
  login(user?: string, password?: string): Promise<{ token: string; csrf: string; cookie: string }>;
  /** Creates a user with the given roles, in the given user groups (created when missing); answers its id. */
  newUser(
    login: string,
    password: string,
    roles?: readonly string[],
    groups?: readonly string[],
  ): Promise<number>;
  close(): Promise<void>;
}

/** Calls of one user: POST `path` with a session token in the `X-Ratecard-jwt` header. */
export type Client = (path: string, body?: unknown, headers?: Record<string, string>) => Promise<Reply>;

/** Logs `user` (default: the admin) in and answers a client that calls with its token. */
export async function clientOf(h: Harness, user?: string, password?: string): Promise<Client> {
  const token = (await h.login(user, password)).token;
  return (path, body, headers = {}) =>
    h.call(path, {
      headers: { 'X-Ratecard-jwt': token, ...headers },
      ...(body === undefined ? {} : { body }),
    });
}

/**
 * The partition's admin as the engine sees an authenticated request of theirs, for tests that call
 * engine or module functions in process (`userId`: the admin's user id where a test checks it).
 */
export function adminPrincipal(h: Pick<Harness, 'partitionId' | 'partition'>, userId = 1): Principal {
  return {
    partitionId: h.partitionId,
    partition: h.partition,
    userId,
    loginName: ADMIN,
    roles: ['ADMIN'],
    groups: [],
    admin: true,
    permissions: permissionsOfRoles(['ADMIN']),
    via: 'basic',
    restriction: null,
  };
}

export function uniqueName(prefix = 't'): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: process.env.DATABASE_URL ?? '',
    DATA_DIR: ':memory:',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SCRYPT_COST: '1024',
    BOOTSTRAP_PARTITIONS: '',
    NODE_ID: 'test-node',
    ...env,
  });
}

export async function startHarness(
  opts: {
    env?: Record<string, string>;
    modules?: readonly PartitionModule[];
    /** Serve another partition of this harness's database (partition isolation tests). */
    shareDbWith?: Harness;
  } = {},
): Promise<Harness> {
  const config = testConfig(opts.env);
  const shared = opts.shareDbWith?.db;
  const db = shared ?? (await migratedDb(config.databaseUrl));
  const partition = uniqueName();
  const created = await createPartition(
    db,
    partition,
    { login: ADMIN, password: ADMIN_PASSWORD },
    config.scryptCost,
  );
  const app = await buildApp({ config, db, ...(opts.modules ? { modules: opts.modules } : {}) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const url = `http://127.0.0.1:${address.port}`;

  async function call(path: string, o: CallOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...o.headers };
    if (o.basic) {
      const who = `${o.basic.partition ?? partition}/${o.basic.user}:${o.basic.password}`;
      headers.authorization = `Basic ${Buffer.from(who).toString('base64')}`;
    }
    let body: string | undefined = o.raw;
    if (o.body !== undefined) body = JSON.stringify(o.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const target = path.startsWith('//')
      ? `${url}${path.slice(1)}`
      : `${url}${config.basePath}/${partition}${path}`;
    const res = await fetch(target, { method: o.method ?? 'POST', headers, body });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  return {
    config,
    db,
    app,
    url,
    partition,
    partitionId: created.id,
    call,
    async login(user = ADMIN, password = ADMIN_PASSWORD) {
      const r = await call('/login/extended', { basic: { user, password } });
      if (r.status !== 200) throw new Error(`login failed: ${r.text}`);
      const cookies = r.headers.getSetCookie().map((c) => c.split(';')[0]!);
      return {
        token: r.headers.get(`x-${config.productToken.toLowerCase()}-jwt`)!,
        csrf: r.body.response.csrfToken as string,
        cookie: cookies.join('; '),
      };
    },
    async newUser(login, password, roles = [], groups = []) {
      const r = await db.query<{ id: number }>(
        'INSERT INTO users (partition_id, login_name, password_hash) VALUES ($1, $2, $3) RETURNING id',
        [created.id, login, await hashPassword(password, config.scryptCost)],
      );
      const id = r.rows[0]!.id;
      for (const role of roles) {
        await db.query('INSERT INTO user_roles (partition_id, user_id, role) VALUES ($1, $2, $3)', [
          created.id,
          id,
          role,
        ]);
      }
      for (const group of groups) {
        await db.query(
          `WITH g AS (INSERT INTO user_groups (partition_id, unique_name) VALUES ($1, $3)
                        ON CONFLICT DO NOTHING RETURNING id)
           INSERT INTO user_group_members (partition_id, user_id, group_id)
           SELECT $1, $2, id FROM (SELECT id FROM g UNION ALL
             SELECT id FROM user_groups WHERE partition_id = $1 AND unique_name = $3) x LIMIT 1`,
          [created.id, id, group],
        );
      }
      return id;
    },
    async close() {
      await app.close();
      await db.query('DELETE FROM partitions WHERE id = $1', [created.id]);
      if (!shared) await db.close();
    },
  };
}
