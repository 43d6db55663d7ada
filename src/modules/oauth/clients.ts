// The OAuth clients Ratecard knows: the application property `oauthConfiguration` (setting
// OAUTH_CONFIGURATION, JSON or the path of a JSON file), parsed and checked once at start-up, and the
// client authentication of the token endpoint (RFC 6749 §2.3.1). Nothing here touches HTTP or SQL.

import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

export interface OAuthClient {
  readonly clientId: string;
  /** The one redirect URI of the client; the authorization request must name exactly this one. */
  readonly redirectUri: string;
  /** Access token lifetime in seconds. */
  readonly tokenExpiry: number;
  /** Set: a confidential client that must authenticate at the token endpoint. */
  readonly clientSecret: string | null;
  readonly description: string | null;
  /** The raw `defaultScope` (comma-separated permission names); null means no maximum. */
  readonly defaultScope: string | null;
  /** A SAML SSO profile to log in through; Ratecard has no SAML, so such a client cannot log in. */
  readonly samlProfile: string | null;
}

export interface OAuthConfiguration {
  readonly knownClients: ReadonlyMap<string, OAuthClient>;
}

export const DEFAULT_TOKEN_EXPIRY = 7200;
export const NO_OAUTH: OAuthConfiguration = { knownClients: new Map() };

/** `client_id` is sent in forms, URLs and the Basic header: printable ASCII without `:` (RFC 6749 A.1). */
const CLIENT_ID = /^[\x21-\x39\x3b-\x7e]{1,200}$/;

function optionalString(o: Record<string, unknown>, key: string, where: string): string | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new Error(`${where}.${key} must be a string`);
  return v.trim() === '' ? null : v;
}

function parseClient(clientId: string, raw: unknown): OAuthClient {
  const where = `knownClients.${clientId}`;
  if (!CLIENT_ID.test(clientId)) throw new Error(`${where}: client_id must be printable ASCII without ':'`);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new Error(`${where} must be an object`);
  const o = raw as Record<string, unknown>;
  const redirectUri = optionalString(o, 'redirect_uri', where);
  if (redirectUri === null) throw new Error(`${where}.redirect_uri is required`);
  let url: URL;
  try {
    url = new URL(redirectUri);
  } catch {
    throw new Error(`${where}.redirect_uri must be an absolute URI, got ${JSON.stringify(redirectUri)}`);
  }
  // RFC 6749 §3.1.2: an absolute URI without a fragment.
  if (url.hash !== '' || redirectUri.includes('#'))
    throw new Error(`${where}.redirect_uri must not have a fragment`);
  const expiry = o.token_expiry ?? DEFAULT_TOKEN_EXPIRY;
  if (typeof expiry !== 'number' || !Number.isInteger(expiry) || expiry < 1 || expiry > 366 * 86400) {
    throw new Error(`${where}.token_expiry must be a whole number of seconds between 1 and 31622400`);
  }
  return {
    clientId,
    redirectUri,
    tokenExpiry: expiry,
    clientSecret: optionalString(o, 'client_secret', where),
    description: optionalString(o, 'client_description', where),
    defaultScope: optionalString(o, 'defaultScope', where),
    samlProfile: optionalString(o, 'samlProfile', where),
  };
}

/**
 * `{ "knownClients": { "<client_id>": { redirect_uri, token_expiry?, client_secret?,
 * client_description?, defaultScope?, samlProfile? } } }` as JSON text, or the path of a file holding
 * it. Throws an Error whose message names the problem (config.ts turns it into a ConfigError).
 */
export function parseOAuthConfiguration(value: string): OAuthConfiguration {
  let text = value;
  if (!value.trimStart().startsWith('{')) {
    try {
      text = readFileSync(value.trim(), 'utf8');
    } catch (e) {
      throw new Error(`not JSON and not a readable file: ${(e as Error).message}`, { cause: e });
    }
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new Error(`invalid JSON: ${(e as Error).message}`, { cause: e });
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('must be a JSON object');
  const known = (doc as Record<string, unknown>).knownClients ?? {};
  if (typeof known !== 'object' || known === null || Array.isArray(known)) {
    throw new Error('knownClients must be an object keyed by client_id');
  }
  const clients = new Map<string, OAuthClient>();
  for (const [id, raw] of Object.entries(known)) clients.set(id, parseClient(id, raw));
  return { knownClients: clients };
}

export function findClient(config: OAuthConfiguration, clientId: string | undefined): OAuthClient | null {
  return clientId === undefined ? null : (config.knownClients.get(clientId) ?? null);
}

/** Credentials a token request presented: from `Authorization: Basic` or the form. */
export interface PresentedClient {
  readonly clientId: string | undefined;
  readonly secret: string | undefined;
  readonly method: 'basic' | 'post' | 'none';
}

/** RFC 6749 §2.3.1: id and secret are form-urlencoded before they are put into the Basic header. */
function formDecode(s: string): string | null {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/**
 * The client credentials of a token request; `error` when they are malformed or sent two ways at
 * once ("MUST NOT use more than one authentication method in each request").
 */
export function presentedClient(
  authorization: string | undefined,
  form: { client_id?: string; client_secret?: string },
): PresentedClient | { error: string } {
  if (authorization !== undefined && /^basic\s/i.test(authorization)) {
    if (form.client_secret !== undefined)
      return { error: 'client credentials sent both in the header and the body' };
    const decoded = Buffer.from(authorization.replace(/^basic\s+/i, ''), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const id = colon < 0 ? null : formDecode(decoded.slice(0, colon));
    const secret = colon < 0 ? null : formDecode(decoded.slice(colon + 1));
    if (id === null || secret === null) return { error: 'malformed Basic client credentials' };
    if (form.client_id !== undefined && form.client_id !== id)
      return { error: 'client_id differs from the Basic credentials' };
    return { clientId: id, secret, method: 'basic' };
  }
  if (form.client_secret !== undefined)
    return { clientId: form.client_id, secret: form.client_secret, method: 'post' };
  return { clientId: form.client_id, secret: undefined, method: 'none' };
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/**
 * A confidential client must present its secret; a public client must not present one (a secret we
 * do not know proves nothing, and accepting it would hide a misconfigured client).
 */
export function clientAuthenticates(client: OAuthClient, presented: PresentedClient): boolean {
  if (client.clientSecret === null) return presented.secret === undefined || presented.secret === '';
  // Digests first: equal lengths for timingSafeEqual, and no early exit on the secret's length.
  return (
    presented.secret !== undefined && timingSafeEqual(digest(presented.secret), digest(client.clientSecret))
  );
}
