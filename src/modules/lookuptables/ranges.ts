// The overlap check of a RANGE table's bulk load (load.ts): which rows to refuse, each with its own
// reason, before the engine writes the others. A row is refused only for overlapping a range that
// exists once the load is written: a stored range the load does not replace, or a range of a row
// the load writes — never a row the engine refuses (a repeated or duplicate key, a row without a
// match that cannot be inserted). The trigger of migration 008 remains the guarantee.

import { Decimal } from 'decimal.js';
import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { checkValue } from '../../engine/crud.ts';
import { planLoad, type LoadBody, type LoadPlan, type RowError } from '../../engine/loaddata.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { HIGHEST_BOUND, LOWEST_BOUND, rangeBound, type LookupTable } from '../../engine/registry-lookup.ts';
import * as store from './store.ts';

/** A range's bounds, exact (decimals past a double's precision and range), ±Infinity when open. */
interface Interval {
  readonly lo: Decimal;
  readonly hi: Decimal;
  readonly name: string;
  /** Position of the row that writes it in the load (undefined: a stored range). */
  readonly at?: number;
}

const show = (iv: Interval) =>
  `[${iv.lo.isFinite() ? iv.lo.toString() : '-inf'}, ${iv.hi.isFinite() ? iv.hi.toString() : 'inf'}) of ${iv.name}`;

/**
 * The ranges that may exist during the check, sorted by start, of which those present (the table
 * as the rows checked so far leave it) are marked in a Fenwick tree. Present ranges never overlap,
 * so of those starting before a range's end only the last one can overlap it.
 */
class Ranges {
  private readonly sorted: Interval[];
  private readonly position = new Map<Interval, number>();
  private readonly tree: Int32Array;

  constructor(all: readonly Interval[]) {
    this.sorted = [...all].sort((a, b) => a.lo.cmp(b.lo) || a.hi.cmp(b.hi));
    this.sorted.forEach((iv, i) => this.position.set(iv, i));
    this.tree = new Int32Array(this.sorted.length + 1);
  }

  set(iv: Interval, present: boolean): void {
    const d = present ? 1 : -1;
    for (let i = this.position.get(iv)! + 1; i < this.tree.length; i += i & -i) this.tree[i]! += d;
  }

  /** A present range overlapping `iv`, if any. */
  clash(iv: Interval): Interval | undefined {
    let [lo, hi] = [0, this.sorted.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.sorted[mid]!.lo.lt(iv.hi)) lo = mid + 1;
      else hi = mid;
    }
    // How many present ranges start before iv.hi; the last of them by binary lifting.
    let count = 0;
    for (let i = lo; i > 0; i -= i & -i) count += this.tree[i]!;
    if (count === 0) return undefined;
    let at = 0;
    for (let step = 1 << Math.floor(Math.log2(this.tree.length)); step > 0; step >>= 1) {
      if (at + step < this.tree.length && this.tree[at + step]! < count) {
        at += step;
        count -= this.tree[at]!;
      }
    }
    const last = this.sorted[at]!;
    return last.hi.gt(iv.lo) ? last : undefined;
  }
}

/** What the engine will do with a valid row, overlaps aside. */
interface Candidate {
  readonly at: number;
  readonly name: string;
  /** Join fields or business key (the engine's "repeats ... of an earlier row"); undefined: none. */
  readonly identity: string | undefined;
  /** The stored ranges the row updates (join fields), each with the range it gets; empty: an insert. */
  readonly updates: readonly { readonly old: Interval; readonly next: Interval }[];
  /** The range an insert gets. */
  readonly inserted: Interval;
}

const BOUND_FIELDS = new Set(['lowerBound', 'upperBound']);

/** A join value as the database compares it: bounds as numbers, the others as text; NULL: none. */
function joinText(field: string, v: unknown): string | undefined {
  if (v === null || v === undefined) return undefined;
  if (BOUND_FIELDS.has(field)) return rangeBound(v, LOWEST_BOUND).toString();
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The rows as the engine checks them (checkRow of src/engine/loaddata/check.ts), with their fates. */
function candidates(
  plan: LoadPlan,
  body: LoadBody,
  stored: readonly store.StoredRange[],
  intervalOf: ReadonlyMap<store.StoredRange, Interval>,
): Candidate[] {
  const names = plan.header.map((f) => f.name);
  const [nameAt, loAt, hiAt] = [
    names.indexOf('name'),
    names.indexOf('lowerBound'),
    names.indexOf('upperBound'),
  ];
  // Stored ranges by their join values (a join on name: by name, the unique key).
  const joinNames = plan.join.map((i) => names[i]!);
  const storedByJoin = new Map<string, store.StoredRange[]>();
  if (plan.join.length > 0) {
    for (const r of stored) {
      const key = joinNames.map((n) => joinText(n, (r as unknown as Record<string, unknown>)[n]));
      if (key.some((k) => k === undefined)) continue; // NULL matches nothing
      const k = JSON.stringify(key);
      storedByJoin.set(k, [...(storedByJoin.get(k) ?? []), r]);
    }
  }

  const out: Candidate[] = [];
  body.data.forEach((raw, at) => {
    if (!Array.isArray(raw) || raw.length !== plan.header.length) return;
    const values: unknown[] = [];
    for (let i = 0; i < raw.length; i++) {
      const v = checkValue(plan.header[i]!, raw[i]);
      if (typeof v === 'string') return;
      values.push(v.value);
    }
    if (plan.type.validate?.(Object.fromEntries(names.map((n, i) => [n, raw[i]]))) !== undefined) return;
    const identityAt = plan.join.length > 0 ? plan.join : plan.key;
    const idValues = identityAt.map((i) => values[i]);
    const identity =
      identityAt.length === 0 || idValues.some((v) => v === null) ? undefined : JSON.stringify(idValues);
    // Without a name column no row inserts (missingForInsert): only updates, keeping their names.
    const name = nameAt < 0 ? '' : String(values[nameAt]);
    const bound = (i: number, kept: unknown, open: Decimal) => rangeBound(i < 0 ? kept : values[i], open);
    const joinKey = joinNames.map((n, j) => joinText(n, values[plan.join[j]!]));
    const matches =
      plan.join.length === 0 || joinKey.some((k) => k === undefined)
        ? []
        : (storedByJoin.get(JSON.stringify(joinKey)) ?? []);
    out.push({
      at,
      name,
      identity,
      updates: matches.map((r) => ({
        old: intervalOf.get(r)!,
        next: {
          lo: bound(loAt, r.lowerBound, LOWEST_BOUND),
          hi: bound(hiAt, r.upperBound, HIGHEST_BOUND),
          name: nameAt >= 0 && !plan.join.includes(nameAt) ? name : r.name,
          at,
        },
      })),
      inserted: { lo: bound(loAt, null, LOWEST_BOUND), hi: bound(hiAt, null, HIGHEST_BOUND), name, at },
    });
  });
  return out;
}

/**
 * The rows of a RANGE load to refuse for an overlap, as per-row errors (by position in `body.data`;
 * `rowOf` gives the row number a message names). The rows are checked as the engine writes them:
 * a row repeating the identity of an earlier row written, or refused by the engine (its key stored
 * already, no match and no insert possible), is the engine's to refuse and overlaps nothing; a join
 * match updates the stored range (keeping the bounds the header leaves out), which then no longer
 * stands in the way. Within one chunk of the engine (`chunkRows`: the whole load when it fits) the
 * updates are checked before the inserts, as the engine runs them; a longer load is checked in row
 * order, so that every chunk leaves the table without overlaps.
 */
export async function rangeClashes(
  db: Db,
  principal: Principal,
  table: LookupTable,
  type: TypeDef,
  body: LoadBody,
  chunkRows: number,
  rowOf: (at: number) => number,
): Promise<Map<number, Omit<RowError, 'row'>>> {
  let plan: LoadPlan;
  try {
    plan = planLoad(type, body, Number.POSITIVE_INFINITY);
  } catch {
    return new Map(); // the engine answers the same refusal of the header or options
  }
  if (body.data.length === 0) return new Map();
  const withValue = plan.join.some((i) => plan.header[i]!.name === 'value');
  const stored = await store.rangesOf(db, principal, table, withValue);
  const intervalOf = new Map(
    stored.map((r): [store.StoredRange, Interval] => [
      r,
      {
        lo: rangeBound(r.lowerBound, LOWEST_BOUND),
        hi: rangeBound(r.upperBound, HIGHEST_BOUND),
        name: r.name,
      },
    ]),
  );
  const rows = candidates(plan, body, stored, intervalOf);
  const ranges = new Ranges([
    ...intervalOf.values(),
    ...rows.flatMap((c) => [c.inserted, ...c.updates.map((u) => u.next)]),
  ]);
  for (const iv of intervalOf.values()) ranges.set(iv, true);
  const names = new Set(stored.map((r) => r.name));
  const header = new Set(plan.header.map((f) => f.name));
  const seen = new Set<string>();
  const clashes = new Map<number, Omit<RowError, 'row'>>();

  /** Why `iv` cannot be written (empty, or overlapping a present range), or undefined. */
  const problem = (iv: Interval): Omit<RowError, 'row'> | undefined => {
    // The header's bound at fault (a bound the header leaves out is the stored one).
    const fault = (f: 'lowerBound' | 'upperBound') =>
      header.has(f) ? f : f === 'lowerBound' ? 'upperBound' : 'lowerBound';
    if (!iv.lo.lt(iv.hi)) {
      return {
        field: fault('upperBound'),
        message: `the range ${show(iv)} is empty: lowerBound must be below upperBound`,
      };
    }
    const other = ranges.clash(iv);
    if (other === undefined) return undefined;
    const where =
      other.at === undefined
        ? `the stored range ${show(other)}`
        : `the range ${show(other)} of row ${rowOf(other.at)}`;
    return {
      field: fault(other.lo.lte(iv.lo) ? 'lowerBound' : 'upperBound'),
      message: `the range ${show(iv)} overlaps ${where}`,
    };
  };

  const check = (c: Candidate): void => {
    if (c.identity !== undefined && seen.has(c.identity)) return; // the engine refuses it: a repeat
    if (c.updates.length > 0) {
      for (const u of c.updates) ranges.set(u.old, false);
      const written: Interval[] = [];
      for (const u of c.updates) {
        const why = problem(u.next);
        if (why !== undefined) {
          for (const iv of written) ranges.set(iv, false);
          for (const v of c.updates) ranges.set(v.old, true);
          return void clashes.set(c.at, why);
        }
        ranges.set(u.next, true);
        written.push(u.next);
      }
      for (const u of c.updates) {
        names.delete(u.old.name);
        names.add(u.next.name);
      }
    } else if (plan.missingForInsert === undefined && !names.has(c.name)) {
      const why = problem(c.inserted);
      if (why !== undefined) return void clashes.set(c.at, why);
      ranges.set(c.inserted, true);
      names.add(c.name);
    }
    // Written, or refused by the engine (no match and no insert, or its key taken): given anyway.
    if (c.identity !== undefined) seen.add(c.identity);
  };
  if (body.data.length <= chunkRows) {
    for (const c of rows) if (c.updates.length > 0) check(c);
    for (const c of rows) if (c.updates.length === 0) check(c);
  } else {
    for (const c of rows) check(c);
  }
  return clashes;
}
