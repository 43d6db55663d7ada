// Logic operations: `/formulamanager.execute/{sku}` (the product's assigned logic) and
// `/formulamanager.execute/{sku}/{uniqueName}`. Logics themselves (type F) and rounding policies
// (type RP) are written with the general operations (`/add/F`, ...), checked by the registry.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AUTHENTICATED } from '../../access/catalogue.ts';
import { envelopeSchema, ok } from '../../http/envelope.ts';
import { validationError } from '../../http/errors.ts';
import { executeLogic, type ExecuteData } from './service.ts';
import { recommend, type RecommendData } from './recommend.ts';

// No body or `null` is `{}` (the product's logic with no inputs), as for other operations.
const executeBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string' },
    data: {
      type: 'object',
      additionalProperties: false,
      properties: {
        inputs: { type: 'object' },
        targetDate: { type: 'string', maxLength: 10 },
        customerId: { type: 'string', minLength: 1, maxLength: 255 },
        sellerId: { type: 'string', minLength: 1, maxLength: 255 },
        explain: { type: 'boolean' },
      },
    },
  },
} as const;

const executeEnvelope = (() => {
  const base = envelopeSchema() as { properties: { response: { properties: Record<string, unknown> } } };
  base.properties.response.properties.logic = {
    type: 'object',
    properties: {
      uniqueName: { type: 'string' },
      validAfter: { type: 'string' },
      version: { type: 'integer' },
      targetDate: { type: 'string' },
    },
  };
  return base;
})();

export function formulaRoutes(app: FastifyInstance): void {
  const config = { access: AUTHENTICATED } as const;
  const tags = ['logics'];
  const limits = { maxSteps: app.config.logicMaxSteps, maxMs: app.config.logicMaxMs };
  const run = (req: FastifyRequest, sku: string, name: string | undefined) => {
    const data = ((req.body ?? {}) as { data?: ExecuteData }).data ?? {};
    return executeLogic(app.db, req.principal!, sku, name, data, limits);
  };

  app.post(
    '/formulamanager.execute/:sku',
    {
      config,
      schema: {
        summary: "Run the product's logic (formulaName)",
        tags,
        body: executeBody,
        response: { 200: executeEnvelope },
      },
    },
    async (req) => {
      const { sku } = req.params as { sku: string };
      const answer = await run(req, sku, undefined);
      const envelope = ok(req, answer.results);
      return { response: { ...envelope.response, logic: answer.logic } };
    },
  );

  app.post(
    '/formulamanager.execute/:sku/:uniqueName',
    {
      config,
      schema: {
        summary: 'Run the named logic on the product',
        tags,
        body: executeBody,
        response: { 200: executeEnvelope },
      },
    },
    async (req) => {
      const { sku, uniqueName } = req.params as { sku: string; uniqueName: string };
      // `.../MB-1/` named no logic, and was answered as if the product had none assigned.
      if (uniqueName === '')
        throw validationError(
          'uniqueName',
          "is empty: name a logic, or leave the segment out for the product's own",
        );
      const answer = await run(req, sku, uniqueName);
      const envelope = ok(req, answer.results);
      return { response: { ...envelope.response, logic: answer.logic } };
    },
  );

  app.post(
    '/recommendations.recommend',
    {
      config,
      schema: {
        summary:
          "Products recommended by the partition's RECOMMENDATION logic (option recommendationLogic), ranked by its Score; a quote typedId runs the FILTER logic of option quoteProductFilterLogic over the candidates",
        tags,
        body: {
          type: 'object',
          required: ['data'],
          additionalProperties: false,
          properties: {
            operationType: { type: 'string' },
            data: {
              type: 'object',
              additionalProperties: false,
              properties: {
                customerId: { type: 'string', minLength: 1, maxLength: 255 },
                segment: { type: 'string', minLength: 1, maxLength: 255 },
                sku: { type: 'string', minLength: 1, maxLength: 255 },
                typedId: { type: 'string', minLength: 1, maxLength: 255 },
                filter: {},
                inputs: { type: 'object' },
                targetDate: { type: 'string', maxLength: 10 },
                limit: { type: 'integer' },
              },
            },
          },
        },
        response: { 200: envelopeSchema() },
      },
    },
    async (req) => {
      const data = (req.body as { data: RecommendData }).data;
      return ok(req, await recommend(app.db, req.principal!, data, limits, app.config.maxPageSize));
    },
  );
}
