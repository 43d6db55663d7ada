// Bulk loads, stage 2, check: the rows of a chunk → values in stored form (every value through
// crud's `checkValue`, in JS, with the per-table contexts of extension types), or one RowError per
// refused row; rows repeating the join fields or business key of an earlier row are refused here.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { loadTypeContext, type TypeContext } from '../context.ts';
import { boundByIndexes } from '../indexes.ts';
import { checkValue } from '../value-check.ts';
import type { LoadPlan } from './plan.ts';

export interface RowError {
  /** 0-based index of the row in `data`. */
  readonly row: number;
  readonly field?: string;
  readonly message: string;
}

// ---------------------------------------------------------------------------------------------
// Check: rows → validated values (JS only)

export type Stored = string | number | boolean | null;

/** checkValue's output as COPY text will carry it (json fields are already their JSON text). */
function stored(v: unknown): Stored {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return JSON.stringify(v);
}

export interface ValidRow {
  readonly row: number;
  /** Values in header order, in stored form (checkValue's output). */
  readonly values: readonly Stored[];
}

/** The per-table contexts of one call (extension types: attribute types differ per table). */
export class Contexts {
  private readonly byName = new Map<string, TypeContext>();
  private readonly base: TypeContext;
  private readonly q: Queryable;
  private readonly principal: Principal;

  /** Columns that indexes hold (`indexedColumns`): their text must fit an index entry. */
  private readonly indexed: ReadonlySet<string>;

  constructor(q: Queryable, principal: Principal, base: TypeContext, indexed: ReadonlySet<string>) {
    this.q = q;
    this.principal = principal;
    this.base = boundByIndexes(base, indexed);
    this.indexed = indexed;
  }

  /** Loads the contexts of the given table names not seen yet: one query for which have meta. */
  async prepare(names: readonly (string | undefined)[]): Promise<void> {
    const type = this.base.type;
    const fresh = [...new Set(names)].filter((n): n is string => n !== undefined && !this.byName.has(n));
    if (!type.metaPerName || fresh.length === 0) return;
    // A load may name many tables; only those with attribute meta need their own context (a table
    // without meta types its attributes as text, exactly like the base context).
    const r = await this.q.query<{ name: string }>(
      `SELECT DISTINCT name FROM attribute_meta
        WHERE partition_id = $1 AND owner_type = $2 AND name = ANY($3::text[])`,
      [this.principal.partitionId, type.code, fresh],
    );
    for (const n of fresh) this.byName.set(n, this.base);
    for (const { name } of r.rows) {
      const tc = await loadTypeContext(this.q, this.principal, type, name);
      this.byName.set(name, boundByIndexes(tc, this.indexed));
    }
  }

  of(name: string | undefined): TypeContext {
    return name === undefined ? this.base : (this.byName.get(name) ?? this.base);
  }
}

/**
 * A row of another width than the header: a short one names the first header field it has no value
 * for (the field at fault); a long one names none (its extra values belong to no field).
 */
export function widthError(
  row: number,
  width: number,
  header: readonly { readonly name: string }[],
): RowError {
  const message = `has ${width} values; the header has ${header.length}`;
  const missing = header[width];
  return missing === undefined
    ? { row, message }
    : { row, field: missing.name, message: `${message} (no value for ${missing.name})` };
}

export function nameOf(plan: LoadPlan, raw: unknown): string | undefined {
  if (plan.nameAt === undefined || !Array.isArray(raw)) return undefined;
  const v = checkValue(plan.header[plan.nameAt]!, raw[plan.nameAt]);
  return typeof v === 'string' ? undefined : (v.value as string);
}

/** The row's values in stored form, or why it is refused (first problem only: one error per row). */
function checkRow(plan: LoadPlan, contexts: Contexts, raw: unknown, row: number): ValidRow | RowError {
  if (!Array.isArray(raw)) return { row, message: 'must be an array of values' };
  if (raw.length !== plan.header.length) return widthError(row, raw.length, plan.header);
  const tc = contexts.of(nameOf(plan, raw));
  const values: Stored[] = new Array<Stored>(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const f = tc.fields.get(plan.header[i]!.name)!;
    const v = checkValue(f, raw[i]);
    if (typeof v === 'string') return { row, field: f.name, message: v };
    values[i] = stored(v.value);
  }
  if (plan.type.validate) {
    const problem = plan.type.validate(Object.fromEntries(plan.header.map((f, i) => [f.name, raw[i]])));
    const first = problem && Object.entries(problem)[0];
    if (first) return { row, field: first[0], message: first[1].errorMessage };
  }
  return { row, values };
}

/**
 * The check of one chunk's rows, row by row in order, as far as asked: `valid` and `errors` grow as
 * rows are checked; `all()` checks the rest. A COPY can so take the first rows' CSV while later rows
 * are still to be checked (`pieces`). `seen` holds the dedupe keys of the call's earlier valid rows.
 */
export class ChunkCheck {
  readonly valid: ValidRow[] = [];
  readonly errors: RowError[] = [];
  private next = 0;
  private readonly plan: LoadPlan;
  private readonly contexts: Contexts;
  private readonly raw: readonly unknown[];
  private readonly start: number;
  private readonly seen: Set<string>;

  constructor(plan: LoadPlan, contexts: Contexts, raw: readonly unknown[], start: number, seen: Set<string>) {
    this.plan = plan;
    this.contexts = contexts;
    this.raw = raw;
    this.start = start;
    this.seen = seen;
  }

  /** How many rows the chunk has (valid or not). */
  get size(): number {
    return this.raw.length;
  }

  /** Checks every row not checked yet. */
  all(): { valid: ValidRow[]; errors: RowError[] } {
    while (this.next < this.raw.length) this.step();
    return { valid: this.valid, errors: this.errors };
  }

  /**
   * The CSV lines of the valid rows in pieces of `rowsPerPiece`: those checked already, then the
   * others as the pieces are asked for. Once it is done, every row is checked.
   */
  *pieces(line: (row: ValidRow) => string, rowsPerPiece: number): Generator<string, void, undefined> {
    let piece = '';
    let n = 0;
    let sent = 0;
    for (;;) {
      while (sent < this.valid.length) {
        piece += `${line(this.valid[sent++]!)}\n`;
        if (++n === rowsPerPiece) {
          yield piece;
          piece = '';
          n = 0;
        }
      }
      if (this.next >= this.raw.length) break;
      this.step();
    }
    if (piece !== '') yield piece;
  }

  /** Checks the next row: the valid row, or undefined (its error recorded). */
  private step(): ValidRow | undefined {
    const { plan } = this;
    const i = this.next;
    // Counted once checked: a check that throws (a bug) fails the call rather than losing the row.
    const checked = checkRow(plan, this.contexts, this.raw[i], this.start + i);
    this.next++;
    if (!('values' in checked)) {
      this.errors.push(checked);
      return undefined;
    }
    const key = dedupeKey(plan, checked.values);
    if (key !== undefined && this.seen.has(key)) {
      const identity = plan.join.length > 0 ? plan.join : plan.key;
      this.errors.push({
        row: checked.row,
        field: plan.header[identity.at(-1)!]!.name,
        message: `repeats the ${plan.join.length > 0 ? 'join fields' : 'business key'} of an earlier row`,
      });
      return undefined;
    }
    if (key !== undefined) this.seen.add(key);
    this.valid.push(checked);
    return checked;
  }
}

/** The identity of a row for "duplicate within the call": its join key, or its business key. */
function dedupeKey(plan: LoadPlan, values: readonly Stored[]): string | undefined {
  const at = plan.join.length > 0 ? plan.join : plan.key;
  if (at.length === 0) return undefined;
  const key = at.map((i) => values[i]);
  // NULL matches nothing in SQL, so rows with a NULL join value never collide.
  return key.some((v) => v === null) ? undefined : JSON.stringify(key);
}
