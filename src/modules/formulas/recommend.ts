// `/recommendations.recommend`: the partition's RECOMMENDATION logic (named by the advanced
// configuration option `recommendationLogic`) runs over candidate products — a filter body, read by
// the engine's fetch — for a customer, a customer segment or a product, with the bulk evaluator.
// Candidates are ranked by the logic's `Score` element (highest first) and answered with its
// `Reasons` element. Without the option, a -4 that says how to configure it.

import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { fetchRecords } from '../../engine/crud.ts';
import { findType } from '../../engine/registry.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import type { LogicLimits } from '../../logic/env.ts';
import type { CompiledLogic } from '../../logic/logic.ts';
import type { LogicDate } from '../../logic/values.ts';
import { evaluateBulk, type BulkItem } from './bulk.ts';
import { logicAt } from './logic-store.ts';
import { masterRecords } from './master-store.ts';
import { compiledLogic, filterCriteriaOf, targetDateOf } from './service.ts';

export const RECOMMENDATION_OPTION = 'recommendationLogic';
/** The advanced configuration option naming the FILTER logic that a quote's typedId triggers. */
export const QUOTE_FILTER_OPTION = 'quoteProductFilterLogic';
const QUOTE_TYPED_ID = /^[1-9]\d{0,14}\.Q$/;
/** Candidates read and scored at a time. */
const MAX_CANDIDATES = 10_000;

export interface RecommendData {
  readonly customerId?: string;
  readonly segment?: string;
  readonly sku?: string;
  /** A quote's typedId (`<id>.Q`): recommend for the quote (QUOTE_FILTER_OPTION narrows the candidates). */
  readonly typedId?: string;
  /** Candidate products: simple criteria or an AdvancedCriteria on products. */
  readonly filter?: unknown;
  readonly inputs?: Record<string, unknown>;
  readonly targetDate?: string;
  /** How many to answer (default 10, at most 1,000). */
  readonly limit?: number;
}

export interface Recommendation {
  readonly sku: string;
  readonly label: unknown;
  readonly score: unknown;
  readonly reasons: unknown;
}

function howToConfigure(detail: string): AppError {
  return validationError(
    RECOMMENDATION_OPTION,
    `${detail}: add the advanced configuration option ${RECOMMENDATION_OPTION} (/add/ACO {"data":{"uniqueName":"${RECOMMENDATION_OPTION}","value":"<uniqueName of a RECOMMENDATION logic>"}}); the logic scores one candidate product in an element named Score and may explain it in an element named Reasons`,
  );
}

export async function recommend(
  db: Db,
  principal: Principal,
  data: RecommendData,
  limits: LogicLimits,
  maxPageSize: number,
): Promise<Recommendation[]> {
  const limit = data.limit ?? 10;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1_000)
    throw validationError('limit', 'must be 1 to 1000');
  if (data.typedId !== undefined && !QUOTE_TYPED_ID.test(data.typedId))
    throw validationError('typedId', 'must be the typedId of a quote (<id>.Q)');
  if (
    data.customerId === undefined &&
    data.segment === undefined &&
    data.sku === undefined &&
    data.typedId === undefined
  )
    throw validationError(
      'customerId',
      'give a customerId, a segment, a sku or a quote typedId to recommend for',
    );
  const options = await db.query<{ unique_name: string; value: string | null }>(
    'SELECT unique_name, value FROM advanced_config WHERE partition_id = $1 AND unique_name = ANY($2::text[])',
    [principal.partitionId, [RECOMMENDATION_OPTION, QUOTE_FILTER_OPTION]],
  );
  const option = (key: string) => options.rows.find((o) => o.unique_name === key)?.value?.trim() || undefined;
  const name = option(RECOMMENDATION_OPTION);
  if (!name) throw howToConfigure('no recommendation logic is configured');
  // The anchor product and the customer are ones the caller sees: else a 404 naming them (checked
  // before any candidate is read: no candidates would leave an unknown customer unsaid).
  if (
    data.customerId !== undefined &&
    (await masterRecords(db, principal, 'C', [data.customerId], new Set())).size === 0
  )
    throw notFound(`customer ${data.customerId}`, 'customerId');
  if (data.sku !== undefined) {
    const anchor = await fetchRecords(
      db,
      principal,
      findType('P')!,
      { data: { sku: data.sku }, textMatchStyle: 'exactCase', startRow: 0, endRow: 1, resultFields: ['sku'] },
      maxPageSize,
    );
    if (anchor.rows.length === 0)
      throw new AppError('NOT_FOUND', `product ${data.sku} not found`, { field: 'sku' });
  }
  const targetDate = targetDateOf(data.targetDate);
  const row = await logicAt(db, principal.partitionId, name, targetDate.iso);
  if (!row) throw howToConfigure(`logic ${name} valid at ${targetDate.iso} not found`);
  const logic = compiledLogic(principal.partitionId, row);
  if (row.nature !== 'RECOMMENDATION') throw howToConfigure(`logic ${name} is a ${row.nature} logic`);
  if (!logic.elements.some((e) => e.def.elementName === 'Score'))
    throw howToConfigure(`logic ${name} has no element Score`);
  // Context for the logic: declared inputs Segment and AnchorSku are filled from the request.
  const declared = new Set(logic.inputs.map((i) => i.name));
  const inputs: Record<string, unknown> = { ...(data.inputs ?? {}) };
  if (data.segment !== undefined && declared.has('Segment')) inputs.Segment = data.segment;
  if (data.sku !== undefined && declared.has('AnchorSku')) inputs.AnchorSku = data.sku;
  if (data.typedId !== undefined && declared.has('QuoteTypedId')) inputs.QuoteTypedId = data.typedId;
  // A quote's typedId triggers the quote product filter logic, when one is configured.
  const quoteFilter = data.typedId === undefined ? undefined : option(QUOTE_FILTER_OPTION);
  const quoteCriteria =
    quoteFilter === undefined
      ? undefined
      : await filterCriteriaOf(db, principal, quoteFilter, undefined, limits, {
          field: QUOTE_FILTER_OPTION,
          option: true,
          parametersField: 'inputs',
          implicit: { QuoteTypedId: data.typedId },
        });

  // Every candidate is scored: read in pages by id (each page after the last id read), scored page
  // by page, the best `limit` kept — the memory of one page, whatever the catalogue's size (the
  // request's time-out bounds the time).
  const pageSize = Math.min(MAX_CANDIDATES, maxPageSize);
  let best: Recommendation[] = [];
  for (let after = 0; ;) {
    const next = { fieldName: 'id', operator: 'greaterThan', value: after };
    const page = await fetchRecords(
      db,
      principal,
      findType('P')!,
      {
        data: data.filter ?? {},
        startRow: 0,
        endRow: pageSize,
        sortBy: ['id'],
        resultFields: ['id', 'sku', 'label'],
      },
      maxPageSize,
      quoteCriteria === undefined
        ? next
        : { _constructor: 'AdvancedCriteria', operator: 'and', criteria: [quoteCriteria, next] },
    );
    const rows = page.rows as { id: number; sku: string; label: unknown }[];
    best = await scorePage(
      db,
      principal,
      logic,
      rows.filter((p) => p.sku !== data.sku),
      best,
      {
        customerId: data.customerId,
        inputs,
        targetDate,
        limits,
        limit,
      },
    );
    if (rows.length < pageSize) return best;
    after = Number(rows.at(-1)!.id);
  }
}

/** `best` with the page's candidates scored by the logic: the `limit` best, highest score first. */
async function scorePage(
  db: Db,
  principal: Principal,
  logic: CompiledLogic,
  products: readonly { sku: string; label: unknown }[],
  best: readonly Recommendation[],
  run: {
    customerId: string | undefined;
    inputs: Record<string, unknown>;
    targetDate: LogicDate;
    limits: LogicLimits;
    limit: number;
  },
): Promise<Recommendation[]> {
  const items: BulkItem[] = products.map((p) => ({
    sku: p.sku,
    ...(run.customerId === undefined ? {} : { customerId: run.customerId }),
    inputs: run.inputs,
  }));
  const scored: Recommendation[] = [...best];
  let i = 0;
  const opts = { targetDate: run.targetDate, limits: run.limits };
  for await (const batch of evaluateBulk(db, principal, logic, items, opts)) {
    for (const r of batch) {
      const p = products[i++]!;
      if (r.error !== null) {
        // A request-level problem (bad inputs, unknown customer) is the same for every candidate.
        if (/not found$/.test(r.error))
          throw new AppError('NOT_FOUND', r.error, {
            field: r.error.startsWith('customer ') ? 'customerId' : 'sku',
          });
        // A limit stopped the logic (as execute says it, on `logic`); else the inputs are at fault.
        throw validationError(r.error.startsWith('logic stopped: ') ? 'logic' : 'inputs', r.error);
      }
      const score = r.results?.find((x) => x.resultName === 'Score')?.result ?? null;
      if (typeof score !== 'number' && typeof score !== 'string') continue;
      const reasons = r.results?.find((x) => x.resultName === 'Reasons')?.result ?? null;
      scored.push({ sku: p.sku, label: p.label, score, reasons });
    }
  }
  scored.sort((a, b) => Number(b.score) - Number(a.score) || (a.sku < b.sku ? -1 : 1));
  return scored.slice(0, run.limit);
}
