// Builds the Fastify app from the modules, without listening: main.ts starts it, tests use it.
// The flow of a partition request: route → authenticate (onRequest) → validate body → handler
// (one service call, one transaction) → envelope; every failure goes through handleError.

import { randomUUID } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerOptions,
} from 'fastify';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import rateLimit from '@fastify/rate-limit';
import type { Config } from './config.ts';
import type { Db } from './db/db.ts';
import { enterDeadline } from './db/deadline.ts';
import { learnColumns } from './db/columns.ts';
import { configureHistory, enterHistoryOrigin } from './engine/history.ts';
import { enterPatternScope } from './engine/criteria/patterns.ts';
import { authenticate } from './auth/authenticate.ts';
import { AppError, validationError } from './http/errors.ts';
import { MAX_PATH_PARAM, errorEnvelopeSchema, handleError } from './http/envelope.ts';
import { clientErrorHandler } from './http/client-error.ts';
import { registerMetrics } from './http/metrics.ts';
import { registerOps } from './http/ops.ts';
import { treatNullAsAbsent } from './http/null-absent.ts';
import { splitLoadBody } from './http/json-rows.ts';
import { mayHoldInexactNumbers, parseJsonExact } from './http/json-numbers.ts';
import { COMPONENT_SCHEMAS, documentRoute } from './http/openapi.ts';
import { RELEASE } from './release.ts';
import { accountRoutes } from './modules/accounts/routes.ts';
import { tokenRoutes } from './modules/accounts/token-routes.ts';
import { generalRoutes } from './modules/general/routes.ts';
import { loaddataRoutes } from './modules/general/loaddata-routes.ts';
import { describeRoutes } from './modules/general/describe-routes.ts';
import { lookupTableRoutes } from './modules/lookuptables/routes.ts';
import { masterdataRoutes } from './modules/masterdata/routes.ts';
import { oauthRoutes } from './modules/oauth/routes.ts';
import { jobRoutes } from './jobs/routes.ts';
import { historyRoutes } from './modules/history/routes.ts';
import { filesRoutes } from './modules/files/routes.ts';
import { adminIndexRoutes } from './modules/admin/indexes.ts';
import { notificationRoutes } from './modules/notifications/routes.ts';
import { tokenV2Routes } from './modules/tokenv2/routes.ts';
import { dcrRoutes } from './modules/dcr/routes.ts';
import { importRoutes } from './modules/imports/routes.ts';
import { formulaRoutes } from './modules/formulas/routes.ts';
import { conditionRecordRoutes } from './modules/conditionrecords/routes.ts';
import { queryRoutes } from './modules/query/routes.ts';
import { workflowRoutes } from './modules/workflows/routes.ts';
import { rebateRoutes } from './modules/rebates/routes.ts';
import { calcGridRoutes } from './modules/calcgrids/routes.ts';

/** A `lazyRows` route's body from this size on (characters) has its rows parsed as they are read. */
const LAZY_ROWS_FROM = 256 * 1024;

export type PartitionModule = (scope: FastifyInstance) => void;

/** Every partition module: each registers its routes, and each route declares its `access`. */
export const PARTITION_MODULES: readonly PartitionModule[] = [
  accountRoutes,
  tokenRoutes,
  generalRoutes,
  loaddataRoutes,
  describeRoutes,
  masterdataRoutes,
  oauthRoutes,
  lookupTableRoutes,
  jobRoutes,
  filesRoutes,
  adminIndexRoutes,
  notificationRoutes,
  tokenV2Routes,
  dcrRoutes,
  importRoutes,
  formulaRoutes,
  conditionRecordRoutes,
  historyRoutes,
  queryRoutes,
  workflowRoutes,
  rebateRoutes,
  calcGridRoutes,
];

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** The operation of a request for record history: its path after `<basePath>/<partition>`. */
function operationOf(url: string, basePath: string): string {
  const path = url.split('?')[0]!;
  const rest = path.startsWith(`${basePath}/`) ? path.slice(basePath.length + 1) : path;
  const slash = rest.indexOf('/');
  return (slash < 0 ? rest : rest.slice(slash + 1)).slice(0, 200);
}

export interface AppDeps {
  readonly config: Config;
  readonly db: Db;
  /** Fastify logger options; defaults to JSON logs at the configured level. */
  readonly logger?: FastifyServerOptions['logger'];
  /** The modules served under each partition; all of them unless given. */
  readonly modules?: readonly PartitionModule[];
}

export async function buildApp({
  config,
  db,
  logger,
  modules = PARTITION_MODULES,
}: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: logger ?? { level: config.logLevel },
    // One line per request, written by our onResponse hook with partition and user.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.maxBodyBytes,
    // Fastify sets no limit by default: a client that stops sending in the middle of a request would
    // hold its connection for ever. Silence in both directions closes it (IDLE_TIMEOUT_SECONDS).
    connectionTimeout: config.idleTimeoutSeconds * 1000,
    trustProxy: config.trustProxy,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Unknown fields are errors, and types are not silently converted: the conventions ask for -4.
    // allowUnionTypes: bodies are `type: ['object', 'null']` (a client may send `null` for "none"),
    // which Ajv's strict mode would otherwise report on stderr at start-up.
    ajv: {
      customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false, allowUnionTypes: true },
    },
    return503OnClosing: true,
    // A request Node's parser refuses (headers too large, a bad request line): the envelope too.
    clientErrorHandler: clientErrorHandler(config.nodeId),
    // Path parameters hold SKUs and names of up to 255 characters (Fastify's default is 100).
    routerOptions: { maxParamLength: MAX_PATH_PARAM },
    // A URL the router cannot take (bad percent-encoding, a parameter past the limit): the envelope.
    frameworkErrors: (err, req, reply) => {
      const r = reply as FastifyReply;
      void r.header('x-request-id', req.id).send(handleError(err, req, r));
    },
  });
  configureHistory({ enabled: config.recordHistory });
  await learnColumns(db);
  app.decorate('config', config);
  app.decorate('db', db);
  app.decorateRequest('principal', null);
  app.decorateRequest('partitionRef', null);
  app.decorateRequest('issuedCsrfToken', undefined);

  // JSON comes as application/json; text/plain would reach the operations as a string (a misleading
  // "must be object"): 415 like any other content type they do not take. The file routes take raw
  // bodies of any type in their own scope.
  app.removeContentTypeParser('text/plain');
  // An empty JSON body is "no body" (clients POST operations without a payload), not an error.
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // JSON text is UTF-8: bytes that are not (decoded, they would be stored as U+FFFD) are malformed.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, function parseJson(req, body, done) {
    const bytes = body as Buffer;
    if (!isUtf8(bytes)) {
      return done(new AppError('VALIDATION', 'Malformed JSON body: not UTF-8', { field: 'body' }), undefined);
    }
    const text = bytes.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    // A large load's rows are parsed as the load reads them (src/http/json-rows.ts).
    const lazy =
      req.routeOptions.config.lazyRows === true && text.length >= LAZY_ROWS_FROM
        ? splitLoadBody(text)
        : undefined;
    // Text that may hold numbers a double cannot (json-numbers.ts) keeps them exact; a text that
    // fails to parse so gets the default parser's error.
    const parse = (json: string, next: (err: Error | null, body?: unknown) => void): void => {
      const then = (err: Error | null, body?: unknown) => next(err && prototypeKeys(json, err), body);
      if (mayHoldInexactNumbers(json)) {
        let body: unknown;
        try {
          body = parseJsonExact(json);
        } catch {
          return void defaultJson(req, json, then);
        }
        return then(null, body);
      }
      return void defaultJson(req, json, then);
    };
    if (lazy === undefined) return parse(text, done);
    parse(lazy.envelope, (err, body) => {
      if (err) return done(err, undefined);
      (body as { data: { data: unknown[] } }).data.data = lazy.rows;
      done(null, body);
    });
  });

  /**
   * A JSON text refused by the parser that JSON.parse takes is well formed: its fault is a key objects
   * would take as their prototype (`__proto__`, `constructor.prototype`), refused against prototype
   * pollution — said so, rather than "malformed" (the parser's error does not tell the two apart).
   */
  function prototypeKeys(json: string, err: Error): Error {
    try {
      JSON.parse(json);
    } catch {
      return err;
    }
    return validationError(
      'body',
      'holds a "__proto__" or "constructor": {"prototype": ...} key, which is refused',
    );
  }

  app.setErrorHandler(function onError(err, req, reply) {
    return reply.send(handleError(err, req, reply));
  });
  app.setNotFoundHandler(function onNotFound(req, reply) {
    return reply.send(
      handleError(
        new AppError('ROUTE_NOT_FOUND', `Unknown operation ${req.method} ${req.url.split('?')[0]}`),
        req,
        reply,
      ),
    );
  });

  app.addHook('onRequest', function requestScope(req, reply, done) {
    void reply.header('x-request-id', req.id);
    // Every transaction of this request must commit within the synchronous time-out (503/-100).
    enterDeadline(config.syncTimeoutSeconds * 1000);
    // Record history names the request and its operation (the path after the partition).
    enterHistoryOrigin({ requestId: req.id, operation: operationOf(req.url, config.basePath) });
    // A pattern the database refuses names the fields the request's criteria test with it.
    enterPatternScope();
    // Bodies are read as sent: a compressed one was misread as malformed JSON, and one labelled as
    // compressed but sent plain was taken as it was. A content coding other than identity is refused.
    const coding = req.headers['content-encoding'];
    if (coding !== undefined && !/^\s*(?:identity)?\s*$/i.test(coding)) {
      return done(
        new AppError(
          'UNSUPPORTED_MEDIA_TYPE',
          'Content-Encoding is not supported: send the body uncompressed',
          {
            field: 'Content-Encoding',
          },
        ),
      );
    }
    done();
  });
  // While draining for shutdown, answers close their connection so keep-alive clients let go at once.
  let closing = false;
  app.addHook('preClose', function markClosing(done) {
    closing = true;
    done();
  });
  app.addHook('onSend', function closeWhenDraining(_req, reply, payload, done) {
    if (closing) void reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onResponse', function logRequest(req, reply, done) {
    req.log.info(
      {
        partition: req.partitionRef?.name,
        user: req.principal?.loginName,
        method: req.method,
        route: req.routeOptions.url ?? 'unmatched',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
      },
      'request',
    );
    done();
  });

  await app.register(cookie);
  if (config.rateLimitPerMinute > 0) {
    await app.register(rateLimit, {
      // Not per route (the plugin's own hooks would run after the partition scope's authentication,
      // so requests without or with bad credentials went uncounted): one hook for every request,
      // before anything else looks at it.
      global: false,
      max: config.rateLimitPerMinute,
      timeWindow: 60_000,
      errorResponseBuilder: () => new AppError('RATE_LIMITED'),
    });
    app.addHook('onRequest', app.rateLimit());
  }
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Ratecard API',
        version: RELEASE,
        description: 'Pricing-management REST API',
        license: { name: 'Proprietary (UNLICENSED)' },
      },
      // Paths are absolute (base path and partition included): the server is this one.
      servers: [{ url: '/', description: 'this Ratecard server' }],
      components: {
        schemas: { ...COMPONENT_SCHEMAS },
        securitySchemes: {
          basic: { type: 'http', scheme: 'basic' },
          session: { type: 'apiKey', in: 'header', name: `X-${config.productToken}-jwt` },
        },
      },
      security: [{ basic: [] }, { session: [] }],
    },
    transform: documentRoute(config.basePath),
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  registerMetrics(app);
  registerOps(app);

  await app.register(
    function partitionScope(scope, _opts, done) {
      scope.addHook('onRoute', function requireAccess(route) {
        if (route.config?.access === undefined) throw new Error(`route ${route.url} declares no access`);
        treatNullAsAbsent(route);
        route.schema = {
          ...route.schema,
          response: {
            400: errorEnvelopeSchema,
            401: errorEnvelopeSchema,
            403: errorEnvelopeSchema,
            ...(route.schema?.response as object),
          },
        };
      });
      scope.addHook('onRequest', authenticate);
      for (const mod of modules) mod(scope);
      done();
    },
    { prefix: `${config.basePath}/:partition` },
  );
  return app;
}
