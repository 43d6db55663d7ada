// Session entry point: `/login/extended` answers the authenticated user with `extendedData`;
// with Basic credentials the authentication hook has already set the session cookie.

import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import { ok, envelopeSchema } from '../../http/envelope.ts';
import { loginInfo } from './service.ts';

const userSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    typedId: { type: 'string' },
    loginName: { type: 'string' },
    firstName: { type: ['string', 'null'] },
    lastName: { type: ['string', 'null'] },
    email: { type: ['string', 'null'] },
    activated: { type: 'boolean' },
    roles: { type: 'array', items: { type: 'string' } },
    extendedData: {
      type: 'object',
      properties: {
        Release: { type: 'string' },
        partition: { type: 'string' },
        permissions: { type: 'array', items: { type: 'string' } },
      },
    },
  },
};

export function accountRoutes(app: FastifyInstance): void {
  app.post(
    '/login/extended',
    {
      config: { access: AUTHENTICATED },
      schema: {
        summary: 'Log in with Basic credentials; sets the session cookie',
        tags: ['auth'],
        response: { 200: envelopeSchema(userSchema) },
      },
    },
    async (req) => ok(req, [await loginInfo(req.server.db, req.principal!)]),
  );
}
