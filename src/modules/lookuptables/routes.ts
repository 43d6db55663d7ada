// The lookup table manager (company parameters): `/lookuptablemanager.*` on tables and on the values
// of one table (`{tableId}` is the numeric `id` of `/lookuptablemanager.fetch`). Each route declares
// the permission of the interface's table; each handler is one service call. `.fetch/{tableId}`
// with `?output=xls` streams an XLSX workbook instead of the envelope.

import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AUTHENTICATED, type RouteAccess } from '../../access/catalogue.ts';
import { envelopeSchema, noArgumentsBody, ok, type Envelope } from '../../http/envelope.ts';
import type { FetchBody, FetchResult, MassEditBody } from '../../engine/crud.ts';
import type { LoadBody } from '../../engine/loaddata.ts';
import { pageOfList } from '../../engine/paging.ts';
import {
  deleteOldValuesOf,
  fetchBodySchema,
  itemsOf,
  massEditBodySchema,
  pagedListBody,
  updateItemsOf,
} from '../general/routes.ts';
import { loadResultSchema, loaddataBodySchema } from '../general/loaddata-routes.ts';
import { exportValues, writeXlsx } from './export.ts';
import { loadValues } from './load.ts';
import {
  addTables,
  copyTable,
  deleteTables,
  fetchTables,
  findReferences,
  parseTableId,
  updateTables,
} from './tables.ts';
import {
  addValues,
  deleteValues,
  deleteValuesByFilter,
  fetchValues,
  integrateValues,
  massEditValues,
  resetValueColumn,
  updateValues,
} from './values.ts';

const records = { response: { 200: envelopeSchema() } };
const list = { response: { 200: envelopeSchema({}, true) } };
const anyBody = {} as const;

const params = (...names: string[]) => ({
  type: 'object',
  required: names,
  properties: {
    partition: { type: 'string' },
    ...Object.fromEntries(
      names.map((n) => [
        n,
        n === 'tableId' ? { type: 'string', pattern: '^[0-9]{1,15}$' } : { type: 'string', maxLength: 100 },
      ]),
    ),
  },
});

const copyBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string' },
    data: {
      type: 'object',
      required: ['uniqueName'],
      additionalProperties: false,
      properties: { uniqueName: {}, label: {} },
    },
  },
} as const;

const count = (name: string) => ({
  response: { 200: envelopeSchema({ type: 'object', properties: { [name]: { type: 'integer' } } }) },
});

const tableIdOf = (req: FastifyRequest): number => parseTableId((req.params as { tableId: string }).tableId);
const body = (req: FastifyRequest): FetchBody => req.body ?? {};
const page = (req: FastifyRequest, r: FetchResult): Envelope => ok(req, r.rows, r);

const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

export function lookupTableRoutes(app: FastifyInstance): void {
  const { db, config } = app;
  const max = config.maxPageSize;
  const opts = (
    summary: string,
    access: RouteAccess,
    schema: object = {},
    config: { lazyRows?: true } = {},
  ) => ({
    config: { access, ...config },
    schema: { summary, tags: ['lookup tables'], ...schema },
  });
  const P = '/lookuptablemanager';

  // --- tables ----------------------------------------------------------------------------------

  app.post(
    `${P}.fetch`,
    opts('List lookup tables (filter and paging body)', AUTHENTICATED, { body: fetchBodySchema, ...list }),
    async (req) => page(req, await fetchTables(db, req.principal!, body(req), max)),
  );

  app.post(
    `${P}.add`,
    opts('Create a lookup table: {data:{uniqueName, label, type, valueType, ...}}', 'LOOKUPTABLE_ADD', {
      body: anyBody,
      ...records,
    }),
    async (req) => ok(req, await addTables(db, req.principal!, itemsOf(req.body))),
  );

  app.post(
    `${P}.update`,
    opts('Update a lookup table (oldValues.version required)', 'LOOKUPTABLE_UPDATE', {
      body: anyBody,
      ...records,
    }),
    async (req) => ok(req, await updateTables(db, req.principal!, updateItemsOf(req.body))),
  );

  app.post(
    `${P}.delete`,
    opts('Delete a lookup table named by typedId, with its values', 'LOOKUPTABLE_REMOVE', {
      body: anyBody,
      ...records,
    }),
    async (req) =>
      ok(req, await deleteTables(db, req.principal!, itemsOf(req.body), deleteOldValuesOf(req.body))),
  );

  app.post(
    `${P}.copy/:tableId`,
    opts('Copy a table with its values as {data:{uniqueName, label}}', 'LOOKUPTABLE_COPY', {
      params: params('tableId'),
      body: copyBody,
      ...records,
    }),
    async (req) =>
      ok(req, [
        await copyTable(
          db,
          req.principal!,
          tableIdOf(req),
          (req.body as { data: Record<string, unknown> }).data,
        ),
      ]),
  );

  app.post(
    `${P}.findref/:tableId`,
    opts('Logics that reference the table (paging body)', 'LOOKUPTABLE_UPDATE', {
      params: params('tableId'),
      body: pagedListBody,
      ...list,
    }),
    async (req) => {
      const refs = await findReferences(db, req.principal!, tableIdOf(req));
      const r = pageOfList(refs, req.body, max);
      return ok(req, r.rows, r);
    },
  );

  // --- values of one table ---------------------------------------------------------------------

  app.post(
    `${P}.fetch/:tableId`,
    opts(
      'Values of a table (filter, sort, paging, resultFields/valueFields; ?output=xls: XLSX)',
      AUTHENTICATED,
      {
        params: params('tableId'),
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { output: { type: 'string', enum: ['xls'] } },
        },
        body: fetchBodySchema,
        ...list,
      },
    ),
    async function fetchOrExport(req: FastifyRequest, reply: FastifyReply) {
      const id = tableIdOf(req);
      if ((req.query as { output?: string }).output !== 'xls') {
        return page(req, await fetchValues(db, req.principal!, id, body(req), max));
      }
      const exp = await exportValues(db, req.principal!, id, body(req), max);
      const out = new PassThrough();
      writeXlsx(exp, out).catch((err: unknown) => {
        // Headers are gone by now: the client sees a cut-off download, the log says why.
        req.log.error({ err }, 'xlsx export failed');
        out.destroy(err instanceof Error ? err : new Error('xlsx export failed'));
      });
      const file = exp.table.uniqueName.replace(/[^A-Za-z0-9._-]/g, '_');
      return reply.type(XLSX).header('content-disposition', `attachment; filename="${file}.xlsx"`).send(out);
    },
  );

  app.post(
    `${P}.add/:tableId`,
    opts('Add values: {data:{...}} or an array of them', 'LOOKUPTABLE_ADD', {
      params: params('tableId'),
      body: anyBody,
      ...records,
    }),
    async (req) => ok(req, await addValues(db, req.principal!, tableIdOf(req), itemsOf(req.body))),
  );

  app.post(
    `${P}.update/:tableId`,
    opts('Update values (by typedId or key); answers the updated values', 'LOOKUPTABLE_UPDATE', {
      params: params('tableId'),
      body: anyBody,
      ...records,
    }),
    async (req) => ok(req, await updateValues(db, req.principal!, tableIdOf(req), updateItemsOf(req.body))),
  );

  app.post(
    `${P}.integrate/:tableId`,
    opts('Create or update values by name (or key1..keyN)', 'LOOKUPTABLEVALUES_INTEGRATE', {
      params: params('tableId'),
      body: anyBody,
      ...records,
    }),
    async (req) => ok(req, await integrateValues(db, req.principal!, tableIdOf(req), itemsOf(req.body))),
  );

  app.post(
    `${P}.delete/:tableId`,
    opts('Delete a value named by typedId (or key)', 'LOOKUPTABLE_REMOVE', {
      params: params('tableId'),
      body: anyBody,
      ...records,
    }),
    async (req) =>
      ok(
        req,
        await deleteValues(
          db,
          req.principal!,
          tableIdOf(req),
          itemsOf(req.body),
          deleteOldValuesOf(req.body),
        ),
      ),
  );

  app.post(
    `${P}.delete/:tableId/batch`,
    opts('Delete the values matching a filter (an invalid clause is a -4)', 'LOOKUPTABLE_REMOVE', {
      params: params('tableId'),
      body: fetchBodySchema,
      ...count('deletedRecords'),
    }),
    async (req) =>
      ok(req, [
        { deletedRecords: await deleteValuesByFilter(db, req.principal!, tableIdOf(req), body(req)) },
      ]),
  );

  app.post(
    `${P}.massedit/:tableId`,
    opts('Set or compute value columns of the matching values (LTV, MLTV)', 'LOOKUPTABLE_UPDATE', {
      params: params('tableId'),
      body: massEditBodySchema,
      ...count('updatedRecords'),
    }),
    async (req) =>
      ok(req, [
        {
          updatedRecords: await massEditValues(db, req.principal!, tableIdOf(req), req.body as MassEditBody),
        },
      ]),
  );

  app.post(
    `${P}.resetcolumn/:tableId/:columnName`,
    opts('Empty a value column of a matrix table', 'LOOKUPTABLE_REMOVE', {
      params: params('tableId', 'columnName'),
      // The path names all it needs: a body that tries to scope the reset (`{data: {name}}`) is
      // refused, not ignored while the whole column is emptied.
      body: noArgumentsBody,
      ...count('updatedRecords'),
    }),
    async (req) => {
      const column = (req.params as { columnName: string }).columnName;
      return ok(req, [
        { updatedRecords: await resetValueColumn(db, req.principal!, tableIdOf(req), column) },
      ]);
    },
  );

  app.post(
    `${P}.loaddata/:typeCode`,
    opts(
      'Bulk load values of the table ?tableId= or of the table each row names in a lookupTable column',
      AUTHENTICATED,
      {
        params: params('typeCode'),
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { tableId: { type: 'string', pattern: '^[0-9]{1,15}$' } },
        },
        body: loaddataBodySchema,
        response: { 200: envelopeSchema(loadResultSchema) },
      },
      // The rows of a large body are parsed as the load reads them (src/http/json-rows.ts).
      { lazyRows: true },
    ),
    async function loaddata(req) {
      const result = await loadValues(
        db,
        req.principal!,
        (req.params as { typeCode: string }).typeCode,
        (req.query as { tableId?: string }).tableId,
        (req.body as { data: LoadBody }).data,
        {
          maxBatchRows: config.maxBatchRows,
          onChunkError: (err, first, last) =>
            req.log.error({ err, firstRow: first, lastRow: last }, 'lookup loaddata chunk failed'),
        },
      );
      return ok(req, [result]);
    },
  );
}
