// The response envelope of every answer, success or failure, and the mapping of every error the
// process can meet (ours, Fastify's, the database's) to one catalogue entry of ./errors.ts.

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, firstFieldErrors, namedElement, validationError, type FieldErrors } from './errors.ts';
import { DeadlineError } from '../db/deadline.ts';
import { unstorableIn } from '../engine/values.ts';
import { patternFields } from '../engine/criteria/patterns.ts';
import type {} from './fastify-types.ts';

export interface ListInfo {
  readonly startRow: number;
  readonly endRow: number;
  readonly totalRows: number;
}

export interface Envelope {
  response: {
    node: string;
    status: number;
    data: unknown;
    startRow?: number;
    endRow?: number;
    totalRows?: number;
    csrfToken?: string;
    errors?: FieldErrors;
    requestId?: string;
  };
}

/** A success envelope; adds the CSRF token when authentication just issued one. */
export function ok(req: FastifyRequest, data: readonly unknown[] | null, list?: ListInfo): Envelope {
  const response: Envelope['response'] = { node: req.server.config.nodeId, status: 0, data };
  if (list) Object.assign(response, list);
  if (req.issuedCsrfToken !== undefined) response.csrfToken = req.issuedCsrfToken;
  return { response };
}

/**
 * A success envelope around a `data` array written elsewhere as JSON (a fetch's rows, a look-up's items
 * built by the database; src/http/answer-bytes.ts): the text before the array and the text after it,
 * with the same members as `ok`.
 */
export function envelopeEnds(req: FastifyRequest, list?: ListInfo): [string, string] {
  const csrf = req.issuedCsrfToken === undefined ? '' : `,"csrfToken":${JSON.stringify(req.issuedCsrfToken)}`;
  const paging =
    list === undefined
      ? ''
      : `,"startRow":${list.startRow},"endRow":${list.endRow},"totalRows":${list.totalRows}`;
  return [
    `{"response":{"node":${JSON.stringify(req.server.config.nodeId)},"status":0,"data":`,
    `${paging}${csrf}}}`,
  ];
}

/**
 * JSON schema of a success envelope whose `data` items are `item` (any JSON by default: records,
 * documented as such by openapi.ts). Open items are `{}`, never `{type: 'object',
 * additionalProperties: true}`: fast-json-stringify writes those property by property, 230–280 ms
 * for 10,000 products (8 MB) against 26–30 ms for `{}` (JSON.stringify per item), and its output
 * then took another ~40 ms to measure for Content-Length.
 */
export function envelopeSchema(item: object = {}, list = false): object {
  const paging = list
    ? { startRow: { type: 'integer' }, endRow: { type: 'integer' }, totalRows: { type: 'integer' } }
    : {};
  return {
    type: 'object',
    required: ['response'],
    properties: {
      response: {
        type: 'object',
        required: ['node', 'status', 'data'],
        properties: {
          node: { type: 'string' },
          status: { type: 'integer' },
          data: { anyOf: [{ type: 'array', items: item }, { type: 'null' }] },
          csrfToken: { type: 'string' },
          ...paging,
        },
      },
    },
  };
}

/**
 * The body of an operation whose path names all it needs (a submit): none, `{}`, or the envelope's
 * `operationType` and an empty `data`. Anything else is an unknown field (400, naming it).
 */
export const noArgumentsBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: { operationType: { type: 'string' }, data: { type: ['object', 'null'], maxProperties: 0 } },
} as const;

/**
 * A route's preValidation hook running `check` on the request: what it throws is the answer (its
 * error envelope), before the body is validated.
 */
export function requestCheck(
  check: (req: FastifyRequest) => unknown,
): (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void {
  return (req, _reply, done) => {
    try {
      check(req);
      done();
    } catch (err) {
      done(err as Error);
    }
  };
}

/** The longest path parameter the router takes (app.ts `maxParamLength`). */
export const MAX_PATH_PARAM = 1000;

export const errorEnvelopeSchema = {
  type: 'object',
  properties: {
    response: {
      type: 'object',
      properties: {
        node: { type: 'string' },
        status: { type: 'integer' },
        data: { type: 'string' },
        errors: { type: 'object', additionalProperties: true },
        requestId: { type: 'string' },
      },
    },
  },
} as const;

interface PgError {
  code?: unknown;
  constraint?: unknown;
  detail?: unknown;
}

/**
 * Condition record items overlapping in validity: the trigger's message names the item in the way
 * (migrations 014, 038: the check runs under advisory locks, no exclusion constraint). Any other
 * exclusion constraint answers a generic message.
 */
function overlapError(fe: PgError & { message?: unknown; detail?: unknown }): AppError {
  const field = 'validFrom';
  if (fe.constraint === 'condition_records_overlap' && typeof fe.message === 'string') {
    return new AppError('VALIDATION', fe.message, { errors: { [field]: { errorMessage: fe.message } } });
  }
  // The ranges of a RANGE lookup table (migration 008's trigger): its text names both ranges and
  // DETAIL the bound at fault; a 409, as the lookup table operations answer it.
  if (fe.constraint === 'lookup_values_ranges' && typeof fe.message === 'string') {
    const bound = fe.detail === 'upperBound' ? 'upperBound' : 'lowerBound';
    return new AppError('CONFLICT', fe.message, { errors: { [bound]: { errorMessage: fe.message } } });
  }
  const message = 'The record overlaps another one';
  return new AppError('VALIDATION', message, { errors: { [field]: { errorMessage: message } } });
}

/**
 * A CHECK constraint the write broke, for the rules a request can break only against the stored
 * record (an update of one end of a condition record's validity): a -4 naming the field.
 */
function checkViolation(fe: PgError): AppError {
  const rule = typeof fe.constraint === 'string' ? CHECKS.get(fe.constraint) : undefined;
  return rule
    ? validationError(rule[0], rule[1])
    : validationError('data', 'A value breaks a rule of the table');
}

/** CHECK constraints a write of a few fields can break, and the field each names (migrations). */
const CHECKS: ReadonlyMap<string, readonly [string, string]> = new Map([
  [
    'condition_records_validity',
    ['validTo', 'must not be before validFrom (the item would end before it starts)'],
  ],
  ['rebate_record_groups_dates', ['endDate', 'must not be before startDate']],
  ['rounding_policies_step_check', ['step', 'must be greater than 0']],
  ['lookup_values_bounds', ['upperBound', 'must be greater than lowerBound']],
  ['workflow_delegations_check1', ['endDate', 'must not be before startDate']],
]);

/**
 * A foreign key the write broke: a record it names was deleted meanwhile (checked before writing, so
 * only a concurrent delete gets here) — 404/-1 naming the field; or a record still named by others was
 * deleted — 409. The field: the request's name of the constraint's column where the two differ, else
 * the column from PostgreSQL's DETAIL ("Key (partition_id, user_id)=(...)") in camel case.
 */
function foreignKeyError(fe: PgError & { message?: unknown }): AppError {
  const text = typeof fe.message === 'string' ? fe.message : '';
  if (/^update or delete on/.test(text)) {
    return new AppError('CONFLICT', 'The record is still referred to by another record');
  }
  const known = typeof fe.constraint === 'string' ? FOREIGN_KEYS.get(fe.constraint) : undefined;
  const keyColumns = typeof fe.detail === 'string' ? /^Key \(([^)]*)\)/.exec(fe.detail)?.[1] : undefined;
  const column = keyColumns
    ?.split(', ')
    .filter((c) => c !== 'partition_id')
    .at(-1);
  const field = known ?? (column ? column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()) : 'data');
  const message = 'names a record that does not exist (it was deleted meanwhile)';
  return new AppError('NOT_FOUND', `${field}: ${message}`, {
    errors: { [field]: { errorMessage: message } },
  });
}

/** Foreign keys whose column the request names otherwise (recipients by login, a delegate by name). */
const FOREIGN_KEYS: ReadonlyMap<string, string> = new Map([
  ['notifications_partition_id_user_id_fkey', 'recipients'],
  ['workflow_delegations_partition_id_delegate_id_fkey', 'delegate'],
  ['workflow_delegations_partition_id_delegator_id_fkey', 'delegator'],
  // An item's set (migration 041 keeps the constraint's name): a set deleted (force) while written.
  ['condition_records_partition_id_condition_record_set_id_key_fkey', 'conditionRecordSetId'],
]);

/**
 * A value past a limit of the database (54000). Mostly one too large for a btree entry of an index on
 * its column ("index row size ... for index "rc_products_label""): the field is read off the index's
 * name where it names one (rc_*_label, rc_*_name, rcx_*_attributeN_*). Values of fields with search
 * indexes are checked before writing; this answers the rest, such as an attribute indexed by another
 * partition's meta.
 */
function tooLarge(fe: PgError & { message?: unknown }): AppError {
  const text = typeof fe.message === 'string' ? fe.message : '';
  // Other limits of the same code (a jsonb value or an array past its most): what was too large.
  if (!/\bindex row\b/.test(text)) return validationError('data', `is too large to store (${text})`);
  const index = /for index "([a-z0-9_]+)"/.exec(text)?.[1] ?? '';
  const field =
    /_(attribute\d+)_[a-z]+$/.exec(index)?.[1] ?? /_(label|name)(?:_lower)?$/.exec(index)?.[1] ?? 'data';
  return validationError(
    field,
    'is too large for an index of its column (a text of at most about 2,600 bytes)',
  );
}

/** The catalogue entry of anything thrown while serving a request. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  // A refusal of the database while an element of a batch was written names the element.
  return namedElement(err, mapError(err));
}

function mapError(err: unknown): AppError {
  if (err instanceof DeadlineError) return new AppError('TIMEOUT', err.message);
  const fe = err as Partial<FastifyError> & PgError;
  if (Array.isArray(fe.validation)) {
    const errors: FieldErrors = {};
    for (const v of fe.validation) {
      const params: Record<string, unknown> = v.params;
      const extra = typeof params.additionalProperty === 'string' ? params.additionalProperty : undefined;
      const missing = typeof params.missingProperty === 'string' ? params.missingProperty : undefined;
      const base = v.instancePath.replace(/^\//, '').replace(/\//g, '.');
      const name = extra ?? missing;
      // A body field, path parameter or query parameter is named as itself (`tableId`, not
      // `params.tableId`), as the operations' own checks name them; headers keep their prefix.
      const context = fe.validationContext === 'headers' ? 'headers' : '';
      const field = [context, base, name].filter((s) => s !== undefined && s !== '').join('.');
      const message = extra !== undefined ? 'unknown field' : (v.message ?? 'invalid');
      errors[field === '' ? 'body' : field] ??= { errorMessage: message };
    }
    const first = Object.entries(errors)[0]!;
    return new AppError('VALIDATION', `${first[0]}: ${first[1].errorMessage}`, { errors });
  }
  switch (String(fe.code)) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('BODY_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported content type: send application/json', {
        field: 'Content-Type',
      });
    case 'FST_ERR_BAD_URL':
      return validationError('path', 'is not a valid URL (malformed percent-encoding)');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return validationError('path', `holds a parameter longer than ${MAX_PATH_PARAM} characters`);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('VALIDATION', 'Malformed JSON body', { field: 'body' });
    case '23505':
      return new AppError('DUPLICATE_KEY');
    case '23P01':
      return overlapError(fe);
    case '23503':
      return foreignKeyError(fe);
    case '23514':
      return checkViolation(fe);
    case 'RC400':
      // A rule of our own triggers about the request (e.g. a condition record set deleted while it
      // holds items, without force): the message is the trigger's text, the field its DETAIL.
      return validationError(
        typeof fe.detail === 'string' && /^[A-Za-z][A-Za-z0-9.]*$/.test(fe.detail) ? fe.detail : 'data',
        typeof fe.message === 'string' ? fe.message : 'Refused by a rule of the database',
      );
    case '54000':
      return tooLarge(fe);
    case 'RC409':
      // A state rule of our own triggers (e.g. a locked rebate record group deleted by filter): the
      // message is the trigger's text, written for the client.
      return new AppError('CONFLICT', typeof fe.message === 'string' ? fe.message : undefined);
    case '40001':
    case '40P01':
      return new AppError('CONFLICT', 'Concurrent change; retry the request');
    case '57014':
      return new AppError('TIMEOUT');
    default:
      break;
  }
  // SQLSTATE class 22 (data exception: a value PostgreSQL cannot take, such as a regular expression
  // it rejects or a NUL byte): our SQL text is built from validated parts, so the value is at fault.
  if (isDataException(fe)) {
    // PostgreSQL's own text says which (e.g. "invalid regular expression: quantifier operand
    // invalid"); it names values of the request only, never anything of the server.
    const why = typeof fe.message === 'string' && fe.message !== '' ? `: ${fe.message}` : '';
    // A refused pattern names its field when the request tests one field with patterns (the
    // database's message does not say which pattern it refused; several fields stay `data`).
    const patterns = fe.code === '2201B' ? patternFields() : [];
    if (patterns.length === 1) {
      return validationError(patterns[0]!, `the database refused the regular expression${why}`);
    }
    return new AppError('VALIDATION', `A value was refused by the database${why}`, { field: 'data' });
  }
  if (fe.statusCode === 429) return new AppError('RATE_LIMITED');
  // A body nested thousands of levels deep exhausts the stack of whatever walks it (a stringify, a
  // check): the request's fault, refused like any other bad body; the transaction rolled back.
  if (err instanceof RangeError && /call stack size/i.test(err.message)) {
    return validationError('body', 'is nested too deeply');
  }
  if (err instanceof SyntaxError && fe.statusCode === 400) {
    return new AppError('VALIDATION', 'Malformed JSON body', { field: 'body' });
  }
  if (
    typeof fe.statusCode === 'number' &&
    fe.statusCode >= 400 &&
    fe.statusCode < 500 &&
    fe.statusCode !== 404
  ) {
    return new AppError('VALIDATION', fe.message ?? 'Bad request', { field: 'request' });
  }
  return new AppError('INTERNAL');
}

/** SQLSTATE class 22: a value the database could not take. */
function isDataException(err: unknown): boolean {
  const code = (err as PgError | null)?.code;
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code);
}

/** The error handler of the whole app: one envelope for every failure, a log line for the unexpected. */
export function handleError(err: unknown, req: FastifyRequest, reply: FastifyReply): Envelope {
  let e = toAppError(err);
  // The database refused a value: when the body holds NUL or an unpaired surrogate somewhere, that
  // is it, and its path says which field (a module that writes text it does not check itself still
  // names the field). Named like every field error, inside `data` (`label`, `2.label` in a batch).
  // A path parameter with NUL (`/conditionrecordset.lookup/A%00B`) is named as itself.
  const found = isDataException(err)
    ? (unstorableIn(req.body, false) ?? unstorableIn(req.params, false))
    : undefined;
  if (found !== undefined)
    e = validationError((found.path || 'body').replace(/^(\d+\.)?data\./, '$1'), found.problem);
  if (e.code === 'INTERNAL') req.log.error({ err }, 'unexpected error');
  const response: Envelope['response'] = {
    node: req.server.config.nodeId,
    status: e.status,
    data: e.code === 'INTERNAL' ? `Internal error (request ${req.id})` : e.message,
    requestId: req.id,
  };
  // Always there, as the conventions' envelope shows it: empty when no field is at fault (an unknown
  // operation or partition, missing credentials, a permission, a state conflict).
  response.errors = e.errors ? firstFieldErrors(e.errors) : {};
  void reply.code(e.http);
  return { response };
}
