// The logics themselves as the engine reads them: the version valid at a date, by id or all of the
// partition; a product with the version of the logic it runs (and its customer and extension rows)
// in one statement; and the context a logic reads besides its items (the partition's rounding
// policies, lookup-table metadata). Every statement is scoped by partition_id first.

import type { Principal } from '../../access/access.ts';
import type { Queryable } from '../../db/db.ts';
import { prepared } from '../../db/prepared.ts';
import { ident } from '../../db/sql.ts';
import {
  ENDING_RULES,
  isRoundMode,
  type EndingRule,
  type RoundingPolicy,
  type RoundMode,
} from '../../logic/rounding.ts';
import { D } from '../../logic/values.ts';
import type { TableMeta } from './lookup-store.ts';
import type { SetVersions } from './read-cache.ts';
import { fieldsOf, visible } from './master-store.ts';

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
  /** The condition-record sets asked for (`want.sets`), with their versions (read-cache.ts). */
  readonly sets: SetVersions[];
}

const POLICIES_JSON = `(SELECT json_agg(json_build_object('id', id, 'unique_name', unique_name, 'currency', currency,
      'channel', channel, 'customer_group', customer_group, 'step', step::text, 'mode', mode,
      'price_ending', price_ending, 'ending_rule', ending_rule, 'version', version) ORDER BY id)
   FROM rounding_policies WHERE partition_id = $1)`;
const TABLES_JSON = (
  names: string,
) => `(SELECT json_agg(json_build_object('id', id, 'uniqueName', unique_name,
      'type', type, 'valueType', value_type, 'version', version, 'valuesVersion', values_version))
   FROM lookup_tables WHERE partition_id = $1 AND unique_name = ANY(${names}))`;
const SETS_JSON = (
  names: string,
) => `(SELECT json_agg(json_build_object('id', id, 'uniqueName', unique_name, 'version', version,
      'itemsVersion', items_version))
   FROM condition_record_sets WHERE partition_id = $1 AND unique_name = ANY(${names}))`;

function contextOf(policies: unknown, tables: unknown, sets?: unknown): LogicContext {
  return {
    policies: ((policies as Row[] | null) ?? []).map(policyOf),
    tables: ((tables as TableMeta[] | null) ?? []).map((t) => ({ ...t, id: Number(t.id) })),
    sets: ((sets as SetVersions[] | null) ?? []).map((x) => ({ ...x, id: Number(x.id) })),
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
    /** Condition-record sets whose versions to read (read-cache.ts). */
    readonly sets?: readonly string[];
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
  const setNames = want.sets ?? [];
  const setsColumn =
    setNames.length === 0 ? '' : `, ${SETS_JSON(`$${params.push(setNames)}::text[]`)} AS "rc:sets"`;
  const r = await q.query<Row>(
    prepared(`SELECT p.*, f.id AS "rc:fid", f.unique_name AS "rc:fname", to_char(f.valid_after, 'YYYY-MM-DD') AS "rc:fvalid",
            f.nature AS "rc:fnature", f.version AS "rc:fversion",
            CASE WHEN $5::boolean THEN ${POLICIES_JSON} END AS "rc:policies",
            CASE WHEN cardinality($6::text[]) > 0 THEN ${TABLES_JSON('$6::text[]')} END AS "rc:tables"${setsColumn}${customerColumns}${extColumns}
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
    context: contextOf(row['rc:policies'], row['rc:tables'], row['rc:sets']),
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

/**
 * The context of a logic (policies when `withPolicies`, the named tables' metadata, the named
 * condition-record sets' versions): one statement.
 */
export async function logicContext(
  q: Queryable,
  partitionId: number,
  withPolicies: boolean,
  tableNames: readonly string[],
  setNames: readonly string[] = [],
): Promise<LogicContext> {
  if (!withPolicies && tableNames.length === 0 && setNames.length === 0)
    return { policies: [], tables: [], sets: [] };
  const r = await q.query<Row>(
    prepared(
      `SELECT CASE WHEN $2::boolean THEN ${POLICIES_JSON} END AS policies, ${TABLES_JSON('$3::text[]')} AS tables,
              ${SETS_JSON('$4::text[]')} AS sets`,
    ),
    [partitionId, withPolicies, tableNames, setNames],
  );
  return contextOf(r.rows[0]?.policies, r.rows[0]?.tables, r.rows[0]?.sets);
}
