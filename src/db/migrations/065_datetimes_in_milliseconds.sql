-- Date-times stored at the precision the API answers them: milliseconds. `now()` kept microseconds,
-- answers cut them (2026-12-01T22:30:50.850Z for .850448), so a value read back matched nothing:
-- `?asOf=<a change's changedAt>` answered the record from before that change, and `lastUpdateDate
-- equals|lessOrEqual <an answered lastUpdateDate>` missed the record (an incremental sync "changed up
-- to T" lost the records changed in T's last millisecond). Every timestamptz column of the schema
-- becomes timestamptz(3): values are rounded to the millisecond as they are stored, and a stored value
-- is the one answered. The views over these columns are set aside and made again around the change
-- (ALTER COLUMN TYPE refuses a column a view reads).

DO $$
DECLARE
  names text[] := '{}';
  defs text[] := '{}';
  v record;
  t record;
BEGIN
  FOR v IN
    SELECT c.relname, pg_get_viewdef(c.oid) AS def
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind = 'v' AND n.nspname = current_schema()
     ORDER BY c.oid
  LOOP
    names := names || v.relname::text;
    defs := defs || v.def;
  END LOOP;
  FOR i IN REVERSE coalesce(array_length(names, 1), 0) .. 1 LOOP
    EXECUTE format('DROP VIEW %I', names[i]);
  END LOOP;
  FOR t IN
    SELECT col.table_name,
           string_agg(format('ALTER COLUMN %I TYPE timestamptz(3)', col.column_name), ', ') AS changes
      FROM information_schema.columns col
      JOIN pg_tables tab ON tab.schemaname = col.table_schema AND tab.tablename = col.table_name
     WHERE col.table_schema = current_schema() AND col.data_type = 'timestamp with time zone'
       AND coalesce(col.datetime_precision, 6) > 3
     GROUP BY col.table_name
  LOOP
    EXECUTE format('ALTER TABLE %I %s', t.table_name, t.changes);
  END LOOP;
  FOR i IN 1 .. coalesce(array_length(names, 1), 0) LOOP
    EXECUTE format('CREATE VIEW %I AS %s', names[i], defs[i]);
  END LOOP;
END $$;
