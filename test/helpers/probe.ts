// A partition module for tests only: routes that fail in each catalogued way, so the envelope and
// the error mapping are tested over real HTTP. Production builds never register it.

import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED, PUBLIC } from '../../src/access/catalogue.ts';
import { envelopeSchema, ok } from '../../src/http/envelope.ts';
import { AppError } from '../../src/http/errors.ts';

export function probeRoutes(app: FastifyInstance): void {
  const respond = { response: { 200: envelopeSchema() } };
  app.post(
    '/probe.strict',
    {
      config: { access: AUTHENTICATED },
      schema: {
        body: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: { name: { type: 'string' }, n: { type: 'integer' } },
        },
        ...respond,
      },
    },
    (req) => ok(req, [req.body]),
  );
  app.post('/probe.perm', { config: { access: 'USER_FETCH' }, schema: respond }, (req) => ok(req, []));
  app.post('/probe.public', { config: { access: PUBLIC }, schema: respond }, (req) => ok(req, []));
  app.post('/probe.conflict', { config: { access: AUTHENTICATED }, schema: respond }, () => {
    throw new AppError('VERSION_CONFLICT');
  });
  app.post('/probe.duplicate', { config: { access: AUTHENTICATED }, schema: respond }, async (req) => {
    await req.server.db.transaction(async (tx) => {
      await tx.query('INSERT INTO login_failures (partition_id, login_key) VALUES ($1, $2)', [
        req.partitionRef!.id,
        'dup',
      ]);
      // Same partition name twice: a unique violation inside the transaction.
      await tx.query(`INSERT INTO partitions (name, jwt_secret) VALUES ($1, '\\x00')`, [
        req.partitionRef!.name,
      ]);
    });
    return ok(req, []);
  });
  app.post('/probe.crash', { config: { access: AUTHENTICATED }, schema: respond }, () => {
    throw new Error('secret internals: SELECT password_hash FROM users');
  });
  app.post('/probe.slow', { config: { access: AUTHENTICATED }, schema: respond }, async (req) => {
    await new Promise((r) => setTimeout(r, 400));
    return ok(req, [{ slow: true }]);
  });
}
