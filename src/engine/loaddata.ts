// Bulk loads' public entry point, a facade only: the code lives in src/engine/loaddata/, one file per
// stage — `planLoad` (header + options → LoadPlan, no database, plan.ts) → per chunk of rows
// `ChunkCheck` (check.ts) → in one transaction, new rows straight into the table by COPY
// (direct.ts `insertDirectly`) or `runChunk` (run.ts: COPY into a staging table, then the UPDATE and
// INSERT ... ON CONFLICT of merge-sql.ts `buildMergeSql`). `loadData` and `loadDataStream`
// (run.ts) show the whole flow. The stage files import each other directly, never this file.

export { planLoad, type LoadBody, type LoadOptions, type LoadPlan } from './loaddata/plan.ts';
export { type RowError, type Stored, widthError } from './loaddata/check.ts';
export { csvLine } from './loaddata/merge-sql.ts';
export {
  loadData,
  loadDataStream,
  type LoadLimits,
  type LoadProgress,
  type LoadResult,
  type StreamLimits,
} from './loaddata/run.ts';
