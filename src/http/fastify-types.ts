// What Ratecard adds to Fastify's types: the shared infrastructure decorators and per-route config.

import type {} from '@fastify/cookie';
import type {} from '@fastify/swagger';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import type { Principal } from '../access/access.ts';
import type { RouteAccess } from '../access/catalogue.ts';

export interface PartitionRef {
  readonly id: number;
  readonly name: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    db: Db;
  }
  interface FastifyRequest {
    /** Set by authentication on partition routes; null elsewhere. */
    principal: Principal | null;
    /** The partition of the path, once it was found. */
    partitionRef: PartitionRef | null;
    /** A CSRF token to hand out in this response's envelope (first response after authentication). */
    issuedCsrfToken: string | undefined;
  }
  interface FastifyContextConfig {
    /** What the route needs: a permission, AUTHENTICATED or PUBLIC. Required on partition routes. */
    access?: RouteAccess;
    /** `basic`: only Basic credentials are accepted (token operations need real credentials). */
    credentials?: 'basic';
    /**
     * The route changes state even when called with GET (or HEAD): a session cookie needs the CSRF
     * header on every method, not only on those other than GET/HEAD.
     */
    changesState?: true;
    /**
     * A large body's `data.data` (a load's rows) is parsed row piece by row piece as it is read
     * (src/http/json-rows.ts); only for a handler that reads the rows in order, inside the writes
     * that a malformed row must undo.
     */
    lazyRows?: true;
  }
}
