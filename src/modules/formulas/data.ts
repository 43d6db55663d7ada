// The data port of the logic engine over the database, for one item or a batch of thousands. An
// evaluation pass reads only what is loaded; what is missing is recorded and read as null. The
// evaluator (./evaluate-items.ts) then loads everything recorded by all items of the batch — one
// statement per lookup table, extension table or condition-record set — and evaluates the items
// that missed something again. So a batch costs a few set-based statements, never a statement per
// item.

import type { Queryable } from '../../db/db.ts';
import { AppError } from '../../http/errors.ts';
import { findConditionRecords } from '../conditionrecords/lookup.ts';
import type { DataPort, FoundRow } from '../../logic/env.ts';
import { EvalError } from '../../logic/failures.ts';
import type { RoundingPolicy } from '../../logic/rounding.ts';
import { LogicDate, RecordValue, textOf } from '../../logic/values.ts';
import { competitionRecord, competitionRows } from './competition-store.ts';
import { conditionRecordOf, foundRowOf } from './rows.ts';
import { keyCount, lookupRowsMany, type TableMeta, tablesByName, tupleKey, tupleOf } from './lookup-store.ts';
import { ExtensionReader } from './extension-reader.ts';
import { conditionRecordCache, lookupRowCache, versionPrefix, type SetVersions } from './read-cache.ts';
import { attributeTypes, recordOf } from './master-store.ts';

const SEP = '\u001f';

export interface ItemKeys {
  readonly sku?: string;
  readonly customerId?: string;
}

export interface DataPortFor extends DataPort {
  /** True when this pass read something that was not loaded yet. */
  missing: boolean;
}

const NO_ROW: FoundRow = { row: null, value: null };

export class BatchData {
  private readonly tables = new Map<string, TableMeta | null>();
  private readonly rows = new Map<string, Map<string, FoundRow>>();
  private readonly extensions = new Map<string, Map<string, RecordValue[]>>();
  private readonly pendingTables = new Set<string>();
  private readonly pendingKeys = new Map<string, Set<string>>();
  private readonly pendingExt = new Map<string, Set<string>>();
  /** Condition records by (set, date, key count) group, then by key tuple; null = none valid. */
  private readonly conditions = new Map<string, Map<string, RecordValue | null>>();
  private readonly conditionTypes = new Map<number, Map<string, string>>();
  private readonly condProblems = new Map<string, string>();
  private readonly pendingCond = new Map<string, Set<string>>();
  /** Competition rows by date, then by sku; pending skus by date. */
  private readonly competition = new Map<string, Map<string, RecordValue[]>>();
  private readonly pendingComp = new Map<string, Set<string>>();
  private readonly q: Queryable;
  private readonly partitionId: number;
  private readonly policies: readonly RoundingPolicy[];

  private readonly extensionReader: ExtensionReader;
  /** Key prefixes in read-cache.ts of the tables and sets whose entries this batch may use. */
  private readonly tablePrefix = new Map<string, string>();
  private readonly setPrefix = new Map<string, string>();

  constructor(q: Queryable, partitionId: number, policies: readonly RoundingPolicy[], metaVersion?: number) {
    this.extensionReader = new ExtensionReader(q, partitionId, metaVersion);
    this.q = q;
    this.partitionId = partitionId;
    this.policies = policies;
  }

  /**
   * The data port for one item. One port object serves every item of this batch data in turn (an
   * evaluation is synchronous, so no two items use it at once): no allocation per item.
   */
  portFor(item: ItemKeys): DataPortFor {
    this.item = item;
    const port = (this.port ??= this.newPort());
    port.missing = false;
    return port;
  }

  private item: ItemKeys = {};
  private port: DataPortFor | undefined;

  private newPort(): DataPortFor {
    const port: DataPortFor = {
      missing: false,
      lookup: (table, keys) => {
        const meta = this.tables.get(table);
        if (meta === undefined) {
          this.pendingTables.add(table);
          if (keys.every((k) => k !== null)) this.addKey(table, tupleKey(keys.map(textOf)));
          port.missing = true;
          return NO_ROW;
        }
        if (meta === null) throw new EvalError(`unknown lookup table ${table}`);
        const want = keyCount(meta.type);
        if (keys.length !== want)
          throw new EvalError(
            `lookup table ${table} (${meta.type}) takes ${want} key(s), got ${keys.length}`,
          );
        if (keys.some((k) => k === null)) return NO_ROW;
        const k = tupleKey(keys.map(textOf));
        const found = this.rows.get(table)?.get(k) ?? this.sharedRow(table, k);
        if (found !== undefined) return found;
        this.addKey(table, k);
        port.missing = true;
        return NO_ROW;
      },
      conditionRecord: (set, keys, date) => {
        if (keys.some((k) => k === null)) return null;
        const group = this.groupOf(set, date.iso, keys.length);
        const problem = this.condProblems.get(group);
        if (problem !== undefined) throw new EvalError(problem);
        const k = tupleKey(keys.map(textOf));
        // (null is a known answer: no record valid then.)
        let found = this.conditions.get(group)?.get(k);
        if (found === undefined) found = this.sharedCondition(set, group, k);
        if (found !== undefined) return found;
        let pending = this.pendingCond.get(group);
        if (!pending) this.pendingCond.set(group, (pending = new Set()));
        pending.add(k);
        port.missing = true;
        return null;
      },
      extension: (owner, table) => {
        const key = owner === 'product' ? this.item.sku : this.item.customerId;
        if (key === undefined) return [];
        const id = this.extensionId(owner, table);
        const found = this.extensions.get(id)?.get(key);
        if (found !== undefined) return found;
        let set = this.pendingExt.get(id);
        if (!set) this.pendingExt.set(id, (set = new Set()));
        set.add(key);
        port.missing = true;
        return [];
      },
      competition: (date) => {
        const sku = this.item.sku;
        if (sku === undefined) return [];
        const found = this.competition.get(date.iso)?.get(sku);
        if (found !== undefined) return found;
        let set = this.pendingComp.get(date.iso);
        if (!set) this.pendingComp.set(date.iso, (set = new Set()));
        set.add(sku);
        port.missing = true;
        return [];
      },
      policy: (name) => {
        return this.policies.find((p) => p.uniqueName === name) ?? null;
      },
      policyFor: (currency) => {
        const all = this.policies.filter((p) => p.currency === currency);
        return all.find((p) => p.channel === null && p.customerGroup === null) ?? all[0] ?? null;
      },
    };
    return port;
  }

  private readonly extensionIds = { product: new Map<string, string>(), customer: new Map<string, string>() };

  /** `owner<US>table`, made once per table (every item reads the same tables): no text per read. */
  private extensionId(owner: 'product' | 'customer', table: string): string {
    const ids = this.extensionIds[owner];
    let id = ids.get(table);
    if (id === undefined) ids.set(table, (id = `${owner}${SEP}${table}`));
    return id;
  }

  private lastGroup = { set: '', iso: '', count: 0, group: '' };

  /** The condition-record group key (set, date, key count); the last one is kept (items repeat it). */
  private groupOf(set: string, iso: string, count: number): string {
    const last = this.lastGroup;
    if (last.set !== set || last.iso !== iso || last.count !== count)
      this.lastGroup = { set, iso, count, group: tupleKey([set, iso, String(count)]) };
    return this.lastGroup.group;
  }

  /** Metadata of the lookup tables named (read beforehand); a name without one is an unknown table. */
  knowTables(names: Iterable<string>, metas: readonly TableMeta[]): void {
    for (const n of names) this.tables.set(n, metas.find((t) => t.uniqueName === n) ?? null);
  }

  /**
   * Lets this batch read and keep lookup rows and condition records in read-cache.ts, for the tables
   * and sets given with their versions as read in this batch's snapshot. Only for a read-only
   * transaction (see read-cache.ts).
   */
  useReadCache(tables: readonly TableMeta[], sets: readonly SetVersions[]): void {
    for (const t of tables)
      if (t.version !== undefined && t.valuesVersion !== undefined)
        this.tablePrefix.set(
          t.uniqueName,
          versionPrefix(this.partitionId, t.id, Number(t.version), Number(t.valuesVersion)),
        );
    for (const x of sets)
      this.setPrefix.set(
        x.uniqueName,
        versionPrefix(this.partitionId, x.id, Number(x.version), Number(x.itemsVersion)),
      );
  }

  private sharedRow(table: string, key: string): FoundRow | undefined {
    const prefix = this.tablePrefix.get(table);
    return prefix === undefined ? undefined : lookupRowCache.get(`${prefix}${SEP}${key}`);
  }

  private sharedCondition(set: string, group: string, key: string): RecordValue | null | undefined {
    const prefix = this.setPrefix.get(set);
    return prefix === undefined ? undefined : conditionRecordCache.get(`${prefix}${SEP}${group}${SEP}${key}`);
  }

  private addKey(table: string, key: string): void {
    let set = this.pendingKeys.get(table);
    if (!set) this.pendingKeys.set(table, (set = new Set()));
    set.add(key);
  }

  /**
   * Loads the extension rows of these owners before the first pass (the table names are literals of
   * the compiled logic, the owners the batch's items), so the first pass does not miss them.
   */
  async prefetchExtensions(
    extensions: ReadonlySet<string>,
    items: readonly ItemKeys[],
    /** Also the products' competition rows at this date (a logic that reads them). */
    competitionAt?: LogicDate,
  ): Promise<void> {
    if (competitionAt !== undefined) {
      const skus = new Set(items.flatMap((i) => (i.sku === undefined ? [] : [i.sku])));
      if (skus.size > 0) this.pendingComp.set(competitionAt.iso, skus);
    }
    for (const ext of extensions) {
      const [owner, table] = ext.split(/:(.*)/s) as ['product' | 'customer', string];
      const keys = ownerKeys(owner, items);
      const known = this.extensions.get(`${owner}${SEP}${table}`);
      if (known) for (const k of known.keys()) keys.delete(k);
      if (keys.size > 0) this.pendingExt.set(`${owner}${SEP}${table}`, keys);
    }
    await this.load();
  }

  /**
   * The per-item rows of a coming batch (extension rows of its owners, competition rows of its
   * products), read without touching the batch being evaluated: the bulk evaluator reads batch n+1
   * while it evaluates batch n, then hands the rows over with `nextBatch(rows)`.
   */
  async batchRows(
    extensions: ReadonlySet<string>,
    items: readonly ItemKeys[],
    competitionAt?: LogicDate,
  ): Promise<BatchRows> {
    const ext = new Map<string, Map<string, RecordValue[]>>();
    const comp = new Map<string, Map<string, RecordValue[]>>();
    if (competitionAt !== undefined) {
      const skus = ownerKeys('product', items);
      if (skus.size > 0) comp.set(competitionAt.iso, await this.competitionOf(skus, competitionAt.iso));
    }
    for (const e of extensions) {
      const [owner, table] = e.split(/:(.*)/s) as ['product' | 'customer', string];
      const keys = ownerKeys(owner, items);
      if (keys.size > 0)
        ext.set(`${owner}${SEP}${table}`, await this.extensionReader.recordsOf(owner, table, keys));
    }
    return { extensions: ext, competition: comp };
  }

  /** The competition records of these products at the date, one statement. */
  private async competitionOf(skus: ReadonlySet<string>, date: string): Promise<Map<string, RecordValue[]>> {
    const rows = await competitionRows(this.q, this.partitionId, [...skus], date);
    const out = new Map<string, RecordValue[]>();
    for (const sku of skus) out.set(sku, []);
    for (const r of rows) out.get(String(r.sku))?.push(competitionRecord(r));
    return out;
  }

  /** Extension rows read beforehand (with the product): the row of each owner key, or none. */
  async knowExtensionRows(
    owner: 'product' | 'customer',
    table: string,
    key: string,
    row: Record<string, unknown> | null,
  ): Promise<void> {
    const id = `${owner}${SEP}${table}`;
    const code = owner === 'product' ? 'PX' : 'CX';
    let cache = this.extensions.get(id);
    if (!cache) this.extensions.set(id, (cache = new Map<string, RecordValue[]>()));
    if (row === null) {
      cache.set(key, []);
      return;
    }
    cache.set(key, [recordOf(code, row, await this.extensionReader.metaOf(code, table))]);
  }

  /**
   * Forgets the per-item data (extension rows) before the next batch, and the shared look-up rows
   * once they grow past a bound: memory stays constant per batch, while look-ups the next batch
   * repeats (the same table keys, the same condition records) need no second pass.
   */
  nextBatch(rows?: BatchRows): void {
    this.extensions.clear();
    this.competition.clear();
    if (rows !== undefined) {
      for (const [id, m] of rows.extensions) this.extensions.set(id, m);
      for (const [date, m] of rows.competition) this.competition.set(date, m);
    }
    let cached = 0;
    for (const m of this.rows.values()) cached += m.size;
    for (const m of this.conditions.values()) cached += m.size;
    if (cached > 200_000) {
      this.rows.clear();
      this.conditions.clear();
    }
  }

  /** Loads everything recorded as missing; false when nothing was pending. */
  async load(): Promise<boolean> {
    const anything =
      this.pendingTables.size +
        this.pendingKeys.size +
        this.pendingExt.size +
        this.pendingCond.size +
        this.pendingComp.size >
      0;
    for (const [date, skus] of this.pendingComp) {
      const found = await this.competitionOf(skus, date);
      let cache = this.competition.get(date);
      if (!cache) this.competition.set(date, (cache = new Map<string, RecordValue[]>()));
      for (const [sku, records] of found) cache.set(sku, records);
    }
    this.pendingComp.clear();
    await this.loadConditions();
    if (this.pendingTables.size > 0) {
      const names = [...this.pendingTables];
      this.pendingTables.clear();
      const found = await tablesByName(this.q, this.partitionId, names);
      for (const n of names) this.tables.set(n, found.find((t) => t.uniqueName === n) ?? null);
    }
    // Every table's missing keys in as few statements as the table kinds allow (lookupRowsMany).
    const requests: { name: string; keys: Set<string>; table: TableMeta; keyTuples: string[][] }[] = [];
    for (const [name, keys] of this.pendingKeys) {
      const table = this.tables.get(name);
      if (!table) continue;
      const want = keyCount(table.type);
      const keyTuples = [...keys].map((k) => tupleOf(k, want)).filter((t) => t !== undefined);
      requests.push({ name, keys, table, keyTuples });
    }
    const asked = requests.filter((r) => r.keyTuples.length > 0);
    const found = await lookupRowsMany(
      this.q,
      this.partitionId,
      asked.map((r) => ({ table: r.table, keys: r.keyTuples })),
    );
    for (const r of requests) {
      let cache = this.rows.get(r.name);
      if (!cache) this.rows.set(r.name, (cache = new Map<string, FoundRow>()));
      const got = found[asked.indexOf(r)] ?? [];
      for (const row of got) cache.set(String(row.k), foundRowOf(r.table, row));
      for (const k of r.keys) if (!cache.has(k)) cache.set(k, NO_ROW);
      const prefix = this.tablePrefix.get(r.name);
      if (prefix !== undefined)
        for (const k of r.keys) lookupRowCache.set(`${prefix}${SEP}${k}`, cache.get(k)!);
    }
    this.pendingKeys.clear();
    for (const [id, owners] of this.pendingExt) {
      const owner = id.slice(0, id.indexOf(SEP)) as 'product' | 'customer';
      const table = id.slice(id.indexOf(SEP) + 1);
      const found = await this.extensionReader.recordsOf(owner, table, owners);
      let cache = this.extensions.get(id);
      if (!cache) this.extensions.set(id, (cache = new Map<string, RecordValue[]>()));
      for (const [o, records] of found) cache.set(o, records);
    }
    this.pendingExt.clear();
    return anything;
  }

  /** The attribute types of a condition record set (its CRCIAM rows), once per data port. */
  private async setTypes(setId: number): Promise<Map<string, string>> {
    let types = this.conditionTypes.get(setId);
    if (types === undefined) {
      types = await attributeTypes(this.q, this.partitionId, 'CRCI', String(setId));
      this.conditionTypes.set(setId, types);
    }
    return types;
  }

  /** One findConditionRecords statement per (set, date, key count) group of the pass. */
  private async loadConditions(): Promise<void> {
    for (const [group, keys] of this.pendingCond) {
      const [set, date, count] = tupleOf(group, 3) as [string, string, string];
      const tuples = [...keys];
      let cache = this.conditions.get(group);
      if (!cache) this.conditions.set(group, (cache = new Map<string, RecordValue | null>()));
      try {
        const items = await findConditionRecords(
          this.q,
          this.partitionId,
          set,
          tuples.map((t) => tupleOf(t, Number(count))!),
          date,
        );
        const prefix = this.setPrefix.get(set);
        const setId = items.find((x) => x !== null && x !== undefined)?.conditionRecordSetId;
        const types = setId === undefined ? new Map<string, string>() : await this.setTypes(setId);
        tuples.forEach((t, i) => {
          const record = conditionRecordOf(items[i] ?? null, types);
          cache.set(t, record);
          if (prefix !== undefined) conditionRecordCache.set(`${prefix}${SEP}${group}${SEP}${t}`, record);
        });
      } catch (err) {
        // An unknown set or a wrong number of keys is that element's error, not the request's.
        if (!(err instanceof AppError) || (err.code !== 'NOT_FOUND' && err.code !== 'VALIDATION')) throw err;
        this.condProblems.set(group, `condition records ${set}: ${err.message}`);
      }
    }
    this.pendingCond.clear();
  }
}

/** The per-item rows of one batch (BatchData.batchRows), by `owner<US>table` and by date. */
export interface BatchRows {
  readonly extensions: ReadonlyMap<string, Map<string, RecordValue[]>>;
  readonly competition: ReadonlyMap<string, Map<string, RecordValue[]>>;
}

/** The distinct product or customer keys of the items. */
function ownerKeys(owner: 'product' | 'customer', items: readonly ItemKeys[]): Set<string> {
  const out = new Set<string>();
  for (const i of items) {
    const k = owner === 'product' ? i.sku : i.customerId;
    if (k !== undefined) out.add(k);
  }
  return out;
}
