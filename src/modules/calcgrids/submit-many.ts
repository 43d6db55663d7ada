// Accept's submission of many grid items at once: the set-based form of the workflow engine's
// `submitApprovable` (src/modules/workflows/service.ts) for the approvable `CGI`, with the same
// outcome per item — the first definition whose condition holds, its steps copied, the first step
// whose condition holds started (approvers and watchers resolved and notified), none left or no
// definition: approved at once — in a fixed number of statements per call instead of some twenty per
// item (10,000 items took minutes). Conditions are evaluated in process by the engine's own rules
// (workflows/inputs.ts `definitionApplies`, `stepHolds`); approvers are resolved once per step of a
// definition. The items are locked (id order) and their
// states checked under the lock first, so a concurrent reject or accept of the same items waits and
// then sees this one's outcome (409), never overwrites it.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { recordHistory, type HistoryEntry } from '../../engine/history.ts';
import { validationError } from '../../http/errors.ts';
import { notifyEach, type NotificationInput } from '../notifications/service.ts';
import { parseSteps, type StepDef } from '../workflows/definitions.ts';
import { definitionApplies, stepHolds } from '../workflows/inputs.ts';
import { activeDelegates, definitionsFor, stepUsers } from '../workflows/store.ts';
import {
  APPROVABLE_CODE,
  itemConflict,
  lockDocuments,
  setItemStates,
  type ItemDocument,
  type ItemField,
} from './approval.ts';

const LABEL = 'Calculation grid item';

type Definition = Awaited<ReturnType<typeof definitionsFor>>[number];

/** Who a started step asks and tells (resolved once per step of a definition). */
interface StepPeople {
  readonly approvers: readonly number[];
  readonly watchers: readonly number[];
  readonly delegates: readonly number[];
}

/** What one item's workflow becomes: its definition, and the step started (null: approved at once). */
interface Plan {
  readonly doc: ItemDocument;
  readonly definition: (Definition & { readonly steps: StepDef[]; readonly index: number }) | null;
  readonly started: number | null;
}

/** The definition's steps, or the -4 submitApprovable answers for a broken copy. */
function stepsOf(d: Definition): StepDef[] {
  const { steps, errors } = parseSteps(d.steps);
  const first = Object.entries(errors)[0];
  if (first) throw validationError(first[0], `definition ${d.name}: ${first[1].errorMessage}`);
  return steps;
}

async function peopleOf(q: Queryable, pid: number, step: StepDef, n: number): Promise<StepPeople> {
  const at = `steps[${n - 1}]`;
  const approvers = await stepUsers(q, pid, at, 'approver', step.approverUsers, step.approverGroups);
  if (approvers.length === 0)
    throw validationError(`${at}.approverGroups`, `step ${n} has no active approver`);
  const watchers = await stepUsers(q, pid, at, 'watcher', step.watcherUsers, step.watcherGroups);
  return { approvers, watchers, delegates: await activeDelegates(q, pid, approvers) };
}

/** Locks the items and refuses (409) an approved or pending one, as submitApprovable does. */
async function lockSubmittable(
  q: Queryable,
  pid: number,
  ids: readonly number[],
  fieldOf?: ItemField,
): Promise<ItemDocument[]> {
  const docs = await lockDocuments(q, pid, ids);
  const approved = docs.find((d) => d.workflowStatus === 'APPROVED');
  if (approved)
    throw itemConflict(
      `${LABEL} ${approved.id}.${approved.typeCode} is already approved`,
      approved.id,
      fieldOf,
    );
  const pending = await q.query<{ id: string }>(
    `SELECT approvable_id AS id FROM workflows
      WHERE partition_id = $1 AND code = $2 AND approvable_id = ANY($3::bigint[]) AND workflow_status = 'SUBMITTED'
      ORDER BY approvable_id LIMIT 1`,
    [pid, APPROVABLE_CODE, ids],
  );
  const waiting = pending.rows[0]?.id ?? docs.find((d) => d.workflowStatus === 'SUBMITTED')?.id;
  if (waiting !== undefined) {
    const doc = docs.find((d) => d.id === Number(waiting));
    const name = doc === undefined ? String(waiting) : `${doc.id}.${doc.typeCode}`;
    throw itemConflict(`${LABEL} ${name} is already submitted`, Number(waiting), fieldOf);
  }
  return docs;
}

/** Each item's definition and first step, conditions evaluated as the engine does. */
function planOf(docs: readonly ItemDocument[], definitions: readonly Definition[]): Plan[] {
  const parsed = new Map<number, Plan['definition']>();
  return docs.map((doc) => {
    const index = definitions.findIndex((d) => definitionApplies(d, doc));
    if (index < 0) return { doc, definition: null, started: null };
    let definition = parsed.get(index);
    if (!definition) {
      definition = { ...definitions[index]!, steps: stepsOf(definitions[index]!), index };
      parsed.set(index, definition);
    }
    const n = definition.steps.findIndex(
      (s, i) => s.condition === null || stepHolds(s.condition, doc, i + 1, definition.name),
    );
    return { doc, definition, started: n < 0 ? null : n + 1 };
  });
}

/**
 * Submits the items (ids of one grid, with results) to their workflows, in one transaction `q`;
 * their `workflowStatus` / `approvalState` become SUBMITTED / NOT_APPROVED or APPROVED / APPROVED.
 */
export async function submitItems(
  q: Queryable,
  actor: Principal,
  ids: readonly number[],
  /** The field of the request that chose an item: a 409 about it names that field. */
  fieldOf?: ItemField,
): Promise<void> {
  const pid = actor.partitionId;
  const docs = await lockSubmittable(q, pid, ids, fieldOf);
  const plans = planOf(docs, await definitionsFor(q, pid, APPROVABLE_CODE));
  const people = new Map<string, StepPeople>();
  for (const p of plans) {
    if (p.definition === null || p.started === null) continue;
    const key = `${p.definition.index}/${p.started}`;
    if (!people.has(key))
      people.set(key, await peopleOf(q, pid, p.definition.steps[p.started - 1]!, p.started));
  }

  // The workflows, in their state after the submit (version 1: inserted, then started or finished).
  const inserted = await q.query<{ id: string; approvable_id: string }>(
    `INSERT INTO workflows (partition_id, code, approvable_id, label, definition_id, definition_name,
                            definition_version, workflow_status, current_step, submitted_by, end_date, version,
                            created_by, last_update_by, approvable_type_code)
     SELECT $1, $2, r.id, r.label, r.def_id, r.def_name, r.def_version, r.status, r.step, $4,
            CASE WHEN r.status = 'SUBMITTED' THEN NULL ELSE now() END, 1, $4, $4, r.type_code
       FROM jsonb_to_recordset($3::jsonb) AS r(ord int, id bigint, label text, def_id bigint, def_name text,
              def_version int, status text, step int, type_code text)
      ORDER BY r.ord
     ON CONFLICT DO NOTHING RETURNING id, approvable_id`,
    [
      pid,
      APPROVABLE_CODE,
      JSON.stringify(
        plans.map((p, ord) => ({
          ord,
          id: p.doc.id,
          label: p.doc.label,
          def_id: p.definition?.id ?? null,
          def_name: p.definition?.name ?? null,
          def_version: p.definition?.version ?? null,
          status: p.started === null ? 'APPROVED' : 'SUBMITTED',
          step: p.started,
          type_code: p.doc.typeCode,
        })),
      ),
      actor.userId,
    ],
  );
  const wfOf = new Map(inserted.rows.map((r) => [Number(r.approvable_id), Number(r.id)]));
  const lost = plans.find((p) => !wfOf.has(p.doc.id));
  if (lost)
    throw itemConflict(
      `${LABEL} ${lost.doc.id}.${lost.doc.typeCode} is already submitted`,
      lost.doc.id,
      fieldOf,
    );

  const steps: object[] = [];
  const events: object[] = [];
  const assignees: { wf: number[]; n: number[]; role: string[]; user: number[] } = {
    wf: [],
    n: [],
    role: [],
    user: [],
  };
  const history: HistoryEntry[] = [];
  const notices: { userIds: number[]; input: NotificationInput }[] = [];
  for (const p of plans) {
    const wf = wfOf.get(p.doc.id)!;
    const d = p.definition;
    events.push({
      wf,
      n: null,
      action: 'SUBMITTED',
      user: actor.userId,
      comment: d ? null : 'no workflow definition applies: approved at once',
    });
    history.push({
      typeCode: 'WF',
      recordId: wf,
      action: 'ADD',
      changes: {
        code: { old: null, new: APPROVABLE_CODE },
        approvableId: { old: null, new: p.doc.id },
        workflowStatus: { old: null, new: 'SUBMITTED' },
        definitionName: { old: null, new: d?.name ?? null },
        definitionVersion: { old: null, new: d?.version ?? null },
      },
      version: 0,
    });
    history.push({
      typeCode: 'WF',
      recordId: wf,
      action: 'UPDATE',
      changes:
        p.started === null
          ? { workflowStatus: { old: 'SUBMITTED', new: 'APPROVED' } }
          : { currentStep: { old: null, new: p.started } },
      version: 1,
    });
    if (!d) continue;
    d.steps.forEach((_, i) => {
      const n = i + 1;
      const status = p.started === null || n < p.started ? 'SKIPPED' : n === p.started ? 'ACTIVE' : 'WAITING';
      steps.push({ wf, d: d.index, n, status });
      if (status === 'SKIPPED') events.push({ wf, n, action: 'SKIPPED', user: null, comment: null });
    });
    if (p.started === null) continue;
    events.push({ wf, n: p.started, action: 'STEP_STARTED', user: null, comment: null });
    const who = people.get(`${d.index}/${p.started}`)!;
    for (const [role, users] of [
      ['APPROVER', who.approvers],
      ['WATCHER', who.watchers],
    ] as const)
      for (const u of users) {
        assignees.wf.push(wf);
        assignees.n.push(p.started);
        assignees.role.push(role);
        assignees.user.push(u);
      }
    const subject = `${LABEL} ${p.doc.id} (${p.doc.label})`;
    const notice = (title: string, userIds: readonly number[]) =>
      notices.push({
        userIds: [...new Set(userIds)].filter((u) => u !== actor.userId),
        input: {
          title: `${title}: ${subject}`.slice(0, 1000),
          message: `Workflow ${wf}.WF of ${subject}`,
          source: 'WORKFLOW',
          topic: 'WORKFLOW',
          status: 'INFO',
          payload: {
            workflowId: wf,
            typedId: `${wf}.WF`,
            code: APPROVABLE_CODE,
            approvableTypedId: `${p.doc.id}.${p.doc.typeCode}`,
          },
        },
      });
    notice('Approval required', [...who.approvers, ...who.delegates]);
    notice(`Step ${d.steps[p.started - 1]!.name ?? p.started} reached`, who.watchers);
  }

  // The steps of each definition used, once; each workflow's rows point into them.
  const definitionSteps: StepDef[][] = [];
  for (const p of plans) if (p.definition) definitionSteps[p.definition.index] = p.definition.steps;
  if (steps.length > 0)
    await q.query(
      `INSERT INTO workflow_steps (partition_id, workflow_id, step_no, name, rule, condition, approver_users,
                                   approver_groups, watcher_users, watcher_groups, deny_reason_required, status,
                                   start_date, end_date)
       SELECT $1, r.wf, r.n, s->>'name', s->>'rule', s->>'condition',
              ARRAY(SELECT jsonb_array_elements_text(s->'approverUsers')),
              ARRAY(SELECT jsonb_array_elements_text(s->'approverGroups')),
              ARRAY(SELECT jsonb_array_elements_text(s->'watcherUsers')),
              ARRAY(SELECT jsonb_array_elements_text(s->'watcherGroups')),
              (s->>'denyReasonRequired')::boolean, r.status,
              CASE WHEN r.status = 'ACTIVE' THEN now() END, CASE WHEN r.status = 'SKIPPED' THEN now() END
         FROM jsonb_to_recordset($2::jsonb) AS r(wf bigint, d int, n int, status text),
              LATERAL (SELECT ($3::jsonb -> r.d) -> (r.n - 1) AS s) x`,
      [pid, JSON.stringify(steps), JSON.stringify(definitionSteps)],
    );
  await q.query(
    `INSERT INTO workflow_events (partition_id, workflow_id, step_no, action, user_id, comment)
     SELECT $1, r.wf, r.n, r.action, r."user", r.comment
       FROM jsonb_to_recordset($2::jsonb) AS r(ord int, wf bigint, n int, action text, "user" bigint, comment text)
      ORDER BY r.ord`,
    [pid, JSON.stringify(events.map((e, ord) => ({ ord, ...e })))],
  );
  if (assignees.wf.length > 0)
    await q.query(
      `INSERT INTO workflow_assignees (partition_id, workflow_id, step_no, role, user_id)
       SELECT $1, a.wf, a.n, a.role, a.u FROM unnest($2::bigint[], $3::int[], $4::text[], $5::bigint[]) AS a(wf, n, role, u)
       ON CONFLICT DO NOTHING`,
      [pid, assignees.wf, assignees.n, assignees.role, assignees.user],
    );
  await recordHistory(q, actor, history);
  await setItemStates(
    q,
    actor,
    plans.map((p) => p.doc.id),
    plans.map((p) => (p.started === null ? 'APPROVED' : 'SUBMITTED')),
  );
  await notifyEach(q, pid, notices, actor.userId);
}
