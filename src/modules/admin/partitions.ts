// Partitions and their first administrator: used by the start-up bootstrap and by the CLI.
// Idempotent where the bootstrap needs it: an existing partition or user is left as it is, and an
// existing password is never overwritten.

import { randomBytes } from 'node:crypto';
import { PARTITION_NAME } from '../../config.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { clearFailures } from '../../auth/login-guard.ts';
import { hashPassword } from '../../auth/password.ts';
import { historyEnabled } from '../../engine/history.ts';

export interface PartitionRow {
  readonly id: number;
  readonly name: string;
  readonly createdAt: Date;
  readonly users: number;
}

export class PartitionError extends Error {}

export function checkPartitionName(name: string): void {
  if (!PARTITION_NAME.test(name)) {
    throw new PartitionError(
      `invalid partition name ${JSON.stringify(name)}: use a-z, 0-9, _ and - (max 63)`,
    );
  }
}

async function ensurePartition(q: Queryable, name: string): Promise<{ id: number; created: boolean }> {
  const ins = await q.query<{ id: number }>(
    'INSERT INTO partitions (name, jwt_secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING id',
    [name, randomBytes(32)],
  );
  if (ins.rows[0]) return { id: ins.rows[0].id, created: true };
  const sel = await q.query<{ id: number }>('SELECT id FROM partitions WHERE name = $1', [name]);
  return { id: sel.rows[0]!.id, created: false };
}

/** Creates the user with role ADMIN unless a user of that login name exists. Answers whether it did. */
async function ensureAdmin(
  q: Queryable,
  partitionId: number,
  login: string,
  password: string,
  cost: number,
): Promise<boolean> {
  const ins = await q.query<{ id: number }>(
    `INSERT INTO users (partition_id, login_name, password_hash) VALUES ($1, $2, $3)
     ON CONFLICT (partition_id, lower(login_name)) DO NOTHING RETURNING id`,
    [partitionId, login, await hashPassword(password, cost)],
  );
  const id = ins.rows[0]?.id;
  if (id === undefined) return false;
  await q.query(`INSERT INTO user_roles (partition_id, user_id, role) VALUES ($1, $2, 'ADMIN')`, [
    partitionId,
    id,
  ]);
  return true;
}

export interface CreatedPartition {
  readonly id: number;
  readonly partitionCreated: boolean;
  readonly adminCreated: boolean;
}

export async function createPartition(
  db: Db,
  name: string,
  admin: { login: string; password: string },
  cost: number,
  /** The admin only with a new partition (start-up): an existing one's users are its admins' business. */
  adminOfNewOnly = false,
): Promise<CreatedPartition> {
  checkPartitionName(name);
  if (admin.login.trim() === '') throw new PartitionError('the admin login name must not be empty');
  return db.transaction(async (tx) => {
    const p = await ensurePartition(tx, name);
    const adminCreated =
      adminOfNewOnly && !p.created ? false : await ensureAdmin(tx, p.id, admin.login, admin.password, cost);
    return { id: p.id, partitionCreated: p.created, adminCreated };
  });
}

export async function listPartitions(db: Db): Promise<PartitionRow[]> {
  const r = await db.query<PartitionRow>(
    `SELECT p.id, p.name, p.created_at AS "createdAt",
            (SELECT count(*) FROM users u WHERE u.partition_id = p.id)::int AS users
       FROM partitions p ORDER BY p.name`,
  );
  return r.rows;
}

/**
 * Sets a password and bumps the token epoch, which invalidates the user's existing tokens. The
 * user's record history keeps the fact (never the secret), as for `accountmanager.changepassword`,
 * with no actor user and the operation `cli user set-password`.
 */
export async function setUserPassword(
  db: Db,
  partition: string,
  login: string,
  password: string,
  cost: number,
): Promise<void> {
  const hash = await hashPassword(password, cost);
  const done = await db.transaction(async (tx) => {
    const r = await tx.query<{ pid: number; id: number; login: string; version: number }>(
      `UPDATE users u SET password_hash = $3, token_epoch = token_epoch + 1, version = version + 1,
              last_update_at = now(), last_update_by = NULL
         FROM partitions p
        WHERE p.name = $1 AND u.partition_id = p.id AND lower(u.login_name) = lower($2)
        RETURNING u.partition_id AS pid, u.id, u.login_name AS login, u.version`,
      [partition, login, hash],
    );
    const user = r.rows[0];
    if (user === undefined) return false;
    // An operator's password ends the user's lock-out (the way back in for a locked-out admin).
    await clearFailures(tx, user.pid, user.login);
    if (historyEnabled()) {
      await tx.query(
        `INSERT INTO record_history (partition_id, type_code, record_id, business_key, action, changed_fields,
                                     changes, record_version, operation)
         VALUES ($1, 'U', $2, $3, 'UPDATE', '{password}', '{"password":{"old":null,"new":"(changed)"}}', $4,
                 'cli user set-password')`,
        [user.pid, user.id, user.login, user.version],
      );
    }
    return true;
  });
  if (!done)
    throw new PartitionError(`no user ${JSON.stringify(login)} in partition ${JSON.stringify(partition)}`);
}

export interface BootstrapResult {
  readonly partition: string;
  readonly partitionCreated: boolean;
  readonly adminCreated: boolean;
  /** Set when the admin was created with a generated password (BOOTSTRAP_PASSWORD unset). */
  readonly generatedPassword: string | undefined;
}

/** Creates the configured partitions and their admin where missing. */
export async function bootstrap(
  db: Db,
  cfg: {
    bootstrapPartitions: readonly string[];
    bootstrapAdmin: string;
    bootstrapPassword: string | undefined;
    scryptCost: number;
  },
): Promise<BootstrapResult[]> {
  const out: BootstrapResult[] = [];
  for (const name of cfg.bootstrapPartitions) {
    const generated = cfg.bootstrapPassword === undefined ? randomBytes(12).toString('base64url') : undefined;
    const password = cfg.bootstrapPassword ?? generated!;
    // Each start: a partition deleted its bootstrap admin (or named another) stays as its admins left it.
    const r = await createPartition(db, name, { login: cfg.bootstrapAdmin, password }, cfg.scryptCost, true);
    out.push({
      partition: name,
      partitionCreated: r.partitionCreated,
      adminCreated: r.adminCreated,
      generatedPassword: r.adminCreated ? generated : undefined,
    });
  }
  return out;
}
