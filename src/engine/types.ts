// Field types shared by the registry, the criteria compiler and the loaders.

/** The declared type of a field, which decides how values are parsed and compared. */
export type FieldType = 'string' | 'integer' | 'decimal' | 'boolean' | 'date' | 'datetime' | 'json';

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
}
