// OAuth 2.0 endpoints of a partition: GET/POST {base}/oauth/authorize (browser pages), POST
// {base}/oauth/token (form-encoded, RFC 6749 JSON answers, not the envelope) and the RFC 8414
// metadata. One encapsulated plugin: the form-body parser and the error handler below apply to
// these routes only. All are PUBLIC: the authentication hook only checks that the partition exists.

import formbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PUBLIC } from '../../access/catalogue.ts';
import { handleError, toAppError } from '../../http/envelope.ts';
import { contentSecurityPolicy } from './pages.ts';
import { continueAuthorization, startAuthorization, type BrowserOutcome } from './authorize.ts';
import { CSRF_COOKIE_SECONDS } from './browser-state.ts';
import { metadata } from './metadata.ts';
import type { OAuthContext } from './store.ts';
import { exchangeToken, type TokenOutcome } from './token.ts';

const csrfCookieName = (req: FastifyRequest): string => `X-${req.server.config.productToken}-OAuth-Csrf`;

function contextOf(req: FastifyRequest): OAuthContext {
  const config = req.server.config;
  const partition = req.partitionRef!;
  return {
    db: req.server.db,
    config,
    log: req.log,
    partitionId: partition.id,
    partition: partition.name,
    issuer: `${req.protocol}://${req.host}${config.basePath}/${partition.name}`,
  };
}

/** Headers of every page: not cached (they hold CSRF tokens), never framed, no referrer leaks. */
function pageHeaders(reply: FastifyReply, formTargets: readonly string[]): FastifyReply {
  return reply
    .header('cache-control', 'no-store')
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', contentSecurityPolicy(formTargets))
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer');
}

function sendBrowser(req: FastifyRequest, reply: FastifyReply, outcome: BrowserOutcome): FastifyReply {
  if (outcome.kind === 'error') return reply.send(handleError(outcome.error, req, reply));
  if (outcome.kind === 'redirect') {
    // 303 after a form POST, so the browser follows with a GET (RFC 9700 §4.12); 302 otherwise.
    return reply
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer')
      .redirect(outcome.location, req.method === 'POST' ? 303 : 302);
  }
  if (outcome.csrfNonce !== undefined) {
    const config = req.server.config;
    void reply.setCookie(csrfCookieName(req), outcome.csrfNonce, {
      path: `${config.basePath}/${req.partitionRef!.name}/oauth`,
      httpOnly: true,
      sameSite: 'lax',
      secure: req.protocol === 'https',
      maxAge: CSRF_COOKIE_SECONDS,
    });
  }
  return pageHeaders(reply, outcome.formTargets).code(outcome.status).send(outcome.html);
}

function sendToken(reply: FastifyReply, outcome: TokenOutcome): FastifyReply {
  // RFC 6749 §5.1: answers holding tokens (and their errors) are never cached.
  void reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
  if (outcome.kind === 'tokens') return reply.code(200).send(outcome.body);
  if (outcome.challenge) void reply.header('www-authenticate', 'Basic realm="oauth", charset="UTF-8"');
  return reply.code(outcome.status).send(outcome.body);
}

const oauthError = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string' }, error_description: { type: 'string' } },
} as const;

const tokenResponses = {
  200: {
    type: 'object',
    required: ['access_token', 'token_type', 'expires_in', 'refresh_token'],
    properties: {
      access_token: { type: 'string' },
      token_type: { type: 'string', enum: ['bearer'] },
      expires_in: { type: 'integer' },
      refresh_token: { type: 'string' },
      scope: { type: 'string' },
    },
  },
  400: oauthError,
  401: oauthError,
};

/**
 * Failures before a handler runs (unknown partition, a body that cannot be parsed): an RFC 6749
 * error for the token endpoint, the envelope otherwise (the conventions: never an HTML error page).
 * Only a sign-in form of ours sent back wrong (expired, tampered) is answered with a page of the
 * sign-in flow, where the person using it is.
 */
function oauthErrorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const e = toAppError(err);
  const url = req.routeOptions.url ?? '';
  if (url.endsWith('/oauth/token') && (e.http === 400 || e.http === 415)) {
    return sendToken(reply, {
      kind: 'error',
      status: 400,
      body: {
        error: 'invalid_request',
        error_description:
          e.http === 415 ? 'send the parameters as application/x-www-form-urlencoded' : 'malformed request',
      },
      challenge: false,
    });
  }
  return reply.send(handleError(err, req, reply));
}

export function oauthRoutes(scope: FastifyInstance): void {
  void scope.register(async function oauthPlugin(app) {
    // Form bodies for these routes only: the rest of the API speaks JSON.
    await app.register(formbody);
    app.setErrorHandler(oauthErrorHandler);
    const tags = ['oauth'];

    app.get(
      '/oauth/authorize',
      {
        config: { access: PUBLIC },
        schema: { summary: 'OAuth 2.0 authorization endpoint (login page)', tags },
      },
      async (req, reply) =>
        sendBrowser(
          req,
          reply,
          await startAuthorization(contextOf(req), req.query, req.cookies[csrfCookieName(req)]),
        ),
    );
    app.post(
      '/oauth/authorize',
      { config: { access: PUBLIC }, schema: { summary: 'Login, two-factor and consent forms', tags } },
      async (req, reply) =>
        sendBrowser(
          req,
          reply,
          await continueAuthorization(contextOf(req), req.body, req.cookies[csrfCookieName(req)]),
        ),
    );
    app.post(
      '/oauth/token',
      {
        config: { access: PUBLIC },
        schema: {
          summary: 'OAuth 2.0 token endpoint (authorization_code, refresh_token)',
          tags,
          response: tokenResponses,
        },
      },
      async (req, reply) =>
        sendToken(
          reply,
          await exchangeToken(
            contextOf(req),
            req.headers['content-type'],
            req.body,
            req.headers.authorization,
          ),
        ),
    );
    app.get(
      '/.well-known/oauth-authorization-server',
      {
        config: { access: PUBLIC },
        schema: {
          summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
          tags,
          response: { 200: { type: 'object', additionalProperties: true } },
        },
      },
      (req, reply) => reply.header('cache-control', 'public, max-age=300').send(metadata(contextOf(req))),
    );
  });
}
