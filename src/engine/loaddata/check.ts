// Bulk loads, stage 2, check: the rows of a chunk → values in stored form (every value through
// crud's `checkValue`, in JS, with the per-table contexts of extension types), or one RowError per
// refused row; rows repeating the join fields or business key of an earlier row are refused here.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { loadTypeContext, type TypeContext } from '../context.ts';
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

  constructor(q: Queryable, principal: Principal, base: TypeContext) {
    this.q = q;
    this.principal = principal;
    this.base = base;
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
      this.byName.set(name, await loadTypeContext(this.q, this.principal, type, name));
    }
  }

  of(name: string | undefined): TypeContext {
    return name === undefined ? this.base : (this.byName.get(name) ?? this.base);
  }
}

export function nameOf(plan: LoadPlan, raw: unknown): string | undefined {
  if (plan.nameAt === undefined || !Array.isArray(raw)) return undefined;
  const v = checkValue(plan.header[plan.nameAt]!, raw[plan.nameAt]);
  return typeof v === 'string' ? undefined : (v.value as string);
}

/** The row's values in stored form, or why it is refused (first problem only: one error per row). */
function checkRow(plan: LoadPlan, contexts: Contexts, raw: unknown, row: number): ValidRow | RowError {
  if (!Array.isArray(raw)) return { row, message: 'must be an array of values' };
  if (raw.length !== plan.header.length) {
    return { row, message: `has ${raw.length} values; the header has ${plan.header.length}` };
  }
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

/** Checks the rows of one chunk; `seen` holds the dedupe keys of the call's earlier valid rows. */
export function checkChunk(
  plan: LoadPlan,
  contexts: Contexts,
  raw: readonly unknown[],
  start: number,
  seen: Set<string>,
): { valid: ValidRow[]; errors: RowError[] } {
  const valid: ValidRow[] = [];
  const errors: RowError[] = [];
  const identity = plan.join.length > 0 ? plan.join : plan.key;
  raw.forEach((r, i) => {
    const checked = checkRow(plan, contexts, r, start + i);
    if (!('values' in checked)) return void errors.push(checked);
    const key = dedupeKey(plan, checked.values);
    if (key !== undefined && seen.has(key)) {
      return void errors.push({
        row: checked.row,
        field: plan.header[identity.at(-1)!]!.name,
        message: `repeats the ${plan.join.length > 0 ? 'join fields' : 'business key'} of an earlier row`,
      });
    }
    if (key !== undefined) seen.add(key);
    valid.push(checked);
  });
  return { valid, errors };
}

/** The identity of a row for "duplicate within the call": its join key, or its business key. */
function dedupeKey(plan: LoadPlan, values: readonly Stored[]): string | undefined {
  const at = plan.join.length > 0 ? plan.join : plan.key;
  if (at.length === 0) return undefined;
  const key = at.map((i) => values[i]);
  // NULL matches nothing in SQL, so rows with a NULL join value never collide.
  return key.some((v) => v === null) ? undefined : JSON.stringify(key);
}
