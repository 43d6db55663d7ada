// Date built-ins on calendar days (UTC, no time of day). The only clocks a logic sees are
// `targetDate` and `today()`, both fixed for the whole evaluation.

import { EvalError } from '../failures.ts';
import { D, LogicDate, parseIsoDate } from '../values.ts';
import { date, int, text } from './args.ts';
import { fn, type FnDef } from './types.ts';

const DAY_MS = 86_400_000;

function ms(d: LogicDate): number {
  return Date.parse(`${d.iso}T00:00:00Z`);
}
function fromMs(t: number): LogicDate {
  const d = new Date(t);
  if (Number.isNaN(d.getTime()) || d.getUTCFullYear() < 1 || d.getUTCFullYear() > 9999)
    throw new EvalError('date out of range');
  return new LogicDate(d.toISOString().slice(0, 10));
}

export const DATES: readonly FnDef[] = [
  fn({
    name: 'date',
    min: 1,
    max: 1,
    params: ['text'],
    returns: 'date',
    doc: 'A date from `YYYY-MM-DD` text.',
    example: 'date("2026-03-01")',
    run(args, _env, site) {
      const s = text(args, 0, site);
      if (s === undefined) return null;
      const d = parseIsoDate(s);
      if (!d) throw new EvalError(`date: "${s.slice(0, 40)}" is not a valid YYYY-MM-DD date`);
      return d;
    },
  }),
  fn({
    name: 'today',
    min: 0,
    max: 0,
    params: [],
    returns: 'date',
    doc: "Today's date (UTC), fixed for the evaluation.",
    example: 'daysBetween(today(), targetDate)',
    run(_args, env) {
      return env.today;
    },
  }),
  fn({
    name: 'addDays',
    min: 2,
    max: 2,
    params: ['date', 'number'],
    returns: 'date',
    doc: 'The date plus a whole number of days (negative to go back).',
    example: 'addDays(date("2026-02-27"), 2) = 2026-03-01',
    run(args, _env, site) {
      const d = date(args, 0, site);
      const n = int(args, 1, site, 3_660_000);
      return d === undefined || n === undefined ? null : fromMs(ms(d) + n * DAY_MS);
    },
  }),
  fn({
    name: 'addMonths',
    min: 2,
    max: 2,
    params: ['date', 'number'],
    returns: 'date',
    doc: 'The date plus whole months; the day is clipped to the end of a shorter month.',
    example: 'addMonths(date("2026-01-31"), 1) = 2026-02-28',
    run(args, _env, site) {
      const d = date(args, 0, site);
      const n = int(args, 1, site, 120_000);
      if (d === undefined || n === undefined) return null;
      const [y, m, day] = d.iso.split('-').map(Number) as [number, number, number];
      const total = y * 12 + (m - 1) + n;
      const ny = Math.floor(total / 12);
      const nm = total - ny * 12;
      const last = new Date(Date.UTC(ny, nm + 1, 0)).getUTCDate();
      const t = Date.UTC(ny, nm, Math.min(day, last));
      const out = new Date(t);
      out.setUTCFullYear(ny);
      return fromMs(out.getTime());
    },
  }),
  fn({
    name: 'daysBetween',
    min: 2,
    max: 2,
    params: ['date', 'date'],
    returns: 'number',
    doc: 'Days from the first date to the second (negative when the second is earlier).',
    example: 'daysBetween(date("2026-03-01"), date("2026-03-31")) = 30',
    run(args, _env, site) {
      const a = date(args, 0, site);
      const b = date(args, 1, site);
      return a === undefined || b === undefined ? null : new D(Math.round((ms(b) - ms(a)) / DAY_MS));
    },
  }),
  fn({
    name: 'year',
    min: 1,
    max: 1,
    params: ['date'],
    returns: 'number',
    doc: 'The year of a date.',
    example: 'year(date("2026-03-01")) = 2026',
    run(args, _env, site) {
      const d = date(args, 0, site);
      return d === undefined ? null : new D(Number(d.iso.slice(0, 4)));
    },
  }),
  fn({
    name: 'month',
    min: 1,
    max: 1,
    params: ['date'],
    returns: 'number',
    doc: 'The month (1-12) of a date.',
    example: 'month(date("2026-03-01")) = 3',
    run(args, _env, site) {
      const d = date(args, 0, site);
      return d === undefined ? null : new D(Number(d.iso.slice(5, 7)));
    },
  }),
  fn({
    name: 'day',
    min: 1,
    max: 1,
    params: ['date'],
    returns: 'number',
    doc: 'The day of the month of a date.',
    example: 'day(date("2026-03-01")) = 1',
    run(args, _env, site) {
      const d = date(args, 0, site);
      return d === undefined ? null : new D(Number(d.iso.slice(8, 10)));
    },
  }),
];
