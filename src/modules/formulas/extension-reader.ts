// Extension rows (PX/CX) for the logic engine's data port (./data.ts): one table's records of many
// owners in one statement, with the table's attribute meta read once per run. Across the batches of
// one run it learns which custom columns the table's rows hold and reads only those; a row holding
// another one is read again whole, so a record is always the whole row.

import type { Queryable } from '../../db/db.ts';
import type { RecordValue } from '../../logic/values.ts';
import { attributeTypesOf, customColumns, extensionFields, extensionRows, recordOf } from './master-store.ts';

type Row = Record<string, unknown>;
type Owner = 'product' | 'customer';

const SEP = '\u001f';

export class ExtensionReader {
  private readonly q: Queryable;
  private readonly partitionId: number;
  private readonly metaVersion: number | undefined;
  private readonly metas = new Map<string, Promise<Map<string, string>>>();
  /**
   * By `owner<US>table`: the custom columns the table's rows read in this run held (not null), which
   * the next reads select; a row holding another one is read again whole (extensionRows' rc_more).
   */
  private readonly columns = new Map<string, Set<string>>();

  constructor(q: Queryable, partitionId: number, metaVersion: number | undefined) {
    this.q = q;
    this.partitionId = partitionId;
    this.metaVersion = metaVersion;
  }

  /** Attribute meta of an extension table, read once per reader (one bulk run or one execute). */
  metaOf(code: 'PX' | 'CX', table: string): Promise<Map<string, string>> {
    const key = `${code}${SEP}${table}`;
    let meta = this.metas.get(key);
    if (!meta) {
      meta = attributeTypesOf(
        this.q,
        { partitionId: this.partitionId, metaVersion: this.metaVersion },
        code,
        table,
      );
      this.metas.set(key, meta);
      // A failed read is not kept: the next batch asks again (the error reaches the caller).
      meta.catch(() => this.metas.delete(key));
    }
    return meta;
  }

  /** One table's extension records of these owners (none: an empty list), one statement. */
  async recordsOf(
    owner: Owner,
    table: string,
    owners: ReadonlySet<string>,
  ): Promise<Map<string, RecordValue[]>> {
    const code = owner === 'product' ? 'PX' : 'CX';
    const meta = await this.metaOf(code, table);
    const id = `${owner}${SEP}${table}`;
    // The custom columns rows of this table held so far in this run (none read yet: all of them).
    const known = this.columns.get(id);
    const seen = known === undefined ? undefined : new Set(known);
    const fields = seen === undefined ? undefined : extensionFields(code, seen);
    let rows = await extensionRows(this.q, this.partitionId, owner, table, [...owners], seen);
    let whole: Row[] = [];
    if (seen !== undefined) {
      // Rows holding a custom column not read: read again whole (their record has that field too).
      const more = rows.filter((r) => Number(r.rc_more) > 0);
      if (more.length > 0) {
        const keys = more.map((r) => String(owner === 'product' ? r.sku : r.customer_id));
        whole = await extensionRows(this.q, this.partitionId, owner, table, keys);
        rows = rows.filter((r) => !(Number(r.rc_more) > 0));
      }
    }
    let learned = this.columns.get(id);
    if (learned === undefined) this.columns.set(id, (learned = new Set()));
    const custom = customColumns(code);
    for (const r of seen === undefined ? rows : whole)
      for (const c of custom) if (r[c] !== null && r[c] !== undefined) learned.add(c);
    // Rows first, each owner's list made at its first row (a literal of one: a list grown from empty
    // would reserve room for 17); owners without rows then get an empty list.
    const out = new Map<string, RecordValue[]>();
    const add = (r: Row, f: ReturnType<typeof extensionFields> | undefined) => {
      const o = String(owner === 'product' ? r.sku : r.customer_id);
      if (!owners.has(o)) return;
      const record = f === undefined ? recordOf(code, r, meta) : recordOf(code, r, meta, f);
      const list = out.get(o);
      if (list === undefined) out.set(o, [record]);
      else list.push(record);
    };
    for (const r of rows) add(r, fields);
    for (const r of whole) add(r, undefined);
    if (out.size < owners.size) for (const o of owners) if (!out.has(o)) out.set(o, []);
    return out;
  }
}
