// `/workflowsmanager.*` (fetch views, submit, approve, deny, withdraw, comment, details) and
// `/workflowdelegationmanager.*` (add, checkdates, fetch, update, delete, enddate). The fetch views
// need WORKFLOW_FETCH (the roles the interface lists); the decisions are open to every user and the
// service checks that the caller is an approver (or his delegate), the submitter or an admin.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AUTHENTICATED, type RouteAccess } from '../../access/catalogue.ts';
import type { FetchBody } from '../../engine/crud.ts';
import { envelopeSchema, noArgumentsBody, ok } from '../../http/envelope.ts';
import { fetchBodySchema } from '../general/routes.ts';
import {
  addDelegation,
  checkDates,
  deleteDelegation,
  endDelegation,
  fetchDelegations,
  updateDelegation,
  type DelegationInput,
  type TargetBody,
} from './delegation.ts';
import {
  approveWorkflow,
  commentWorkflow,
  denyWorkflow,
  parseWorkflowId,
  submitByTypedId,
  withdrawWorkflow,
  type ActionBody,
} from './service.ts';
import { fetchActive, fetchActiveOf, fetchWorkflows, workflowDetails, workflowRecord } from './views.ts';

const list = { response: { 200: envelopeSchema({}, true) } };
const records = { response: { 200: envelopeSchema() } };

const idParams = (name: string) => ({
  type: 'object',
  required: [name],
  properties: { partition: { type: 'string' }, [name]: { type: 'string', maxLength: 60 } },
});

/** An action's body: `data` takes the texts that action keeps (deny: `reason`, or `comment` for it). */
const actionBody = (texts: readonly string[]) =>
  ({
    type: ['object', 'null'],
    additionalProperties: false,
    properties: {
      operationType: { type: 'string' },
      data: {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: Object.fromEntries(texts.map((t) => [t, { type: ['string', 'null'] }])),
      },
      oldValues: {
        type: ['object', 'null'],
        properties: { version: {} },
      },
    },
  }) as const;

const delegationBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string' },
    data: {
      type: 'object',
      additionalProperties: false,
      properties: { delegator: {}, delegate: {}, startDate: {}, endDate: {}, note: {} },
    },
  },
} as const;

const targetBody = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    operationType: { type: 'string' },
    data: { type: 'object' },
    oldValues: { type: ['object', 'null'], properties: { version: {} } },
  },
} as const;

const problem = {
  type: 'object',
  properties: { field: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } },
};

const fetchBody = (req: FastifyRequest): FetchBody => req.body ?? {};
const actionOf = (req: FastifyRequest): ActionBody => req.body ?? {};
const wfId = (req: FastifyRequest): number => parseWorkflowId((req.params as { id: string }).id);

export function workflowRoutes(app: FastifyInstance): void {
  const { db, config } = app;
  const max = config.maxPageSize;
  const tags = ['workflows'];
  const opts = (summary: string, access: RouteAccess, schema: object) => ({
    config: { access },
    schema: { summary, tags, ...schema },
  });

  app.post(
    '/workflowsmanager.fetch',
    opts('Workflows you take part in (all for WORKFLOW_ADMIN)', 'WORKFLOW_FETCH', {
      body: fetchBodySchema,
      ...list,
    }),
    async (req) => {
      const r = await fetchWorkflows(db, req.principal!, fetchBody(req), max);
      return ok(req, r.rows, r);
    },
  );
  app.post(
    '/workflowsmanager.fetch/active',
    opts('Your pending approvals (and those delegated to you)', 'WORKFLOW_FETCH', {
      body: fetchBodySchema,
      ...list,
    }),
    async (req) => {
      const r = await fetchActive(db, req.principal!, fetchBody(req), max);
      return ok(req, r.rows, r);
    },
  );
  app.post(
    '/workflowsmanager.fetchfilteredbyapprovable/active/:loginName',
    opts('Pending approvals of one approver', 'WORKFLOW_FETCH', {
      params: idParams('loginName'),
      body: fetchBodySchema,
      ...list,
    }),
    async (req) => {
      const login = (req.params as { loginName: string }).loginName;
      const r = await fetchActiveOf(db, req.principal!, login, fetchBody(req), max);
      return ok(req, r.rows, r);
    },
  );
  app.post(
    '/workflowsmanager.details/:id',
    opts('One workflow with its steps, decisions and history', AUTHENTICATED, {
      params: idParams('id'),
      body: noArgumentsBody,
      ...records,
    }),
    async (req) => ok(req, [await workflowDetails(db, req.principal!, wfId(req))]),
  );
  app.post(
    '/workflowsmanager.submit/:typedId',
    opts('Submit an approvable (<id>.<TypeCode>) to its workflow', AUTHENTICATED, {
      params: idParams('typedId'),
      body: noArgumentsBody,
      ...records,
    }),
    async (req) => {
      const id = await submitByTypedId(db, req.principal!, (req.params as { typedId: string }).typedId);
      return ok(req, [await workflowRecord(db, req.principal!, id)]);
    },
  );
  const actions = {
    approve: [approveWorkflow, ['comment']],
    deny: [denyWorkflow, ['reason', 'comment']],
    withdraw: [withdrawWorkflow, ['comment']],
    addcomment: [commentWorkflow, ['comment']],
  } as const;
  for (const [name, [run, texts]] of Object.entries(actions)) {
    app.post(
      `/workflowsmanager.${name}/:id`,
      opts(`${name} a workflow (oldValues.version checked)`, AUTHENTICATED, {
        params: idParams('id'),
        body: actionBody(texts),
        ...records,
      }),
      async (req) => {
        const id = await run(db, req.principal!, wfId(req), actionOf(req));
        return ok(req, [await workflowRecord(db, req.principal!, id)]);
      },
    );
  }

  const dtags = ['workflow delegation'];
  const dopts = (summary: string, schema: object) => ({
    config: { access: AUTHENTICATED as RouteAccess },
    schema: { summary, tags: dtags, ...schema },
  });
  const input = (req: FastifyRequest): DelegationInput => (req.body as { data: DelegationInput }).data;
  const target = (req: FastifyRequest): TargetBody => req.body as TargetBody;

  app.post(
    '/workflowdelegationmanager.add',
    dopts('Delegate your approvals for a period', { body: delegationBody, ...records }),
    async (req) => ok(req, [await addDelegation(db, req.principal!, input(req))]),
  );
  app.post(
    '/workflowdelegationmanager.checkdates',
    dopts('The problems of an add payload (nothing is created)', {
      body: delegationBody,
      response: { 200: envelopeSchema(problem) },
    }),
    async (req) => ok(req, await checkDates(db, req.principal!, input(req))),
  );
  app.post(
    '/workflowdelegationmanager.fetch',
    dopts('Delegations you give or receive (all for WORKFLOW_ADMIN)', { body: fetchBodySchema, ...list }),
    async (req) => {
      const r = await fetchDelegations(db, req.principal!, fetchBody(req), max);
      return ok(req, r.rows, r);
    },
  );
  app.post(
    '/workflowdelegationmanager.update',
    dopts('Change the note of a delegation', { body: targetBody, ...records }),
    async (req) => ok(req, [await updateDelegation(db, req.principal!, target(req))]),
  );
  app.post(
    '/workflowdelegationmanager.delete',
    dopts('Delete a delegation that is not activated yet', { body: targetBody, ...records }),
    async (req) => ok(req, [await deleteDelegation(db, req.principal!, target(req))]),
  );
  app.post(
    '/workflowdelegationmanager.enddate',
    dopts('End an activated delegation now', { body: targetBody, ...records }),
    async (req) => ok(req, [await endDelegation(db, req.principal!, target(req))]),
  );
}
