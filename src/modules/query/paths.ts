// How the query API names what is wrong in a request: every `errors` key is the path of the element
// inside `data`, array elements in brackets — `source`, `endRow`, `join[0].on`, `valueFields[1]`,
// `filter.nosuch`, `having.n`, and in /queryapi.meta's `data.pipeline` the same paths under
// `pipeline.` (`pipeline.aggregates[0].field`) — as every operation names the fields of its `data`
// (`/add` names `attribute1`, not `data.attribute1`). Outside `data` a key is the body's own field
// (`data` itself, `operationType`). The route schema's errors and the criteria compiler's (which
// names a criterion's field alone) are renamed into that form here.

import type { FastifySchemaValidationError } from 'fastify';
import { AppError, renamedFields, type FieldErrors } from '../../http/errors.ts';

/** Runs `check`, its errors renamed by `rename` (errors of other kinds pass through unchanged). */
export function renaming<T>(rename: (key: string) => string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    throw err instanceof AppError ? renamedFields(err, rename) : err;
  }
}

/** As `renaming`, for a check that awaits. */
export async function renamingAsync<T>(rename: (key: string) => string, check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (err) {
    throw err instanceof AppError ? renamedFields(err, rename) : err;
  }
}

/**
 * The criteria compiler names a criterion's field (`nosuch`, `px.attribute1`), or `criteria` for the
 * shape of the whole: under `at` (`filter`, `having`) they are `filter.nosuch` and `filter`.
 */
export const criteriaKey =
  (at: string) =>
  (key: string): string =>
    key === 'criteria' || key === at ? at : `${at}.${key}`;

/** The path of a schema error's element: JSON pointer segments, array indexes in brackets. */
function schemaPath(segments: readonly string[]): string {
  let path = '';
  for (const s of segments) path += /^\d+$/.test(s) ? `[${s}]` : path === '' ? s : `.${s}`;
  return path;
}

/**
 * The route schema's refusals of a query API body as one -4 (the route's `schemaErrorFormatter`),
 * each named by its path inside `data` (`data.endRow` → `endRow`, `data.valueFields.0` →
 * `valueFields[0]`, `data.pipeline.source` → `pipeline.source`); `data` itself keeps its name.
 */
export function querySchemaError(errors: readonly FastifySchemaValidationError[]): AppError {
  const found: FieldErrors = {};
  for (const v of errors) {
    const params = v.params;
    const extra = typeof params.additionalProperty === 'string' ? params.additionalProperty : undefined;
    const missing = typeof params.missingProperty === 'string' ? params.missingProperty : undefined;
    const segments = v.instancePath
      .split('/')
      .slice(1)
      .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
    const name = extra ?? missing;
    if (name !== undefined) segments.push(name);
    // Inside `data` a path starts below it (ajv names array items by index, e.g. `valueFields/0`).
    const inside = segments[0] === 'data' && segments.length > 1 ? segments.slice(1) : segments;
    const key = schemaPath(inside);
    found[key === '' ? 'body' : key] ??= {
      errorMessage: extra !== undefined ? 'unknown field' : (v.message ?? 'invalid'),
    };
  }
  const [first, { errorMessage }] = Object.entries(found)[0] ?? ['body', { errorMessage: 'invalid' }];
  return new AppError('VALIDATION', `${first}: ${errorMessage}`, { errors: found });
}
