// Condition records: `/conditionrecordset.update/{id}`, `/conditionrecordset.lookup/{set}`, the
// delete of sets with `force`, the general update/integrate/resetcolumn of CRCS refused (static
// routes win over the general `/:typeCode` ones), and `/loaddata/CRCP` (also `/loaddata/CRCI`,
// `/loaddata/CRCIn`). Sets and items otherwise go through the general operations on the registry's
// CRCS, CRCI, CRCI1..CRCI12, CRCIH and CRCIAM.

import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import { sendJsonArray } from '../../http/answer-bytes.ts';
import { envelopeSchema, ok } from '../../http/envelope.ts';
import type { LoadBody } from '../../engine/loaddata.ts';
import { MAX_KEY_SIZE } from '../../engine/registry-condrec.ts';
import { findType } from '../../engine/registry.ts';
import { metaDeletedWith, queueIndexSync } from '../admin/indexes.ts';
import { loaddataBodySchema } from '../general/loaddata-routes.ts';
import { deleteSets, lookupForClient, refuseGeneralSetWrite, updateSet } from './service.ts';
import { loadConditionRecords } from './splice.ts';

const records = { response: { 200: envelopeSchema() } };
const partitionParam = { partition: { type: 'string' } };
const tags = ['condition records'];

export function conditionRecordRoutes(app: FastifyInstance): void {
  app.post(
    '/conditionrecordset.update/:id',
    {
      config: { access: 'CONDITIONRECORDSET_UPDATE' },
      schema: {
        summary: 'Change label and user groups of a condition record set (oldValues.version required)',
        tags,
        params: {
          type: 'object',
          required: ['id'],
          properties: { ...partitionParam, id: { type: 'string', maxLength: 40 } },
        },
        body: {
          type: 'object',
          required: ['data'],
          additionalProperties: false,
          properties: {
            operationType: { type: 'string' },
            data: { type: 'object' },
            // The set as fetched, as clients send it; its version is what counts.
            oldValues: { type: ['object', 'null'] },
          },
        },
        ...records,
      },
    },
    async (req) =>
      ok(req, await updateSet(app.db, req.principal!, (req.params as { id: string }).id, req.body)),
  );

  app.post(
    '/conditionrecordset.lookup/:setUniqueName',
    {
      config: { access: 'CONDITIONRECORD_FETCH' },
      schema: {
        summary: 'The item valid at a date for each key tuple (null where none), in order',
        tags,
        params: {
          type: 'object',
          required: ['setUniqueName'],
          properties: { ...partitionParam, setUniqueName: { type: 'string', maxLength: 255 } },
        },
        body: {
          type: 'object',
          required: ['data'],
          additionalProperties: false,
          properties: {
            operationType: { type: 'string' },
            data: {
              type: 'object',
              required: ['keys', 'date'],
              additionalProperties: false,
              properties: {
                // A key is text; a JSON number or boolean is taken as its text, as writes take it.
                keys: {
                  type: 'array',
                  items: { type: 'array', items: { type: ['string', 'number', 'boolean'], maxLength: 63 } },
                },
                date: { type: 'string' },
              },
            },
          },
        },
        // Items or nulls, sent as the JSON text the database wrote (lookup.ts); the schema documents.
        response: { 200: envelopeSchema({}) },
      },
    },
    async (req, reply) => {
      const { setUniqueName } = req.params as { setUniqueName: string };
      return sendJsonArray(
        req,
        reply,
        await lookupForClient(app.db, req.principal!, setUniqueName, req.body),
      );
    },
  );

  app.post(
    '/delete/CRCS',
    {
      config: { access: AUTHENTICATED },
      schema: {
        summary: 'Delete condition record sets (refused while a set holds items, unless force: true)',
        tags,
        ...records,
      },
    },
    async (req) => {
      const deleted = await deleteSets(app.db, req.principal!, req.body);
      // The sets' CRCIAM rows went with them: an index only they asked for goes too (INDEX_SYNC).
      await queueIndexSync(app.db, req.principal!, metaDeletedWith(findType('CRCS')!)!);
      return ok(req, deleted);
    },
  );

  for (const path of [
    '/update/CRCS',
    '/update/CRCS/returnolddata',
    '/integrate/CRCS',
    '/integrate/CRCS/returnolddata',
    '/resetcolumn/CRCS/:columnName',
  ]) {
    app.post(
      path,
      {
        config: { access: AUTHENTICATED },
        schema: { summary: 'Refused: use /conditionrecordset.update/{id}', tags },
      },
      () => refuseGeneralSetWrite(),
    );
  }

  // CRCP splices; CRCI and CRCI1..CRCI12 (the general `/loaddata/{TypeCode}` of the item types) are
  // the same load without splicing options, CRCIn only into sets of n keys.
  const loadKinds = ['CRCP', 'CRCI', ...Array.from({ length: MAX_KEY_SIZE }, (_, i) => `CRCI${i + 1}`)];
  for (const via of loadKinds) {
    app.post(
      `/loaddata/${via}`,
      {
        config: { access: AUTHENTICATED },
        schema: {
          summary:
            via === 'CRCP'
              ? 'Bulk load condition record items; with options.conditionRecords.splicing, cut the items they overlap'
              : `Bulk load condition record items${via === 'CRCI' ? '' : ` of sets with ${via.slice(4)} keys`}; rows overlapping existing items are errors (splice with /loaddata/CRCP)`,
          tags,
          body: loaddataBodySchema,
          ...records,
        },
      },
      async function loadItems(req) {
        const result = await loadConditionRecords(
          app.db,
          req.principal!,
          (req.body as { data: LoadBody }).data,
          {
            maxBatchRows: app.config.maxBatchRows,
            onChunkError: (err, first, last) =>
              req.log.error({ err, firstRow: first, lastRow: last }, `${via} chunk failed`),
          },
          via,
        );
        return ok(req, [result]);
      },
    );
  }
}
