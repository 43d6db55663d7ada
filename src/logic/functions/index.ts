// The registry of built-in functions, frozen: a logic can call these and nothing else. `if` and
// `coalesce` are special forms (they evaluate lazily) and live in the checker and compiler.

import { CORE } from './core.ts';
import { DATES } from './date.ts';
import { MATH } from './math.ts';
import { TEXT } from './text.ts';
import type { FnDef } from './types.ts';

function registry(sets: readonly (readonly FnDef[])[]): ReadonlyMap<string, FnDef> {
  const map = new Map<string, FnDef>();
  for (const set of sets) for (const f of set) map.set(f.name, f);
  return map;
}

/** Functions that need no data: workflow conditions and every logic. */
export const PURE_FUNCTIONS: ReadonlyMap<string, FnDef> = registry([CORE, MATH, TEXT, DATES]);

/** Every function of a logic (pure ones plus those that read through the data port). */
export function logicFunctions(extra: readonly (readonly FnDef[])[]): ReadonlyMap<string, FnDef> {
  return registry([CORE, MATH, TEXT, DATES, ...extra]);
}
