// Upload slots, file loads and imports over HTTP: `/uploadmanager.*`, `/loaddata.file/{TC}` (sync
// and async), `/importfile/...`, plus the attachment and image routes (./binary-routes.ts). One
// encapsulated plugin: multipart support (@fastify/multipart) and the raw-body parser exist only
// here, so the JSON-only routes of other modules are untouched. Handlers call the services.

import { enterDeadline } from '../../db/deadline.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import type { Principal } from '../../access/access.ts';
import { createBlobStore, type BlobStore } from '../../db/blob-store.ts';
import { requireAccess } from '../../engine/crud.ts';
import { envelopeSchema, noArgumentsBody, ok } from '../../http/envelope.ts';
import { AppError, validationError } from '../../http/errors.ts';
import { notifyJobQueued } from '../../jobs/runner.ts';
import { binaryRoutes } from './binary-routes.ts';
import { formBoolean, noUnreadBody, readMultipart, rawFile, refuseOversized } from './incoming.ts';
import {
  checkFileLoadOptions,
  fileLoadType,
  parseJoinFields,
  requireFileLoadAccess,
  type FileLoadOptions,
} from './loadfile.ts';
import { executeFileLoad } from './loadfile-run.ts';
import { queueFileLoad } from './loadfile-job.ts';
import {
  createUploadStatus,
  failUploadStatus,
  findUploadStatusOrFail,
  setStatusFile,
  uploadHeartbeat,
  uploadStatusView,
} from './upload-status.ts';
import {
  createSlot,
  deleteSlot,
  findFilledSlotOrFail,
  findSlotOrFail,
  slotView,
  uploadIntoSlot,
} from './slots.ts';

const one = { response: { 200: envelopeSchema() } };
const params = (...names: string[]) => ({
  type: 'object',
  required: names,
  properties: {
    partition: { type: 'string' },
    ...Object.fromEntries(names.map((n) => [n, { type: 'string', maxLength: 255 }])),
  },
});

/**
 * The query of file loads: `name` (extension table, or lookup table by uniqueName), `tableId` (lookup
 * table by id), `delimiter`, and `token` (a one-time token, auth's). Another parameter is a -4: a load
 * option sent there (`?detectJoinFields=true`) would be ignored, the file loaded without it.
 */
const loadQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 255 },
    tableId: { type: 'string', pattern: '^[0-9]{1,15}$' },
    delimiter: { type: 'string' },
    token: { type: 'string' },
  },
} as const;

const loadResult = {
  type: 'object',
  properties: {
    uploadStatusId: { type: 'integer' },
    loadedRecords: { type: 'integer' },
    invalidRecords: { type: 'integer' },
    totalRecords: { type: 'integer' },
    deletedRecords: { type: 'integer' },
    jstId: { type: 'integer' },
  },
};

/** A media type (`type/subtype`, parameters after `;`), as RFC 9110 spells its tokens. */
const MEDIA_TYPE = /^\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+\s*(;.*)?$/;

export function filesRoutes(scope: FastifyInstance): void {
  void scope.register(async function filesScope(app) {
    const cfg = app.config;
    const blobs = createBlobStore(app.db, cfg.blobStore);
    await app.register(multipart, { limits: { fileSize: cfg.maxUploadBytes + 1 } });
    // Raw uploads: any other content type is left unread, for the handler to stream. (text/plain
    // too: Fastify's own parser would buffer it.)
    app.removeContentTypeParser('text/plain');
    app.addContentTypeParser('*', function leaveUnread(_req, _payload, done) {
      done(null, undefined);
    });
    uploadRoutes(app, blobs);
    fileLoadRoutes(app, blobs);
    binaryRoutes(app, blobs);
  });
}

function uploadRoutes(app: FastifyInstance, blobs: BlobStore): void {
  const cfg = app.config;
  const config = { access: AUTHENTICATED } as const;
  const limits = {
    maxBytes: cfg.maxUploadBytes,
    ttlMinutes: cfg.uploadSlotTtlMinutes,
    staleSeconds: cfg.jobStaleSeconds,
  };
  const slotIdOf = (req: FastifyRequest) => (req.params as { slotId: string }).slotId;

  // Creating and deleting slots change state under GET too: a session cookie needs the CSRF header.
  const changing = { ...config, changesState: true } as const;
  const newSlot = {
    config: changing,
    schema: { summary: 'Create an upload slot; answers its id', tags: ['uploads'], ...one },
  };
  const createHandler = async (req: FastifyRequest) =>
    ok(req, [slotView(await createSlot(app.db, req.principal!, cfg.uploadSlotTtlMinutes))]);
  app.get('/uploadmanager.newuploadslot', newSlot, createHandler);
  app.post(
    '/uploadmanager.newuploadslot',
    { ...newSlot, preValidation: noUnreadBody, schema: { ...newSlot.schema, body: noArgumentsBody } },
    createHandler,
  );

  // A scope of its own: here a JSON body is a file like any other (left unread for the handler),
  // not a request to parse.
  void app.register(async function rawUploads(sub) {
    sub.removeContentTypeParser('application/json');
    // Any body is a file here: a Content-Type that is no media type (`a`, `x/`) says nothing of it —
    // taken as application/octet-stream, not refused as a body the server cannot parse.
    sub.addHook('onRequest', (req, _reply, done) => {
      const type = req.headers['content-type'];
      if (typeof type === 'string' && type.trim() !== '' && !MEDIA_TYPE.test(type))
        req.headers['content-type'] = 'application/octet-stream';
      done();
    });
    sub.post(
      '/uploadmanager.upload/:slotId',
      {
        config,
        schema: {
          summary:
            'Upload a file into a slot: multipart field `file`, or the raw body (name in Content-Disposition)',
          tags: ['uploads'],
          params: params('slotId'),
          ...one,
        },
      },
      async (req) => {
        const principal = req.principal!;
        const slotId = slotIdOf(req);
        refuseOversized(req, cfg.maxUploadBytes);
        await findSlotOrFail(app.db, principal, slotId);
        const slot = req.isMultipart()
          ? (
              await readMultipart(req, ['file'], cfg.maxUploadBytes, (file) =>
                uploadIntoSlot(app.db, blobs, principal, slotId, file, limits),
              )
            ).file!
          : await uploadIntoSlot(app.db, blobs, principal, slotId, rawFile(req), limits);
        return ok(req, [slotView(slot)]);
      },
    );
    return Promise.resolve();
  });

  app.post(
    '/uploadmanager.progress/:slotId',
    {
      config,
      preValidation: noUnreadBody,
      schema: {
        summary: 'Bytes received and status of a slot',
        tags: ['uploads'],
        params: params('slotId'),
        body: noArgumentsBody,
        ...one,
      },
    },
    async (req) => ok(req, [slotView(await findSlotOrFail(app.db, req.principal!, slotIdOf(req)))]),
  );

  const del = {
    config: changing,
    schema: {
      summary: 'Delete a slot (and its file); answers upload status, file name, size and file version',
      tags: ['uploads'],
      params: params('slotId'),
      ...one,
    },
  };
  const deleteHandler = async (req: FastifyRequest) => {
    const s = await deleteSlot(app.db, blobs, req.principal!, slotIdOf(req));
    return ok(req, [{ ...slotView(s), uploadStatus: s.status }]);
  };
  app.get('/uploadmanager.deleteslot/:slotId', del, deleteHandler);
  app.post(
    '/uploadmanager.deleteslot/:slotId',
    { ...del, preValidation: noUnreadBody, schema: { ...del.schema, body: noArgumentsBody } },
    deleteHandler,
  );

  app.post(
    '/uploadmanager.status/:uploadStatusId',
    {
      config,
      preValidation: noUnreadBody,
      schema: {
        summary: 'Status record of a file load or import (counts, first row errors)',
        tags: ['uploads'],
        params: params('uploadStatusId'),
        body: noArgumentsBody,
        ...one,
      },
    },
    async (req) => {
      const id = (req.params as { uploadStatusId: string }).uploadStatusId;
      return ok(req, [uploadStatusView(await findUploadStatusOrFail(app.db, req.principal!, id))]);
    },
  );
}

/** The form fields a file load takes beside the file (any other is a -4 naming it). */
const LOAD_FIELDS = [
  'joinFields',
  'detectJoinFields',
  'replaceSoftDeleted',
  'syncOnTargetTable',
  'name',
  'tableId',
  'delimiter',
];

/** The options of a file load from its form fields and query. */
function loadOptionsOf(
  fields: Readonly<Record<string, string>>,
  query: { name?: string; tableId?: string; delimiter?: string },
): FileLoadOptions {
  const unknown = Object.keys(fields).find((k) => !LOAD_FIELDS.includes(k));
  if (unknown !== undefined)
    throw validationError(unknown, `unknown field (the file in fileName; ${LOAD_FIELDS.join(', ')})`);
  // Given both in the query and as a form field, they must agree (one is not silently dropped).
  for (const k of ['name', 'tableId', 'delimiter'] as const) {
    const inForm = fields[k];
    if (query[k] !== undefined && inForm !== undefined && inForm !== '' && inForm !== query[k])
      throw validationError(k, k === 'name' ? 'names another table than ?name=' : `differs from ?${k}=`);
  }
  const name = query.name ?? fields.name;
  const tableId = query.tableId ?? fields.tableId;
  const delimiter = query.delimiter ?? fields.delimiter;
  return {
    joinFields: parseJoinFields(fields.joinFields),
    detectJoinFields: formBoolean(fields, 'detectJoinFields'),
    replaceSoftDeleted: formBoolean(fields, 'replaceSoftDeleted'),
    syncOnTargetTable: formBoolean(fields, 'syncOnTargetTable'),
    ...(name !== undefined && name !== '' ? { name } : {}),
    ...(tableId !== undefined && tableId !== '' ? { tableId } : {}),
    ...(delimiter !== undefined && delimiter !== '' ? { delimiter } : {}),
  };
}

/**
 * A deadline for the synchronous work of a request: SYNC_TIMEOUT_SECONDS from when the work starts
 * (after the upload: the transfer is paced by the client). Checked between chunks, so a load is cut
 * at a chunk boundary, and by the database layer within a chunk (which is rolled back); either way
 * every committed chunk is whole, the answer is 503/-100 and the status record counts what stays.
 */
function syncDeadline(seconds: number): (done: { rows: number; loaded: number }) => Promise<void> {
  const until = Date.now() + seconds * 1000;
  // The database layer's deadline of this request restarts with the work too.
  enterDeadline(seconds * 1000);
  return (done) => {
    if (Date.now() <= until) return Promise.resolve();
    throw new AppError(
      'TIMEOUT',
      `The load ran past the synchronous time-out of ${seconds} s and was stopped after ${done.rows} rows ` +
        `(${done.loaded} loaded, in whole chunks); use the /async variant for large files`,
    );
  };
}

/** `source`, calling `beat` as each piece passes. */
async function* beating(source: AsyncIterable<Uint8Array>, beat: () => void): AsyncIterable<Uint8Array> {
  for await (const piece of source) {
    beat();
    yield piece;
  }
}

function fileLoadRoutes(app: FastifyInstance, blobs: BlobStore): void {
  const cfg = app.config;
  const config = { access: AUTHENTICATED } as const;

  /** Stores the multipart file under a new status record; answers the record and the options. */
  async function receive(req: FastifyRequest, principal: Principal) {
    const type = fileLoadType((req.params as { typeCode: string }).typeCode);
    // Refused before a byte of the file is read.
    requireFileLoadAccess(principal, type);
    refuseOversized(req, cfg.maxUploadBytes);
    if (!req.isMultipart()) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send the file as multipart/form-data (field fileName)', {
        field: 'Content-Type',
      });
    }
    const query = req.query as { name?: string; tableId?: string; delimiter?: string };
    const key = blobs.newKey();
    const target = query.name ?? (query.tableId === undefined ? undefined : `#${query.tableId}`);
    const status = await createUploadStatus(app.db, principal, type.code, target, { blobKey: key });
    try {
      // Alive while its bytes arrive: maintenance takes a record silent for twice the synchronous
      // time-out for one whose process died (an upload slower than that lost its file meanwhile).
      const beat = uploadHeartbeat(app.db, status, (cfg.syncTimeoutSeconds * 1000) / 2);
      const { fields } = await readMultipart(
        req,
        ['fileName', 'file'],
        cfg.maxUploadBytes,
        async (file) => {
          const size = await blobs.write(principal.partitionId, key, beating(file.stream, beat), {
            maxBytes: cfg.maxUploadBytes,
          });
          await setStatusFile(app.db, status, file.fileName, size);
          return size;
        },
        true,
      );
      const options = loadOptionsOf(fields, query);
      // The whole permission (syncOnTargetTable needs more), before anything is queued or loaded.
      requireFileLoadAccess(principal, type, options.syncOnTargetTable);
      checkFileLoadOptions(type, options);
      return { type, status, options };
    } catch (e) {
      await failUploadStatus(app.db, blobs, status, e instanceof AppError ? e.message : 'the upload failed');
      throw e;
    }
  }

  const schema = (summary: string) => ({
    summary,
    tags: ['general'],
    params: params('typeCode'),
    querystring: loadQuery,
    consumes: ['multipart/form-data'],
    response: { 200: envelopeSchema(loadResult) },
  });

  app.post(
    '/loaddata.file/:typeCode',
    { config, schema: schema('Bulk load a CSV file (multipart field fileName) with the /loaddata loader') },
    async function loaddataFile(req) {
      const principal = req.principal!;
      const { type, status, options } = await receive(req, principal);
      const checkDeadline = syncDeadline(cfg.syncTimeoutSeconds);
      const result = await executeFileLoad(app.db, blobs, principal, type, status, options, {
        afterChunk: checkDeadline,
        log: (err, first, last) =>
          req.log.error({ err, firstRow: first, lastRow: last }, 'file load chunk failed'),
      });
      return ok(req, [result]);
    },
  );

  app.post(
    '/loaddata.file/:typeCode/async',
    {
      config,
      schema: schema('Bulk load a CSV file as a LOADDATA_FILE job; answers uploadStatusId and jstId'),
    },
    async function loaddataFileAsync(req) {
      const principal = req.principal!;
      const { type, status, options } = await receive(req, principal);
      const job = await queueFileLoad(app.db, principal, type, status, options);
      notifyJobQueued();
      return ok(req, [{ uploadStatusId: status.id, jstId: job.id }]);
    },
  );

  const importHandler = async (req: FastifyRequest) => {
    const principal = req.principal!;
    const p = req.params as { typeCode?: string; target: string; slotId: string };
    const type = fileLoadType(p.typeCode ?? 'SX');
    if (!type.metaPerName) throw validationError('typeCode', 'imports go into PX, CX or SX tables');
    requireAccess(principal, type.access.write);
    const slot = await findFilledSlotOrFail(app.db, principal, p.slotId);
    const options: FileLoadOptions = {
      joinFields: [],
      detectJoinFields: true,
      replaceSoftDeleted: false,
      syncOnTargetTable: false,
      name: p.target,
    };
    const status = await createUploadStatus(app.db, principal, type.code, p.target, {
      fileName: slot.file_name,
      size: Number(slot.size),
    });
    const checkDeadline = syncDeadline(cfg.syncTimeoutSeconds);
    const result = await executeFileLoad(app.db, blobs, principal, type, status, options, {
      slotFile: slot.blob_key,
      afterChunk: checkDeadline,
    });
    return ok(req, [result]);
  };
  const importSchema = (summary: string, names: string[]) => ({
    config,
    preValidation: noUnreadBody,
    schema: {
      summary,
      tags: ['imports'],
      params: params(...names),
      body: noArgumentsBody,
      response: { 200: envelopeSchema(loadResult) },
    },
  });
  app.post(
    '/importfile/SX/:target/:slotId',
    importSchema('Import a CSV or XLSX file from an upload slot into a seller extension table', [
      'target',
      'slotId',
    ]),
    importHandler,
  );
  app.post(
    '/importfile/:typeCode/:target/:slotId',
    importSchema('Import a CSV or XLSX file from an upload slot into a PX, CX or SX table', [
      'typeCode',
      'target',
      'slotId',
    ]),
    importHandler,
  );
}
