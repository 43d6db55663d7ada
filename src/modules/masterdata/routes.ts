// The manager operations of master data: productmanager (quick search, formula-filtered fetch, bill
// of materials, competition), customermanager (formula-filtered fetch, assignments) and
// sellermanager (seller extensions by category). Handlers are one service call; where the engine
// checks the type's permission the route only asks for an authenticated user.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AUTHENTICATED, type RouteAccess } from '../../access/catalogue.ts';
import { envelopeSchema, noArgumentsBody, ok, type Envelope } from '../../http/envelope.ts';
import type { FetchBody, FetchResult } from '../../engine/crud.ts';
import { fetchBodySchema, itemsOf } from '../general/routes.ts';
import { rowErrorsSchema } from '../general/loaddata-routes.ts';
import {
  assignCustomers,
  bomTree,
  fetchAssignments,
  fetchFormulaFiltered,
  fetchProductCompetition,
  fetchProductSetCompetition,
  fetchProductSets,
  fetchSellerExtensions,
  importProductCompetition,
  quickSearch,
  type AssignData,
  type FormulaFilterBody,
  type PageBody,
} from './service.ts';

const list = { response: { 200: envelopeSchema({}, true) } };

const paging = {
  startRow: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  endRow: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
} as const;

/** `q` is checked by the service, so a missing body, a missing and an empty term all answer the same -4. */
const quickSearchBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: { q: { type: 'string', maxLength: 1000 }, ...paging },
} as const;

const pageBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: paging,
} as const;

/** The filter body plus the keys of a logic filter, which the service refuses with a clear -4. */
const formulaFilterBody = {
  ...fetchBodySchema,
  properties: { ...fetchBodySchema.properties, formulaName: {}, formulaParameters: {} },
} as const;

const assignBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string' },
    data: {
      type: 'object',
      required: ['typedId'],
      additionalProperties: false,
      properties: {
        typedId: { type: 'string', maxLength: 100 },
        customerIds: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 255 } },
        customerTypedIds: { type: 'array', items: { type: 'string', maxLength: 100 } },
      },
    },
  },
} as const;

const assignResult = {
  type: 'object',
  properties: {
    typedId: { type: 'string' },
    assignedCustomers: { type: 'integer' },
    newAssignments: { type: 'integer' },
  },
};

const importResult = {
  type: 'object',
  properties: {
    insertedRecords: { type: 'integer' },
    updatedRecords: { type: 'integer' },
    failedRecords: { type: 'integer' },
    errors: rowErrorsSchema,
    errorsTruncated: { type: 'boolean' },
  },
};

/** A BOM node; `components` nests further nodes of the same shape. */
const bomNodeSchema = {
  type: 'object',
  required: ['sku', 'quantity', 'components'],
  properties: {
    sku: { type: 'string' },
    label: { type: 'string' },
    quantity: { type: ['string', 'null'] },
    components: { type: 'array', items: { type: 'object', additionalProperties: true } },
    cycle: { type: 'boolean' },
    truncated: { type: 'boolean' },
  },
};

const param = (...names: string[]) => ({
  type: 'object',
  required: names,
  properties: {
    partition: { type: 'string' },
    ...Object.fromEntries(names.map((n) => [n, { type: 'string', maxLength: 1000 }])),
  },
});

const body = (req: FastifyRequest): FetchBody => req.body ?? {};
const path = (req: FastifyRequest, name: string): string => (req.params as Record<string, string>)[name]!;
const page = (req: FastifyRequest, r: FetchResult): Envelope => ok(req, r.rows, r);
const searchTerm = (req: FastifyRequest): unknown => (req.body as { q?: unknown } | null | undefined)?.q;

export function masterdataRoutes(app: FastifyInstance): void {
  const { db, config } = app;
  const max = config.maxPageSize;
  const limits = { maxSteps: config.logicMaxSteps, maxMs: config.logicMaxMs };
  const opts = (tag: string, summary: string, schema: object, access: RouteAccess = AUTHENTICATED) => ({
    config: { access },
    schema: { summary, tags: [tag], ...schema },
  });

  // --- productmanager --------------------------------------------------------------------------

  app.post(
    '/productmanager.quicksearch',
    opts('products', 'Search products by sku and label (case-insensitive substring), by sku', {
      body: quickSearchBody,
      ...list,
    }),
    async (req) => page(req, await quickSearch(db, req.principal!, searchTerm(req), body(req), max)),
  );

  app.post(
    '/productmanager.quicksearch/:query',
    opts('products', 'Search products; the term URL-encoded in the path', {
      params: param('query'),
      body: pageBody,
      ...list,
    }),
    async (req) =>
      page(req, await quickSearch(db, req.principal!, path(req, 'query'), (req.body ?? {}) as PageBody, max)),
  );

  app.post(
    '/productmanager.fetchformulafilteredproducts',
    opts(
      'products',
      'Fetch products with a filter body, narrowed by a FILTER logic (formulaName, formulaParameters)',
      {
        body: formulaFilterBody,
        ...list,
      },
    ),
    async (req) =>
      page(
        req,
        await fetchFormulaFiltered(db, req.principal!, 'P', body(req) as FormulaFilterBody, max, limits),
      ),
  );

  app.post(
    '/productmanager.bomtree/:sku',
    opts('products', 'Bill of materials of a product as a nested tree (cycle-safe, depth-limited)', {
      params: param('sku'),
      body: noArgumentsBody,
      response: { 200: envelopeSchema(bomNodeSchema) },
    }),
    async (req) => ok(req, [await bomTree(db, req.principal!, path(req, 'sku'), max)]),
  );

  app.post(
    '/productmanager.importproductcompetition',
    opts(
      'products',
      'Upsert competition rows by sku + competitor + competitionDate; answers counts and the failed rows',
      {
        response: { 200: envelopeSchema(importResult) },
      },
    ),
    async (req) => ok(req, [await importProductCompetition(db, req.principal!, itemsOf(req.body))]),
  );

  app.post(
    '/productmanager.fetchproductcompetition',
    opts('products', 'Fetch the competition data table with a filter body', {
      body: fetchBodySchema,
      ...list,
    }),
    async (req) => page(req, await fetchProductCompetition(db, req.principal!, body(req), max)),
  );

  app.post(
    '/fetch/PCOMPCO',
    opts('products', 'The product sets of the competition data API (the labels of the visible products)', {
      body: fetchBodySchema,
      ...list,
    }),
    async (req) => page(req, await fetchProductSets(db, req.principal!, body(req), max)),
  );

  app.post(
    '/productmanager.fetchproductsetcompetition/:label',
    opts('products', 'Competition rows of the products whose label is the product set', {
      params: param('label'),
      body: fetchBodySchema,
      ...list,
    }),
    async (req) =>
      page(req, await fetchProductSetCompetition(db, req.principal!, path(req, 'label'), body(req), max)),
  );

  // --- customermanager -------------------------------------------------------------------------

  app.post(
    '/customermanager.fetchformulafilteredcustomers',
    opts(
      'customers',
      'Fetch customers with a filter body, narrowed by a FILTER logic (formulaName, formulaParameters)',
      {
        body: formulaFilterBody,
        ...list,
      },
    ),
    async (req) =>
      page(
        req,
        await fetchFormulaFiltered(db, req.principal!, 'C', body(req) as FormulaFilterBody, max, limits),
      ),
  );

  app.post(
    '/customermanager.assign',
    opts(
      'customers',
      'Assign customers (customerIds or customerTypedIds) to the entity named by typedId; idempotent',
      { body: assignBody, response: { 200: envelopeSchema(assignResult) } },
      'CUSTOMER_EDIT',
    ),
    async (req) =>
      ok(req, [await assignCustomers(db, req.principal!, (req.body as { data: AssignData }).data, max)]),
  );

  app.post(
    '/customermanager.fetchassignments/:typedId',
    opts('customers', 'Customers assigned to the entity, with filter and paging', {
      params: param('typedId'),
      body: fetchBodySchema,
      ...list,
    }),
    async (req) =>
      page(req, await fetchAssignments(db, req.principal!, path(req, 'typedId'), body(req), max)),
  );

  // --- sellermanager ---------------------------------------------------------------------------

  // `*` is a literal segment in the interface; any value is accepted in its place.
  app.post(
    '/sellermanager.fetch/:any/SX/:category',
    opts('sellers', 'Seller extension rows of one category (extension table)', {
      params: param('any', 'category'),
      body: fetchBodySchema,
      ...list,
    }),
    async (req) =>
      page(req, await fetchSellerExtensions(db, req.principal!, path(req, 'category'), body(req), max)),
  );
}
