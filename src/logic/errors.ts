// Turns problems found in logic text into the project's -4 validation error, naming the element (or
// field), the line and the column, so that a logic author can go straight to the spot.

import { AppError } from '../http/errors.ts';
import { ExpressionError, lineColumn } from './expression/parse.ts';

export interface ExpressionErrorDetails {
  readonly element?: string;
  readonly line: number;
  readonly column: number;
  readonly problem: string;
}

/** A -4 for `err` in `text`; `field` is the envelope's error key, `element` the element's name. */
export function logicTextError(
  field: string,
  text: string,
  err: ExpressionError,
  element?: string,
): AppError {
  const { line, column } = lineColumn(text, err.pos);
  const where = element === undefined ? '' : `element ${element}, `;
  const message = `${where}line ${line}, column ${column}: ${err.message}`;
  const details: ExpressionErrorDetails = {
    ...(element === undefined ? {} : { element }),
    line,
    column,
    problem: err.message,
  };
  return new AppError('VALIDATION', `${field}: ${message}`, {
    errors: { [field]: { errorMessage: message } },
    details,
  });
}
