// The workflow types (src/modules/workflows/): definitions `WFD` (written with the general
// operations, permission WORKFLOW_EDIT), workflows `WF` (over the view `workflows_v`, read only
// through /workflowsmanager.*) and delegations `WFDG` (over `workflow_delegations_v`, whose `status`
// is derived from the dates at read time; served by /workflowdelegationmanager.*). The
// declarations give those operations the engine's filter, sort and paging over every field.

import { can, type Principal } from '../access/access.ts';
import { AUTHENTICATED } from '../access/catalogue.ts';
import { qualified } from '../db/sql.ts';
import { checkDefinition } from '../modules/workflows/definitions.ts';
import type { FieldDef, TypeDef } from './types.ts';
import { SYSTEM, key, text } from './registry-fields.ts';

const field = (name: string, column: string, type: FieldDef['type'] = 'string'): FieldDef => ({
  name,
  column,
  type,
  system: true,
});

export const WORKFLOW_DEFINITION_TYPE: TypeDef = {
  code: 'WFD',
  label: 'Workflow definition',
  table: 'workflow_definitions',
  fields: [
    key('uniqueName', 'unique_name'),
    text('label', 'label'),
    text('approvableType', 'approvable_type', { required: true, maxLength: 40 }),
    text('condition', 'condition', { maxLength: 10_000 }),
    { name: 'priority', column: 'priority', type: 'integer', int32: true },
    { name: 'steps', column: 'steps', type: 'json', required: true },
    ...SYSTEM,
  ],
  businessKey: ['uniqueName'],
  uniqueColumns: ['unique_name'],
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  userGroups: false,
  access: { fetch: 'WORKFLOW_FETCH', write: 'WORKFLOW_EDIT' },
  validate: checkDefinition,
};

export const WORKFLOW_TYPE: TypeDef = {
  code: 'WF',
  label: 'Workflow',
  table: 'workflows_v',
  fields: [
    field('code', 'code'),
    field('approvableId', 'approvable_id', 'integer'),
    field('approvableTypedId', 'approvable_typed_id'),
    field('label', 'label'),
    field('definitionId', 'definition_id', 'integer'),
    field('definitionName', 'definition_name'),
    field('definitionVersion', 'definition_version', 'integer'),
    field('workflowStatus', 'workflow_status'),
    field('currentStep', 'current_step', 'integer'),
    field('currentStepName', 'current_step_name'),
    field('submittedBy', 'submitted_by', 'integer'),
    field('submittedByName', 'submitted_by_name'),
    field('submitDate', 'submit_date', 'datetime'),
    field('endDate', 'end_date', 'datetime'),
    ...SYSTEM,
  ],
  businessKey: [],
  uniqueColumns: [],
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  userGroups: false,
  access: { fetch: 'WORKFLOW_FETCH', write: 'WORKFLOW_ADMIN' },
  ownedRows: (principal, add, alias) => {
    if (can(principal, 'WORKFLOW_ADMIN')) return undefined;
    // Taking part (as the workflow operations decide, src/modules/workflows/store.ts
    // participatingIds): submitted it, assigned to it — in person or as the active delegate of an
    // assignee — or acted on it.
    const me = add(principal.userId);
    const w = (c: string) => qualified(alias, c);
    return `(${w('submitted_by')} = ${me}
      OR EXISTS (SELECT 1 FROM workflow_assignees wa WHERE wa.partition_id = ${w('partition_id')}
                    AND wa.workflow_id = ${w('id')}
                    AND (wa.user_id = ${me} OR wa.user_id IN (
                      SELECT d.delegator_id FROM workflow_delegations_v d
                       WHERE d.partition_id = ${w('partition_id')} AND d.delegate_id = ${me}
                         AND d.status = 'ACTIVATED')))
      OR EXISTS (SELECT 1 FROM workflow_events we WHERE we.partition_id = ${w('partition_id')}
                    AND we.workflow_id = ${w('id')} AND we.user_id = ${me}))`;
  },
  managerOnly:
    '/workflowsmanager.fetch, /workflowsmanager.fetch/active, /workflowsmanager.details/{id} and the other workflowsmanager operations',
};

export const DELEGATION_STATUSES = ['INITIALIZED', 'ACTIVATED', 'ENDDATED'] as const;

export const WORKFLOW_DELEGATION_TYPE: TypeDef = {
  code: 'WFDG',
  label: 'Workflow delegation',
  table: 'workflow_delegations_v',
  fields: [
    field('delegatorId', 'delegator_id', 'integer'),
    field('delegator', 'delegator_name'),
    field('delegateId', 'delegate_id', 'integer'),
    field('delegate', 'delegate_name'),
    field('startDate', 'start_date', 'date'),
    field('endDate', 'end_date', 'date'),
    field('endedAt', 'ended_at', 'datetime'),
    field('status', 'status'),
    text('note', 'note', { maxLength: 4000 }),
    ...SYSTEM,
  ],
  businessKey: [],
  uniqueColumns: [],
  deleteMode: 'hard',
  massEditable: false,
  bulkLoadable: false,
  userGroups: false,
  access: { fetch: AUTHENTICATED, write: 'WORKFLOW_ADMIN' },
  // Who gives or receives it; every delegation for WORKFLOW_ADMIN.
  ownedRows: (principal: Principal, add, alias) =>
    can(principal, 'WORKFLOW_ADMIN')
      ? undefined
      : `${add(principal.userId)} IN (${qualified(alias, 'delegator_id')}, ${qualified(alias, 'delegate_id')})`,
  managerOnly: '/workflowdelegationmanager.add, .checkdates, .fetch, .update, .delete, .enddate',
};

export const WORKFLOW_TYPES: readonly TypeDef[] = [
  WORKFLOW_DEFINITION_TYPE,
  WORKFLOW_TYPE,
  WORKFLOW_DELEGATION_TYPE,
];
