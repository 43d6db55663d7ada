// The CALCULATIONGRID job: calculates every item of a grid. Pass 1 walks the key tuples of the grid's
// sources (products page by page in sku order × the inner sources' keys) in batches; pass 2 takes the
// grid's other items (added with /add/CGI{k}, or no longer produced by the sources). Per batch: one
// look-up of the batch's existing items, the bulk evaluator over the items still to do, one COPY +
// upsert. Memory stays at one batch (plus the inner sources' keys and the evaluator's look-up cache).
//
// Restart: every item carries the run it was calculated in (`run_id`: the grid's run, which a new
// calculation keeps while the previous one did not finish) and an input hash (logic version, grid
// inputs, target date, sources, and the versions of the item's product and customer). An item of this
// run whose hash is unchanged is not recomputed; the job's checkpoint (last key tuple of the last
// written batch) lets a retried attempt skip the walk up to there. Progress is recorded after every
// batch, which is also where cancellation is noticed.

import { createHash } from 'node:crypto';
import type { Db, Queryable } from '../../db/db.ts';
import { loadRunning } from '../../engine/statistics.ts';
import { AppError } from '../../http/errors.ts';
import { onJobEnded, type EndedJob } from '../../jobs/endings.ts';
import { JobStopped, type JobContext, type JobKind } from '../../jobs/runner.ts';
import type { LogicLimits } from '../../logic/env.ts';
import { bulkLogic } from '../formulas/bulk.ts';
import { targetDateOf } from '../formulas/service.ts';
import { computeItems, itemOf, resultMetaOf, resultTypesOf, type Pending } from './compute.ts';
import { innerKeys, productCount, productPage, type InnerKeys, type KeySource } from './sources.ts';
import * as store from './store.ts';

export const CALCULATIONGRID = 'CALCULATIONGRID';
export const DEFAULT_BATCH = 5_000;
export const MAX_BATCH = 20_000;
/** Writes of an item whose overrides keep changing while it is computed, before the job gives up. */
const OVERRIDE_RACE_ATTEMPTS = 5;

interface Checkpoint {
  readonly pass: 1 | 2;
  /** Pass 1: the last tuple written — its product and the index of its inner tuple. */
  readonly sku?: string;
  readonly inner?: number;
  /** Pass 2: the last item id written. */
  readonly afterId?: number;
  readonly computed: number;
  readonly skipped: number;
  readonly errors: number;
}

export interface CalculationParams {
  readonly gridId: number;
  readonly batchSize?: number;
}

export function calcGridJobKind(db: Db, limits: LogicLimits): JobKind {
  return { maxAttempts: 3, run: (ctx) => runCalculation(db, ctx, limits) };
}

/**
 * A calculation job ended FAILED or CANCELLED while its grid still waits for it (QUEUED: cancelled
 * before it ran; CALCULATING: its last attempt's node was lost): the grid ends as its job did, with
 * the counts of the items it has, and can be calculated again (continuing the run). A run that ended
 * by itself set the grid already.
 */
async function settleGrid(q: Queryable, job: EndedJob): Promise<void> {
  const grid = await store.gridById(q, job.partition_id, Number(job.parameters.gridId), true);
  if (!grid || Number(grid.jst_id) !== Number(job.id)) return;
  if (grid.status !== 'QUEUED' && grid.status !== 'CALCULATING') return;
  await store.setGridState(q, job.partition_id, grid.id, { status: job.status, counted: true });
}

onJobEnded(CALCULATIONGRID, settleGrid);

async function runCalculation(db: Db, ctx: JobContext, limits: LogicLimits): Promise<unknown> {
  const params = ctx.job.parameters as unknown as CalculationParams;
  const principal = ctx.principal;
  const pid = principal.partitionId;
  const grid = await store.gridById(db, pid, Number(params.gridId));
  if (!grid) throw new AppError('NOT_FOUND', `Calculation grid ${params.gridId} no longer exists`);
  const runId = grid.run_id ?? ctx.job.id;
  // The items are vacuumed and analyzed once the run's writes settle (engine/statistics.ts).
  const ended = loadRunning(db, store.ITEMS_TABLE);
  try {
    const out = await calculate(db, ctx, limits, grid, runId, params.batchSize ?? DEFAULT_BATCH);
    await store.setGridState(db, pid, grid.id, { status: 'READY', counted: true });
    return out;
  } catch (err) {
    // Interrupted attempts are retried by another node: the grid stays CALCULATING until then.
    const stopped = err instanceof JobStopped;
    if (!stopped || err.reason === 'cancel')
      await store.setGridState(db, pid, grid.id, { status: stopped ? 'CANCELLED' : 'FAILED', counted: true });
    throw err;
  } finally {
    ended();
  }
}

async function calculate(
  db: Db,
  ctx: JobContext,
  limits: LogicLimits,
  grid: store.GridRow,
  runId: number,
  batchSize: number,
): Promise<unknown> {
  const principal = ctx.principal;
  const pid = principal.partitionId;
  const targetDate = targetDateOf(grid.target_date ?? undefined);
  const { row, logic } = await bulkLogic(db, principal, grid.formula_name, targetDate);
  if (row.nature !== 'CALCULATIONGRID')
    throw new AppError('VALIDATION', `logic ${grid.formula_name} is not of nature CALCULATIONGRID`, {
      field: 'formulaName',
    });
  const sources = grid.key_sources as KeySource[];
  const inner: InnerKeys[] = [];
  for (let i = 1; i < sources.length; i++)
    inner.push(await innerKeys(db, principal, sources[i]!, `keySources[${i}]`, targetDate.iso));
  await store.setGridState(db, pid, grid.id, {
    status: 'CALCULATING',
    resultTypes: resultTypesOf(logic),
    resultMeta: resultMetaOf(logic),
  });

  const spec = createHash('sha256')
    .update(JSON.stringify([row.id, row.version, grid.inputs, targetDate.iso, sources]))
    .digest('base64url')
    .slice(0, 22);
  const innerCount = inner.reduce((n, s) => n * s.keys.length, 1);
  const total = (await productCount(db, principal, sources[0]!)) * innerCount;
  const gridInputs = grid.inputs ?? {};
  const opts = { targetDate, limits };
  const checkHistory = (await store.hasItems(db, pid, grid.id)) || ctx.job.checkpoint !== null;
  // The first calculation of a grid without items: pass 1 copies its items straight into the table.
  let fresh = !checkHistory;
  const gridRef = {
    partitionId: pid,
    id: grid.id,
    keyNumber: grid.key_number,
    runId,
    userId: principal.userId,
  };

  let cp: Checkpoint = (ctx.job.checkpoint as Checkpoint | null) ?? {
    pass: 1,
    computed: 0,
    skipped: 0,
    errors: 0,
  };
  let batch: Pending[] = [];
  let batchEnd: Partial<Checkpoint> = {};

  /** The item of a key tuple: its product, customer and the inputs its other keys give. */
  const pendingOf = (
    keys: string[],
    productVersion: number | null,
    customerVersion: number | null,
  ): Pending => {
    return {
      keys: store.keysOf(keys),
      item: itemOf(sources, gridInputs, keys),
      inputHash: `${spec}:${productVersion ?? '-'}:${customerVersion ?? '-'}`,
      overrides: {},
    };
  };

  // Batches are pipelined: the next one is evaluated (this process's CPU) while the previous one is
  // written (the database's CPU). At most one write is in flight; its progress report (checkpoint)
  // follows it, so a checkpoint never names an item that is not written.
  let writing: Promise<void> = Promise.resolve();
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const current = batch;
    const end = batchEnd;
    batch = [];
    const existing = checkHistory
      ? await store.existingOf(
          db,
          pid,
          grid.id,
          runId,
          current.map((p) => p.keys),
        )
      : new Map<string, store.ExistingItem>();
    const toCompute: Pending[] = [];
    for (const p of current) {
      const e = existing.get(store.keyText(p.keys));
      if (e && e.runId === runId && e.inputHash === p.inputHash) continue;
      toCompute.push(e ? { ...p, overrides: e.overrides, overridesJson: e.overridesJson } : p);
    }
    const rows = await computeItems(db, principal, logic, toCompute, opts);
    await writing;
    const mode = fresh ? 'insert' : 'upsert';
    const write = (async () => {
      await writeComputed(toCompute, rows, mode);
      cp = {
        ...cp,
        ...end,
        computed: cp.computed + rows.length,
        skipped: cp.skipped + current.length - toCompute.length,
        errors: cp.errors + rows.filter((r) => r.error !== null).length,
      };
      const done = cp.computed + cp.skipped;
      await ctx.progress({
        progress: Math.min(99, total > 0 ? Math.floor((done * 100) / total) : 99),
        checkpoint: cp,
      });
    })();
    // Awaited by the next flush (or at the end); marked handled so a failure waits for that await.
    write.catch(() => {});
    writing = write;
  };

  /**
   * Writes a batch's items; those whose overrides changed while it was computed (an override saved
   * meanwhile: writeItems leaves them) are computed again with the overrides they have now.
   */
  const writeComputed = async (
    pending: readonly Pending[],
    rows: readonly store.ItemRow[],
    mode: 'insert' | 'upsert',
  ): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      const changed = await store.writeItems(db, gridRef, rows, mode);
      if (changed.length === 0) return;
      if (attempt >= OVERRIDE_RACE_ATTEMPTS)
        throw new AppError('CONFLICT', `items of grid ${grid.id} kept changing while they were calculated`);
      const now = await store.existingOf(db, pid, grid.id, runId, changed);
      const byKey = new Map(pending.map((p) => [store.keyText(p.keys), p]));
      pending = changed.map((k) => {
        const p = byKey.get(store.keyText(k))!;
        const e = now.get(store.keyText(k));
        return { ...p, overrides: e?.overrides ?? {}, overridesJson: e?.overridesJson ?? '{}' };
      });
      rows = await computeItems(db, principal, logic, pending, opts);
    }
  };

  // Pass 1: the sources' key tuples.
  if (cp.pass === 1) {
    let after = cp.sku === undefined ? undefined : cp.sku;
    const firstInner = cp.inner === undefined ? 0 : cp.inner + 1;
    // Resuming: the checkpoint's product may have inner tuples left.
    if (after !== undefined && firstInner < innerCount) {
      const same = await productPage(db, principal, sources[0]!, undefined, 1, after);
      if (same[0]) await walkProduct(same[0], firstInner);
    }
    const pageSize = Math.max(1, Math.min(10_000, Math.ceil(batchSize / innerCount)));
    for (;;) {
      const page = await productPage(db, principal, sources[0]!, after, pageSize);
      for (const p of page) await walkProduct(p, 0);
      if (page.length < pageSize) break;
      after = page[page.length - 1]!.sku;
    }
    await flush();
    await writing;
    cp = { ...cp, pass: 2, afterId: 0 };
    fresh = false;
    batchEnd = {};
  }

  async function walkProduct(p: { sku: string; version: number }, from: number): Promise<void> {
    for (let n = from; n < innerCount; n++) {
      const keys = [p.sku];
      let customerVersion: number | null = null;
      let rest = n;
      // Mixed radix, the last source fastest: tuple n of the inner cross product.
      const idx: number[] = new Array<number>(inner.length);
      for (let i = inner.length - 1; i >= 0; i--) {
        const size = inner[i]!.keys.length;
        idx[i] = rest % size;
        rest = Math.floor(rest / size);
      }
      inner.forEach((s, i) => {
        keys.push(s.keys[idx[i]!]!);
        if (s.versions) customerVersion = s.versions[idx[i]!]!;
      });
      batch.push(pendingOf(keys, p.version, customerVersion));
      batchEnd = { sku: p.sku, inner: n };
      if (batch.length >= batchSize) await flush();
    }
  }

  // Pass 2: the grid's items outside this run. The cursor is this loop's own: the checkpoint's
  // `afterId` only moves once a batch is written, and the next page is read while the previous one
  // is still being written — read from the checkpoint, it took that batch's items again (on
  // PostgreSQL, where the read does not wait for the write) and computed them twice.
  let afterId = cp.afterId ?? 0;
  for (;;) {
    const items = await store.itemsOutsideRun(db, pid, grid.id, runId, afterId, batchSize);
    if (items.length === 0) break;
    for (const it of items) batch.push(pendingOf(it.keys.slice(0, grid.key_number), null, null));
    afterId = items[items.length - 1]!.id;
    batchEnd = { afterId };
    // Items outside the run are always recomputed (their hash names no versions).
    await flush();
  }
  await writing;
  await ctx.progress({ progress: 100, checkpoint: cp });
  return {
    gridId: grid.id,
    runId,
    items: total,
    computed: cp.computed,
    skipped: cp.skipped,
    errors: cp.errors,
  };
}
