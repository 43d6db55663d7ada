// The two ways an evaluation fails at run time, in a file of their own: the functions, the
// environment and the evaluator all throw or catch them, and none of those may import another only
// for these (the math functions importing them from env.ts closed a cycle through rounding.ts).

/** A failure of one element at run time (bad value, division by zero...): the element's CRITICAL alert. */
export class EvalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EvalError';
  }
}

/** A step or time limit was hit: the whole evaluation stops. */
export class LimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LimitError';
  }
}

/**
 * A failure of one element, as an EvalError: our own, or decimal.js refusing an argument (an
 * exponent or a number of places it cannot take) — a bad value of the logic, never a server error.
 */
export function elementFailure(err: unknown): EvalError | undefined {
  if (err instanceof EvalError) return err;
  if (err instanceof Error && err.message.startsWith('[DecimalError] ')) {
    return new EvalError(`a number operation failed: ${err.message.slice('[DecimalError] '.length)}`);
  }
  return undefined;
}
