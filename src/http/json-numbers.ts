// JSON numbers a double cannot hold — more significant digits than it keeps (an ERP's 20-digit
// numeric `sku`, a 25-digit decimal) or too small for it (`1e-400`, which would be 0) — reach the
// operations as their JSON text, so a text field stores what the client sent and a decimal keeps
// its value (numeric text is accepted wherever a number is), instead of a silently rounded double.
// A number too large for a double stays Infinity, which every check refuses by name (-4). Every
// other number parses as before.
// A reviver costs every value of a body (a 2.5 MB load: ~185 ms against ~23), so it runs only on text
// that may hold such a number: 16 or more digits in a run (dots inside it allowed: a double keeps
// any 15 significant digits) or a digit before a three-digit exponent. Digits inside strings may
// match too; those bodies are merely parsed the slower way. The scan is a loop over the text's
// code units (~6 ms for those 2.5 MB; the regular expression for the same test took ~16).

import { Decimal } from 'decimal.js';
import sjson from 'secure-json-parse';

const [ZERO, NINE, DOT, PLUS, MINUS, LOWER_E, UPPER_E] = [48, 57, 46, 43, 45, 101, 69];

const isDigit = (c: number): boolean => c >= ZERO && c <= NINE;

/** Whether the JSON text may hold a number a double cannot hold exactly. */
export function mayHoldInexactNumbers(text: string): boolean {
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isDigit(c)) {
      if (++run >= 16) return true;
    } else if ((c === LOWER_E || c === UPPER_E) && run > 0) {
      const s = text.charCodeAt(i + 1);
      const j = s === PLUS || s === MINUS ? i + 2 : i + 1;
      if (isDigit(text.charCodeAt(j)) && isDigit(text.charCodeAt(j + 1)) && isDigit(text.charCodeAt(j + 2)))
        return true;
      run = 0;
    } else if (c !== DOT) run = 0;
  }
  return false;
}

/** A JSON.parse reviver: a finite number whose double differs from its text in value becomes that text. */
export function exactNumbers(_key: string, value: unknown, context?: { readonly source?: string }): unknown {
  if (typeof value !== 'number' || !Number.isFinite(value) || context?.source === undefined) return value;
  return new Decimal(context.source).eq(value) ? value : context.source;
}

/** JSON.parse with prototype keys refused (as Fastify's parser) and inexact numbers kept as text. */
export function parseJsonExact(text: string): unknown {
  return sjson.parse(text, exactNumbers, { protoAction: 'error', constructorAction: 'error' });
}
