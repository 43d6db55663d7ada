// Field and type declarations shared by the registry, the criteria compiler and the loaders. A file
// of its own (importing no engine module) so that every catalog of types can import it without cycles.

import type { Principal } from '../access/access.ts';
import type { Permission, RouteAccess } from '../access/catalogue.ts';
import type { Queryable } from '../db/db.ts';
import type { AppError, FieldErrors } from '../http/errors.ts';

/** The declared type of a field, which decides how values are parsed and compared. */
export type FieldType = 'string' | 'integer' | 'decimal' | 'boolean' | 'date' | 'datetime' | 'json';

/** The SQL type of a value of each field type (parameters are cast to it; arrays add `[]`). */
export const SQL_TYPE: Readonly<Record<FieldType, string>> = {
  string: 'text',
  integer: 'bigint',
  decimal: 'numeric',
  boolean: 'boolean',
  date: 'date',
  datetime: 'timestamptz',
  json: 'jsonb',
};

/** What the criteria compiler needs to know of a field. */
export interface FieldSpec {
  /** The API name, e.g. `sku` or `attribute3`. */
  readonly name: string;
  /** The column in the type's table (checked by `ident`). */
  readonly column: string;
  /** The comparison type (for custom attributes: the type set in the attribute meta). */
  readonly type: FieldType;
  /**
   * True when the column is `text` but the field compares as `type` (custom attributes whose type
   * comes from the attribute meta): the compiler then casts safely, a non-parsable value being NULL.
   */
  readonly storedAsText?: boolean;
  /**
   * Text search indexes exist on the column (`lower(col) text_pattern_ops` and a `lower(col)`
   * trigram index; migration 012, or an `indexed` attribute meta): case-sensitive text matches then
   * add the implied `lower(col) LIKE lower(pattern)`, which those indexes serve.
   */
  readonly searchIndexed?: boolean;
  /**
   * An index holds the column's value though this partition's meta does not ask for one (another
   * partition's `indexed` meta of the same attribute: indexes.ts): its text must fit an index entry
   * as a search-indexed field's must. Set by bulk loads (`boundByIndexes`), whose rows are refused one
   * by one rather than failing their whole chunk.
   */
  readonly indexEntryBound?: boolean;
  /**
   * A typed attribute whose meta is `indexed`: its btree (src/engine/indexes.ts) carries the column
   * and the row id, so comparisons of it find the matching ids by the index alone.
   */
  readonly indexCovers?: boolean;
  /**
   * The prefix index `(partition_id, lower(col) text_pattern_ops)` carries the column and the row id
   * (INCLUDE; migration 052): prefix matches of it find the matching ids by the index alone. Its text
   * and its lower case share one btree entry (value-check.ts).
   */
  readonly prefixCovers?: boolean;
  /**
   * The column is a `text[]` of values (record history's changed fields): `equals` / `inSet` match
   * when any element does, their negations when none does; no other operator applies.
   */
  readonly elements?: boolean;
  /**
   * The field's output as an SQL expression over the row alias (a registry constant, never input):
   * calculation grid items answer `calculationResults` expanded from their compact stored form. An
   * `elements` field is also filtered by it (record history's changed fields, some kept as a list).
   */
  readonly readSql?: (alias: string) => string;
  /**
   * The field is the value under this key of the `jsonb` map in `column` (calculation grid results:
   * `result.ListPrice` is `results -> 'ListPrice'`), compared as `type`: JSON numbers and booleans
   * directly, anything else through the safe casts (criteria/compile.ts `column`).
   * Such fields are filter, sort and output fields only, left out of the default output.
   */
  readonly jsonKey?: string;
  /**
   * The `typedId` of filters and sorts (criteria/resolve.ts `typedIdField`): the record's id, its
   * values given as `<id>.<typeCode>` of this type code (any code when empty) or as plain ids.
   */
  readonly typedIdOf?: string;
  /** Other codes whose typedIds name the same records (`CRCI2` items are `CRCI` items): taken too. */
  readonly typedIdAliases?: readonly string[];
}

export interface FieldDef extends FieldSpec {
  /** Needed on add (business keys, extension table names). */
  readonly required?: boolean;
  /**
   * With `required`: may be left out when a record is added (the column has a default, e.g. the
   * open end of a condition record's validity), but never set empty.
   */
  readonly defaultOnAdd?: boolean;
  /**
   * With `required`: the value a write of null (or blank) stores, as when the field is left out (the
   * open end of a condition record's validity, `9999-12-31`), instead of refusing it.
   */
  readonly nullAs?: string;
  /** A text field whose empty text is no value: `''` is stored as NULL (condition record keys). */
  readonly blankIsNull?: boolean;
  /** Server-maintained (id, version, dates): never written by clients, silently ignored on input. */
  readonly system?: boolean;
  /**
   * Another name of the field named here (same column; attribute meta's `formatType` of
   * `fieldType`): read, filtered and sorted as itself; written, it writes that field — unless the
   * write names that field too (a fetched record sent back), which then wins. Mark it `system`, so
   * that history, DCRs and loads see the column once.
   */
  readonly aliasOf?: string;
  /** A custom attribute: text column, type from the attribute meta. */
  readonly custom?: boolean;
  /** Part of the business key: may be set on add, never changed afterwards. */
  readonly key?: boolean;
  /** A business key field whose values compare without case (its unique index is on `lower()`). */
  readonly caseless?: boolean;
  readonly maxLength?: number;
  /** An integer stored in a 4-byte column: values from -2^31 to 2^31 - 1 (others are refused). */
  readonly int32?: boolean;
  /** Values allowed for this field (checked on writes). */
  readonly oneOf?: readonly string[];
}

export interface TypeDef {
  readonly code: string;
  readonly label: string;
  readonly table: string;
  readonly fields: readonly FieldDef[];
  /** API names of the business key, in order. */
  readonly businessKey: readonly string[];
  /**
   * The fields whose values record history keeps as a record's business key, when not `businessKey`
   * (`CRCI`, addressed by id, keeps the set, keys and validFrom its sized codes keep); joined by `|`,
   * empty ones left out.
   */
  readonly historyKey?: readonly string[];
  /**
   * Other type codes whose typedIds name records of this type too (`CRCI` and `CRCI<n>` name the
   * same items: `5.CRCI2` addresses item 5 through `/update/CRCI`, `5.CRCI` through `/update/CRCI2`).
   */
  readonly typedIdAliases?: readonly string[];
  /**
   * Names the type has no field of but takes as no value when given null or "" (a condition record
   * item's keys past its key size: `key2: ""` on `CRCI1`, as `CRCI` stores it); any other value is an
   * unknown field.
   */
  readonly absentWhenEmpty?: readonly string[];
  /** The attribute-meta type (`PAM`) describing this type's custom attributes, if any. */
  readonly attributeMeta?: string;
  /**
   * The attribute-meta type whose rows a delete of this type's records removes too (a condition
   * record set its `CRCIAM` rows by cascade, a rebate type its `RBTAM` rows by its delete hook): the
   * delete queues the index sync of that meta's owner, as a write of the meta does.
   */
  readonly deletesMeta?: string;
  /** The owner code the attribute meta is kept under, when not this type's code (`CRCI3` → `CRCI`). */
  readonly metaOwner?: string;
  /**
   * The type code record history keeps this type's records under, when not its own: the items of
   * `CRCI1`..`CRCI12` are `CRCI` items, one history per item whichever code wrote it.
   */
  readonly historyCode?: string;
  /**
   * The type's records keep no record history (why, as `?asOf` on one of them answers it, a -4):
   * the engine's writes of them record none and history reads answer none of them (jobs, imports).
   */
  readonly noHistory?: string;
  /**
   * The general `/update` (and `/integrate`) of the type is refused for an operation of its own (a
   * condition record set: `/conditionrecordset.update/{id}`): describe calls no field updatable.
   */
  readonly updatedBy?: string;
  /** For extension types: attribute meta is kept per extension table (the `name` field). */
  readonly metaPerName?: boolean;
  /** For `metaPerName` types: the field naming the meta, when not `name` (RRG: `rebateType`). */
  readonly metaNameField?: string;
  /**
   * Checked before a record is updated or deleted by the general operations (in their transaction,
   * with the stored record; `data` is undefined for a delete): state rules such as a locked record.
   * Throws the catalogue error to answer.
   */
  readonly beforeChange?: (
    q: Queryable,
    principal: Principal,
    old: Readonly<Record<string, unknown>>,
    data: Readonly<Record<string, unknown>> | undefined,
  ) => Promise<void>;
  /**
   * Server fields a general update (or an integrate onto a stored record) sets along with the
   * client's change, in the same statement and recorded in its history: called after
   * `beforeChange` with the stored record and the data sent; answers `{fieldName: value}` of the
   * type's server (`system`) fields, or undefined for none. (A rebate record group whose calculated
   * data changes has its results marked as not current.)
   */
  readonly changeSets?: (
    q: Queryable,
    principal: Principal,
    old: Readonly<Record<string, unknown>>,
    data: Readonly<Record<string, unknown>>,
  ) => Promise<Readonly<Record<string, unknown>> | undefined>;
  /**
   * `/add` and `/integrate` of many records may write them in one statement
   * (src/engine/write-batch.ts): nothing about one record depends on another's write beyond the
   * unique key (no trigger reads across rows, no per-record hooks).
   */
  readonly writesAtOnce?: boolean;
  /** Columns of the table's unique key after partition_id (the conflict target of upserts). */
  readonly uniqueColumns: readonly string[];
  /** A column every row of this type has a fixed value in (attribute-meta types share one table). */
  readonly fixed?: { readonly column: string; readonly value: string };
  readonly deleteMode: 'soft' | 'hard';
  readonly massEditable: boolean;
  readonly bulkLoadable: boolean;
  /**
   * The route that bulk-loads this type, when a module's own and not the generic loader (condition
   * record items: `/loaddata/CRCI2`): `/metadata.describe` reports it bulk-loadable all the same.
   */
  readonly loadedBy?: string;
  /** `/update` must carry `oldValues.version`. */
  readonly updateNeedsVersion?: boolean;
  /**
   * Business key fields `/update` may change when it names the record by typedId or id (the
   * interface: `/update/SX` updates `sellerId`); the unique key still holds (a clash is 409).
   */
  readonly movableKeys?: readonly string[];
  /** Record-level visibility through `userGroupViewDetails` / `userGroupEdit`. */
  readonly userGroups: boolean;
  /**
   * Record-level visibility borrowed from the record a row describes (customer descriptions follow
   * their customer): a non-admin sees (edits) a row only when no record of `table` (a type with user
   * groups) whose `parentColumn` equals the row's `column` is hidden from (not editable by) them.
   * A row describing no stored record is scoped by its own type alone. Applied by `rowScope`, so
   * every generic operation and the loaders follow it; history rows take the record's view group.
   */
  readonly scopedBy?: {
    readonly table: string;
    readonly column: string;
    readonly parentColumn: string;
    /**
     * For a type with `userGroups` whose rows keep a copy of their parent's groups (condition record
     * item history, `CRCIH`): the parent's groups as they are now decide, not the copy; the copy
     * applies only to a row whose parent is gone.
     */
    readonly currentGroups?: boolean;
    /**
     * The type code of the parent (`P` of a product's rows): `?asOf` answers a row only when the
     * parent, as it stood at that moment, was visible to the caller.
     */
    readonly parentCode?: string;
  };
  /**
   * Records that belong to users (a notification to its recipient, a delegation to who gives or
   * receives it, a workflow to who takes part): the SQL condition over the row `alias` of the rows
   * the principal may see, values bound by `add`; undefined when they see all. Applied by
   * `rowScope` for every principal, admins included, so every generic read and the attachments of
   * the record follow the rule its manager operations apply.
   */
  readonly ownedRows?: (
    principal: Principal,
    add: (value: unknown) => string,
    alias: string,
  ) => string | undefined;
  readonly access: { readonly fetch: RouteAccess; readonly write: Permission };
  /**
   * Records the general writes never add or change (jobs, DCRs, imports, condition record history):
   * every general write is a -4 on `typeCode` with `message` (who writes them), before anything is
   * read — deletes too, unless `deletable`.
   */
  readonly writtenBy?: { readonly message: string; readonly deletable?: boolean };
  /**
   * The type whose business key addresses these records when some elements of an update, integrate
   * or delete name neither `id` nor `typedId` (CRCI, keyed by id alone: its sized CRCIn, by the key
   * size of the sets named) and the elements as that type takes them; undefined: this type.
   */
  readonly keyedType?: (
    q: Queryable,
    principal: Principal,
    items: readonly Readonly<Record<string, unknown>>[],
  ) => Promise<{ type: TypeDef; items: Record<string, unknown>[] } | undefined>;
  /** Rules across fields of a written record, beyond each field's own type (answers -4 errors). */
  readonly validate?: (data: Readonly<Record<string, unknown>>) => FieldErrors | undefined;
  /**
   * The general operations (`/fetch|add|update|delete|...`) refuse this type with a -4 naming the
   * dedicated manager operation to use instead (the spec: lookup table values, user groups, ...).
   */
  readonly managerOnly?: string;
  /**
   * Its records take no attachments (`/bdmanager.upload/<id>.<TC>` is a -4): record history rows,
   * which are no records of their own (their files were readable by whoever reads history rows).
   */
  readonly noAttachments?: true;
  /**
   * With `managerOnly`: the general fetch (`/fetch/{TC}`, `/fetch/{TC}/{id}`) serves this type all
   * the same, under `access.fetch`; the general writes stay refused (lookup tables `LT`: the
   * interface bars only their values from the general commands).
   */
  readonly generalFetch?: true;
  /**
   * Fields this type has in a partition beyond its declared ones (calculation grid items: one field
   * per logic element of the partition's grids), added when the type context is loaded. `idOf`: the
   * id the request's filter names at its top for a field (one grid: its own element types).
   */
  readonly extraFields?: (
    q: Queryable,
    partitionId: number,
    idOf: (field: string) => number | undefined,
  ) => Promise<readonly FieldDef[]>;
  /**
   * Checked before a record is inserted or upserted by add/integrate (in the same transaction):
   * rules that need the database, such as the edit group of a parent record (condition record
   * items take their set's `userGroupEdit`). Throws the catalogue error to answer.
   */
  readonly beforeInsert?: (
    q: Queryable,
    principal: Principal,
    data: Readonly<Record<string, unknown>>,
  ) => Promise<void>;
  /**
   * The answer to an add whose business key exists already, when the type says more than the
   * generic 409 (condition record items: an overlap, a -4 naming the item in the way); undefined
   * falls back to the 409. Runs in the add's transaction.
   */
  readonly duplicateError?: (
    q: Queryable,
    principal: Principal,
    data: Readonly<Record<string, unknown>>,
  ) => Promise<AppError | undefined>;
}
