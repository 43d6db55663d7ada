// Operational endpoints outside partitions: liveness, readiness, and the OpenAPI document.

import type { FastifyInstance } from 'fastify';
import type {} from './fastify-types.ts';

const statusSchema = {
  response: {
    200: { type: 'object', properties: { status: { type: 'string' }, node: { type: 'string' } } },
    503: { type: 'object', properties: { status: { type: 'string' }, node: { type: 'string' } } },
  },
};

export function registerOps(app: FastifyInstance): void {
  app.get('/health', { schema: { summary: 'The process is alive', ...statusSchema } }, function health() {
    return { status: 'ok', node: app.config.nodeId };
  });

  app.get(
    '/ready',
    { schema: { summary: 'The database answers', ...statusSchema } },
    async function ready(req, reply) {
      try {
        await app.db.query('SELECT 1');
        return { status: 'ready', node: app.config.nodeId };
      } catch (err) {
        req.log.warn({ err }, 'readiness check failed');
        return reply.code(503).send({ status: 'unavailable', node: app.config.nodeId });
      }
    },
  );

  app.get('/openapi.json', { schema: { hide: true } }, function openapi() {
    return app.swagger();
  });
}
