// The evaluation passes over a batch of items (./data.ts is the data port they read): each pass
// evaluates the items still missing data, then the port loads what they all recorded, set-based.

import { evaluateItem, type ElementOutcome, type ItemContext } from '../../logic/evaluate.ts';
import type { CompiledLogic } from '../../logic/logic.ts';
import { LogicDate, type Value } from '../../logic/values.ts';
import type { BatchData, ItemKeys } from './data.ts';

const MAX_PASSES = 8;
/**
 * How long a pass evaluates before it gives way to the event loop: a batch of slow items (a grid of
 * 5,000 items of 0.3 s each) held every other request of the process for its whole length.
 */
const YIELD_MS = 20;

export interface ItemSpec extends ItemKeys {
  readonly roots: Readonly<Record<string, Value>>;
  readonly inputs: Readonly<Record<string, Value>>;
  /** Element values fixed by the caller (see ItemContext.fixed). */
  readonly fixed?: ReadonlyMap<string, Value> | undefined;
}

/** Evaluates one logic over items, loading the data they read set-based between passes. */
export async function evaluateItems(
  logic: CompiledLogic,
  items: readonly ItemSpec[],
  data: BatchData,
  opts: Pick<ItemContext, 'targetDate' | 'explain' | 'limits'>,
): Promise<ElementOutcome[][]> {
  const results: ElementOutcome[][] = new Array<ElementOutcome[]>(items.length);
  await evaluateEach(logic, items, data, opts, (i, outcomes) => (results[i] = outcomes));
  return results;
}

/**
 * As evaluateItems, handing each item's outcomes to `done` as soon as they are final (the item read
 * nothing missing, or the last pass ran): a caller that turns them into its own results at once keeps
 * no outcomes of the batch alive (they die young, which the garbage collector handles cheaply).
 */
export async function evaluateEach(
  logic: CompiledLogic,
  items: readonly ItemSpec[],
  data: BatchData,
  opts: Pick<ItemContext, 'targetDate' | 'explain' | 'limits'>,
  done: (index: number, outcomes: ElementOutcome[]) => void,
  /**
   * `done` reads the outcomes at once and keeps nothing of the list: one list of outcome objects then
   * serves every item, overwritten by the next evaluation (outcomes kept for a later pass are copied).
   */
  reuse = false,
): Promise<void> {
  const today = new LogicDate(new Date().toISOString().slice(0, 10));
  // One context object for every item in turn (evaluateItem reads it while it runs, keeps nothing).
  const context: { -readonly [K in keyof ItemContext]: ItemContext[K] } = {
    targetDate: opts.targetDate,
    explain: opts.explain,
    limits: opts.limits,
    today,
    inputs: {},
    roots: {},
    data: data.portFor({}),
    fixed: undefined,
  };
  const scratch = reuse ? new Array<ElementOutcome>(logic.elements.length) : undefined;
  let round = items.map((_, i) => i);
  for (let pass = 1; round.length > 0; pass++) {
    const again: number[] = [];
    const last = pass >= MAX_PASSES;
    const pending: [number, ElementOutcome[]][] = [];
    let yieldAt = performance.now() + YIELD_MS;
    for (const i of round) {
      if (performance.now() >= yieldAt) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        yieldAt = performance.now() + YIELD_MS;
      }
      const item = items[i]!;
      const port = data.portFor(item);
      context.inputs = item.inputs;
      context.roots = item.roots;
      context.data = port;
      context.fixed = item.fixed;
      const outcomes = evaluateItem(logic, context, scratch);
      if (port.missing && !last) {
        again.push(i);
        pending.push([i, scratch ? outcomes.map((o) => ({ ...o })) : outcomes]);
      } else done(i, outcomes);
    }
    // Nothing more to load: what missed stays missing (read as null), so those outcomes are final.
    if (again.length === 0 || last || !(await data.load())) {
      for (const [i, outcomes] of pending) done(i, outcomes);
      break;
    }
    round = again;
  }
}
