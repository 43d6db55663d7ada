// Workflow delegation (type WFDG): a delegator lets a delegate approve in his place from `startDate`
// through `endDate` (whole UTC days). No timer: the status comes from the dates at read time
// (view workflow_delegations_v): INITIALIZED before the start date, ACTIVATED from it, ENDDATED after
// the end date or once `enddate` was called. The state table of the interface:
//   INITIALIZED --delete--> removed (answers it)      ACTIVATED --delete--> refused (-4)
//   ACTIVATED --enddate--> ENDDATED (answers it)       update changes only the note
// Delegator = the caller, or any user for WORKFLOW_ADMIN. `checkdates` answers the problems of an
// `add` payload without creating anything; `add` refuses the same problems with -4.

import type { Principal } from '../../access/access.ts';
import { can } from '../../access/access.ts';
import type { Db, Queryable } from '../../db/db.ts';
import { loadTypeContext, selectList } from '../../engine/context.ts';
import { fetchRecords, type FetchBody, type FetchResult } from '../../engine/crud.ts';
import { OPERATORS, isOperator, type Test } from '../../engine/criteria/operators.ts';
import { WORKFLOW_DELEGATION_TYPE } from '../../engine/registry-workflows.ts';
import { recordHistory, type HistoryAction } from '../../engine/history.ts';
import { checkVersion } from '../../engine/value-check.ts';
import { coerceValue } from '../../engine/values.ts';
import { optionalText, refuseUnknownFields } from '../../engine/value-check.ts';
import { AppError, validationError, type FieldErrors } from '../../http/errors.ts';
import { userIdByLogin } from './store.ts';

type Obj = Record<string, unknown>;

export interface DelegationInput {
  readonly delegator?: unknown;
  readonly delegate?: unknown;
  readonly startDate?: unknown;
  readonly endDate?: unknown;
  readonly note?: unknown;
}

export type ProblemCode =
  | 'REQUIRED'
  | 'INVALID_DATE'
  | 'DATES_ORDER'
  | 'START_IN_PAST'
  | 'UNKNOWN_USER'
  | 'INACTIVE_USER'
  | 'SELF'
  | 'OVERLAP'
  | 'CYCLE';

export interface Problem {
  readonly field: string;
  readonly code: ProblemCode;
  readonly message: string;
}

interface Checked {
  readonly delegatorId: number;
  readonly delegateId: number;
  readonly startDate: string;
  readonly endDate: string;
  readonly note: string | null;
}

async function isActive(q: Queryable, pid: number, userId: number): Promise<boolean> {
  const r = await q.query<{ activated: boolean }>(
    'SELECT activated FROM users WHERE partition_id = $1 AND id = $2',
    [pid, userId],
  );
  return r.rows[0]?.activated === true;
}

async function today(q: Queryable): Promise<string> {
  const r = await q.query<{ d: string }>(
    `SELECT to_char((now() AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS d`,
  );
  return r.rows[0]!.d;
}

function noteOf(v: unknown): string | null {
  // (Refused by checkdates as by add: text no database column takes.)
  return optionalText(v, 'note', 4000);
}

/** The payload's problems (in the order a user fixes them) and, when there are none, its values. */
async function check(
  q: Queryable,
  principal: Principal,
  input: DelegationInput,
): Promise<{ problems: Problem[]; checked?: Checked }> {
  const pid = principal.partitionId;
  const problems: Problem[] = [];
  const add = (field: string, code: ProblemCode, message: string) => problems.push({ field, code, message });
  let delegatorId = principal.userId;
  if (typeof input.delegator === 'string' && input.delegator.trim() === '') {
    // Empty is no login name (left out, the caller delegates his own approvals).
    add('delegator', 'REQUIRED', 'must name a user (leave it out to delegate your own approvals)');
  } else if (
    input.delegator !== undefined &&
    input.delegator !== null &&
    input.delegator !== principal.loginName
  ) {
    if (typeof input.delegator !== 'string') throw validationError('delegator', 'must be a login name');
    if (!can(principal, 'WORKFLOW_ADMIN')) {
      throw new AppError('FORBIDDEN', 'Only a workflow administrator may delegate for another user');
    }
    const id = await userIdByLogin(q, pid, input.delegator);
    if (id === undefined) add('delegator', 'UNKNOWN_USER', `unknown user ${input.delegator}`);
    else delegatorId = id;
  }
  let delegateId: number | undefined;
  const blank = typeof input.delegate === 'string' && input.delegate.trim() === '';
  if (input.delegate === undefined || input.delegate === null || blank) {
    add('delegate', 'REQUIRED', 'is required');
  } else if (typeof input.delegate !== 'string') {
    throw validationError('delegate', 'must be a login name');
  } else {
    delegateId = await userIdByLogin(q, pid, input.delegate);
    if (delegateId === undefined) add('delegate', 'UNKNOWN_USER', `unknown user ${input.delegate}`);
    else if (delegateId === delegatorId) add('delegate', 'SELF', 'a user cannot delegate to himself');
    // A deactivated user cannot sign in: approvals delegated to him would wait for nobody.
    else if (!(await isActive(q, pid, delegateId)))
      add('delegate', 'INACTIVE_USER', `user ${input.delegate} is deactivated`);
  }
  const dates: Record<'startDate' | 'endDate', string | undefined> = {
    startDate: undefined,
    endDate: undefined,
  };
  for (const f of ['startDate', 'endDate'] as const) {
    const v = input[f];
    if (v === undefined || v === null || v === '') add(f, 'REQUIRED', 'is required');
    else {
      const d = coerceValue('date', v);
      if (typeof d !== 'string') add(f, 'INVALID_DATE', 'must be a date YYYY-MM-DD');
      else dates[f] = d;
    }
  }
  const { startDate, endDate } = dates;
  if (startDate !== undefined && startDate < (await today(q))) {
    add('startDate', 'START_IN_PAST', 'must not be in the past');
  }
  if (startDate !== undefined && endDate !== undefined && endDate < startDate) {
    add('endDate', 'DATES_ORDER', 'must not be before startDate');
  }
  const note = noteOf(input.note);
  if (problems.length > 0 || delegateId === undefined || startDate === undefined || endDate === undefined) {
    return { problems };
  }
  const overlap = await q.query<{ id: number }>(
    `SELECT id FROM workflow_delegations
      WHERE partition_id = $1 AND delegator_id = $2 AND ended_at IS NULL
        AND start_date <= $4::date AND end_date >= $3::date LIMIT 1`,
    [pid, delegatorId, startDate, endDate],
  );
  if (overlap.rows[0]) {
    add('startDate', 'OVERLAP', `overlaps delegation ${overlap.rows[0].id}.WFDG of the same delegator`);
  }
  // A cycle: the delegate (or his delegates, over the same period) delegates back to the delegator.
  const cycle = await q.query(
    `WITH RECURSIVE chain (user_id, depth) AS (
       SELECT $2::bigint, 0
       UNION
       SELECT d.delegate_id, c.depth + 1 FROM workflow_delegations d JOIN chain c ON d.delegator_id = c.user_id
        WHERE d.partition_id = $1 AND d.ended_at IS NULL AND d.end_date >= (now() AT TIME ZONE 'UTC')::date
          AND d.start_date <= $5::date AND d.end_date >= $4::date AND c.depth < 50)
     SELECT 1 FROM chain WHERE user_id = $3 LIMIT 1`,
    [pid, delegateId, delegatorId, startDate, endDate],
  );
  if (cycle.rows.length > 0)
    add('delegate', 'CYCLE', 'the delegate delegates back to the delegator in this period');
  return problems.length > 0
    ? { problems }
    : { problems, checked: { delegatorId, delegateId, startDate, endDate, note } };
}

async function lockDelegations(q: Queryable, pid: number): Promise<void> {
  // Concurrent adds must not both pass the checks: of one delegator (OVERLAP), and of any users whose
  // delegations would close a chain (CYCLE reads everyone's) — so one add at a time per partition.
  await q.query(`SELECT pg_advisory_xact_lock(hashtextextended('wfdg:' || $1::text, 0))`, [pid]);
}

async function recordOf(q: Queryable, principal: Principal, id: number): Promise<Obj | undefined> {
  const tc = await loadTypeContext(q, principal, WORKFLOW_DELEGATION_TYPE);
  const r = await q.query<Obj>(
    `SELECT ${selectList(tc)} FROM workflow_delegations_v t WHERE t.partition_id = $1 AND t.id = $2`,
    [principal.partitionId, id],
  );
  return r.rows[0];
}

const TRACKED = ['delegator', 'delegate', 'startDate', 'endDate', 'endedAt', 'note'] as const;

/** Record history (WFDG) of a delegation write, from the record before and after it. */
async function history(
  q: Queryable,
  principal: Principal,
  action: HistoryAction,
  before: Obj | undefined,
  after: Obj | undefined,
): Promise<void> {
  const changes: Record<string, { old: unknown; new: unknown }> = {};
  const norm = (v: unknown) => (v instanceof Date ? v.toISOString() : (v ?? null));
  for (const f of TRACKED) {
    const o = norm(before?.[f]);
    const n = norm(after?.[f]);
    if (o !== n) changes[f] = { old: o, new: n };
  }
  const rec = (after ?? before)!;
  await recordHistory(q, principal, [
    { typeCode: 'WFDG', recordId: Number(rec.id), action, changes, version: Number(rec.version) },
  ]);
}

export async function checkDates(db: Db, principal: Principal, input: DelegationInput): Promise<Problem[]> {
  return (await check(db, principal, input)).problems;
}

export async function addDelegation(db: Db, principal: Principal, input: DelegationInput): Promise<Obj> {
  return db.transaction(async (q) => {
    const first = await check(q, principal, input);
    if (first.checked) await lockDelegations(q, principal.partitionId);
    // Checked again under the lock: a concurrent add has committed by now.
    const { problems, checked } = first.checked ? await check(q, principal, input) : first;
    if (!checked) {
      const errors: FieldErrors = {};
      for (const p of problems) errors[p.field] ??= { errorMessage: `${p.code}: ${p.message}` };
      const p = problems[0]!;
      const code = p.code === 'UNKNOWN_USER' ? 'NOT_FOUND' : 'VALIDATION';
      throw new AppError(code, `${p.field}: ${p.message}`, { errors });
    }
    const r = await q.query<{ id: number }>(
      `INSERT INTO workflow_delegations (partition_id, delegator_id, delegate_id, start_date, end_date, note,
                                         created_by, last_update_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id`,
      [
        principal.partitionId,
        checked.delegatorId,
        checked.delegateId,
        checked.startDate,
        checked.endDate,
        checked.note,
        principal.userId,
      ],
    );
    const added = (await recordOf(q, principal, Number(r.rows[0]!.id)))!;
    await history(q, principal, 'ADD', undefined, added);
    return added;
  });
}

/** Delegations the caller gives or receives; all of them for WORKFLOW_ADMIN. */
export async function fetchDelegations(
  db: Db,
  principal: Principal,
  body: FetchBody,
  max: number,
): Promise<FetchResult> {
  // Who gives or receives them: the type's own row scope (registry-workflows.ts `ownedRows`).
  const data = body.data === undefined ? undefined : upperStatuses(body.data);
  return fetchRecords(db, principal, WORKFLOW_DELEGATION_TYPE, { ...body, data }, max);
}

/**
 * Operators whose `value` is not a status to compare: a regular expression or a pattern (upper-cased,
 * `\w` became `\W` and `[a-z]` `[A-Z]`, and their case is the operator's to decide) or another field's
 * name (the …Field family).
 */
function comparesStatusValue(operator: unknown): boolean {
  if (typeof operator !== 'string' || !isOperator(operator)) return true;
  const def: { readonly test: Test; readonly field: boolean } = OPERATORS[operator];
  return !def.field && def.test.kind !== 'regexp' && !(def.test.kind === 'like' && def.test.glob);
}

/**
 * The interface names the statuses Initialized, Activated and EndDated in its filter example, the
 * records answer INITIALIZED, ACTIVATED and ENDDATED: a filter on `status` matches in any case — the
 * values it compares are upper-cased, not the patterns or field names some operators take.
 */
function upperStatuses(node: unknown): unknown {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return node;
  const o = node as Obj;
  const up = (v: unknown): unknown =>
    typeof v === 'string' ? v.toUpperCase() : Array.isArray(v) ? v.map(up) : v;
  if (Array.isArray(o.criteria)) return { ...o, criteria: o.criteria.map(upperStatuses) };
  if (o.fieldName === 'status') {
    if (!comparesStatusValue(o.operator)) return o;
    return { ...o, value: up(o.value), start: up(o.start), end: up(o.end) };
  }
  return o.fieldName === undefined && 'status' in o ? { ...o, status: up(o.status) } : o;
}

export interface TargetBody {
  readonly data: Obj;
  readonly oldValues?: { readonly version?: unknown } | null;
}

/** The delegation's id, and the field that gave it (an unknown one is named by it). */
function idOf(data: Obj): { id: number; field: 'typedId' | 'id' } {
  const given = (['typedId', 'id'] as const).filter((k) => data[k] !== undefined && data[k] !== null);
  const ids = given.map((field) => {
    const v = data[field];
    const m = /^(\d{1,15})(?:\.WFDG)?$/.exec(
      typeof v === 'number' ? String(v) : typeof v === 'string' ? v : '',
    );
    if (!m) throw validationError(field, 'give the delegation as typedId (<id>.WFDG) or id');
    return Number(m[1]);
  });
  if (ids.length === 0) throw validationError('typedId', 'give the delegation as typedId (<id>.WFDG) or id');
  if (ids.length === 2 && ids[0] !== ids[1])
    throw validationError('id', 'names another delegation than typedId');
  return { id: ids[0]!, field: given[0]! };
}

/** The delegation locked for a change by its delegator or a workflow administrator. */
async function lockForChange(q: Queryable, principal: Principal, body: TargetBody): Promise<Obj> {
  const { id, field } = idOf(body.data);
  const locked = await q.query<{ delegator_id: number; delegate_id: number; version: number }>(
    `SELECT delegator_id, delegate_id, version FROM workflow_delegations
      WHERE partition_id = $1 AND id = $2 FOR UPDATE`,
    [principal.partitionId, id],
  );
  const row = locked.rows[0];
  const admin = can(principal, 'WORKFLOW_ADMIN');
  // Seen only by who gives or receives it (or an administrator): to anyone else it does not exist,
  // as in the fetch (a 403 would tell which ids are taken).
  if (!row || (!admin && ![Number(row.delegator_id), Number(row.delegate_id)].includes(principal.userId))) {
    throw new AppError('NOT_FOUND', `Workflow delegation ${id} not found`, { field });
  }
  if (Number(row.delegator_id) !== principal.userId && !admin) {
    throw new AppError('FORBIDDEN', 'Only the delegator or a workflow administrator may change a delegation');
  }
  checkVersion(body.oldValues, { typedId: `${id}.WFDG`, version: row.version }, false);
  return (await recordOf(q, principal, id))!;
}

/** Refuses a field of `data` outside `allowed`, naming it: nothing a client sends is silently dropped. */
function onlyFields(data: Obj, allowed: readonly string[], why: string): void {
  for (const k of Object.keys(data)) if (!allowed.includes(k)) throw validationError(k, why);
}

/** What names a delegation, and the note: all that an update or an end-date takes. */
const NOTE_ONLY = ['typedId', 'id', 'note', 'version'];

export async function updateDelegation(db: Db, principal: Principal, body: TargetBody): Promise<Obj> {
  onlyFields(body.data, NOTE_ONLY, 'only the note of a delegation can be changed');
  // The note is what an update changes: leaving it out is no request to clear it (null does that).
  if (body.data.note === undefined)
    throw validationError('note', 'is required: the note is what an update changes');
  const note = noteOf(body.data.note);
  return db.transaction(async (q) => {
    const d = await lockForChange(q, principal, body);
    await q.query(
      `UPDATE workflow_delegations SET note = $3, version = version + 1, last_update_at = now(), last_update_by = $4
        WHERE partition_id = $1 AND id = $2`,
      [principal.partitionId, d.id, note, principal.userId],
    );
    const changed = (await recordOf(q, principal, Number(d.id)))!;
    await history(q, principal, 'UPDATE', d, changed);
    return changed;
  });
}

export async function deleteDelegation(db: Db, principal: Principal, body: TargetBody): Promise<Obj> {
  // A delete takes the delegation as fetched (its other fields are not changed by it).
  refuseUnknownFields(WORKFLOW_DELEGATION_TYPE, [body.data]);
  return db.transaction(async (q) => {
    const d = await lockForChange(q, principal, body);
    if (d.status !== 'INITIALIZED') {
      const instead = d.status === 'ACTIVATED' ? ' (use enddate)' : ': it has ended';
      throw validationError(
        idOf(body.data).field, // the field that named it
        `a delegation that is ${d.status as string} cannot be deleted${instead}`,
      );
    }
    await q.query(`DELETE FROM workflow_delegations WHERE partition_id = $1 AND id = $2`, [
      principal.partitionId,
      d.id,
    ]);
    await history(q, principal, 'DELETE', d, undefined);
    return d;
  });
}

export async function endDelegation(db: Db, principal: Principal, body: TargetBody): Promise<Obj> {
  onlyFields(body.data, NOTE_ONLY, 'an end-date changes only the end and the note');
  // A note given with the end replaces the delegation's (e.g. why it ended early).
  const note = body.data.note === undefined ? undefined : noteOf(body.data.note);
  return db.transaction(async (q) => {
    const d = await lockForChange(q, principal, body);
    if (d.status !== 'ACTIVATED') {
      throw validationError(
        idOf(body.data).field, // the field that named it
        `only an ACTIVATED delegation can be end-dated; this one is ${d.status as string}`,
      );
    }
    await q.query(
      `UPDATE workflow_delegations
          SET ended_at = now(), end_date = greatest(start_date, (now() AT TIME ZONE 'UTC')::date),
              note = CASE WHEN $4 THEN $5 ELSE note END,
              version = version + 1, last_update_at = now(), last_update_by = $3
        WHERE partition_id = $1 AND id = $2`,
      [principal.partitionId, d.id, principal.userId, note !== undefined, note ?? null],
    );
    const ended = (await recordOf(q, principal, Number(d.id)))!;
    await history(q, principal, 'UPDATE', d, ended);
    return ended;
  });
}
