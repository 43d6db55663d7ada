// A record's id as a request gives it: a number, or a typedId (`12.P`) of the type or one of its
// aliases. Apart from addressing.ts, so that a type's own hooks (registry-condrec.ts) read ids as
// the engine does without importing the engine's record access (an import cycle through registry.ts).

import { validationError } from '../http/errors.ts';
import type { TypeDef } from './types.ts';

export function parseId(type: TypeDef, v: unknown, field: string): number {
  const text = typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim() : '';
  const m = /^(\d{1,15})(?:\.([A-Za-z0-9]+))?$/.exec(text);
  if (!m || (m[2] !== undefined && m[2] !== type.code && !type.typedIdAliases?.includes(m[2]))) {
    throw validationError(field, `${JSON.stringify(v)} is not an id or typedId of type ${type.code}`);
  }
  return Number(m[1]);
}
