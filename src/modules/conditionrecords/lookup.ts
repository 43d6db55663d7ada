// Look-up of condition records at a date: for each key tuple, the item of a set valid on that day
// (validity is inclusive at both ends). The logic engine calls `findConditionRecords`; the route
// `/conditionrecordset.lookup/{set}` serves it to clients. For the logic engine one SQL statement
// reads the set (its id, key size, wildcards, attribute meta) and answers every tuple; for clients
// the set comes first and then its found items as lines of JSON texts (the server writes the rest
// of each item's JSON: lookup-answer.ts), in a statement written for the set's attribute types, on
// one snapshot (a large batch in parts that run at once, on PostgreSQL). For sets without wildcards
// the tuples travel as one array of key signatures (computed here, exactly as the database's
// rc_condition_key_sig does), each meets the btree index (partition, set, key signature, validFrom)
// once, and only found items come back, with the columns the answer needs (keys are the tuple's).
// Sets with wildcards send the keys too. The items' custom attributes are typed by the set's
// attribute meta as `/fetch/CRCI` of the set answers them (lookup-attributes.ts).
//
// Wildcard rule (sets with `wildcardKeys` true): an item key `*` matches any value at its position.
// An exact match always wins; otherwise, of the items matching with wildcards, the most specific
// one wins, comparing positions from key1 on (a specific key1 beats `*` in key1, then key2, ...).
// A `*` in a tuple is only matched by an item key `*` (or by exact equality), never "any item".

import { hash } from 'node:crypto';
import type { Db, Queryable } from '../../db/db.ts';
import { validationError, notFound } from '../../http/errors.ts';
import { coerceValue, unstorableText } from '../../engine/values.ts';
import { prepared, preparedShape } from '../../db/prepared.ts';
import { MAX_KEY_SIZE } from '../../engine/registry-condrec.ts';
import type { JsonWrite } from '../../engine/record-json.ts';
import { lookupAnswer } from './lookup-answer.ts';
import {
  ATTRS,
  META_SELECT,
  attributeJsonSql,
  typedAttributes,
  typesOf,
  type AttributeTypes,
} from './lookup-attributes.ts';

export interface ConditionRecordItem {
  readonly id: number;
  readonly typedId: string;
  readonly conditionRecordSetId: number;
  readonly keys: string[];
  readonly validFrom: string;
  readonly validTo: string;
  /** A decimal as text (exact). */
  readonly conditionValue: string | null;
  readonly unitOfMeasure: string | null;
  readonly currency: string | null;
  readonly priceUnit: string | null;
  /**
   * The item's non-empty custom attributes (`attribute1`..`attribute30`), typed by the set's attribute
   * meta (CRCIAM) as `/fetch/CRCI` answers them: numbers (text where a double would not keep the
   * value), booleans; text without meta, and for dates, date-times and TEXT/LINK meta.
   */
  readonly attributes: Record<string, unknown>;
  readonly version: number;
}

/** Most tuples in one call (the body limit caps HTTP calls well below it). */
export const MAX_TUPLES = 100_000;
/**
 * A client's look-up of more than PART_TUPLES tuples runs as up to MAX_PARTS statements at once where
 * the database can (findConditionRecordsJson): parts of 5,000 tuples took 38–45 ms against 72–82 for
 * 10,000 in one (PostgreSQL, 2 cores, 1,000,000 items); 3 and 4 parts no faster there.
 */
const PART_TUPLES = 2_500;
const MAX_PARTS = 4;

const KEYS = Array.from({ length: MAX_KEY_SIZE }, (_, i) => `key${i + 1}`);

/** The set by its unique name with the types of its attribute meta (META_SELECT: `attr_types`). */
const SET_SELECT = `SELECT cs.id, cs.key_size, cs.wildcard_keys, cs.user_group_view_details AS view_group, m.*
      FROM condition_record_sets cs
     CROSS JOIN LATERAL (${META_SELECT}) m
     WHERE cs.partition_id = $1 AND cs.unique_name = $2`;
const SET_CTE = `WITH s AS (${SET_SELECT})`;

/** The columns of the set `s` every look-up reads (checkedSet). */
const SET_COLUMNS = 's.id AS set_id, s.key_size, s.wildcard_keys, s.view_group, s.attr_types';

/** The set alone (the row SET_AND_EXACT_SQL's first row has), for the clients' look-up. */
const SET_SQL = prepared(`SELECT ${SET_COLUMNS} FROM (${SET_SELECT}) s`);

/**
 * The items of set `set` valid on day $4 for signatures $3, one row per signature that has one: its
 * number `n` and the item's `id`, `valid_from`, `valid_to`, `condition_value`, `unit_of_measure`,
 * `currency`, `price_unit`, `version` and ATTRS. One probe of the key index per signature, whatever
 * the statistics (migration 063).
 */
const itemsAt = (set: string) => `rc_condition_records_at($1, ${set}, $3::text[], $4::date)`;

/**
 * The set by its unique name and, if it has no wildcards, its items: one probe of the key index per
 * signature. One row per found item, each with the set's columns; one row with a null `n` when the
 * set has none of them (or has wildcards: WILDCARD_SQL runs next); no row when there is no such set.
 * The set and its items in one statement: a single item's look-up (/formulamanager.execute) is one
 * round trip.
 */
const SET_AND_EXACT_SQL = prepared(`${SET_CTE}
  SELECT ${SET_COLUMNS}, x.*
    FROM s
    LEFT JOIN LATERAL (SELECT c.* FROM ${itemsAt('s.id')} c WHERE NOT s.wildcard_keys) x ON true`);

/** `x` as JSON text (strings escaped), `null` for NULL. */
const jsonOf = (x: string) => `coalesce(to_json(${x})::text, 'null')`;

/**
 * A found item of `c` for tuple `c.n` as one line of tab-separated JSON texts, for lookupAnswer: the
 * tuple's number, id, validFrom, validTo, conditionValue (a decimal's text), unitOfMeasure, currency,
 * priceUnit, the members of `attributes` (the non-null ones, typed by the set's meta:
 * attributeJsonSql) and version. (JSON text holds no tab or newline: it escapes control characters.)
 * The members' names, the typedId, the set and the keys (the tuple's, as it matched them) are the
 * server's to write: PostgreSQL 15 sends a result in 8 KB writes, which took ~20 ms for the 1.3 MB
 * of 5,000 whole items, against ~5 for these lines (loopback, 2 cores).
 */
const itemLine = (types: AttributeTypes) => `c.n || E'\t' || c.id
    || E'\t' || to_json(c.valid_from) || E'\t' || to_json(c.valid_to)
    || E'\t' || ${jsonOf('c.condition_value::text')} || E'\t' || ${jsonOf('c.unit_of_measure')}
    || E'\t' || ${jsonOf('c.currency')} || E'\t' || ${jsonOf('c.price_unit::text')}
    || E'\t' || concat_ws(',', ${ATTRS.map((a) => `CASE WHEN c.${a} IS NOT NULL THEN '"${a}":' || ${attributeJsonSql(`c.${a}`, types.get(a))} END`).join(', ')})
    || E'\t' || c.version`;

/**
 * For clients, the items of set $2 valid on day $4 for signatures $3: one line per found item
 * (itemLine), in no order, as one text (NULL when none is found). Its text follows the set's
 * attribute types, read first (SET_SQL): for a set without typed meta a plain `to_json` per
 * attribute, which PostgreSQL parses, plans and runs in about half the time of one statement
 * choosing each value's type by the meta it reads itself.
 */
const itemLinesSql = (types: AttributeTypes) =>
  preparedShape(`SELECT string_agg(${itemLine(types)}, E'\n') AS lines FROM ${itemsAt('$2::bigint')} c`);

/**
 * The key signature of a tuple, as the database computes it (rc_condition_key_sig, migration 053):
 * the keys in order, each with `\` written `\\` and U+0001 written `\1`, joined by U+0001; when the
 * keys add up to more than 120 bytes, the first 300 characters of that text and its md5 (hex).
 */
export function conditionKeySig(keys: readonly string[]): string {
  let s = '';
  let units = 0;
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    if (k > 0) s += '\u0001';
    // (A look-up signs thousands of tuples a call: the replacements only where they change the key.)
    s +=
      key.includes('\\') || key.includes('\u0001')
        ? key.replaceAll('\\', '\\\\').replaceAll('\u0001', '\\1')
        : key;
    units += key.length;
  }
  // A UTF-16 unit is at most 3 bytes of UTF-8: keys of 40 units or fewer are within 120 bytes.
  if (units <= 40 || keys.reduce((n, key) => n + Buffer.byteLength(key), 0) <= 120) return s;
  // PostgreSQL's left() counts characters (code points), not UTF-16 units.
  return Array.from(s).slice(0, 300).join('') + hash('md5', s, 'hex');
}

/** The columns of an item an exact match (rc_condition_records_at) and a wildcard match answer. */
const MATCH_COLUMNS = [
  'id',
  'valid_from',
  'valid_to',
  'condition_value',
  'unit_of_measure',
  'currency',
  'price_unit',
  ...ATTRS,
  'version',
];
/**
 * Sets with wildcards: the exact item (by the tuple's signature $16, as for sets without), else the
 * most specific one matching with `*`. The keys answered are the tuple's for an exact match.
 */
const WILDCARD_SQL = prepared(`
  SELECT q.n, coalesce(e.id, w.id) AS found,
         ${KEYS.map((k, i) => `CASE WHEN e.id IS NULL THEN w.${k} ELSE q.k${i + 1} END AS ${k}`).join(', ')},
         ${MATCH_COLUMNS.map((c) => `coalesce(e.${c}, w.${c}) AS ${c}`).join(', ')}
    FROM unnest(${KEYS.map((_, i) => `$${i + 4}::text[]`).join(', ')})
         WITH ORDINALITY AS q(${KEYS.map((_, i) => `k${i + 1}`).join(', ')}, n)
    LEFT JOIN rc_condition_records_at($1, $2::bigint, $16::text[], $3::date) e ON e.n = q.n
    LEFT JOIN LATERAL (
      SELECT ${[...KEYS, ...MATCH_COLUMNS].join(', ')} FROM condition_records c
       WHERE e.id IS NULL
         AND c.partition_id = $1 AND c.condition_record_set_id = $2::bigint
         AND c.key1 IN (q.k1, '*')
         AND ${KEYS.slice(1)
           .map((k, i) => `(c.${k} IS NOT DISTINCT FROM q.k${i + 2} OR c.${k} = '*')`)
           .join(' AND ')}
         AND c.valid_from <= $3::date AND c.valid_to >= $3::date
       ORDER BY ${KEYS.map((k) => `(c.${k} = '*')`).join(', ')}
       LIMIT 1
    ) w ON true
   ORDER BY q.n`);

interface Row extends Record<string, unknown> {
  /** The tuple's number (1-based); null on the set's own row of SET_AND_EXACT_SQL. */
  n: number | string | null;
}

/** Checks the date (`YYYY-MM-DD`, or a date-time at midnight) and answers the day. */
export function lookupDate(date: unknown, field = 'date'): string {
  const day = coerceValue('date', date);
  if (typeof day !== 'string') throw validationError(field, 'must be a date (YYYY-MM-DD)');
  return day;
}

/** Checks the date and the tuples' shapes; answers the day and the tuples' key signatures. */
function checkedRequest(
  tuples: readonly (readonly string[])[],
  date: string,
): { day: string; sigs: string[] } {
  const day = lookupDate(date);
  if (tuples.length > MAX_TUPLES) throw validationError('keys', `at most ${MAX_TUPLES} tuples per look-up`);
  tuples.forEach((t, i) => {
    if (!Array.isArray(t) || t.length === 0 || t.length > MAX_KEY_SIZE) {
      throw validationError(`keys.${i}`, `must be an array of 1 to ${MAX_KEY_SIZE} keys`);
    }
    t.forEach((v: unknown, k) => {
      if (typeof v !== 'string') throw validationError(`keys.${i}.${k}`, 'must be text');
      // No stored key holds NUL or an unpaired surrogate (checkValue refuses them): the database
      // cannot take NUL as text, and the driver sent a lone surrogate as U+FFFD, finding another key.
      const unstorable = unstorableText(v);
      if (unstorable !== undefined) throw validationError(`keys.${i}.${k}`, unstorable);
    });
  });
  return { day, sigs: tuples.map(conditionKeySig) };
}

/** Signatures as a text array's literal, made at once: each quoted, `\` and `"` escaped. */
const sigArray = (sigs: readonly string[]) =>
  `{${sigs.map((x) => `"${/["\\]/.test(x) ? x.replace(/["\\]/g, '\\$&') : x}"`).join(',')}}`;

/** A look-up: the set by its unique name, the key tuples and the date. */
export interface LookupRequest {
  readonly partitionId: number;
  readonly setUniqueName: string;
  readonly tuples: readonly (readonly string[])[];
  readonly date: string;
  /** Whether the caller sees a set of this view group (clients); else it is a 404, as an unknown set. */
  readonly canView?: (group: string | null) => boolean;
}

interface SetOfLookup {
  readonly setId: number;
  readonly keySize: number;
  readonly wildcards: boolean;
  /** The set's attribute meta, as the items' attributes are typed. */
  readonly types: AttributeTypes;
}

/**
 * The set of a look-up statement's first row (a 404 when none, or one the caller does not see);
 * every tuple must have its key size.
 */
function checkedSet(row: Row | undefined, { setUniqueName, tuples, canView }: LookupRequest): SetOfLookup {
  if (!row || (canView !== undefined && !canView((row.view_group as string | null) ?? null)))
    throw notFound(`Condition record set ${JSON.stringify(setUniqueName)}`, 'setUniqueName');
  const keySize = Number(row.key_size);
  const wrong = tuples.findIndex((t) => t.length !== keySize);
  if (wrong >= 0) {
    throw validationError(
      `keys.${wrong}`,
      `set ${setUniqueName} has ${keySize} keys, this tuple has ${tuples[wrong]!.length}`,
    );
  }
  return {
    setId: Number(row.set_id),
    keySize,
    wildcards: row.wildcard_keys === true,
    types: typesOf(row.attr_types),
  };
}

/**
 * The item valid at `date` for each tuple (null where none), in order: one SQL statement with the
 * set's (two for a set with wildcards). A tuple must have as many keys as the set's `keySize`; an unknown set is a 404 naming it.
 */
export async function findConditionRecords(
  q: Queryable,
  partitionId: number,
  setUniqueName: string,
  tuples: readonly (readonly string[])[],
  date: string,
): Promise<(ConditionRecordItem | null)[]> {
  const request = { partitionId, setUniqueName, tuples, date };
  const { day, sigs } = checkedRequest(tuples, date);
  const rows = await setAndExact(q, request, day, sigs);
  const set = checkedSet(rows[0], request);
  if (set.wildcards) return wildcardItems(q, request, set, day, sigs);
  const out: (ConditionRecordItem | null)[] = new Array<ConditionRecordItem | null>(tuples.length).fill(null);
  for (const row of rows) {
    if (row.n === null) continue;
    const i = Number(row.n) - 1;
    out[i] = toItem(row, set.setId, tuples[i]!, typedAttributes(row, set.types));
  }
  return out;
}

/**
 * `findConditionRecords`'s answer as the writer of its array's JSON, from the database's lines of
 * JSON texts (itemLine, lookupAnswer; for a set with wildcards, by JSON.stringify): for clients. The
 * set first (SET_SQL), then its items, on one snapshot: a batch of more than PART_TUPLES tuples in
 * parts at once where the database can, else in one read-only transaction.
 */
export async function findConditionRecordsJson(
  db: Pick<Db, 'parallelReads' | 'transaction'>,
  request: LookupRequest,
): Promise<JsonWrite> {
  const { day, sigs } = checkedRequest(request.tuples, request.date);
  const parts = Math.min(MAX_PARTS, Math.ceil(sigs.length / PART_TUPLES));
  const read = async (readers: readonly Queryable[]): Promise<JsonWrite> => {
    const first = readers[0]!;
    const row = (await first.query<Row>(SET_SQL, [request.partitionId, request.setUniqueName])).rows[0];
    const set = checkedSet(row, request);
    if (set.wildcards) {
      const json = JSON.stringify(await wildcardItems(first, request, set, day, sigs));
      return (out) => out.utf8(json);
    }
    // (The server's PostgreSQL connections run without JIT, src/db/pg.ts: a batch of thousands of
    // tuples is estimated costly enough to be compiled, which took 3 s of a 4 s look-up.)
    const sql = itemLinesSql(set.types);
    const size = Math.ceil(sigs.length / readers.length);
    const answers = await Promise.all(
      readers.map((reader, part) =>
        reader.query<{ lines: string | null }>(sql, [
          request.partitionId,
          set.setId,
          sigArray(sigs.slice(part * size, (part + 1) * size)),
          day,
        ]),
      ),
    );
    const texts = answers.map((answer) => answer.rows[0]?.lines ?? null);
    return lookupAnswer(set.setId, request.tuples, texts, size, set.types.size > 0);
  };
  return parts > 1 && db.parallelReads !== undefined
    ? db.parallelReads(parts, read)
    : db.transaction((tx) => read([tx]), { readOnly: true });
}

/** The logic engine's look-up statement (SET_AND_EXACT_SQL) for signatures `sigs`. */
async function setAndExact(
  q: Queryable,
  request: LookupRequest,
  day: string,
  sigs: readonly string[],
): Promise<Row[]> {
  const r = await q.query<Row>(SET_AND_EXACT_SQL, [
    request.partitionId,
    request.setUniqueName,
    sigArray(sigs),
    day,
  ]);
  return r.rows;
}

/** The items of a set with wildcards (WILDCARD_SQL), null where none. */
async function wildcardItems(
  q: Queryable,
  { partitionId, tuples }: LookupRequest,
  set: SetOfLookup,
  day: string,
  sigs: readonly string[],
): Promise<(ConditionRecordItem | null)[]> {
  const out: (ConditionRecordItem | null)[] = new Array<ConditionRecordItem | null>(tuples.length).fill(null);
  if (tuples.length === 0) return out;
  const columns: (string | null)[][] = KEYS.map((_, k) => tuples.map((t) => t[k] ?? null));
  const w = await q.query<Row>(WILDCARD_SQL, [partitionId, set.setId, day, ...columns, sigArray(sigs)]);
  for (const row of w.rows) {
    if (row.found === null) continue;
    const keys = KEYS.slice(0, set.keySize).map((k) => row[k] as string);
    out[Number(row.n) - 1] = toItem(row, set.setId, keys, typedAttributes(row, set.types));
  }
  return out;
}

function toItem(
  row: Row,
  setId: number,
  keys: readonly string[],
  attributes: Record<string, unknown>,
): ConditionRecordItem {
  const id = Number(row.id);
  return {
    id,
    typedId: `${id}.CRCI`,
    conditionRecordSetId: setId,
    keys: [...keys],
    validFrom: row.valid_from as string,
    validTo: row.valid_to as string,
    conditionValue: (row.condition_value as string | null) ?? null,
    unitOfMeasure: (row.unit_of_measure as string | null) ?? null,
    currency: (row.currency as string | null) ?? null,
    priceUnit: (row.price_unit as string | null) ?? null,
    attributes,
    version: Number(row.version),
  };
}
