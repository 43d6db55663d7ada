// The query API: `/queryapi.execute` (a pipeline over sources, one SQL statement) and
// `/queryapi.meta` (source kinds, tables and columns; or a pipeline's result columns). Any
// authenticated user may call them; each source of a pipeline checks its own fetch permission.

import type { FastifyInstance } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import { envelopeSchema, ok } from '../../http/envelope.ts';
import type { QueryBody } from './pipeline.ts';
import { querySchemaError } from './paths.ts';
import { describePipeline, describeSources, executeQuery } from './service.ts';

const pipelineSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    source: { type: 'string', maxLength: 300 },
    join: { type: 'array', maxItems: 16 },
    filter: {},
    select: { type: 'array', maxItems: 1000 },
    groupBy: { type: 'array', maxItems: 100 },
    aggregates: { type: 'array', maxItems: 100 },
    having: {},
    sortBy: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }] },
    startRow: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    endRow: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    // As many as select takes: each one is a column of every row answered.
    valueFields: { type: 'array', items: { type: 'string' }, maxItems: 1000 },
  },
} as const;

const executeBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: { operationType: { type: 'string' }, data: { ...pipelineSchema, required: ['source'] } },
} as const;

const metaBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string' },
    data: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: { pipeline: { ...pipelineSchema, required: ['source'] } },
    },
  },
} as const;

const executeEnvelope = (() => {
  const base = envelopeSchema({}, true) as {
    properties: { response: { properties: Record<string, unknown> } };
  };
  base.properties.response.properties.columns = {
    type: 'array',
    items: {
      type: 'object',
      properties: {
        name: { type: 'string' },
        type: { type: 'string' },
        field: { type: 'string' },
        aggregate: { type: 'string' },
      },
    },
  };
  return base;
})();

export function queryRoutes(app: FastifyInstance): void {
  const config = { access: AUTHENTICATED } as const;
  const tags = ['query'];

  app.post(
    '/queryapi.execute',
    {
      config,
      schema: {
        summary:
          'Run a query pipeline (source, join, filter, select, groupBy, aggregates, having, sortBy, paging)',
        tags,
        body: executeBody,
        response: { 200: executeEnvelope },
      },
      // Named by their paths inside `data`, as the pipeline's own checks name them (./paths.ts).
      schemaErrorFormatter: querySchemaError,
    },
    async (req) => {
      const body = (req.body as { data: QueryBody }).data;
      const r = await executeQuery(app.db, req.principal!, body, app.config);
      const envelope = ok(req, r.rows, r);
      return { response: { ...envelope.response, columns: r.columns } };
    },
  );

  app.post(
    '/queryapi.meta',
    {
      config,
      schema: {
        summary: 'Source kinds, tables and columns; with data.pipeline, the result columns of that pipeline',
        tags,
        body: metaBody,
        response: { 200: envelopeSchema() },
      },
      schemaErrorFormatter: querySchemaError,
    },
    async (req) => {
      const pipeline = (req.body as { data?: { pipeline?: QueryBody } | null } | null)?.data?.pipeline;
      if (pipeline !== undefined) {
        return ok(req, await describePipeline(app.db, req.principal!, pipeline, app.config));
      }
      return ok(req, await describeSources(app.db, req.principal!));
    },
  );
}
