// The token endpoint (RFC 6749 §3.2): POST /oauth/token, client authentication, then the
// authorization_code grant (§4.1.3, PKCE per RFC 7636) or the refresh grant (§6). A grant is an
// api_tokens row (kind 'oauth'); access and refresh tokens are our own session JWTs carrying its id,
// so authentication (src/auth/authenticate.ts) needs nothing OAuth-specific.

import { createHash } from 'node:crypto';
import type { Permission } from '../../access/catalogue.ts';
import { signSession, verifySession } from '../../auth/session.ts';
import { revokeApiToken } from '../../auth/tokens.ts';
import { clientAuthenticates, findClient, presentedClient, type OAuthClient } from './clients.ts';
import { ordered, permissionNames, scopeText } from './scope.ts';
import {
  RFC7636_VALUE,
  hashOf,
  sameText,
  secretOf,
  type CodeRow,
  type GrantRow,
  type OAuthContext,
} from './store.ts';

const REFRESH_TTL_SECONDS = 30 * 86400;

export interface TokenSuccess {
  readonly access_token: string;
  readonly token_type: 'bearer';
  readonly expires_in: number;
  readonly refresh_token: string;
  readonly scope?: string;
}

export type TokenErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope';

export type TokenOutcome =
  | { readonly kind: 'tokens'; readonly body: TokenSuccess }
  | {
      readonly kind: 'error';
      /** 401 for invalid_client, 400 otherwise (RFC 6749 §5.2). */
      readonly status: 400 | 401;
      readonly body: { readonly error: TokenErrorCode; readonly error_description: string };
      /** The client authenticated with Basic: the 401 must carry a Basic challenge. */
      readonly challenge: boolean;
    };

const tokenError = (error: TokenErrorCode, description: string, challenge = false): TokenOutcome => ({
  kind: 'error',
  status: error === 'invalid_client' ? 401 : 400,
  body: { error, error_description: description },
  challenge,
});

/** POST /oauth/token: client authentication, then the grant. */
export async function exchangeToken(
  ctx: OAuthContext,
  contentType: string | undefined,
  body: unknown,
  authorization: string | undefined,
): Promise<TokenOutcome> {
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(contentType ?? '')) {
    return tokenError('invalid_request', 'send the parameters as application/x-www-form-urlencoded');
  }
  const form = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(form)) {
    if (typeof v !== 'string') return tokenError('invalid_request', `parameter ${k} repeated`);
  }
  const p = form as Record<string, string | undefined>;
  const presented = presentedClient(authorization, {
    client_id: p.client_id,
    client_secret: p.client_secret,
  });
  if ('error' in presented) return tokenError('invalid_request', presented.error);
  const basic = presented.method === 'basic';
  const client = findClient(ctx.config.oauthConfiguration, presented.clientId);
  if (client === null) return tokenError('invalid_client', 'unknown client or no client_id', basic);
  if (!clientAuthenticates(client, presented))
    return tokenError('invalid_client', 'client authentication failed', basic);

  switch (p.grant_type) {
    case undefined:
      return tokenError('invalid_request', 'grant_type is missing');
    case 'authorization_code':
      return codeGrant(ctx, client, p);
    case 'refresh_token':
      return refreshGrant(ctx, client, p);
    default:
      return tokenError('unsupported_grant_type', 'grant types: authorization_code, refresh_token');
  }
}

function pkceMatches(row: CodeRow, verifier: string | undefined): string | null {
  if (row.code_challenge === null) {
    // RFC 9700 §2.1.1: a verifier for a request that had no challenge is a downgrade attempt.
    return verifier === undefined
      ? null
      : 'code_verifier sent, but the authorization request had no code_challenge';
  }
  if (verifier === undefined) return 'code_verifier is missing';
  if (!RFC7636_VALUE.test(verifier)) return 'code_verifier is malformed';
  const computed =
    row.code_challenge_method === 'S256'
      ? createHash('sha256').update(verifier).digest('base64url')
      : verifier;
  return sameText(computed, row.code_challenge) ? null : 'code_verifier does not match the code_challenge';
}

type Grant =
  | {
      readonly ok: true;
      readonly grantId: number;
      readonly userId: number;
      readonly epoch: number;
      readonly scope: Permission[] | null;
    }
  | { readonly ok: false; readonly outcome: TokenOutcome };

/**
 * authorization_code (RFC 6749 §4.1.3). Consuming the code, creating the grant and linking the two
 * are one transaction: a concurrent replay waits for it, then finds the grant to revoke.
 */
async function codeGrant(
  ctx: OAuthContext,
  client: OAuthClient,
  p: Record<string, string | undefined>,
): Promise<TokenOutcome> {
  if (p.code === undefined) return tokenError('invalid_request', 'code is missing');
  const codeHash = hashOf(p.code);
  const result = await ctx.db.transaction(async (tx): Promise<Grant> => {
    const failed = (o: TokenOutcome): Grant => ({ ok: false, outcome: o });
    // Spent only by the client it was issued to: another one (anyone may name a public client) learns
    // it is not his and cannot throw the code away before its client exchanges it.
    const used = await tx.query<CodeRow>(
      `UPDATE oauth_codes SET used_at = now()
        WHERE partition_id = $1 AND code_hash = $2 AND used_at IS NULL AND expires_at > now() AND client_id = $3
        RETURNING client_id, redirect_uri, user_id, scope, code_challenge, code_challenge_method, token_epoch`,
      [ctx.partitionId, codeHash, client.clientId],
    );
    const row = used.rows[0];
    if (row === undefined) {
      const seen = await tx.query<{ used: boolean; live: boolean; grant_id: number | null; user_id: number }>(
        `SELECT used_at IS NOT NULL AS used, expires_at > now() AS live, grant_id, user_id
           FROM oauth_codes WHERE partition_id = $1 AND code_hash = $2`,
        [ctx.partitionId, codeHash],
      );
      const old = seen.rows[0];
      if (old?.used === false && old.live)
        return failed(tokenError('invalid_grant', 'authorization code issued to another client'));
      if (old?.used === true) {
        // RFC 6749 §4.1.2: a code used twice revokes the tokens issued for it. revoked_by names
        // the grant's own user: nobody revoked it by hand.
        if (old.grant_id !== null) await revokeApiToken(tx, ctx.partitionId, old.grant_id, old.user_id);
        ctx.log.warn(
          { partition: ctx.partition, client: client.clientId, grant: old.grant_id },
          'OAuth code replayed',
        );
        // (A code spent by a refused exchange issued no tokens: nothing to revoke, nothing to say.)
        return failed(
          tokenError(
            'invalid_grant',
            old.grant_id === null
              ? 'authorization code already used'
              : 'authorization code already used; the tokens issued for it are revoked',
          ),
        );
      }
      return failed(tokenError('invalid_grant', 'authorization code unknown or expired'));
    }
    // The code is spent from here on, whatever follows: its client's failed exchange is not retried.
    const expected = row.redirect_uri === '' ? client.redirectUri : row.redirect_uri;
    if (row.redirect_uri !== '' && p.redirect_uri === undefined)
      return failed(
        tokenError('invalid_request', 'redirect_uri is missing (the authorization request had one)'),
      );
    if (p.redirect_uri !== undefined && p.redirect_uri !== expected)
      return failed(tokenError('invalid_grant', 'redirect_uri does not match the authorization request'));
    const pkce = pkceMatches(row, p.code_verifier);
    if (pkce !== null) return failed(tokenError('invalid_grant', pkce));
    const user = await tx.query<{ epoch: number }>(
      'SELECT token_epoch AS epoch FROM users WHERE partition_id = $1 AND id = $2 AND activated',
      [ctx.partitionId, row.user_id],
    );
    if (user.rows[0] === undefined)
      return failed(tokenError('invalid_grant', 'the user is no longer active'));
    // A password change since the code was issued ends it, as it ends the user's tokens.
    if (row.token_epoch !== null && Number(row.token_epoch) !== Number(user.rows[0].epoch))
      return failed(tokenError('invalid_grant', "the user's credentials changed since the code was issued"));
    // permissions = scope, so token listings show the restriction like that of an api token.
    const grant = await tx.query<{ id: number }>(
      `INSERT INTO api_tokens (partition_id, user_id, permissions, kind, client_id, scope)
       VALUES ($1, $2, $3, 'oauth', $4, $3) RETURNING id`,
      [ctx.partitionId, row.user_id, row.scope, client.clientId],
    );
    const grantId = grant.rows[0]!.id;
    await tx.query('UPDATE oauth_codes SET grant_id = $3 WHERE partition_id = $1 AND code_hash = $2', [
      ctx.partitionId,
      codeHash,
      grantId,
    ]);
    return { ok: true, grantId, userId: row.user_id, epoch: user.rows[0].epoch, scope: row.scope };
  });
  if (!result.ok) return result.outcome;
  const secret = await secretOf(ctx.db, ctx.partitionId);
  const refresh = await signSession(
    secret,
    {
      userId: result.userId,
      partition: ctx.partition,
      epoch: result.epoch,
      sid: `oauth-${result.grantId}`,
      kind: 'refresh',
      tokenId: result.grantId,
    },
    REFRESH_TTL_SECONDS,
  );
  return issueAccess(ctx, secret, client, result, refresh);
}

async function issueAccess(
  ctx: OAuthContext,
  secret: Uint8Array,
  client: OAuthClient,
  grant: { grantId: number; userId: number; epoch: number; scope: readonly Permission[] | null },
  refreshToken: string,
): Promise<TokenOutcome> {
  const access = await signSession(
    secret,
    {
      userId: grant.userId,
      partition: ctx.partition,
      epoch: grant.epoch,
      sid: `oauth-${grant.grantId}`,
      kind: 'oauth',
      tokenId: grant.grantId,
      // Rule 3: no scope, no scp claim; the token is then a normal session.
      ...(grant.scope === null ? {} : { scope: grant.scope }),
    },
    client.tokenExpiry,
  );
  const scope = scopeText(grant.scope);
  return {
    kind: 'tokens',
    body: {
      access_token: access,
      token_type: 'bearer',
      expires_in: client.tokenExpiry,
      refresh_token: refreshToken,
      ...(scope === undefined ? {} : { scope }),
    },
  };
}

/**
 * refresh_token (RFC 6749 §6): the refresh token is ours, of kind refresh, for this client, and its
 * grant lives. A `scope` may narrow the grant's, never widen it. The refresh token is not rotated:
 * it stays valid until it expires or its grant is revoked, so the same one is answered.
 */
async function refreshGrant(
  ctx: OAuthContext,
  client: OAuthClient,
  p: Record<string, string | undefined>,
): Promise<TokenOutcome> {
  if (p.refresh_token === undefined) return tokenError('invalid_request', 'refresh_token is missing');
  const secret = await secretOf(ctx.db, ctx.partitionId);
  const claims = await verifySession(p.refresh_token, secret);
  if (
    claims === null ||
    claims.knd !== 'refresh' ||
    claims.ptn !== ctx.partition ||
    claims.tid === undefined
  ) {
    return tokenError('invalid_grant', 'refresh token invalid or expired');
  }
  const r = await ctx.db.query<GrantRow>(
    `SELECT t.user_id, t.client_id, t.kind, t.scope, u.token_epoch AS epoch, u.activated,
            (t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())) AS live
       FROM api_tokens t JOIN users u ON u.partition_id = t.partition_id AND u.id = t.user_id
      WHERE t.partition_id = $1 AND t.id = $2`,
    [ctx.partitionId, claims.tid],
  );
  const g = r.rows[0];
  if (
    g === undefined ||
    !g.live ||
    g.kind !== 'oauth' ||
    String(g.user_id) !== claims.sub ||
    !g.activated ||
    g.epoch !== claims.epc
  ) {
    return tokenError('invalid_grant', 'refresh token revoked or expired');
  }
  if (g.client_id !== client.clientId)
    return tokenError('invalid_grant', 'refresh token issued to another client');
  let scope = g.scope;
  // Rule 5: unknown names are ignored; a scope of none but them asks for nothing narrower.
  const asked = p.scope === undefined ? new Set<Permission>() : permissionNames(p.scope);
  if (asked.size > 0) {
    if (g.scope !== null && [...asked].some((n) => !g.scope!.includes(n)))
      return tokenError('invalid_scope', 'the requested scope exceeds the scope of the grant');
    scope = ordered(asked);
  }
  return issueAccess(
    ctx,
    secret,
    client,
    { grantId: claims.tid, userId: g.user_id, epoch: g.epoch, scope },
    p.refresh_token,
  );
}
