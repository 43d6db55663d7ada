// The shape of a built-in function: arity, the static types it accepts and returns (checked when a
// logic is saved), which arguments must be text literals (table and set names, so that findref and
// prefetching read them from the compiled logic), its documentation, and its implementation.

import type { Env } from '../env.ts';
import type { StaticType, Value } from '../values.ts';

export interface CallSite {
  readonly name: string;
  /** The text-literal arguments, by position (undefined where the argument is not a literal). */
  readonly literals: readonly (string | undefined)[];
}

export interface FnDef {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /**
   * Expected static type by position (a list: any of those types); the last one repeats for
   * variadic functions.
   */
  readonly params: readonly (StaticType | readonly StaticType[])[];
  readonly returns: StaticType | ((args: readonly StaticType[]) => StaticType);
  /** Positions that must be text literals. */
  readonly literal?: readonly number[];
  /** Reads data through the data port (not available in workflow conditions). */
  readonly data?: boolean;
  readonly doc: string;
  readonly example: string;
  readonly run: (args: readonly Value[], env: Env, site: CallSite) => Value;
}

export function fn(def: FnDef): FnDef {
  return Object.freeze(def);
}
