// Rules of the token operations: api tokens never exceed the caller's permissions nor the listed
// ones; listing and revoking others' tokens needs USER_EDIT; TFA changes need a valid current code.

import type { FastifyInstance } from 'fastify';
import { can, type Principal } from '../../access/access.ts';
import { isKnownPermission } from '../../access/catalogue.ts';
import { signSession } from '../../auth/session.ts';
import { acceptCode, enroll, loadTfa, setEnabled } from '../../auth/tfa.ts';
import {
  apiTokenOwner,
  createApiToken,
  issueOneTimeToken,
  listApiTokens,
  revokeApiToken,
} from '../../auth/tokens.ts';
import type { Db } from '../../db/db.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import { guardAccounts } from './guards.ts';
import { recordHistory } from '../../engine/history.ts';
import { bumpVersions } from './store.ts';

async function accountOf(db: Db, principal: Principal): Promise<{ secret: Uint8Array; epoch: number }> {
  const r = await db.query<{ secret: Uint8Array; epoch: number }>(
    `SELECT p.jwt_secret AS secret, u.token_epoch AS epoch FROM partitions p
       JOIN users u ON u.partition_id = p.id WHERE p.id = $1 AND u.id = $2`,
    [principal.partitionId, principal.userId],
  );
  return r.rows[0]!;
}

/** A token restricted to `permissions` (each one the caller holds), or unrestricted when absent. */
export async function getJsonWebToken(
  app: FastifyInstance,
  principal: Principal,
  permissions: readonly string[] | null | undefined,
  minutes: number | null,
) {
  if (minutes !== null && (minutes < 1 || minutes > 525_600)) {
    throw validationError('minutes', 'must be between 1 and 525600 (a year)');
  }
  const list = permissions === null || permissions === undefined ? null : [...new Set(permissions)];
  // Each refusal names the entry as sent (`data.permissions.1`), as a malformed one is named.
  for (const [i, p] of (permissions ?? []).entries()) {
    if (!isKnownPermission(p))
      throw validationError(`data.permissions.${i}`, `unknown permission ${JSON.stringify(p)}`);
    if (!can(principal, p))
      throw new AppError('FORBIDDEN', `You do not hold ${p}: a token cannot grant it`, {
        field: `data.permissions.${i}`,
      });
  }
  const { secret, epoch } = await accountOf(app.db, principal);
  const row = await createApiToken(app.db, principal.partitionId, principal.userId, list, minutes);
  const token = await signSession(
    secret,
    {
      userId: principal.userId,
      partition: principal.partition,
      epoch,
      sid: `api-${row.id}`,
      kind: 'api',
      tokenId: row.id,
      ...(list === null ? {} : { scope: list }),
    },
    minutes === null ? null : minutes * 60,
  );
  return { token, tokenId: row.id, expires: row.expires, permissions: list };
}

export async function getOneTimeToken(app: FastifyInstance, principal: Principal) {
  // A one-time token asking for the next one would renew itself forever.
  if (principal.via === 'onetime')
    throw new AppError('FORBIDDEN', 'A one-time token cannot ask for another one-time token');
  const epoch = principal.epoch ?? (await accountOf(app.db, principal)).epoch;
  const t = await issueOneTimeToken(
    app.db,
    principal.partitionId,
    principal.userId,
    app.config.oneTimeTokenSeconds,
    // The token may do no more than the credential that asks for it (an api token's permission
    // list, an OAuth scope, an external system's list).
    principal.restriction === null ? null : [...principal.restriction],
    // ... and lives no longer than it: same token epoch, same api_tokens row, not past its expiry.
    { epoch, apiTokenId: principal.tokenId ?? null, expiresAt: principal.expiresAt ?? null },
  );
  return { token: t.token, expires: t.expires };
}

export async function listTokens(db: Db, principal: Principal) {
  return listApiTokens(db, principal.partitionId, can(principal, 'USER_EDIT') ? null : principal.userId);
}

export async function revokeToken(db: Db, principal: Principal, id: number) {
  const owner = await apiTokenOwner(db, principal.partitionId, id);
  const mine = owner === principal.userId;
  if (owner === undefined || (!mine && !can(principal, 'USER_EDIT')))
    throw notFound(`Token ${id}`, 'tokenId');
  // An administrator's tokens are his account: only an ADMIN ends them.
  if (!mine) await guardAccounts(db, principal, [owner]);
  if (!(await revokeApiToken(db, principal.partitionId, id, principal.userId)))
    throw notFound(`Token ${id}`, 'tokenId');
  return { tokenId: id, revoked: true };
}

/** Switches TFA on or off: a new version of the user and a history entry (the fact, no secret). */
async function switchTfa(db: Db, principal: Principal, enabled: boolean): Promise<void> {
  await db.transaction(async (tx) => {
    await setEnabled(tx, principal.partitionId, principal.userId, enabled);
    const versions = await bumpVersions(
      tx,
      principal.partitionId,
      'users',
      new Set([principal.userId]),
      principal.userId,
    );
    await recordHistory(tx, principal, [
      {
        typeCode: 'U',
        recordId: principal.userId,
        businessKey: principal.loginName,
        action: 'UPDATE',
        changes: { tfaEnabled: { old: !enabled, new: enabled } },
        version: versions.get(principal.userId)!,
      },
    ]);
  });
}

export async function enrollTfa(app: FastifyInstance, principal: Principal) {
  const state = await loadTfa(app.db, principal.partitionId, principal.userId);
  if (state.enabled)
    throw new AppError('CONFLICT', 'Two-factor authentication is already on; disable it first');
  const label = `${principal.partition}/${principal.loginName}`;
  return enroll(app.db, principal.partitionId, principal.userId, app.config.productToken, label);
}

export async function confirmTfa(db: Db, principal: Principal, code: string) {
  const state = await loadTfa(db, principal.partitionId, principal.userId);
  if (state.secret === null) throw new AppError('CONFLICT', 'Start with accountmanager.tfa.enroll');
  if (state.enabled) throw new AppError('CONFLICT', 'Two-factor authentication is already on');
  if (!(await acceptCode(db, principal.partitionId, principal.userId, state, code))) {
    throw validationError('data.code', 'wrong or already used code');
  }
  await switchTfa(db, principal, true);
  return { tfaEnabled: true };
}

/**
 * Switching TFA off needs Basic credentials, and with TFA on a Basic login already had to carry a
 * valid, unused code in the TFA header: that code is the proof (a second code from the same time
 * window would be refused as a replay).
 */
export async function disableTfa(db: Db, principal: Principal) {
  const state = await loadTfa(db, principal.partitionId, principal.userId);
  if (!state.enabled) throw new AppError('CONFLICT', 'Two-factor authentication is off');
  await switchTfa(db, principal, false);
  return { tfaEnabled: false };
}
