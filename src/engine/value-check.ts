// Value checks of writes: every value against its field (type, length, allowed values, required),
// custom attributes typed by the partition's attribute meta; all errors of a record in one -4.

import { AppError, validationError, type FieldErrors } from '../http/errors.ts';
import type { TypeContext } from './context.ts';
import type { FieldDef } from './registry.ts';
import { EXPECTED, coerceValue } from './values.ts';

type Obj = Record<string, unknown>;

/** Validated column values of a write; all errors of the record are collected into one -4. */
export function prepareValues(tc: TypeContext, data: Obj, mode: 'add' | 'update'): Map<FieldDef, unknown> {
  const errors: FieldErrors = {};
  const out = new Map<FieldDef, unknown>();
  for (const [name, raw] of Object.entries(data)) {
    if (name === 'typedId') continue;
    const f = tc.fields.get(name);
    if (!f) {
      errors[name] = { errorMessage: 'unknown field' };
      continue;
    }
    if (f.system) continue;
    if (f.key && mode === 'update') continue; // keys address the record; they are not changed
    const err = checkValue(f, raw);
    if (typeof err === 'string') errors[name] = { errorMessage: err };
    else out.set(f, err.value);
  }
  if (mode === 'add') {
    for (const f of tc.fields.values()) {
      const absent = out.get(f) === undefined && !(f.name in data);
      if (
        f.required &&
        !(f.defaultOnAdd && absent) &&
        (out.get(f) === undefined || out.get(f) === null) &&
        !errors[f.name]
      ) {
        errors[f.name] = { errorMessage: 'is required' };
      }
    }
  }
  const problem = tc.type.validate?.(data);
  if (problem) Object.assign(errors, problem);
  const first = Object.entries(errors)[0];
  if (first) throw new AppError('VALIDATION', `${first[0]}: ${first[1].errorMessage}`, { errors });
  return out;
}

/** A value in its stored form, or the reason it is refused. */
export function checkValue(f: FieldDef, raw: unknown): { value: unknown } | string {
  if (raw === null || raw === undefined || (raw === '' && f.type !== 'string')) {
    return f.required ? 'is required' : { value: null };
  }
  if (f.type === 'json') return { value: JSON.stringify(raw) };
  const v = coerceValue(f.type, raw);
  if (v === undefined) return `${JSON.stringify(raw)} is not ${EXPECTED[f.type]}`;
  if (f.required && v === '') return 'is required';
  if (typeof v === 'string' && f.maxLength !== undefined && v.length > f.maxLength) {
    return `is longer than ${f.maxLength} characters`;
  }
  if (f.oneOf && !f.oneOf.includes(String(v))) return `must be one of ${f.oneOf.join(', ')}`;
  return { value: f.custom ? String(v) : v };
}

export function editableField(tc: TypeContext, name: string, param: string): FieldDef {
  const f = tc.fields.get(name);
  if (!f) throw validationError(param, `unknown field ${JSON.stringify(name)}`);
  if (f.system || f.key) throw validationError(param, `${name} cannot be changed`);
  return f;
}
