// The authorization server metadata (RFC 8414) that /.well-known/oauth-authorization-server
// answers: the endpoints of authorize.ts and token.ts and what they support.

import { PERMISSIONS } from '../../access/catalogue.ts';
import type { OAuthContext } from './store.ts';

/** RFC 8414 authorization server metadata. */
export function metadata(ctx: OAuthContext): Record<string, unknown> {
  return {
    issuer: ctx.issuer,
    authorization_endpoint: `${ctx.issuer}/oauth/authorize`,
    token_endpoint: `${ctx.issuer}/oauth/token`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256', 'plain'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    scopes_supported: [...PERMISSIONS],
    authorization_response_iss_parameter_supported: true,
  };
}
