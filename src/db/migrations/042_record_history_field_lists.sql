-- Record history at bulk-load speed (issue 12): a bulk-added record's history row names the fields
-- the load set. Stored in the row, 32 names were ~540 of its ~700 bytes, so a 100,000-row load wrote
-- ~4× the pages its history needs. Such rows now point to the list, stored once in
-- `record_history_field_lists` (lists are never deleted; they hold API field names only, no data),
-- and keep `changed_fields` empty. Readers take `changed_fields` where `field_list` is NULL, else the
-- list (registry-history.ts `changedFieldsSql`).
CREATE TABLE record_history_field_lists (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  fields text[] NOT NULL UNIQUE
);

ALTER TABLE record_history ADD COLUMN field_list integer;
