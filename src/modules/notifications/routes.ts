// The notification center: `/notification.send`, `.list`, `.setread`, `.delete`. Every user may use
// them on their own notifications; sending to others needs NOTIFICATION_SEND, which the service
// checks once it knows the recipients. Handlers are one service call each.

import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import type { FetchBody } from '../../engine/crud.ts';
import { envelopeSchema, ok } from '../../http/envelope.ts';
import { fetchBodySchema } from '../general/routes.ts';
import {
  deleteNotifications,
  listNotifications,
  sendNotification,
  setRead,
  type SendBody,
  type TargetData,
} from './service.ts';

const names = { type: 'array', maxItems: 10_000, items: { type: 'string', minLength: 1, maxLength: 255 } };

const sendBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string' },
    data: {
      type: 'object',
      required: ['notification'],
      additionalProperties: false,
      properties: {
        // Checked field by field by the service (the same checks as notifyUsers).
        notification: {},
        recipients: {
          type: 'object',
          additionalProperties: false,
          properties: { users: names, groups: names },
        },
      },
    },
  },
} as const;

const id = { anyOf: [{ type: 'integer' }, { type: 'string', maxLength: 40 }] };

const targetBody = (withRead: boolean) =>
  ({
    type: 'object',
    required: ['data'],
    additionalProperties: false,
    properties: {
      operationType: { type: 'string' },
      data: {
        type: 'object',
        additionalProperties: false,
        properties: {
          id,
          typedId: { type: 'string', maxLength: 40 },
          ids: { type: 'array', maxItems: 10_000, items: id },
          all: { type: 'boolean' },
          ...(withRead ? { read: { type: 'boolean' } } : {}),
        },
      },
    },
  }) as const;

const sendResult = {
  type: 'object',
  properties: { sent: { type: 'integer' }, recipients: { type: 'array', items: { type: 'string' } } },
};

const listEnvelope = (() => {
  const base = envelopeSchema({}, true) as {
    properties: { response: { properties: Record<string, unknown> } };
  };
  base.properties.response.properties.unreadCount = { type: 'integer' };
  return base;
})();

export function notificationRoutes(app: FastifyInstance): void {
  const config = { access: AUTHENTICATED } as const;
  const tags = ['notifications'];

  app.post(
    '/notification.send',
    {
      config,
      schema: {
        summary: 'Send a notification to yourself, or (NOTIFICATION_SEND) to users and user groups',
        tags,
        body: sendBody,
        response: { 200: envelopeSchema(sendResult) },
      },
    },
    async (req) => ok(req, [await sendNotification(app.db, req.principal!, req.body as SendBody)]),
  );

  app.post(
    '/notification.list',
    {
      config,
      schema: {
        summary: 'Your notifications (newest first, valid now unless the filter names validFrom/validUntil)',
        tags,
        body: fetchBodySchema,
        response: { 200: listEnvelope },
      },
    },
    async (req) => {
      const body = (req.body ?? {}) as FetchBody;
      const r = await listNotifications(app.db, req.principal!, body, app.config.maxPageSize);
      const envelope = ok(req, r.rows, r);
      return { response: { ...envelope.response, unreadCount: r.unreadCount } };
    },
  );

  app.post(
    '/notification.setread',
    {
      config,
      schema: {
        summary: 'Mark your notifications read (or unread with read: false)',
        tags,
        body: targetBody(true),
        response: { 200: envelopeSchema() },
      },
    },
    async (req) => ok(req, await setRead(app.db, req.principal!, (req.body as { data: TargetData }).data)),
  );

  app.post(
    '/notification.delete',
    {
      config,
      schema: {
        summary: 'Delete your dismissible notifications',
        tags,
        body: targetBody(false),
        response: { 200: envelopeSchema() },
      },
    },
    async (req) =>
      ok(req, await deleteNotifications(app.db, req.principal!, (req.body as { data: TargetData }).data)),
  );
}
