// What read-only evaluations (/formulamanager.execute) read of lookup tables and condition-record
// sets, kept across requests under the versions it was read at (migration 043): a lookup table's
// `version` and `values_version`, a set's `version` and `items_version`. The versions are read in
// the evaluation's snapshot with the product (logic-store.ts), and every change of a table's values
// or a set's items changes them when it commits; so an entry is exactly what a statement in any
// snapshot that sees the same versions would read. A changed table or set is read again, under its
// new versions; entries of older versions are never hit again and go when the cache is cleared.
//
// Only evaluations in read-only transactions use it: a transaction that wrote rows sees them before
// its commit changes the versions, and must neither read nor keep entries.

import type { FoundRow } from '../../logic/env.ts';
import type { RecordValue } from '../../logic/values.ts';

/**
 * Entries per cache; when full, it starts again empty (a simple bound on the process's memory: an
 * entry holds ~1–2 KB, measured on condition records of 5 attributes, so both caches together stay
 * under ~80 MB).
 */
const MAX_ENTRIES = 20_000;

class BoundedCache<V> {
  private readonly map = new Map<string, V>();
  get(key: string): V | undefined {
    return this.map.get(key);
  }
  set(key: string, value: V): void {
    if (this.map.size >= MAX_ENTRIES) this.map.clear();
    this.map.set(key, value);
  }
}

/** Lookup rows by `<tablePrefix><US><key>` (a miss is kept too, as a row-less FoundRow). */
export const lookupRowCache = new BoundedCache<FoundRow>();
/** Condition records by `<setPrefix><US><group><US><key>` (null: none valid at that date). */
export const conditionRecordCache = new BoundedCache<RecordValue | null>();

/** A condition-record set's identity and versions, as the execute path reads them. */
export interface SetVersions {
  readonly id: number;
  readonly uniqueName: string;
  readonly version: number;
  readonly itemsVersion: number;
}

/** The key prefix of a table's or a set's entries: partition, id and both versions. */
export function versionPrefix(
  partitionId: number,
  id: number,
  version: number,
  contentVersion: number,
): string {
  return `${partitionId}/${id}/${version}/${contentVersion}`;
}
