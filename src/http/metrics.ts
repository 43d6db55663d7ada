// Prometheus metrics: request counts and latency by route and status, and database pool use.
// One registry per app, so several apps in one process (tests) never share counters.

import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type {} from './fastify-types.ts';

export function registerMetrics(app: FastifyInstance): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'ratecard_' });
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'ratecard_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'ratecard_http_request_duration_seconds',
    help: 'HTTP request latency by route and status',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  new Gauge({
    name: 'ratecard_db_pool_connections',
    help: 'Database pool connections by state',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const s = app.db.poolStats();
      this.set({ state: 'total' }, s.total);
      this.set({ state: 'idle' }, s.idle);
      this.set({ state: 'waiting' }, s.waiting);
    },
  });

  app.addHook('onResponse', function recordMetrics(req, reply, done) {
    // The route pattern, never the raw URL, keeps label cardinality bounded.
    const labels = {
      method: req.method,
      route: req.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    };
    requests.inc(labels);
    latency.observe(labels, reply.elapsedTime / 1000);
    done();
  });

  app.get('/metrics', { schema: { hide: true } }, async function metrics(_req, reply) {
    void reply.type(registry.contentType);
    return registry.metrics();
  });
}
