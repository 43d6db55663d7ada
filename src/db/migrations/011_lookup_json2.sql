-- JSON2 lookup tables: JSON values under two keys (key1, key2), values type JLTV2. They live in
-- lookup_matrix_values beside the matrix kinds, whose unique key (table, name, key1..key6, NULLS NOT
-- DISTINCT) already serves two-key values; json_value holds the value, as in lookup_values for JSON.
-- number_of_key_fields is generated from the type, so it is recreated to count JSON2's two keys.

ALTER TABLE lookup_matrix_values ADD COLUMN json_value jsonb;

ALTER TABLE lookup_tables DROP COLUMN number_of_key_fields;
ALTER TABLE lookup_tables ADD COLUMN number_of_key_fields integer GENERATED ALWAYS AS (
  CASE type
    WHEN 'MATRIX2' THEN 2
    WHEN 'MATRIX3' THEN 3
    WHEN 'MATRIX4' THEN 4
    WHEN 'MATRIX5' THEN 5
    WHEN 'MATRIX6' THEN 6
    WHEN 'JSON2' THEN 2
    ELSE 1
  END
) STORED;
