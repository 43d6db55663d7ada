// API version 2 token operations: `POST /token`, `POST /token/refresh`, `DELETE /token`. Success
// answers are plain JSON (not the envelope), as API version 2 clients expect; failures are the
// usual error envelope with its HTTP status (401 bad credentials or token, -6 locked out, -4 body).

import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED, PUBLIC } from '../../access/catalogue.ts';
import { passwordLogin } from '../../auth/authenticate.ts';
import { validationError } from '../../http/errors.ts';
import { issueTokens, refreshTokens, revokeToken } from './service.ts';

const pairSchema = {
  type: 'object',
  required: ['access-token', 'refresh-token', 'token-type', 'expires-in'],
  properties: {
    'access-token': { type: 'string' },
    'refresh-token': { type: 'string' },
    'token-type': { type: 'string' },
    'expires-in': { type: 'integer' },
  },
} as const;

const loginBody = {
  type: 'object',
  required: ['username', 'password'],
  additionalProperties: false,
  properties: {
    username: { type: 'string', minLength: 1, maxLength: 255 },
    password: { type: 'string', maxLength: 1024 },
    partition: { type: 'string', maxLength: 255 },
  },
} as const;

const refreshBody = {
  type: 'object',
  required: ['refresh-token'],
  additionalProperties: false,
  properties: { 'refresh-token': { type: 'string', minLength: 1, maxLength: 8192 } },
} as const;

export function tokenV2Routes(app: FastifyInstance): void {
  const tags = ['authentication'];

  app.post(
    '/token',
    {
      config: { access: PUBLIC },
      schema: {
        summary: 'API version 2: access and refresh token for a user name and password',
        tags,
        body: loginBody,
        response: { 200: pairSchema },
      },
    },
    async (req, reply) => {
      const body = req.body as { username: string; password: string; partition?: string };
      const partition = req.partitionRef!.name;
      if (body.partition !== undefined && body.partition !== partition) {
        throw validationError('partition', 'must be the partition of the path');
      }
      const who = await passwordLogin(req, partition, body.username, body.password);
      void reply.header('cache-control', 'no-store');
      return issueTokens(app.db, who, partition, app.config);
    },
  );

  app.post(
    '/token/refresh',
    {
      config: { access: PUBLIC },
      schema: {
        summary: 'API version 2: a new token pair for a refresh token (which stops working)',
        tags,
        body: refreshBody,
        response: { 200: pairSchema },
      },
    },
    async (req, reply) => {
      const token = (req.body as { 'refresh-token': string })['refresh-token'];
      const ref = req.partitionRef!;
      void reply.header('cache-control', 'no-store');
      return refreshTokens(app.db, ref.id, ref.name, token, app.config);
    },
  );

  app.delete(
    '/token',
    {
      config: { access: AUTHENTICATED },
      schema: {
        summary: 'API version 2: revoke the access token of this request and its refresh token',
        tags,
        response: { 204: { type: 'null' } },
      },
    },
    async (req, reply) => {
      const principal = req.principal!;
      const bearer = /^bearer\s+(\S+)$/i.exec(req.headers.authorization?.trim() ?? '');
      await revokeToken(
        app.db,
        principal.partitionId,
        principal.userId,
        principal.via === 'bearer' ? bearer?.[1] : undefined,
      );
      return reply.code(204).send();
    },
  );
}
