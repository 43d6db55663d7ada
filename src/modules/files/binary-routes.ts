// Attachments (`/bdmanager.*`) and product images (`/productimages.*`) over HTTP. Routes need an
// authenticated user; the rights on the owner record are checked by the service through the engine.
// File answers stream from the blob store with range support (./download.ts); JSON answers use the
// envelope.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import type { BlobStore } from '../../db/blob-store.ts';
import type { FetchBody } from '../../engine/crud.ts';
import { envelopeSchema, noArgumentsBody, ok } from '../../http/envelope.ts';
import { fetchBodySchema } from '../general/routes.ts';
import {
  attach,
  attachmentExists,
  attachmentView,
  deleteAttachment,
  readableAttachment,
  replaceAttachment,
  storedFileOf,
  updateAttachment,
  type AttachmentChange,
} from './attachments.ts';
import { listAttachments } from './attachment-list.ts';
import { productImage, setProductImage } from './product-images.ts';
import { sendFile } from './download.ts';
import { noUnreadBody, refuseUnreadBody } from './incoming.ts';

const one = { response: { 200: envelopeSchema() } };
/** The envelope of an answer whose `data` is a boolean (`/bdmanager.checkifexists`). */
const booleanEnvelope = (() => {
  const base = envelopeSchema() as { properties: { response: { properties: Record<string, unknown> } } };
  base.properties.response.properties.data = { type: 'boolean' };
  return base;
})();
const params = (...names: string[]) => ({
  type: 'object',
  required: names,
  properties: {
    partition: { type: 'string' },
    ...Object.fromEntries(names.map((n) => [n, { type: 'string', maxLength: 255 }])),
  },
});
type P = Record<string, string>;

const updateBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string' },
    data: {
      type: 'object',
      additionalProperties: false,
      properties: {
        id: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
        binaryDataId: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
        fileName: { type: 'string', minLength: 1, maxLength: 255 },
        metadata: { anyOf: [{ type: 'object' }, { type: 'null' }] },
      },
    },
    oldValues: {
      anyOf: [{ type: 'object', properties: { version: { type: 'integer' } } }, { type: 'null' }],
    },
  },
} as const;

export function binaryRoutes(app: FastifyInstance, blobs: BlobStore): void {
  const config = { access: AUTHENTICATED } as const;
  const tags = ['attachments'];

  app.post(
    '/bdmanager.upload/:typedId/:slotId',
    {
      config,
      preValidation: noUnreadBody,
      schema: {
        summary: 'Attach the file of an upload slot to a record',
        tags,
        params: params('typedId', 'slotId'),
        body: noArgumentsBody,
        ...one,
      },
    },
    async (req) => {
      const p = req.params as P;
      return ok(req, [attachmentView(await attach(app.db, req.principal!, p.typedId!, p.slotId!))]);
    },
  );

  app.post(
    '/bdmanager.list/:typedId',
    {
      config,
      schema: {
        summary: 'Files attached to a record (the filter and paging body of fetch)',
        tags,
        params: params('typedId'),
        body: fetchBodySchema,
        response: { 200: envelopeSchema({}, true) },
      },
    },
    async (req) => {
      // This scope leaves bodies of other content types unread (raw uploads): a filter sent as
      // anything but JSON would be ignored, so it is refused as elsewhere.
      refuseUnreadBody(req);
      const body = (req.body ?? {}) as FetchBody;
      const r = await listAttachments(
        app.db,
        req.principal!,
        (req.params as P).typedId!,
        body,
        app.config.maxPageSize,
      );
      return ok(req, r.rows, r);
    },
  );

  const download = async (req: FastifyRequest, reply: FastifyReply) => {
    const p = req.params as P;
    const a = await readableAttachment(app.db, req.principal!, p.binaryDataId!, p.typedId);
    if ((req.query as { output?: string }).output === 'file')
      return sendFile(req, reply, blobs, storedFileOf(a));
    return ok(req, [attachmentView(a)]);
  };
  const downloadOpts = {
    config,
    schema: {
      summary:
        'Details of an attached file; GET with ?output=file: the file itself (range requests supported)',
      tags,
      params: params('typedId', 'binaryDataId'),
      querystring: { type: 'object', properties: { output: { type: 'string' } } },
      // The details answer; the file (`?output=file`) is a stream, which no schema serialises.
      ...one,
    },
  };
  app.post(
    '/bdmanager.download/:typedId/:binaryDataId',
    {
      ...downloadOpts,
      preValidation: noUnreadBody,
      schema: { ...downloadOpts.schema, body: noArgumentsBody },
    },
    download,
  );
  app.get('/bdmanager.download/:typedId/:binaryDataId', downloadOpts, download);

  app.get(
    '/bdmanager.downloaddata/:binaryDataId',
    {
      config,
      schema: {
        summary: 'The attached file (range requests supported)',
        tags,
        params: params('binaryDataId'),
      },
    },
    async (req, reply) => {
      const a = await readableAttachment(app.db, req.principal!, (req.params as P).binaryDataId!);
      return sendFile(req, reply, blobs, storedFileOf(a));
    },
  );

  app.post(
    '/bdmanager.checkifexists/:binaryDataId',
    {
      config,
      preValidation: noUnreadBody,
      schema: {
        summary: '`data` is true when the attachment exists and is visible to the caller, else false',
        tags,
        params: params('binaryDataId'),
        body: noArgumentsBody,
        response: { 200: booleanEnvelope },
      },
    },
    // The spec's words: "`data` is true when the file exists" — the boolean itself, not `[true]`
    // (a client testing `data` would find `[false]` true).
    async (req) => {
      const exists = await attachmentExists(app.db, req.principal!, (req.params as P).binaryDataId!);
      const envelope = ok(req, null);
      return { response: { ...envelope.response, data: exists } };
    },
  );

  app.post(
    '/bdmanager.update/:typedId',
    {
      config,
      // A body of another content type than JSON is a 415, as on the JSON-only routes.
      preValidation: noUnreadBody,
      schema: {
        summary: 'Change the file name or metadata of an attachment',
        tags,
        params: params('typedId'),
        body: updateBody,
        ...one,
      },
    },
    async (req) => {
      const body = req.body as { data: AttachmentChange; oldValues?: { version?: number } | null };
      const row = await updateAttachment(
        app.db,
        req.principal!,
        (req.params as P).typedId!,
        body.data,
        body.oldValues?.version,
      );
      return ok(req, [attachmentView(row)]);
    },
  );

  app.post(
    '/bdmanager.delete/:typedId/:binaryDataId',
    {
      config,
      preValidation: noUnreadBody,
      schema: {
        summary: 'Delete an attachment',
        tags,
        params: params('typedId', 'binaryDataId'),
        body: noArgumentsBody,
        ...one,
      },
    },
    async (req) => {
      const p = req.params as P;
      return ok(req, [
        attachmentView(await deleteAttachment(app.db, blobs, req.principal!, p.typedId!, p.binaryDataId!)),
      ]);
    },
  );

  app.post(
    '/bdmanager.edit/:typedId/:binaryDataId/:slotId',
    {
      config,
      preValidation: noUnreadBody,
      schema: {
        summary: 'Replace an attachment with the file of an upload slot',
        tags,
        params: params('typedId', 'binaryDataId', 'slotId'),
        body: noArgumentsBody,
        ...one,
      },
    },
    async (req) => {
      const p = req.params as P;
      const row = await replaceAttachment(
        app.db,
        blobs,
        req.principal!,
        p.typedId!,
        p.binaryDataId!,
        p.slotId!,
      );
      return ok(req, [attachmentView(row)]);
    },
  );

  app.post(
    '/productimages.upload/:slotId/:sku',
    {
      config,
      preValidation: noUnreadBody,
      schema: {
        summary: 'Make the file of an upload slot the image of a product (PNG, JPEG, GIF, WebP by content)',
        tags: ['products'],
        params: params('slotId', 'sku'),
        body: noArgumentsBody,
        ...one,
      },
    },
    async (req) => {
      const p = req.params as P;
      const img = await setProductImage(app.db, blobs, req.principal!, p.slotId!, p.sku!);
      return ok(req, [
        {
          sku: img.sku,
          fileName: img.file_name,
          contentType: img.content_type,
          size: Number(img.size),
          version: img.version,
        },
      ]);
    },
  );

  app.get(
    '/productimages.get/:sku',
    {
      config,
      schema: {
        summary: 'The image of a product (range requests supported)',
        tags: ['products'],
        params: params('sku'),
      },
    },
    async (req, reply) => {
      const img = await productImage(app.db, req.principal!, (req.params as P).sku!);
      return sendFile(req, reply, blobs, storedFileOf(img), 'inline');
    },
  );
}
