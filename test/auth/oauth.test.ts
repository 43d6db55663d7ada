// OAuth 2.0 over HTTP with a strict RFC client (oauth4webapi): the code flow with and without PKCE
// and client secret, code replay and expiry, redirect URI and client checks, the scope rules of the
// spec, the refresh grant, the token as a credential, the metadata, and the setting's validation.
// The pages are driven here by plain form posts; oauth-browser.test.ts drives them in Chromium.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oauth from 'oauth4webapi';
import { generate, generateSecret } from 'otplib';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { effectiveScope } from '../../src/modules/oauth/scope.ts';
import { setUserPassword } from '../../src/modules/admin/partitions.ts';

const REDIRECT = 'http://127.0.0.1:9/callback';
const OTHER_REDIRECT = 'http://127.0.0.1:9/elsewhere';
const CLIENTS = {
  knownClients: {
    'public-app': { redirect_uri: REDIRECT },
    'secret-app': {
      redirect_uri: REDIRECT,
      client_secret: 's3cret value',
      client_description: 'Price <Sync> & Co',
      token_expiry: 600,
    },
    'scoped-app': { redirect_uri: REDIRECT, defaultScope: 'USER_FETCH, PRODUCT_EDIT,NO_SUCH_PERMISSION' },
    'other-app': { redirect_uri: OTHER_REDIRECT },
    'saml-app': { redirect_uri: REDIRECT, samlProfile: 'corporate-idp' },
  },
};
const insecure = { [oauth.allowInsecureRequests]: true };
const claimsOf = (jwt: string): any => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString());

function hiddenFields(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) {
    out[m[1]!] = m[2]!.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));
  }
  return out;
}

interface Step {
  readonly status: number;
  readonly html: string;
  readonly fields: Record<string, string>;
  readonly location: string | null;
  readonly headers: Headers;
}

async function step(res: Response): Promise<Step> {
  const html = await res.text();
  return {
    status: res.status,
    html,
    fields: hiddenFields(html),
    location: res.headers.get('location'),
    headers: res.headers,
  };
}

describe('OAuth 2.0', () => {
  let h: Harness;
  let base: string;
  let as: oauth.AuthorizationServer;

  before(async () => {
    h = await startHarness({
      env: { OAUTH_CONFIGURATION: JSON.stringify(CLIENTS), LOGIN_MAX_FAILURES: '3' },
    });
    base = `${h.url}/service/${h.partition}`;
    const issuer = new URL(base);
    as = await oauth.processDiscoveryResponse(
      issuer,
      await fetch(`${base}/.well-known/oauth-authorization-server`),
    );
  });
  after(() => h.close());

  const authorizeUrl = (params: Record<string, string>): string =>
    `${base}/oauth/authorize?${new URLSearchParams(params).toString()}`;

  /** GET the authorization URL; the CSRF cookie it sets, and the page. */
  async function open(params: Record<string, string>): Promise<Step & { cookie: string }> {
    const res = await fetch(authorizeUrl(params), { redirect: 'manual' });
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0]!)
      .join('; ');
    return { ...(await step(res)), cookie };
  }

  const post = async (fields: Record<string, string>, cookie: string): Promise<Step> =>
    step(
      await fetch(`${base}/oauth/authorize`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        body: new URLSearchParams(fields).toString(),
      }),
    );

  /** Login (and TFA) and consent through the forms; answers the final redirect's URL. */
  async function consent(
    params: Record<string, string>,
    opts: { user?: string; password?: string; decision?: 'allow' | 'deny'; tfa?: () => Promise<string> } = {},
  ): Promise<URL> {
    const start = await open(params);
    assert.equal(start.status, 200, start.html);
    let page = await post(
      { ...start.fields, username: opts.user ?? ADMIN, password: opts.password ?? ADMIN_PASSWORD },
      start.cookie,
    );
    if (opts.tfa) {
      assert.match(page.html, /Two-factor code/);
      page = await post({ ...page.fields, tfa_code: await opts.tfa() }, start.cookie);
    }
    assert.equal(page.status, 200, page.html);
    assert.match(page.html, /Allow access\?/);
    const done = await post({ ...page.fields, decision: opts.decision ?? 'allow' }, start.cookie);
    assert.equal(done.status, 303, done.html);
    return new URL(done.location!);
  }

  interface FlowOptions {
    clientId?: string;
    auth?: 'basic' | 'post';
    secret?: string;
    pkce?: 'S256' | 'plain' | 'none';
    scope?: string;
    user?: string;
    password?: string;
  }

  /** Authorization request and callback as the client sees them. */
  async function authorize(o: FlowOptions = {}) {
    const client: oauth.Client = { client_id: o.clientId ?? 'public-app' };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const params: Record<string, string> = {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      state,
    };
    const pkce = o.pkce ?? 'S256';
    if (pkce === 'S256') {
      params.code_challenge = await oauth.calculatePKCECodeChallenge(verifier);
      params.code_challenge_method = 'S256';
    } else if (pkce === 'plain') {
      params.code_challenge = verifier;
      params.code_challenge_method = 'plain';
    }
    if (o.scope !== undefined) params.scope = o.scope;
    const redirected = await consent(params, {
      ...(o.user !== undefined ? { user: o.user } : {}),
      ...(o.password !== undefined ? { password: o.password } : {}),
    });
    const callback = oauth.validateAuthResponse(as, client, redirected, state);
    const clientAuth =
      o.secret === undefined
        ? oauth.None()
        : o.auth === 'post'
          ? oauth.ClientSecretPost(o.secret)
          : oauth.ClientSecretBasic(o.secret);
    const codeVerifier = pkce === 'none' ? oauth.nopkce : verifier;
    return {
      client,
      clientAuth,
      callback,
      redirected,
      exchange: (redirectUri = REDIRECT) =>
        oauth.authorizationCodeGrantRequest(
          as,
          client,
          clientAuth,
          callback,
          redirectUri,
          codeVerifier,
          insecure,
        ),
    };
  }

  async function flow(o: FlowOptions = {}): Promise<oauth.TokenEndpointResponse> {
    const a = await authorize(o);
    return oauth.processAuthorizationCodeResponse(as, a.client, await a.exchange());
  }

  async function tokenError(response: Response, client: oauth.Client = { client_id: 'public-app' }) {
    try {
      await oauth.processAuthorizationCodeResponse(as, client, response);
    } catch (e) {
      if (e instanceof oauth.ResponseBodyError)
        return { status: e.status, error: e.error, description: e.error_description };
      if (e instanceof oauth.WWWAuthenticateChallengeError) {
        const body = (await e.response.json()) as any;
        return { status: e.status, error: body.error, challenge: e.response.headers.get('www-authenticate') };
      }
      throw e;
    }
    assert.fail('the token endpoint answered tokens');
  }

  /** A call needing PRODUCT_EDIT and one needing PRODUCTEXTENSION_FETCH, with a Bearer token. */
  async function probe(token: string) {
    const headers = { authorization: `Bearer ${token}` };
    const add = await h.call('/add/P', { headers, body: { data: { sku: `O-${Math.random()}` } } });
    const px = await h.call('/fetch/PX', { headers, body: {} });
    return { productEdit: add.status, extensionFetch: px.status };
  }

  test('metadata document (RFC 8414)', async () => {
    const r = await fetch(`${base}/.well-known/oauth-authorization-server`);
    assert.equal(r.status, 200);
    const m = (await r.json()) as any;
    assert.equal(m.issuer, base);
    assert.equal(m.authorization_endpoint, `${base}/oauth/authorize`);
    assert.equal(m.token_endpoint, `${base}/oauth/token`);
    assert.deepEqual(m.response_types_supported, ['code']);
    assert.deepEqual(m.grant_types_supported, ['authorization_code', 'refresh_token']);
    assert.deepEqual(m.code_challenge_methods_supported, ['S256', 'plain']);
    assert.deepEqual(m.token_endpoint_auth_methods_supported, [
      'client_secret_basic',
      'client_secret_post',
      'none',
    ]);
    assert.equal(as.issuer, base);
    const unknown = await fetch(`${h.url}/service/no_such_partition/.well-known/oauth-authorization-server`);
    assert.equal(unknown.status, 404);
  });

  test('code flow, public client, PKCE S256: tokens, and the access token as Bearer, header and cookie', async () => {
    const t = await flow();
    assert.equal(t.token_type, 'bearer');
    assert.equal(t.expires_in, 7200);
    assert.equal(typeof t.refresh_token, 'string');
    const c = claimsOf(t.access_token);
    assert.equal(c.knd, 'oauth');
    assert.equal(typeof c.tid, 'number');
    assert.equal(c.exp - c.iat, 7200);
    assert.equal(c.scp, undefined, 'no scope anywhere: no scp claim');
    assert.equal(claimsOf(t.refresh_token!).knd, 'refresh');
    assert.equal(claimsOf(t.refresh_token!).tid, c.tid);

    assert.equal(
      (await h.call('/fetch/P', { headers: { authorization: `Bearer ${t.access_token}` }, body: {} })).status,
      200,
    );
    assert.equal(
      (await h.call('/fetch/P', { headers: { 'X-Ratecard-jwt': t.access_token }, body: {} })).status,
      200,
    );
    const cookie = `X-Ratecard-jwt=${t.access_token}`;
    // An OAuth access token is not a browser session: as the cookie it needs no CSRF token (the
    // spec puts CSRF on the session cookie only).
    const viaCookie = await h.call('/fetch/P', { headers: { cookie }, body: {} });
    assert.equal(viaCookie.status, 200, viaCookie.text);

    const grant = await h.db.query<{
      kind: string;
      client_id: string;
      scope: string[] | null;
      expires_at: Date | null;
    }>('SELECT kind, client_id, scope, expires_at FROM api_tokens WHERE partition_id = $1 AND id = $2', [
      h.partitionId,
      c.tid,
    ]);
    assert.deepEqual(grant.rows[0], {
      kind: 'oauth',
      client_id: 'public-app',
      scope: null,
      expires_at: null,
    });
  });

  test('code flow with PKCE plain and a client secret (Basic); the token lifetime of the client', async () => {
    const t = await flow({ clientId: 'secret-app', secret: 's3cret value', pkce: 'plain' });
    assert.equal(t.expires_in, 600);
    const c = claimsOf(t.access_token);
    assert.equal(c.exp - c.iat, 600);
    assert.equal(
      (await h.call('/fetch/P', { headers: { authorization: `Bearer ${t.access_token}` }, body: {} })).status,
      200,
    );
  });

  test('client secret in the form (client_secret_post), and without PKCE', async () => {
    const t = await flow({ clientId: 'secret-app', secret: 's3cret value', auth: 'post', pkce: 'none' });
    assert.equal(t.token_type, 'bearer');
    const pub = await flow({ pkce: 'none' });
    assert.equal(claimsOf(pub.access_token).knd, 'oauth');
  });

  test('a confidential client that does not authenticate gets invalid_client (401)', async () => {
    const wrongBasic = await authorize({ clientId: 'secret-app', secret: 'wrong' });
    const e1 = await tokenError(await wrongBasic.exchange(), wrongBasic.client);
    assert.equal(e1.status, 401);
    assert.equal(e1.error, 'invalid_client');
    assert.match(String(e1.challenge), /^Basic /);
    const wrongPost = await authorize({ clientId: 'secret-app', secret: 'wrong', auth: 'post' });
    const e2 = await tokenError(await wrongPost.exchange(), wrongPost.client);
    assert.deepEqual([e2.status, e2.error], [401, 'invalid_client']);
    const none = await authorize({ clientId: 'secret-app' });
    const e3 = await tokenError(await none.exchange(), none.client);
    assert.deepEqual([e3.status, e3.error], [401, 'invalid_client']);
    // A public client presenting a secret it does not have is refused too.
    const pub = await authorize({ secret: 'made-up' });
    assert.equal((await tokenError(await pub.exchange())).error, 'invalid_client');
  });

  test('a wrong PKCE verifier, or none, is invalid_grant', async () => {
    const a = await authorize();
    const res = await oauth.authorizationCodeGrantRequest(
      as,
      a.client,
      a.clientAuth,
      a.callback,
      REDIRECT,
      oauth.generateRandomCodeVerifier(),
      insecure,
    );
    assert.equal((await tokenError(res)).error, 'invalid_grant');
    const b = await authorize();
    const none = await oauth.authorizationCodeGrantRequest(
      as,
      b.client,
      b.clientAuth,
      b.callback,
      REDIRECT,
      oauth.nopkce,
      insecure,
    );
    assert.equal((await tokenError(none)).error, 'invalid_grant');
    // A verifier for a request that had no challenge (downgrade) is refused as well.
    const c = await authorize({ pkce: 'none' });
    const extra = await oauth.authorizationCodeGrantRequest(
      as,
      c.client,
      c.clientAuth,
      c.callback,
      REDIRECT,
      oauth.generateRandomCodeVerifier(),
      insecure,
    );
    assert.equal((await tokenError(extra)).error, 'invalid_grant');
  });

  test('a code used twice is invalid_grant and revokes the tokens issued for it', async () => {
    const a = await authorize();
    const t = await oauth.processAuthorizationCodeResponse(as, a.client, await a.exchange());
    const bearer = { authorization: `Bearer ${t.access_token}` };
    assert.equal((await h.call('/fetch/P', { headers: bearer, body: {} })).status, 200);
    const again = await tokenError(await a.exchange());
    assert.equal(again.error, 'invalid_grant');
    assert.match(String(again.description), /already used/);
    const after = await h.call('/fetch/P', { headers: bearer, body: {} });
    assert.deepEqual([after.status, after.body.response.status], [401, -7]);
    const refreshed = await oauth.refreshTokenGrantRequest(
      as,
      a.client,
      a.clientAuth,
      t.refresh_token!,
      insecure,
    );
    await assert.rejects(oauth.processRefreshTokenResponse(as, a.client, refreshed), (e: unknown) => {
      assert.ok(e instanceof oauth.ResponseBodyError);
      assert.equal(e.error, 'invalid_grant');
      return true;
    });
  });

  test("another client's try does not spend a code: its own client exchanges it after", async () => {
    const a = await authorize({ clientId: 'secret-app', secret: 's3cret value' });
    const thief = { client_id: 'scoped-app' };
    const stolen = await oauth.authorizationCodeGrantRequest(
      as,
      thief,
      oauth.None(),
      a.callback,
      REDIRECT,
      oauth.generateRandomCodeVerifier(),
      insecure,
    );
    const refused = await tokenError(stolen, thief);
    assert.equal(refused.error, 'invalid_grant');
    assert.match(String(refused.description), /issued to another client/);
    const t = await oauth.processAuthorizationCodeResponse(as, a.client, await a.exchange());
    assert.ok(t.access_token);
    // Its own client's refused exchange spends it, and says no more than that.
    const b = await authorize();
    assert.equal((await tokenError(await b.exchange(OTHER_REDIRECT))).error, 'invalid_grant');
    const spent = await tokenError(await b.exchange());
    assert.equal(spent.error, 'invalid_grant');
    assert.equal(spent.description, 'authorization code already used');
  });

  test('an expired code is invalid_grant', async () => {
    const a = await authorize();
    const code = a.callback.get('code')!;
    const { createHash } = await import('node:crypto');
    await h.db.query(
      `UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE partition_id = $1 AND code_hash = $2`,
      [h.partitionId, createHash('sha256').update(code).digest('hex')],
    );
    const e = await tokenError(await a.exchange());
    assert.equal(e.error, 'invalid_grant');
    assert.match(String(e.description), /unknown or expired/);
  });

  test('redirect_uri: a wrong one at the token endpoint is invalid_grant', async () => {
    const a = await authorize();
    assert.equal((await tokenError(await a.exchange(OTHER_REDIRECT))).error, 'invalid_grant');
  });

  /** The error envelope of an authorization request refused before any redirect: 400/-4 naming `param`. */
  const refusedAs = (r: Step, param: string, text: RegExp) => {
    assert.equal(r.status, 400);
    assert.equal(r.location, null);
    assert.match(r.headers.get('content-type')!, /^application\/json/);
    const body = JSON.parse(r.html);
    assert.equal(body.response.status, -4);
    assert.match(body.response.errors[param].errorMessage, text);
  };

  test('a redirect_uri other than the registered one is the error envelope, never a redirect', async () => {
    const r = await open({
      response_type: 'code',
      client_id: 'public-app',
      redirect_uri: OTHER_REDIRECT,
      state: 's',
    });
    refusedAs(r, 'redirect_uri', /is not the one registered/);
    // Even when the rest is wrong too: the redirect URI decides first.
    const both = await open({
      response_type: 'token',
      client_id: 'public-app',
      redirect_uri: 'https://evil.example/',
    });
    assert.equal(both.status, 400);
    assert.equal(both.location, null);
  });

  test('an unknown or missing client is the error envelope, never a redirect', async () => {
    const r = await open({ response_type: 'code', client_id: 'nobody', redirect_uri: REDIRECT, state: 's' });
    refusedAs(r, 'client_id', /no application with client_id "nobody" is registered/);
    refusedAs(await open({ response_type: 'code', redirect_uri: REDIRECT }), 'client_id', /is missing/);
    // An unknown partition is the envelope too (404/-1), never a page.
    const nowhere = await fetch(
      authorizeUrl({ client_id: 'public-app' }).replace(`/${h.partition}/`, '/nowhere/'),
      {
        redirect: 'manual',
      },
    );
    assert.equal(nowhere.status, 404);
    assert.equal(((await nowhere.json()) as any).response.status, -1);
    const token = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: 'x',
        client_id: 'nobody',
        redirect_uri: REDIRECT,
      }),
    });
    assert.equal(token.status, 401);
    assert.equal(((await token.json()) as any).error, 'invalid_client');
  });

  test('errors after the client checks go back to the client by redirect, with state', async () => {
    const client = { client_id: 'public-app' };
    const expectError = async (params: Record<string, string>, error: string) => {
      const r = await open({ client_id: 'public-app', redirect_uri: REDIRECT, state: 'st-1', ...params });
      assert.equal(r.status, 302, r.html);
      const url = new URL(r.location!);
      assert.equal(`${url.origin}${url.pathname}`, REDIRECT);
      assert.equal(url.searchParams.get('error'), error);
      assert.equal(url.searchParams.get('state'), 'st-1');
      assert.ok(url.searchParams.get('error_description'));
      assert.throws(
        () => oauth.validateAuthResponse(as, client, url, 'st-1'),
        (e: unknown) => e instanceof oauth.AuthorizationResponseError && e.error === error,
      );
    };
    await expectError({ response_type: 'token' }, 'unsupported_response_type');
    await expectError({}, 'invalid_request');
    await expectError(
      { response_type: 'code', code_challenge: 'a'.repeat(43), code_challenge_method: 'S512' },
      'invalid_request',
    );
    await expectError(
      { response_type: 'code', code_challenge: 'short', code_challenge_method: 'S256' },
      'invalid_request',
    );
    await expectError({ response_type: 'code', code_challenge_method: 'S256' }, 'invalid_request');
    const dup = await fetch(
      `${authorizeUrl({ response_type: 'code', client_id: 'public-app', state: 'x' })}&state=y`,
      {
        redirect: 'manual',
      },
    );
    assert.equal(new URL(dup.headers.get('location')!).searchParams.get('error'), 'invalid_request');
  });

  test('the user denies consent: access_denied', async () => {
    const url = await consent(
      { response_type: 'code', client_id: 'public-app', redirect_uri: REDIRECT, state: 'deny-me' },
      { decision: 'deny' },
    );
    assert.equal(url.searchParams.get('error'), 'access_denied');
    assert.equal(url.searchParams.get('state'), 'deny-me');
    assert.equal(url.searchParams.get('code'), null);
  });

  test('a client with a SAML profile: "not configured", clearly', async () => {
    const r = await open({
      response_type: 'code',
      client_id: 'saml-app',
      redirect_uri: REDIRECT,
      state: 's',
    });
    assert.equal(r.status, 302);
    const url = new URL(r.location!);
    assert.equal(url.searchParams.get('error'), 'server_error');
    assert.match(url.searchParams.get('error_description')!, /SAML profile "corporate-idp".*not configured/);
  });

  describe('scope rules', () => {
    test('the rules as a function', () => {
      assert.deepEqual(effectiveScope(undefined, 'USER_FETCH,PRODUCT_EDIT'), {
        scope: ['USER_FETCH', 'PRODUCT_EDIT'],
      });
      assert.deepEqual(effectiveScope('PRODUCT_EDIT USER_FETCH', null), {
        scope: ['USER_FETCH', 'PRODUCT_EDIT'],
      });
      assert.deepEqual(effectiveScope(undefined, null), { scope: null });
      assert.deepEqual(effectiveScope('', null), { scope: null });
      assert.deepEqual(effectiveScope('PRODUCT_EDIT CUSTOMER_EDIT', 'USER_FETCH,PRODUCT_EDIT'), {
        scope: ['PRODUCT_EDIT'],
      });
      assert.deepEqual(effectiveScope('USER_FETCH BOGUS user_fetch', null), { scope: ['USER_FETCH'] });
      // Rule 5: a scope of unknown names only counts as not given (then rules 1 to 3 decide).
      assert.deepEqual(effectiveScope('BOGUS', null), { scope: null });
      assert.deepEqual(effectiveScope('BOGUS', 'USER_FETCH'), { scope: ['USER_FETCH'] });
      assert.deepEqual(effectiveScope('USER_FETCH', 'BOGUS'), { scope: ['USER_FETCH'] });
      assert.deepEqual(effectiveScope(undefined, 'BOGUS'), { scope: null });
      // Rule 4 with nothing in common: an empty scope (no permission), never a widened one.
      assert.deepEqual(effectiveScope('CUSTOMER_EDIT', 'USER_FETCH'), { scope: [] });
    });

    test('1. no request scope, a default scope: the default applies', async () => {
      const t = await flow({ clientId: 'scoped-app' });
      assert.deepEqual(claimsOf(t.access_token).scp, ['USER_FETCH', 'PRODUCT_EDIT']);
      assert.equal(t.scope, 'USER_FETCH PRODUCT_EDIT');
      assert.deepEqual(await probe(t.access_token), { productEdit: 200, extensionFetch: 403 });
    });

    test('2. no default scope, a request scope: the request scope applies', async () => {
      const t = await flow({ scope: 'PRODUCTEXTENSION_FETCH' });
      assert.deepEqual(claimsOf(t.access_token).scp, ['PRODUCTEXTENSION_FETCH']);
      assert.deepEqual(await probe(t.access_token), { productEdit: 403, extensionFetch: 200 });
    });

    test('3. no scope anywhere: no scp claim, a normal session', async () => {
      const t = await flow();
      assert.equal(claimsOf(t.access_token).scp, undefined);
      assert.equal(t.scope, undefined);
      assert.deepEqual(await probe(t.access_token), { productEdit: 200, extensionFetch: 200 });
    });

    test('4. both: the intersection', async () => {
      const t = await flow({ clientId: 'scoped-app', scope: 'PRODUCT_EDIT PRODUCTEXTENSION_FETCH' });
      assert.deepEqual(claimsOf(t.access_token).scp, ['PRODUCT_EDIT']);
      assert.deepEqual(await probe(t.access_token), { productEdit: 200, extensionFetch: 403 });
    });

    test('5. invalid permission names are ignored', async () => {
      const t = await flow({ scope: 'NO_SUCH PRODUCT_EDIT,also-bad' });
      assert.deepEqual(claimsOf(t.access_token).scp, ['PRODUCT_EDIT']);
      assert.deepEqual(await probe(t.access_token), { productEdit: 200, extensionFetch: 403 });
      // Nothing but unknown names: as if no scope were asked (rule 3 here, rule 1 with a default).
      const none = await flow({ scope: 'NO_SUCH' });
      assert.equal(claimsOf(none.access_token).scp, undefined);
      const byDefault = await flow({ clientId: 'scoped-app', scope: 'NO_SUCH' });
      assert.deepEqual(claimsOf(byDefault.access_token).scp, ['USER_FETCH', 'PRODUCT_EDIT']);
      // A request scope outside the default: the intersection is empty, a token with no permission.
      const empty = await flow({ clientId: 'scoped-app', scope: 'CUSTOMER_EDIT' });
      assert.deepEqual(claimsOf(empty.access_token).scp, []);
      assert.deepEqual(await probe(empty.access_token), { productEdit: 403, extensionFetch: 403 });
    });

    test("6. the user's own permissions always apply: a scope cannot widen them", async () => {
      await h.newUser('scopeless', 'scopeless-password');
      const t = await flow({ scope: 'PRODUCT_EDIT', user: 'scopeless', password: 'scopeless-password' });
      assert.deepEqual(claimsOf(t.access_token).scp, ['PRODUCT_EDIT']);
      assert.deepEqual(await probe(t.access_token), { productEdit: 403, extensionFetch: 403 });
    });
  });

  test('refresh grant: a new access token; narrower scope on request; other clients refused', async () => {
    const a = await authorize({ scope: 'PRODUCT_EDIT PRODUCTEXTENSION_FETCH' });
    const t = await oauth.processAuthorizationCodeResponse(as, a.client, await a.exchange());
    const r1 = await oauth.processRefreshTokenResponse(
      as,
      a.client,
      await oauth.refreshTokenGrantRequest(as, a.client, a.clientAuth, t.refresh_token!, insecure),
    );
    assert.equal(r1.token_type, 'bearer');
    assert.equal(r1.expires_in, 7200);
    assert.equal(typeof r1.refresh_token, 'string');
    assert.deepEqual(claimsOf(r1.access_token).scp, ['PRODUCT_EDIT', 'PRODUCTEXTENSION_FETCH']);
    assert.equal(claimsOf(r1.access_token).tid, claimsOf(t.access_token).tid);
    assert.deepEqual(await probe(r1.access_token), { productEdit: 200, extensionFetch: 200 });

    const narrow = await oauth.processRefreshTokenResponse(
      as,
      a.client,
      await oauth.refreshTokenGrantRequest(as, a.client, a.clientAuth, t.refresh_token!, {
        ...insecure,
        additionalParameters: { scope: 'PRODUCTEXTENSION_FETCH' },
      }),
    );
    assert.deepEqual(claimsOf(narrow.access_token).scp, ['PRODUCTEXTENSION_FETCH']);
    const wider = await oauth.refreshTokenGrantRequest(as, a.client, a.clientAuth, t.refresh_token!, {
      ...insecure,
      additionalParameters: { scope: 'USER_EDIT' },
    });
    assert.equal((await tokenError(wider)).error, 'invalid_scope');
    const bogus = await oauth.processRefreshTokenResponse(
      as,
      a.client,
      await oauth.refreshTokenGrantRequest(as, a.client, a.clientAuth, t.refresh_token!, {
        ...insecure,
        additionalParameters: { scope: 'NO_SUCH' },
      }),
    );
    assert.deepEqual(claimsOf(bogus.access_token).scp, claimsOf(r1.access_token).scp); // rule 5: as if not given

    const other = { client_id: 'secret-app' };
    const stolen = await oauth.refreshTokenGrantRequest(
      as,
      other,
      oauth.ClientSecretBasic('s3cret value'),
      t.refresh_token!,
      insecure,
    );
    assert.equal((await tokenError(stolen, other)).error, 'invalid_grant');
    const forged = await oauth.refreshTokenGrantRequest(as, a.client, a.clientAuth, t.access_token, insecure);
    assert.equal((await tokenError(forged)).error, 'invalid_grant', 'an access token is no refresh token');

    // A password change ends the grant's tokens, refresh included.
    await h.newUser('changer', 'changer-password', ['ADMIN']);
    const c = await flow({ user: 'changer', password: 'changer-password' });
    await setUserPassword(h.db, h.partition, 'changer', 'changed-password', h.config.scryptCost);
    const afterChange = await oauth.refreshTokenGrantRequest(
      as,
      a.client,
      a.clientAuth,
      c.refresh_token!,
      insecure,
    );
    assert.equal((await tokenError(afterChange)).error, 'invalid_grant');
    // ... and a code issued before the change: it yields no tokens.
    const pending = await authorize({ user: 'changer', password: 'changed-password' });
    await setUserPassword(h.db, h.partition, 'changer', 'changed-again-1', h.config.scryptCost);
    const late = await tokenError(await pending.exchange());
    assert.deepEqual(
      [late.error, late.description],
      ['invalid_grant', "the user's credentials changed since the code was issued"],
    );
  });

  test('a grant is listed with the api tokens and revoking it ends its tokens', async () => {
    const t = await flow({ scope: 'PRODUCT_EDIT' });
    const tid = claimsOf(t.access_token).tid;
    const bearer = { authorization: `Bearer ${t.access_token}` };
    const listed = await h.call('/accountmanager.listjsonwebtokens', { headers: bearer });
    assert.equal(listed.status, 200, listed.text);
    const row = listed.body.response.data.find((r: any) => r.id === tid);
    assert.deepEqual(row.permissions, ['PRODUCT_EDIT']);
    assert.equal(
      (await h.call(`/accountmanager.revokejsonwebtoken/${tid}`, { headers: bearer })).status,
      200,
    );
    assert.equal((await h.call('/fetch/P', { headers: bearer, body: {} })).status, 401);
    const client = { client_id: 'public-app' };
    const refreshed = await oauth.refreshTokenGrantRequest(
      as,
      client,
      oauth.None(),
      t.refresh_token!,
      insecure,
    );
    assert.equal((await tokenError(refreshed)).error, 'invalid_grant');
  });

  test('a refresh token is never a credential', async () => {
    const t = await flow();
    const refresh = t.refresh_token!;
    const credentials: Record<string, string>[] = [
      { authorization: `Bearer ${refresh}` },
      { 'X-Ratecard-jwt': refresh },
      { cookie: `X-Ratecard-jwt=${refresh}` },
    ];
    for (const headers of credentials) {
      const r = await h.call('/fetch/P', { headers, body: {} });
      assert.deepEqual([r.status, r.body.response.status], [401, -7], JSON.stringify(Object.keys(headers)));
    }
  });

  test('token endpoint errors: RFC 6749 §5.2 JSON, never the envelope, never cached', async () => {
    const send = async (body: string, headers: Record<string, string> = {}) => {
      const r = await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body,
      });
      assert.equal(r.headers.get('cache-control'), 'no-store');
      return { status: r.status, body: (await r.json()) as any };
    };
    assert.deepEqual(await send('client_id=public-app&grant_type=password'), {
      status: 400,
      body: {
        error: 'unsupported_grant_type',
        error_description: 'grant types: authorization_code, refresh_token',
      },
    });
    assert.equal((await send('client_id=public-app')).body.error, 'invalid_request');
    assert.equal(
      (await send('client_id=public-app&grant_type=authorization_code')).body.error,
      'invalid_request',
    );
    assert.equal((await send('client_id=public-app&grant_type=refresh_token')).body.error, 'invalid_request');
    assert.equal(
      (await send('client_id=public-app&grant_type=authorization_code&code=a&code=b')).body.error,
      'invalid_request',
    );
    assert.equal(
      (await send('client_id=public-app&grant_type=authorization_code&code=nope')).body.error,
      'invalid_grant',
    );
    const json = await send(JSON.stringify({ client_id: 'public-app' }), {
      'content-type': 'application/json',
    });
    assert.deepEqual([json.status, json.body.error], [400, 'invalid_request']);
    const text = await send('x', { 'content-type': 'text/plain' });
    assert.deepEqual([text.status, text.body.error], [400, 'invalid_request']);
    const both = await send('client_id=secret-app&client_secret=x&grant_type=authorization_code&code=x', {
      authorization: `Basic ${Buffer.from('secret-app:s3cret+value').toString('base64')}`,
    });
    assert.equal(both.body.error, 'invalid_request', 'two client authentication methods at once');
  });

  describe('login form', () => {
    const params = { response_type: 'code', client_id: 'secret-app', redirect_uri: REDIRECT, state: 'L' };

    test('the login page: labelled fields, the client description escaped, a CSRF cookie', async () => {
      const r = await open(params);
      assert.equal(r.status, 200);
      assert.match(r.html, /<label for="username">User name<\/label>/);
      assert.match(r.html, /<label for="password">Password<\/label>/);
      assert.match(r.html, /Price &#60;Sync&#62; &#38; Co/);
      assert.match(r.headers.get('content-security-policy')!, /frame-ancestors 'none'/);
      assert.equal(r.headers.get('cache-control'), 'no-store');
      const set = r.headers.getSetCookie().join('\n');
      assert.match(set, /X-Ratecard-OAuth-Csrf=[^;]+;.*HttpOnly/i);
      assert.match(set, /SameSite=Lax/i);
      assert.match(set, new RegExp(`Path=/service/${h.partition}/oauth`));
    });

    test('forms without the CSRF cookie or with a wrong token are refused', async () => {
      const r = await open(params);
      const fields = { ...r.fields, username: ADMIN, password: ADMIN_PASSWORD };
      const noCookie = await post(fields, '');
      assert.equal(noCookie.status, 403);
      assert.match(noCookie.html, /expired/);
      const wrong = await post({ ...fields, csrf: 'x'.repeat(43) }, r.cookie);
      assert.equal(wrong.status, 403);
      const other = await open(params);
      const foreign = await post(fields, other.cookie.replace(/=.*/, `=${'A'.repeat(43)}`));
      assert.equal(foreign.status, 403);
    });

    test('wrong password and unknown user: the same message on the login page', async () => {
      const r = await open(params);
      const wrong = await post({ ...r.fields, username: ADMIN, password: 'nope' }, r.cookie);
      assert.equal(wrong.status, 422);
      assert.match(wrong.html, /role="alert">The user name or password is wrong\./);
      assert.match(wrong.html, /<label for="username">/);
      const ghost = await post({ ...r.fields, username: 'ghost', password: 'nope' }, r.cookie);
      assert.equal(ghost.status, 422);
      assert.match(ghost.html, /The user name or password is wrong\./);
      // A user name no user can have (NUL): the same page, not the database's refusal of the value.
      const nul = await post({ ...r.fields, username: 'ad\u0000min', password: 'nope' }, r.cookie);
      assert.equal(nul.status, 422);
      assert.match(nul.html, /The user name or password is wrong\./);
      await h.db.query(`DELETE FROM login_failures WHERE partition_id = $1`, [h.partitionId]);
    });

    test('the lock-out of Basic applies to the form', async () => {
      await h.newUser('locky', 'locky-password', ['ADMIN']);
      const r = await open(params);
      for (let i = 0; i < 3; i++) await post({ ...r.fields, username: 'locky', password: 'bad' }, r.cookie);
      const locked = await post({ ...r.fields, username: 'locky', password: 'locky-password' }, r.cookie);
      assert.equal(locked.status, 429);
      assert.match(locked.html, /Too many failed sign-ins/);
      const basic = await h.call('/login/extended', { basic: { user: 'locky', password: 'locky-password' } });
      assert.equal(basic.body.response.status, -6);
    });

    test('a consent cannot be replayed for another request (scope widened in the form)', async () => {
      const start = await open({ ...params, scope: 'USER_FETCH' });
      const page = await post({ ...start.fields, username: ADMIN, password: ADMIN_PASSWORD }, start.cookie);
      assert.match(page.html, /<code>USER_FETCH<\/code>/);
      const tampered = await post(
        { ...page.fields, scope: 'USER_FETCH USER_EDIT', decision: 'allow' },
        start.cookie,
      );
      assert.equal(tampered.status, 422);
      assert.equal(tampered.location, null);
      assert.match(tampered.html, /sign-in has expired/);
      const forged = await post({ ...page.fields, proof: 'x.y.z', decision: 'allow' }, start.cookie);
      assert.equal(forged.status, 422);
    });

    test('two-factor authentication: the form asks for the code', async () => {
      await h.newUser('tfa-user', 'tfa-password', ['ADMIN']);
      const secret = generateSecret();
      await h.db.query(
        `UPDATE users SET tfa_secret = $2, tfa_enabled = true WHERE partition_id = $1 AND login_name = 'tfa-user'`,
        [h.partitionId, secret],
      );
      const start = await open(params);
      const tfa = await post(
        { ...start.fields, username: 'tfa-user', password: 'tfa-password' },
        start.cookie,
      );
      assert.equal(tfa.status, 200);
      assert.match(tfa.html, /<label for="tfa_code">Authentication code<\/label>/);
      assert.doesNotMatch(tfa.html, /Allow access/);
      const bad = await post({ ...tfa.fields, tfa_code: '000000' }, start.cookie);
      assert.equal(bad.status, 422);
      assert.match(bad.html, /code is wrong/);
      const good = await post({ ...bad.fields, tfa_code: await generate({ secret }) }, start.cookie);
      assert.equal(good.status, 200, good.html);
      assert.match(good.html, /Allow access\?/);
      assert.match(good.html, /tfa-user/);
      const done = await post({ ...good.fields, decision: 'allow' }, start.cookie);
      assert.equal(done.status, 303);
      assert.ok(new URL(done.location!).searchParams.get('code'));
    });
  });
});

describe('OAUTH_CONFIGURATION setting', () => {
  const load = (value: string) => loadConfig({ OAUTH_CONFIGURATION: value, DATA_DIR: ':memory:' });

  test('JSON or a file; defaults', () => {
    assert.equal(loadConfig({}).oauthConfiguration.knownClients.size, 0);
    const c = load(
      JSON.stringify({ knownClients: { a: { redirect_uri: 'https://app.example/cb', defaultScope: null } } }),
    );
    assert.deepEqual(c.oauthConfiguration.knownClients.get('a'), {
      clientId: 'a',
      redirectUri: 'https://app.example/cb',
      tokenExpiry: 7200,
      clientSecret: null,
      description: null,
      defaultScope: null,
      samlProfile: null,
    });
    const dir = mkdtempSync(join(tmpdir(), 'oauth-config-'));
    try {
      const file = join(dir, 'oauth.json');
      writeFileSync(
        file,
        JSON.stringify({ knownClients: { b: { redirect_uri: 'myapp:/cb', samlProfile: 'p' } } }),
      );
      assert.equal(load(file).oauthConfiguration.knownClients.get('b')!.samlProfile, 'p');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('bad values stop the start with a message naming the setting', () => {
    const refused = (value: string, message: RegExp) =>
      assert.throws(
        () => load(value),
        (e: unknown) =>
          e instanceof ConfigError && /^OAUTH_CONFIGURATION: /.test(e.message) && message.test(e.message),
      );
    refused('{"knownClients": ', /invalid JSON/);
    refused('/no/such/file.json', /not JSON and not a readable file/);
    refused('{"knownClients": {"x": {}}}', /knownClients\.x\.redirect_uri is required/);
    refused('{"knownClients": {"x": {"redirect_uri": "relative/cb"}}}', /absolute URI/);
    refused('{"knownClients": {"x": {"redirect_uri": "https://a/cb#f"}}}', /fragment/);
    refused(
      '{"knownClients": {"x": {"redirect_uri": "https://a/cb", "token_expiry": "1h"}}}',
      /token_expiry/,
    );
    refused('{"knownClients": []}', /knownClients must be an object/);
  });
});
