// What the writers of an approved DCR or a submitted import take and answer (./write.ts set-based,
// ./write-records.ts record by record): types only.

/** One record to write: a DCR item or the grouped changes of an import. */
export interface StagedRecord {
  /** Names it in errors (`7.DCRI`, `change 12.IMC`). */
  readonly ref: string;
  readonly change_type: 'ADD' | 'UPDATE' | 'DELETE';
  readonly target_id: number | null;
  /** UPDATE/DELETE of a DCR item: the target's version as proposed on. */
  readonly target_version?: number | null;
  readonly target_key: readonly string[];
  readonly proposed: Readonly<Record<string, unknown>>;
  /** UPDATE: the target's values as proposed on (= its current values: locked, version checked). */
  readonly original: Readonly<Record<string, unknown>> | null;
}

export interface Written {
  readonly added: number;
  readonly updated: number;
  readonly deleted: number;
  readonly massEdited: number;
}
