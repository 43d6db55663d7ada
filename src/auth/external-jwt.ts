// External JWTs (`Authorization: BEARER <system>;<jwt>`): a trust relation configured per partition
// in the advanced configuration option `externalJWTConfiguration`:
// `{ entries: { <system>: { publicKey: <PEM RSA public key>, permissions: null | [names] } } }`.
// Only RS256; iss = the system, aud = the cluster name, partition = this partition; exp (and nbf)
// are checked when present — the interface's claim rules do not ask for them.

import { importSPKI, jwtVerify } from 'jose';
import type { Queryable } from '../db/db.ts';

export const SYSTEM_NAME = /^[A-Za-z0-9]+$/;

export type ExternalResult =
  | { readonly ok: true; readonly login: string; readonly permissions: readonly string[] | null }
  | { readonly ok: false; readonly reason: string };

interface Entry {
  publicKey?: unknown;
  permissions?: unknown;
}

async function entryOf(q: Queryable, partitionId: number, system: string): Promise<Entry | string> {
  const r = await q.query<{ value: string | null }>(
    `SELECT value FROM advanced_config WHERE partition_id = $1 AND unique_name = 'externalJWTConfiguration'`,
    [partitionId],
  );
  const text = r.rows[0]?.value;
  if (text === undefined || text === null) return 'no externalJWTConfiguration in this partition';
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch {
    return 'externalJWTConfiguration is not valid JSON';
  }
  const entries = (config as { entries?: unknown }).entries;
  const entry =
    typeof entries === 'object' && entries !== null
      ? (entries as Record<string, unknown>)[system]
      : undefined;
  if (typeof entry !== 'object' || entry === null || !Object.hasOwn(entries as object, system)) {
    return `no trust entry for ${system}`;
  }
  return entry;
}

export async function verifyExternal(
  q: Queryable,
  partitionId: number,
  partition: string,
  clusterName: string,
  system: string,
  jwt: string,
): Promise<ExternalResult> {
  if (!SYSTEM_NAME.test(system)) return { ok: false, reason: 'system name must be letters and digits' };
  const entry = await entryOf(q, partitionId, system);
  if (typeof entry === 'string') return { ok: false, reason: entry };
  if (typeof entry.publicKey !== 'string') return { ok: false, reason: `no publicKey for ${system}` };
  const permissions = entry.permissions ?? null;
  if (
    permissions !== null &&
    !(Array.isArray(permissions) && permissions.every((p) => typeof p === 'string'))
  ) {
    return { ok: false, reason: `permissions of ${system} must be null or a list of names` };
  }
  let key: Awaited<ReturnType<typeof importSPKI>>;
  try {
    // RS256 only: importing fails for any key that is not RSA.
    key = await importSPKI(entry.publicKey, 'RS256');
  } catch {
    return { ok: false, reason: `publicKey of ${system} is not a PEM RSA public key` };
  }
  try {
    const { payload } = await jwtVerify(jwt, key, {
      algorithms: ['RS256'],
      issuer: system,
      audience: clusterName,
      requiredClaims: ['sub', 'partition'],
    });
    if (payload.partition !== partition) return { ok: false, reason: 'partition claim does not match' };
    if (typeof payload.sub !== 'string' || payload.sub === '')
      return { ok: false, reason: 'sub must name a user' };
    return { ok: true, login: payload.sub, permissions: permissions };
  } catch (e) {
    return { ok: false, reason: `token refused: ${(e as Error).message}` };
  }
}
