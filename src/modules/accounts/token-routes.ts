// Token operations of the account manager: api tokens (getjsonwebtoken, listed and revoked), the
// one-time token, and the caller's two-factor enrolment. Handlers are one call each; the rules
// live in ./token-service.ts.

import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import { authNames } from '../../auth/authenticate.ts';
import { AppError } from '../../http/errors.ts';
import { envelopeSchema, noArgumentsBody, ok } from '../../http/envelope.ts';
import { pageOfList } from '../../engine/paging.ts';
import { listAnswer, listBody } from './schemas.ts';
import {
  confirmTfa,
  disableTfa,
  enrollTfa,
  getJsonWebToken,
  getOneTimeToken,
  listTokens,
  revokeToken,
} from './token-service.ts';

const records = { response: { 200: envelopeSchema() } };
// (One schema, not anyOf with null: its errors name only the field at fault.)
const permissionsBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    data: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: { permissions: { type: ['array', 'null'], items: { type: 'string' }, maxItems: 1000 } },
    },
  },
};
const codeBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    data: {
      type: 'object',
      required: ['code'],
      additionalProperties: false,
      properties: { code: { type: 'string' } },
    },
  },
};
type CodeBody = { data: { code: string } };
type PermissionsBody = { data?: { permissions?: string[] | null } | null } | null | undefined;

export function tokenRoutes(app: FastifyInstance): void {
  const basicOnly = { access: AUTHENTICATED, credentials: 'basic' } as const;
  const tag = (summary: string) => ({ summary, tags: ['auth'] });

  app.post(
    '/accountmanager.getjsonwebtoken',
    {
      config: basicOnly,
      schema: {
        ...tag('A non-expiring api token (Basic credentials only)'),
        body: permissionsBody,
        ...records,
      },
    },
    async (req) =>
      ok(req, [
        await getJsonWebToken(app, req.principal!, (req.body as PermissionsBody)?.data?.permissions, null),
      ]),
  );
  app.post(
    '/accountmanager.getjsonwebtoken/:minutes',
    {
      config: basicOnly,
      schema: {
        ...tag('An api token expiring after the given minutes (Basic credentials only)'),
        params: {
          type: 'object',
          properties: { partition: { type: 'string' }, minutes: { type: 'string', pattern: '^[0-9]{1,7}$' } },
        },
        body: permissionsBody,
        ...records,
      },
    },
    async (req) => {
      const minutes = Number((req.params as { minutes: string }).minutes);
      return ok(req, [
        await getJsonWebToken(app, req.principal!, (req.body as PermissionsBody)?.data?.permissions, minutes),
      ]);
    },
  );
  app.post(
    '/accountmanager.getonetimetoken',
    {
      config: { access: AUTHENTICATED },
      schema: { ...tag('A single-use token for one request (?token=)'), body: noArgumentsBody, ...records },
    },
    async (req) => ok(req, [await getOneTimeToken(app, req.principal!)]),
  );
  app.post(
    '/accountmanager.listjsonwebtokens',
    {
      config: { access: AUTHENTICATED },
      schema: {
        ...tag("Api tokens: the caller's, or everyone's for USER_EDIT"),
        body: listBody,
        ...listAnswer({ type: 'object', additionalProperties: true }),
      },
    },
    async (req) => {
      const page = pageOfList(await listTokens(app.db, req.principal!), req.body, app.config.maxPageSize);
      return ok(req, page.rows, page);
    },
  );
  app.post(
    '/accountmanager.revokejsonwebtoken/:tokenId',
    {
      config: { access: AUTHENTICATED },
      schema: {
        ...tag("Revoke an api token (own, or anyone's for USER_EDIT)"),
        params: {
          type: 'object',
          properties: {
            partition: { type: 'string' },
            tokenId: { type: 'string', pattern: '^[0-9]{1,15}$' },
          },
        },
        ...records,
      },
    },
    async (req) =>
      ok(req, [
        await revokeToken(app.db, req.principal!, Number((req.params as { tokenId: string }).tokenId)),
      ]),
  );
  app.post(
    '/accountmanager.tfa.enroll',
    {
      config: basicOnly,
      schema: { ...tag('Start two-factor enrolment: secret and otpauth URI'), ...records },
    },
    async (req) => ok(req, [await enrollTfa(app, req.principal!)]),
  );
  app.post(
    '/accountmanager.tfa.confirm',
    {
      config: basicOnly,
      schema: { ...tag('Switch two-factor authentication on with a valid code'), body: codeBody, ...records },
    },
    async (req) => ok(req, [await confirmTfa(app.db, req.principal!, (req.body as CodeBody).data.code)]),
  );
  app.post(
    '/accountmanager.tfa.disable',
    {
      config: basicOnly,
      schema: { ...tag('Switch two-factor authentication off (Basic login with its TFA code)'), ...records },
    },
    async (req) => {
      // The TFA code is the proof, and a Basic login carries one only when it sends no session cookie
      // (with the user's cookie the code is not asked for): a cookie from before TFA was switched on
      // switched it off without any code.
      const cookie = req.cookies[authNames(app.config.productToken).cookie];
      if (cookie !== undefined && cookie !== '') {
        throw new AppError(
          'BAD_CREDENTIALS',
          `Switching two-factor authentication off takes the Basic login with its code (header ${app.config.productToken}-TFA) and no session cookie`,
        );
      }
      return ok(req, [await disableTfa(app.db, req.principal!)]);
    },
  );
}
