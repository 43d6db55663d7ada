// Text built-ins. Offsets are 0-based; results are capped so that no expression can build huge text.

import { EvalError } from '../failures.ts';
import { D, MAX_TEXT, textOf } from '../values.ts';
import { int, spread, text } from './args.ts';
import { fn, type FnDef } from './types.ts';

function capped(s: string, name: string): string {
  if (s.length > MAX_TEXT) throw new EvalError(`${name}: result longer than ${MAX_TEXT} characters`);
  return s;
}

export const TEXT: readonly FnDef[] = [
  fn({
    name: 'concat',
    min: 1,
    max: 1_000,
    params: ['any'],
    returns: 'text',
    doc: 'Joins the arguments as text (null as empty text; numbers in plain notation).',
    example: 'concat("EUR ", 12.5) = "EUR 12.5"',
    run(args, env, site) {
      let out = '';
      for (const v of spread(args, env)) out = capped(out + textOf(v), site.name);
      return out;
    },
  }),
  fn({
    name: 'upper',
    min: 1,
    max: 1,
    params: ['text'],
    returns: 'text',
    doc: 'Upper case.',
    example: 'upper("eur") = "EUR"',
    run(args, _env, site) {
      return text(args, 0, site)?.toUpperCase() ?? null;
    },
  }),
  fn({
    name: 'lower',
    min: 1,
    max: 1,
    params: ['text'],
    returns: 'text',
    doc: 'Lower case.',
    example: 'lower("EUR") = "eur"',
    run(args, _env, site) {
      return text(args, 0, site)?.toLowerCase() ?? null;
    },
  }),
  fn({
    name: 'trim',
    min: 1,
    max: 1,
    params: ['text'],
    returns: 'text',
    doc: 'Removes leading and trailing white space.',
    example: 'trim("  a ") = "a"',
    run(args, _env, site) {
      return text(args, 0, site)?.trim() ?? null;
    },
  }),
  fn({
    name: 'length',
    min: 1,
    max: 1,
    params: [['text', 'list']],
    returns: 'number',
    doc: 'Number of characters of a text, or of items of a list.',
    example: 'length("abc") = 3',
    run(args, _env, site) {
      const v = args[0] ?? null;
      if (v === null) return null;
      if (Array.isArray(v)) return new D((v as unknown[]).length);
      return new D(text(args, 0, site)?.length ?? 0);
    },
  }),
  fn({
    name: 'substring',
    min: 2,
    max: 3,
    params: ['text', 'number', 'number'],
    returns: 'text',
    doc: 'Part of a text from the 0-based `start`, `length` characters long (default: to the end).',
    example: 'substring("ABC-123", 4) = "123"',
    run(args, _env, site) {
      const s = text(args, 0, site);
      const start = int(args, 1, site);
      const len = args.length > 2 ? int(args, 2, site) : undefined;
      if (s === undefined || start === undefined) return null;
      if (start < 0 || (len !== undefined && len < 0))
        throw new EvalError('substring: negative start or length');
      return len === undefined ? s.slice(start) : s.slice(start, start + len);
    },
  }),
  fn({
    name: 'contains',
    min: 2,
    max: 2,
    params: ['text', 'text'],
    returns: 'boolean',
    doc: 'True when the text contains the part (case-sensitive).',
    example: 'contains("Steel bolt", "bolt") = true',
    run(args, _env, site) {
      const s = text(args, 0, site);
      const p = text(args, 1, site);
      return s === undefined || p === undefined ? null : s.includes(p);
    },
  }),
  fn({
    name: 'startsWith',
    min: 2,
    max: 2,
    params: ['text', 'text'],
    returns: 'boolean',
    doc: 'True when the text starts with the prefix (case-sensitive).',
    example: 'startsWith("MB-0001", "MB-") = true',
    run(args, _env, site) {
      const s = text(args, 0, site);
      const p = text(args, 1, site);
      return s === undefined || p === undefined ? null : s.startsWith(p);
    },
  }),
  fn({
    name: 'endsWith',
    min: 2,
    max: 2,
    params: ['text', 'text'],
    returns: 'boolean',
    doc: 'True when the text ends with the suffix (case-sensitive).',
    example: 'endsWith("MB-0001", "01") = true',
    run(args, _env, site) {
      const s = text(args, 0, site);
      const p = text(args, 1, site);
      return s === undefined || p === undefined ? null : s.endsWith(p);
    },
  }),
  fn({
    name: 'text',
    min: 1,
    max: 1,
    params: ['any'],
    returns: 'text',
    doc: 'The value as text (numbers in plain notation, dates as YYYY-MM-DD); null stays null.',
    example: 'text(1.50) = "1.5"',
    run(args) {
      const v = args[0] ?? null;
      return v === null ? null : textOf(v);
    },
  }),
];
