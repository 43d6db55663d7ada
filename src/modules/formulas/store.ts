// SQL of the logic engine that the generic engine does not cover: the logic version valid at a date,
// master-data records by business key with their attribute meta, extension rows and lookup-table
// rows for many keys at once (set-based: one statement per table and pass, never one per item),
// and the partition's rounding policies. Every statement is scoped by partition_id first.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { prepared } from '../../db/prepared.ts';
import { ident } from '../../db/sql.ts';
import { findType } from '../../engine/registry.ts';
import { isRoundMode, type RoundMode } from '../../logic/functions/math.ts';
import { ENDING_RULES, type EndingRule, type RoundingPolicy } from '../../logic/rounding.ts';
import { D, RecordValue, parseIsoDate } from '../../logic/values.ts';

type Row = Record<string, unknown>;

export interface LogicRow {
  readonly id: number;
  readonly uniqueName: string;
  readonly validAfter: string;
  readonly label: string | null;
  readonly nature: string;
  readonly status: string;
  readonly inputs: unknown;
  readonly elements: unknown;
  readonly version: number;
}

const LOGIC_COLUMNS = `id, unique_name AS "uniqueName", to_char(valid_after, 'YYYY-MM-DD') AS "validAfter", label,
  nature, status, inputs, elements, version`;

/** The active version of a logic for a target date: the latest with validAfter ≤ the date. */
export async function logicAt(
  q: Queryable,
  partitionId: number,
  uniqueName: string,
  date: string,
): Promise<LogicRow | undefined> {
  const r = await q.query<LogicRow>(
    `SELECT ${LOGIC_COLUMNS} FROM formulas
      WHERE partition_id = $1 AND unique_name = $2 AND valid_after <= $3::date AND status = 'ACTIVE'
      ORDER BY valid_after DESC LIMIT 1`,
    [partitionId, uniqueName, date],
  );
  return r.rows[0];
}

/** Every active logic of the partition (findref). */
export async function allLogics(q: Queryable, partitionId: number): Promise<LogicRow[]> {
  const r = await q.query<LogicRow>(
    `SELECT ${LOGIC_COLUMNS} FROM formulas WHERE partition_id = $1 ORDER BY unique_name, valid_after`,
    [partitionId],
  );
  return r.rows;
}

/** Attribute types by field name from the attribute meta of an owner type (P, C, PX/CX per table name). */
export async function attributeTypes(
  q: Queryable,
  partitionId: number,
  owner: string,
  name?: string,
): Promise<Map<string, string>> {
  const r = await q.query<{ field: string; type: string | null }>(
    prepared(`SELECT field_name AS field, field_type AS type FROM attribute_meta
      WHERE partition_id = $1 AND owner_type = $2 AND ($3::text IS NULL OR name = $3::text)`),
    [partitionId, owner, name ?? null],
  );
  return new Map(r.rows.filter((x) => x.type !== null).map((x) => [x.field, x.type!]));
}

const META_CACHE = new Map<string, Map<string, string>>();

/**
 * attributeTypes, cached by the partition's attribute-meta version the principal authenticated with
 * (every meta change bumps it, so a cached entry is never stale); uncached without a version.
 */
export async function attributeTypesOf(
  q: Queryable,
  principal: Pick<Principal, 'partitionId' | 'metaVersion'>,
  owner: string,
  name?: string,
): Promise<Map<string, string>> {
  if (principal.metaVersion === undefined) return attributeTypes(q, principal.partitionId, owner, name);
  const key = `${principal.partitionId}:${principal.metaVersion}:${owner}:${name ?? ''}`;
  let hit = META_CACHE.get(key);
  if (!hit) {
    hit = await attributeTypes(q, principal.partitionId, owner, name);
    if (META_CACHE.size >= 1_000) META_CACHE.clear();
    META_CACHE.set(key, hit);
  }
  return hit;
}

/** A stored attribute text as its attribute meta types it (numbers as decimals, dates as dates). */
function typedAttribute(v: unknown, type: string | undefined): unknown {
  if (typeof v !== 'string' || type === undefined) return v;
  switch (type) {
    case 'NUMERIC':
    case 'MONEY':
    case 'PERCENT':
    case 'INTEGER':
      try {
        return new D(v.trim());
      } catch {
        return v;
      }
    case 'DATE':
      return parseIsoDate(v.slice(0, 10)) ?? v;
    case 'BOOLEAN':
      return v === 'true' ? true : v === 'false' ? false : v;
    default:
      return v;
  }
}

const FIELD_LISTS = new Map<string, readonly { name: string; column: string; custom: boolean }[]>();

function fieldsOf(code: string) {
  let list = FIELD_LISTS.get(code);
  if (!list) {
    list = findType(code)!.fields.map((f) => ({ name: f.name, column: f.column, custom: f.custom === true }));
    FIELD_LISTS.set(code, list);
  }
  return list;
}

/** A database row of a registered type → a logic record under API field names, typed by its meta. */
export function recordOf(code: string, row: Row, meta: ReadonlyMap<string, string>): RecordValue {
  // A plain object: fields are only ever read with Object.hasOwn, so its prototype is never reached;
  // dates and time stamps stay as the driver gave them (toValue makes days of them when read).
  const fields: Record<string, unknown> = {};
  for (const f of fieldsOf(code)) {
    const v = row[f.column];
    if (v === undefined || v === null) continue;
    fields[f.name] = f.custom && meta.size > 0 ? typedAttribute(v, meta.get(f.name)) : v;
  }
  return new RecordValue(fields, {
    source: code,
    typedId: `${String(row.id)}.${code}`,
    version: Number(row.version),
  });
}

/** Visible to the principal: no view group, or one of theirs (admins see all). */
function visible(principal: Principal, row: Row): boolean {
  const g = row.user_group_view_details;
  return principal.admin || typeof g !== 'string' || g === '' || principal.groups.includes(g);
}

/** A product or customer by business key or typedId (`12.P`), if it exists and the principal may see it. */
export async function masterRecord(
  q: Queryable,
  principal: Principal,
  code: 'P' | 'C',
  key: string,
): Promise<Row | undefined> {
  const table = code === 'P' ? 'products' : 'customers';
  const keyColumn = code === 'P' ? 'sku' : 'customer_id';
  const byId = new RegExp(`^(\\d{1,15})\\.${code}$`).exec(key);
  const r = await q.query<Row>(
    prepared(
      `SELECT * FROM ${ident(table)} WHERE partition_id = $1 AND ${byId ? 'id = $2::bigint' : `${ident(keyColumn)} = $2`}`,
    ),
    [principal.partitionId, byId ? byId[1] : key],
  );
  const row = r.rows[0];
  return row && visible(principal, row) ? row : undefined;
}

/** A seller by sellerId or typedId, if the principal may read sellers and see it. */
export async function sellerRecord(
  q: Queryable,
  principal: Principal,
  key: string,
): Promise<Row | undefined> {
  if (!principal.admin && !principal.permissions.has('SELLER_FETCH')) return undefined;
  const byId = /^(\d{1,15})\.SL$/.exec(key);
  const r = await q.query<Row>(
    `SELECT * FROM sellers WHERE partition_id = $1 AND ${byId ? 'id = $2::bigint' : 'seller_id = $2'}`,
    [principal.partitionId, byId ? byId[1] : key],
  );
  const row = r.rows[0];
  return row && visible(principal, row) ? row : undefined;
}

/** Extension rows (PX/CX) of one table for many owners: one statement. */
export async function extensionRows(
  q: Queryable,
  partitionId: number,
  owner: 'product' | 'customer',
  name: string,
  ownerKeys: readonly string[],
): Promise<Row[]> {
  const [table, keyColumn] =
    owner === 'product' ? ['product_extensions', 'sku'] : ['customer_extensions', 'customer_id'];
  const r = await q.query<Row>(
    prepared(`SELECT * FROM ${ident(table)}
      WHERE partition_id = $1 AND name = $2 AND ${ident(keyColumn)} = ANY($3::text[]) AND deleted_at IS NULL`),
    [partitionId, name, ownerKeys],
  );
  return r.rows;
}

export interface TableMeta {
  readonly id: number;
  readonly uniqueName: string;
  readonly type: string;
  readonly valueType: string;
}

export async function tablesByName(
  q: Queryable,
  partitionId: number,
  names: readonly string[],
): Promise<TableMeta[]> {
  const r = await q.query<TableMeta>(
    `SELECT id, unique_name AS "uniqueName", type, value_type AS "valueType" FROM lookup_tables
      WHERE partition_id = $1 AND unique_name = ANY($2::text[])`,
    [partitionId, names],
  );
  return r.rows;
}

const MATRIX_KEYS: Readonly<Record<string, number>> = {
  // JSON values under two keys live with the matrix values (key1, key2).
  JSON2: 2,
  MATRIX2: 2,
  MATRIX3: 3,
  MATRIX4: 4,
  MATRIX5: 5,
  MATRIX6: 6,
};

/** How many keys a look-up in the table takes. */
export function keyCount(type: string): number {
  return MATRIX_KEYS[type] ?? 1;
}

/**
 * Rows of one lookup table for many keys (each key a tuple of texts), with `k` = the key tuple
 * joined by U+001F as it was asked: one statement per table.
 */
export async function lookupRows(
  q: Queryable,
  partitionId: number,
  table: TableMeta,
  keys: readonly (readonly string[])[],
): Promise<Row[]> {
  const ref = String(table.id);
  const firsts = keys.map((k) => k[0] ?? '');
  switch (table.type) {
    case 'RANGE': {
      const r = await q.query<Row>(
        prepared(`SELECT k.x AS k, v.* FROM unnest($3::text[]) AS k(x)
          CROSS JOIN LATERAL (
            SELECT v.id, v.name, v.lower_bound, v.upper_bound, v.value, v.version FROM lookup_values v
             WHERE v.partition_id = $1 AND v.table_ref = $2
               AND (v.lower_bound IS NULL OR v.lower_bound <= rc_try_numeric(k.x))
               AND (v.upper_bound IS NULL OR rc_try_numeric(k.x) < v.upper_bound)
             ORDER BY v.lower_bound DESC NULLS LAST LIMIT 1) v`),
        [partitionId, ref, firsts],
      );
      return r.rows;
    }
    case 'SIMPLE_REAL_KEY':
    case 'SIMPLE_INT_KEY':
    case 'SIMPLE_DATE_KEY': {
      const cast = table.type === 'SIMPLE_DATE_KEY' ? 'rc_try_date' : 'rc_try_numeric';
      const r = await q.query<Row>(
        prepared(`SELECT k.x AS k, v.id, v.name, v.value, v.json_value, v.version FROM unnest($3::text[]) AS k(x)
           JOIN lookup_values v ON v.partition_id = $1 AND v.table_ref = $2 AND ${cast}(v.name) = ${cast}(k.x)`),
        [partitionId, ref, firsts],
      );
      return r.rows;
    }
    case 'SIMPLE':
    case 'JSON': {
      const r = await q.query<Row>(
        prepared(`SELECT v.name AS k, v.id, v.name, v.value, v.json_value, v.version FROM lookup_values v
          WHERE v.partition_id = $1 AND v.table_ref = $2 AND v.name = ANY($3::text[])`),
        [partitionId, ref, firsts],
      );
      return r.rows;
    }
    case 'MATRIX': {
      const r = await q.query<Row>(
        prepared(`SELECT v.name AS k, v.* FROM lookup_matrix_values v
          WHERE v.partition_id = $1 AND v.table_ref = $2 AND v.name = ANY($3::text[])`),
        [partitionId, ref, firsts],
      );
      return r.rows;
    }
    default: {
      const n = keyCount(table.type);
      const cols = Array.from({ length: n }, (_, i) => i);
      const params: unknown[] = [partitionId, ref, ...cols.map((i) => keys.map((k) => k[i] ?? ''))];
      const r = await q.query<Row>(
        prepared(`SELECT concat_ws(chr(31), ${cols.map((i) => `v.key${i + 1}`).join(', ')}) AS k, v.*
           FROM unnest(${cols.map((i) => `$${i + 3}::text[]`).join(', ')}) AS k(${cols.map((i) => `k${i + 1}`).join(', ')})
           JOIN lookup_matrix_values v ON v.partition_id = $1 AND v.table_ref = $2
            AND ${cols.map((i) => `v.key${i + 1} = k.k${i + 1}`).join(' AND ')}`),
        params,
      );
      return r.rows;
    }
  }
}

/** Lookup kinds whose rows are lookup_values rows under one key (combinable in one statement). */
const SINGLE_KEY_KINDS = new Set([
  'SIMPLE',
  'JSON',
  'SIMPLE_REAL_KEY',
  'SIMPLE_INT_KEY',
  'SIMPLE_DATE_KEY',
  'RANGE',
]);

/**
 * lookupRows for several tables at once: the single-key kinds (SIMPLE, typed keys, JSON, RANGE) in
 * one statement (a UNION ALL of each table's look-up, tagged), matrix kinds one statement each.
 * Answers the rows per request, in order.
 */
export async function lookupRowsMany(
  q: Queryable,
  partitionId: number,
  requests: readonly { readonly table: TableMeta; readonly keys: readonly (readonly string[])[] }[],
): Promise<Row[][]> {
  const out: Row[][] = requests.map(() => []);
  const single = requests.flatMap((r, i) => (SINGLE_KEY_KINDS.has(r.table.type) ? [i] : []));
  for (const [i, r] of requests.entries())
    if (!SINGLE_KEY_KINDS.has(r.table.type) || single.length === 1)
      out[i] = await lookupRows(q, partitionId, r.table, r.keys);
  if (single.length < 2) return out;
  const params: unknown[] = [partitionId];
  const branches = single.map((i) => {
    const { table, keys } = requests[i]!;
    params.push(
      String(table.id),
      keys.map((k) => k[0] ?? ''),
    );
    const ref = `$${params.length - 1}`;
    const ks = `$${params.length}::text[]`;
    switch (table.type) {
      case 'RANGE':
        return `(SELECT ${i} AS rc_t, k.x AS k, v.id, v.name, v.lower_bound, v.upper_bound, v.value, NULL::jsonb AS json_value, v.version
           FROM unnest(${ks}) AS k(x) CROSS JOIN LATERAL (
             SELECT v.id, v.name, v.lower_bound, v.upper_bound, v.value, v.version FROM lookup_values v
              WHERE v.partition_id = $1 AND v.table_ref = ${ref}
                AND (v.lower_bound IS NULL OR v.lower_bound <= rc_try_numeric(k.x))
                AND (v.upper_bound IS NULL OR rc_try_numeric(k.x) < v.upper_bound)
              ORDER BY v.lower_bound DESC NULLS LAST LIMIT 1) v)`;
      case 'SIMPLE_REAL_KEY':
      case 'SIMPLE_INT_KEY':
      case 'SIMPLE_DATE_KEY': {
        const cast = table.type === 'SIMPLE_DATE_KEY' ? 'rc_try_date' : 'rc_try_numeric';
        return `(SELECT ${i} AS rc_t, k.x AS k, v.id, v.name, NULL::numeric AS lower_bound, NULL::numeric AS upper_bound, v.value, v.json_value, v.version
           FROM unnest(${ks}) AS k(x)
           JOIN lookup_values v ON v.partition_id = $1 AND v.table_ref = ${ref} AND ${cast}(v.name) = ${cast}(k.x))`;
      }
      default:
        return `(SELECT ${i} AS rc_t, v.name AS k, v.id, v.name, NULL::numeric AS lower_bound, NULL::numeric AS upper_bound, v.value, v.json_value, v.version
           FROM lookup_values v WHERE v.partition_id = $1 AND v.table_ref = ${ref} AND v.name = ANY(${ks}))`;
    }
  });
  const r = await q.query<Row>(prepared(branches.join('\nUNION ALL\n')), params);
  for (const row of r.rows) out[Number(row.rc_t)]!.push(row);
  return out;
}

/** The partition's rounding policies (a small table, read once per request or batch). */
export async function roundingPolicies(q: Queryable, partitionId: number): Promise<RoundingPolicy[]> {
  const r = await q.query<Row>(
    `SELECT id, unique_name, currency, channel, customer_group, step::text AS step, mode, price_ending, ending_rule, version
       FROM rounding_policies WHERE partition_id = $1 ORDER BY id`,
    [partitionId],
  );
  return r.rows.map(policyOf);
}

function policyOf(x: Row): RoundingPolicy {
  return {
    id: Number(x.id),
    uniqueName: String(x.unique_name),
    currency: String(x.currency),
    channel: (x.channel as string | null) ?? null,
    customerGroup: (x.customer_group as string | null) ?? null,
    step: new D(String(x.step)),
    mode: (isRoundMode(String(x.mode)) ? x.mode : 'HALF_UP') as RoundMode,
    priceEnding: (x.price_ending as string | null) ?? null,
    endingRule: ((ENDING_RULES as readonly unknown[]).includes(x.ending_rule)
      ? x.ending_rule
      : 'NEAREST') as EndingRule,
    version: Number(x.version),
  };
}

/**
 * Products or customers by business key, many at once (those the principal may see). With `fields`
 * (API field names), only those columns are read besides the key, id, version and view group: a
 * bulk run reads what its logic reads, not the 40 columns of each record.
 */
export async function masterRecords(
  q: Queryable,
  principal: Principal,
  code: 'P' | 'C',
  keys: readonly string[],
  fields?: ReadonlySet<string>,
): Promise<Map<string, Row>> {
  const [table, keyColumn] = code === 'P' ? ['products', 'sku'] : ['customers', 'customer_id'];
  const columns =
    fields === undefined
      ? '*'
      : [
          ...new Set([
            'id',
            'version',
            keyColumn,
            'user_group_view_details',
            ...fieldsOf(code)
              .filter((f) => fields.has(f.name))
              .map((f) => f.column),
          ]),
        ]
          .map(ident)
          .join(', ');
  const r = await q.query<Row>(
    `SELECT ${columns} FROM ${ident(table)} WHERE partition_id = $1 AND ${ident(keyColumn)} = ANY($2::text[])`,
    [principal.partitionId, keys],
  );
  return new Map(r.rows.filter((row) => visible(principal, row)).map((row) => [String(row[keyColumn]), row]));
}

/** The logic version a product runs, as found beside the product (no program text: see logicById). */
export interface LogicVersion {
  readonly id: number;
  readonly uniqueName: string;
  readonly validAfter: string;
  readonly nature: string;
  readonly version: number;
}

/** Rounding policies and lookup-table metadata an evaluation reads besides its items. */
export interface LogicContext {
  readonly policies: RoundingPolicy[];
  readonly tables: TableMeta[];
}

const POLICIES_JSON = `(SELECT json_agg(json_build_object('id', id, 'unique_name', unique_name, 'currency', currency,
      'channel', channel, 'customer_group', customer_group, 'step', step::text, 'mode', mode,
      'price_ending', price_ending, 'ending_rule', ending_rule, 'version', version) ORDER BY id)
   FROM rounding_policies WHERE partition_id = $1)`;
const TABLES_JSON = (
  names: string,
) => `(SELECT json_agg(json_build_object('id', id, 'uniqueName', unique_name,
      'type', type, 'valueType', value_type))
   FROM lookup_tables WHERE partition_id = $1 AND unique_name = ANY(${names}))`;

function contextOf(policies: unknown, tables: unknown): LogicContext {
  return {
    policies: ((policies as Row[] | null) ?? []).map(policyOf),
    tables: ((tables as TableMeta[] | null) ?? []).map((t) => ({ ...t, id: Number(t.id) })),
  };
}

/**
 * A product by business key or typedId (if the principal may see it) and, in the same statement,
 * the version of the logic it runs at the date (`uniqueName`, or else its own `formulaName`), and the
 * context (`want`: policies, table names) the caller expects that logic to need. The program
 * (inputs, elements) is not read here: the compiled logic is cached by id and version.
 */
export async function productWithLogic(
  q: Queryable,
  principal: Principal,
  key: string,
  uniqueName: string | undefined,
  date: string,
  want: {
    readonly policies: boolean;
    readonly tables: readonly string[];
    /** Product extension tables whose row of this product to read too. */
    readonly productExtensions?: readonly string[];
  },
  /** A customer (customerId or typedId) read in the same statement. */
  customerKey?: string,
): Promise<
  | {
      product: Row;
      logic: LogicVersion | undefined;
      context: LogicContext;
      /** The customer's row when one was asked for and the principal may see it. */
      customer: Row | undefined;
      /** The product's row of each extension table asked for (null: none). */
      productExtensions: Map<string, Row | null>;
    }
  | undefined
> {
  const byId = /^(\d{1,15})\.P$/.exec(key);
  const customerById = customerKey === undefined ? null : /^(\d{1,15})\.C$/.exec(customerKey);
  // The customer's columns under "rc:c:<column>" (driver-typed as in its own statement).
  const customerJoin =
    customerKey === undefined
      ? ''
      : `LEFT JOIN customers c ON c.partition_id = p.partition_id AND ${customerById ? 'c.id = $7::bigint' : 'c.customer_id = $7::text'}`;
  const customerColumns =
    customerKey === undefined
      ? ''
      : CUSTOMER_COLUMNS.map((col) => `, c.${ident(col)} AS "rc:c:${col}"`).join('');
  const params: unknown[] = [
    principal.partitionId,
    byId ? byId[1] : key,
    uniqueName ?? null,
    date,
    want.policies,
    want.tables,
  ];
  if (customerKey !== undefined) params.push(customerById ? customerById[1] : customerKey);
  // Each extension table's row of the product (at most one: (name, sku) is unique), as
  // "rc:x<i>:<column>" columns of a lateral join.
  const extNames = want.productExtensions ?? [];
  const extJoins = extNames
    .map((name, i) => {
      params.push(name);
      return `LEFT JOIN LATERAL (SELECT * FROM product_extensions x
          WHERE x.partition_id = p.partition_id AND x.name = $${params.length}::text AND x.sku = p.sku
            AND x.deleted_at IS NULL) x${i} ON true`;
    })
    .join('\n       ');
  const extColumns = extNames
    .map((_, i) => PX_COLUMNS.map((col) => `, x${i}.${ident(col)} AS "rc:x${i}:${col}"`).join(''))
    .join('');
  const r = await q.query<Row>(
    prepared(`SELECT p.*, f.id AS "rc:fid", f.unique_name AS "rc:fname", to_char(f.valid_after, 'YYYY-MM-DD') AS "rc:fvalid",
            f.nature AS "rc:fnature", f.version AS "rc:fversion",
            CASE WHEN $5::boolean THEN ${POLICIES_JSON} END AS "rc:policies",
            CASE WHEN cardinality($6::text[]) > 0 THEN ${TABLES_JSON('$6::text[]')} END AS "rc:tables"${customerColumns}${extColumns}
       FROM products p
       LEFT JOIN LATERAL (
         SELECT id, unique_name, valid_after, nature, version FROM formulas f
          WHERE f.partition_id = p.partition_id AND f.unique_name = coalesce($3::text, p.formula_name)
            AND f.valid_after <= $4::date AND f.status = 'ACTIVE'
          ORDER BY f.valid_after DESC LIMIT 1) f ON true
       ${customerJoin}
       ${extJoins}
      WHERE p.partition_id = $1 AND ${byId ? 'p.id = $2::bigint' : 'p.sku = $2'}`),
    params,
  );
  const row = r.rows[0];
  if (!row || !visible(principal, row)) return undefined;
  const logic =
    row['rc:fid'] === null || row['rc:fid'] === undefined
      ? undefined
      : {
          id: Number(row['rc:fid']),
          uniqueName: String(row['rc:fname']),
          validAfter: String(row['rc:fvalid']),
          nature: String(row['rc:fnature']),
          version: Number(row['rc:fversion']),
        };
  let customer: Row | undefined;
  if (customerKey !== undefined && row['rc:c:id'] !== null && row['rc:c:id'] !== undefined) {
    const c: Row = {};
    for (const col of CUSTOMER_COLUMNS) c[col] = row[`rc:c:${col}`];
    if (visible(principal, c)) customer = c;
  }
  const productExtensions = new Map<string, Row | null>();
  extNames.forEach((name, i) => {
    if (row[`rc:x${i}:id`] === null || row[`rc:x${i}:id`] === undefined) {
      productExtensions.set(name, null);
      return;
    }
    const x: Row = {};
    for (const col of PX_COLUMNS) x[col] = row[`rc:x${i}:${col}`];
    productExtensions.set(name, x);
  });
  return {
    product: row,
    logic,
    context: contextOf(row['rc:policies'], row['rc:tables']),
    customer,
    productExtensions,
  };
}

/** The product-extension columns a logic record reads (see recordOf). */
const PX_COLUMNS: readonly string[] = [
  ...new Set(['id', 'version', 'sku', 'name', ...fieldsOf('PX').map((f) => f.column)]),
];

/** The customer columns a logic record and the visibility check read (see recordOf, visible). */
const CUSTOMER_COLUMNS: readonly string[] = [
  ...new Set([
    'id',
    'version',
    'customer_id',
    'user_group_view_details',
    ...fieldsOf('C').map((f) => f.column),
  ]),
];

/** One logic version by id (its program included). */
export async function logicById(
  q: Queryable,
  partitionId: number,
  id: number,
): Promise<LogicRow | undefined> {
  const r = await q.query<LogicRow>(
    `SELECT ${LOGIC_COLUMNS} FROM formulas WHERE partition_id = $1 AND id = $2`,
    [partitionId, id],
  );
  return r.rows[0];
}

/** The context of a logic (policies when `withPolicies`, the named tables' metadata): one statement. */
export async function logicContext(
  q: Queryable,
  partitionId: number,
  withPolicies: boolean,
  tableNames: readonly string[],
): Promise<LogicContext> {
  if (!withPolicies && tableNames.length === 0) return { policies: [], tables: [] };
  const r = await q.query<Row>(
    prepared(
      `SELECT CASE WHEN $2::boolean THEN ${POLICIES_JSON} END AS policies, ${TABLES_JSON('$3::text[]')} AS tables`,
    ),
    [partitionId, withPolicies, tableNames],
  );
  return contextOf(r.rows[0]?.policies, r.rows[0]?.tables);
}

/**
 * Product competition rows (PCOMP) of many products at a date: per product and competitor, the
 * latest row dated on or before it (one statement; the unique key serves it).
 */
export async function competitionRows(
  q: Queryable,
  partitionId: number,
  skus: readonly string[],
  date: string,
): Promise<Row[]> {
  const r = await q.query<Row>(
    prepared(`SELECT DISTINCT ON (c.sku, c.competitor) c.* FROM product_competition c
      WHERE c.partition_id = $1 AND c.sku = ANY($2::text[]) AND c.competition_date <= $3::date
      ORDER BY c.sku, c.competitor, c.competition_date DESC`),
    [partitionId, skus, date],
  );
  return r.rows;
}

/** A competition row as a logic record: `price` a decimal (never compared as text). */
export function competitionRecord(row: Row): RecordValue {
  const rec = recordOf('PCOMP', row, new Map());
  const fields: Record<string, unknown> = { ...rec.fields };
  if (typeof fields.price === 'string') fields.price = new D(fields.price);
  if (typeof fields.competitionDate === 'string')
    fields.competitionDate = parseIsoDate(fields.competitionDate) ?? fields.competitionDate;
  return new RecordValue(fields, rec.ref);
}
