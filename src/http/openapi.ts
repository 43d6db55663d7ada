// The OpenAPI description as client tools need it: an `operationId` on every operation, `servers`,
// and shared component schemas — the envelope, the error envelope, the filter and paging body with
// its criteria, records and record bodies — that the operations reference instead of repeating
// open `{}` schemas. Applied through @fastify/swagger's `transform`, so it changes the document
// only: the routes' own schemas keep validating and serialising exactly as before. `npm run lint`
// checks the result with Redocly (redocly.yaml).

import type { RouteOptions } from 'fastify';

type Schema = Record<string, unknown>;
const isObj = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

const criterion = {
  type: 'object',
  description:
    'One condition: `{fieldName, operator, value}` or, for ranges, `{fieldName, operator, start, end}`.',
  required: ['fieldName', 'operator'],
  properties: {
    fieldName: { type: 'string' },
    operator: {
      type: 'string',
      description: 'equals, notEqual, iEquals, greaterThan, between, inSet, isNull, ...',
    },
    value: {},
    start: {},
    end: {},
  },
};

/** The component schemas the operations reference. */
export const COMPONENT_SCHEMAS: Readonly<Record<string, Schema>> = {
  Record: {
    type: 'object',
    description:
      'A record of the addressed type: its fields, `typedId`, `version` and server-generated fields.',
    additionalProperties: true,
    properties: { id: { type: 'integer' }, typedId: { type: 'string' }, version: { type: 'integer' } },
  },
  RecordsBody: {
    description:
      'One record as `{data: {...}}`, several as `{data: [...]}` or `[{data: {...}}, ...]`; updates add `oldValues: {version}`.',
    oneOf: [
      {
        type: 'object',
        required: ['data'],
        properties: {
          data: { oneOf: [ref('Record'), { type: 'array', items: ref('Record') }] },
          oldValues: { type: ['object', 'null'], properties: { version: { type: 'integer' } } },
          operation: { type: 'string' },
        },
      },
      {
        type: 'array',
        items: {
          type: 'object',
          required: ['data'],
          properties: {
            data: ref('Record'),
            oldValues: { type: ['object', 'null'], properties: { version: { type: 'integer' } } },
          },
        },
      },
    ],
  },
  Criterion: criterion,
  AdvancedCriteria: {
    type: 'object',
    required: ['_constructor', 'operator', 'criteria'],
    properties: {
      _constructor: { const: 'AdvancedCriteria' },
      operator: { enum: ['and', 'or', 'not'] },
      strictSQLFiltering: { type: 'boolean' },
      criteria: {
        type: 'array',
        items: { anyOf: [ref('Criterion'), ref('AdvancedCriteria'), ref('SubCriteria')] },
      },
    },
  },
  SubCriteria: {
    type: 'object',
    description: 'A nested group inside AdvancedCriteria.',
    required: ['operator', 'criteria'],
    properties: {
      operator: { enum: ['and', 'or', 'not'] },
      criteria: { type: 'array', items: { anyOf: [ref('Criterion'), ref('SubCriteria')] } },
    },
  },
  Criteria: {
    description:
      'AdvancedCriteria, a single criterion, or simple criteria `{field: value}` (all ANDed; an array value means any of).',
    anyOf: [
      ref('AdvancedCriteria'),
      ref('Criterion'),
      { type: 'object', additionalProperties: true },
      { type: 'null' },
    ],
  },
  FetchBody: {
    type: ['object', 'null'],
    description: 'The filter and paging body of fetch-style operations; `null` for any field means absent.',
    properties: {
      operationType: { type: ['string', 'null'] },
      textMatchStyle: { enum: ['exact', 'exactCase', 'substring', 'startsWith', null] },
      startRow: { type: ['integer', 'null'], minimum: 0 },
      endRow: { type: ['integer', 'null'], minimum: 0, description: 'excluded; default startRow + 300' },
      sortBy: {
        anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }],
        description: 'field names; a leading `-` sorts descending',
      },
      data: ref('Criteria'),
      oldValues: { type: ['object', 'null'] },
      resultFields: { type: ['array', 'null'], items: { type: 'string' } },
      valueFields: { type: ['array', 'null'], items: { type: 'string' } },
      distinctResults: { type: ['boolean', 'null'] },
    },
  },
  Envelope: {
    type: 'object',
    required: ['response'],
    properties: {
      response: {
        type: 'object',
        required: ['node', 'status', 'data'],
        properties: {
          node: { type: 'string', description: 'the serving node' },
          status: { type: 'integer', description: '0 on success' },
          data: { anyOf: [{ type: 'array', items: ref('Record') }, { type: 'null' }] },
          startRow: { type: 'integer' },
          endRow: { type: 'integer' },
          totalRows: { type: 'integer' },
          csrfToken: { type: 'string', description: 'on the first answer after authentication' },
        },
      },
    },
  },
  ErrorEnvelope: {
    type: 'object',
    required: ['response'],
    properties: {
      response: {
        type: 'object',
        required: ['node', 'status', 'data'],
        properties: {
          node: { type: 'string' },
          status: {
            type: 'integer',
            description: 'negative: -1, -3, -4, -5, -6, -7, -11, -12, -100 (docs/errors.md)',
          },
          data: { type: 'string', description: 'the message' },
          errors: {
            type: 'object',
            additionalProperties: { type: 'object', properties: { errorMessage: { type: 'string' } } },
          },
          requestId: { type: 'string' },
        },
      },
    },
  },
};

/** `post.fetch.typeCode`-like ids: method plus the path after the partition, URL-safe and unique. */
export function operationIdOf(method: string, url: string, basePath: string): string {
  const prefix = `${basePath}/:partition`;
  const path = url.startsWith(prefix) ? url.slice(prefix.length) : url;
  const parts = path
    .split('/')
    .filter((s) => s !== '')
    .map((s) => (s.startsWith(':') ? `by-${s.slice(1)}` : s === '*' ? 'any' : s))
    .map((s) => s.replace(/[^A-Za-z0-9._-]/g, '-'));
  return [method.toLowerCase(), ...(parts.length === 0 ? ['root'] : parts)].join('.');
}

const FETCH_KEYS = ['operationType', 'textMatchStyle', 'startRow', 'endRow', 'data', 'resultFields'];

function isFetchBody(s: unknown): boolean {
  return isObj(s) && isObj(s.properties) && FETCH_KEYS.every((k) => k in (s.properties as Schema));
}

/** A body in the document: the shared FetchBody or RecordsBody where a route has one of those. */
function documentBody(body: unknown): unknown {
  if (isObj(body) && Object.keys(body).length === 0) return ref('RecordsBody');
  if (!isFetchBody(body)) return body;
  const own = (body as Schema).properties as Schema;
  const extra = Object.fromEntries(
    Object.entries(own).filter(([k]) => !(k in (COMPONENT_SCHEMAS.FetchBody!.properties as Schema))),
  );
  return Object.keys(extra).length === 0
    ? ref('FetchBody')
    : { allOf: [ref('FetchBody'), { type: ['object', 'null'], properties: extra }] };
}

/** Whether an envelope's `data` items are open records (no schema of their own). */
function hasOpenItems(envelope: unknown): boolean {
  if (!isObj(envelope) || !isObj(envelope.properties)) return false;
  const response = envelope.properties.response;
  if (!isObj(response) || !isObj(response.properties)) return false;
  const data = response.properties.data;
  const items =
    isObj(data) && Array.isArray(data.anyOf) && isObj(data.anyOf[0]) ? data.anyOf[0].items : undefined;
  return (
    isObj(items) && (Object.keys(items).length === 0 || (items.type === 'object' && !isObj(items.properties)))
  );
}

function isErrorEnvelope(s: unknown): boolean {
  if (!isObj(s) || !isObj(s.properties)) return false;
  const response = s.properties.response;
  return isObj(response) && isObj(response.properties) && 'errors' in response.properties;
}

function documentResponses(responses: unknown): unknown {
  if (!isObj(responses)) return responses;
  return Object.fromEntries(
    Object.entries(responses).map(([code, s]) => {
      if (isErrorEnvelope(s)) return [code, { description: 'Error envelope', ...ref('ErrorEnvelope') }];
      if (hasOpenItems(s)) return [code, { description: 'Envelope of records', ...ref('Envelope') }];
      return [code, s];
    }),
  );
}

/** @fastify/swagger's `transform`: the document's view of one route. */
export function documentRoute(basePath: string) {
  return function transform({
    schema,
    url,
    route,
  }: {
    schema: object | undefined;
    url: string;
    route: RouteOptions;
  }) {
    const method = Array.isArray(route.method) ? String(route.method[0]) : String(route.method);
    const out: Schema = { ...(schema ?? {}) };
    out.operationId ??= operationIdOf(method, route.url, basePath);
    if ('body' in out) out.body = documentBody(out.body);
    if ('response' in out) out.response = documentResponses(out.response);
    const responses = isObj(out.response) ? out.response : {};
    if (!Object.keys(responses).some((code) => code.startsWith('2'))) {
      // A file, a page, a redirect or an operation that only refuses: no envelope to describe.
      out.response = {
        ...responses,
        200: {
          description: 'Not an envelope: see the summary (a file, an HTML page or a redirect)',
          type: 'null',
        },
      };
    }
    return { schema: out, url };
  };
}
