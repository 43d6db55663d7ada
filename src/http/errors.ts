// The one error catalogue: every failure the API can answer, with its HTTP status and envelope status.
// Services throw `AppError`s made from these entries; `http/envelope.ts` turns them into the error
// envelope. docs/errors.md documents each code, and a test keeps the two in step.

export interface ErrorSpec {
  readonly http: number;
  readonly status: number;
  readonly message: string;
}

export const ERRORS = {
  // request shape
  VALIDATION: { http: 400, status: -4, message: 'Validation failed' },
  UNSUPPORTED_MEDIA_TYPE: { http: 415, status: -4, message: 'Unsupported content type' },
  // authentication
  BAD_CREDENTIALS: { http: 401, status: -5, message: 'Invalid user name or password' },
  LOCKED_OUT: { http: 401, status: -6, message: 'Too many failed logins; try again later' },
  UNAUTHENTICATED: { http: 401, status: -7, message: 'Authentication required' },
  // authorisation
  FORBIDDEN: { http: 403, status: -3, message: 'Not allowed' },
  CSRF: { http: 403, status: -3, message: 'Missing or invalid CSRF token' },
  // addressing
  NOT_FOUND: { http: 404, status: -1, message: 'Not found' },
  ROUTE_NOT_FOUND: { http: 404, status: -1, message: 'Unknown operation' },
  PARTITION_NOT_FOUND: { http: 404, status: -1, message: 'Unknown partition' },
  // state
  CONFLICT: { http: 409, status: -1, message: 'Conflict' },
  VERSION_CONFLICT: { http: 409, status: -1, message: 'The record was changed by someone else' },
  DUPLICATE_KEY: { http: 409, status: -1, message: 'A record with this key already exists' },
  // limits
  BODY_TOO_LARGE: { http: 413, status: -12, message: 'Request body too large' },
  UPLOAD_TOO_LARGE: { http: 413, status: -11, message: 'Upload too large' },
  RANGE_NOT_SATISFIABLE: { http: 416, status: -4, message: 'Requested range not satisfiable' },
  RATE_LIMITED: { http: 429, status: -1, message: 'Too many requests' },
  TIMEOUT: { http: 503, status: -100, message: 'The request timed out' },
  UNAVAILABLE: { http: 503, status: -1, message: 'Service unavailable' },
  // everything else
  INTERNAL: { http: 500, status: -1, message: 'Internal error' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** Per-field messages, as the envelope's `errors` map: `{ field: { errorMessage } }`. */
export type FieldErrors = Record<string, { errorMessage: string }>;

/**
 * The most field errors an answer names: a record of a million unknown names answered a million
 * (43 MB, seconds of the event loop); the first ones say what is wrong.
 */
export const MAX_FIELD_ERRORS = 100;

/** `errors` cut to its first MAX_FIELD_ERRORS entries (itself when it has no more). */
export function firstFieldErrors(errors: FieldErrors): FieldErrors {
  const out: FieldErrors = {};
  let n = 0;
  for (const name in errors) {
    if (n++ === MAX_FIELD_ERRORS) return out;
    out[name] = errors[name]!;
  }
  return errors;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly http: number;
  readonly status: number;
  readonly errors: FieldErrors | undefined;
  readonly details: unknown;

  constructor(
    code: ErrorCode,
    message?: string,
    opts: { field?: string; errors?: FieldErrors; details?: unknown } = {},
  ) {
    const spec = ERRORS[code];
    super(message ?? spec.message);
    this.name = 'AppError';
    this.code = code;
    this.http = spec.http;
    this.status = spec.status;
    this.details = opts.details;
    if (opts.errors) this.errors = opts.errors;
    else if (opts.field !== undefined) this.errors = { [opts.field]: { errorMessage: this.message } };
    else this.errors = undefined;
  }
}

/** A -4 naming the field at fault. */
export function validationError(field: string, message: string): AppError {
  return new AppError('VALIDATION', `${field}: ${message}`, {
    errors: { [field]: { errorMessage: message } },
  });
}

/**
 * `e`, an error of the batch element whose names start with `prefix` (`2.`): its fields named with
 * it (`2.attribute1`), a missing record by the element's address (`2.typedId`); `rename` rewrites
 * the texts (records of the rolled-back batch named as its elements).
 */
export function elementError(prefix: string, e: AppError, rename = (text: string) => text): AppError {
  if (e.errors === undefined && e.code === 'NOT_FOUND' && prefix !== '') {
    return new AppError(e.code, e.message, { errors: { [`${prefix}typedId`]: { errorMessage: e.message } } });
  }
  if (e.errors === undefined) return e;
  const errors = Object.fromEntries(
    Object.entries(e.errors).map(([f, v]) => [prefix + f, { ...v, errorMessage: rename(v.errorMessage) }]),
  );
  return new AppError(e.code, rename(e.message), { errors });
}

/**
 * `e` with each field it names renamed by `rename` (a module naming fields as its request sent them:
 * `data.rebateRecordGroup.endDate`, `filter.nosuch`), its message too where it opens with a field's
 * name (validationError's form). An error naming no field is `e`.
 */
export function renamedFields(e: AppError, rename: (field: string) => string): AppError {
  if (e.errors === undefined) return e;
  const errors: FieldErrors = Object.fromEntries(Object.entries(e.errors).map(([k, v]) => [rename(k), v]));
  const first = Object.keys(e.errors).find((k) => e.message.startsWith(`${k}: `));
  const message = first === undefined ? e.message : `${rename(first)}${e.message.slice(first.length)}`;
  return new AppError(e.code, message, { errors, details: e.details });
}

/**
 * Runs a check of one element of a batch whose errors name bare fields, naming them with the
 * element's prefix (`elementError`); no prefix, no change.
 */
export async function prefixed<T>(prefix: string, check: () => Promise<T>): Promise<T> {
  if (prefix === '') return check();
  try {
    return await check();
  } catch (err) {
    throw err instanceof AppError ? elementError(prefix, err) : err;
  }
}

const elements = new WeakMap<object, (e: AppError) => AppError>();

/**
 * Marks an error the database raised while one element of a batch was written (an overlap of
 * condition record items): once it is answered as an AppError (envelope.ts `toAppError`), `name`
 * names the element in it (`1.validFrom`). The error itself travels on unchanged, for callers that
 * read its code. The first mark stands (the innermost batch).
 */
export function markElement(err: unknown, name: (e: AppError) => AppError): void {
  if (typeof err === 'object' && err !== null && !elements.has(err)) elements.set(err, name);
}

/** `e` (the answer to `err`) with the element of a batch named, if `err` was marked. */
export function namedElement(err: unknown, e: AppError): AppError {
  const name = typeof err === 'object' && err !== null ? elements.get(err) : undefined;
  return name === undefined ? e : name(e);
}

/** A 404 naming the field of the request (path parameter or body field) that named what is missing. */
export function notFound(what: string, field: string): AppError {
  return new AppError('NOT_FOUND', `${what} not found`, { field });
}

export function forbidden(message = ERRORS.FORBIDDEN.message): AppError {
  return new AppError('FORBIDDEN', message);
}
