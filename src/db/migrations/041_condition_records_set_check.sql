-- Condition records (issue 13): the reference from an item to its set (partition, set id, key size)
-- checked once per statement instead of once per row. The foreign key's per-row check (a query and
-- a row lock per written item, ~17 µs) was a sixth of a spliced load's time; its place is taken by
-- triggers that keep what it guaranteed, with the same SQLSTATE (23503), constraint name and texts:
-- - items written (INSERT, UPDATE): the sets they name are locked FOR KEY SHARE, as the foreign key
--   locked them — a concurrent delete or key change of the set waits for the writer, or committed
--   first and the set is missing — then every written item must name an existing set of its key size;
-- - a set deleted: its items are deleted (ON DELETE CASCADE; the items' history trigger leaves them
--   out of CRCIH, their set being gone, as before);
-- - a set's key (partition, id, key size) changed while items name it: refused (ON UPDATE NO ACTION).

ALTER TABLE condition_records DROP CONSTRAINT condition_records_partition_id_condition_record_set_id_key_fkey;

CREATE FUNCTION rc_condition_records_set_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  PERFORM 1 FROM condition_record_sets s
   WHERE (s.partition_id, s.id) IN (SELECT DISTINCT n.partition_id, n.condition_record_set_id FROM new_rows n)
     FOR KEY SHARE OF s;
  SELECT n.partition_id, n.condition_record_set_id, n.key_size_ref INTO bad FROM new_rows n
   WHERE NOT EXISTS (SELECT 1 FROM condition_record_sets s
                      WHERE s.partition_id = n.partition_id AND s.id = n.condition_record_set_id
                        AND s.key_size_ref = n.key_size_ref)
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING
      ERRCODE = '23503',
      CONSTRAINT = 'condition_records_partition_id_condition_record_set_id_key_fkey',
      TABLE = 'condition_records',
      MESSAGE = 'insert or update on table "condition_records" violates foreign key constraint "condition_records_partition_id_condition_record_set_id_key_fkey"',
      DETAIL = format('Key (partition_id, condition_record_set_id, key_size_ref)=(%s, %s, %s) is not present in table "condition_record_sets".',
                      bad.partition_id, bad.condition_record_set_id, bad.key_size_ref);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER condition_records_set_inserted AFTER INSERT ON condition_records
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION rc_condition_records_set_check();
CREATE TRIGGER condition_records_set_updated AFTER UPDATE ON condition_records
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION rc_condition_records_set_check();

CREATE FUNCTION rc_condition_record_sets_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM condition_records c
   WHERE c.partition_id = OLD.partition_id AND c.condition_record_set_id = OLD.id
     AND c.key_size_ref = OLD.key_size_ref;
  RETURN NULL;
END
$$;
CREATE TRIGGER condition_record_sets_deleted AFTER DELETE ON condition_record_sets
  FOR EACH ROW EXECUTE FUNCTION rc_condition_record_sets_deleted();

CREATE FUNCTION rc_condition_record_sets_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM condition_records c
              WHERE c.partition_id = OLD.partition_id AND c.condition_record_set_id = OLD.id
                AND c.key_size_ref = OLD.key_size_ref) THEN
    RAISE EXCEPTION USING
      ERRCODE = '23503',
      CONSTRAINT = 'condition_records_partition_id_condition_record_set_id_key_fkey',
      TABLE = 'condition_records',
      MESSAGE = 'update or delete on table "condition_record_sets" violates foreign key constraint "condition_records_partition_id_condition_record_set_id_key_fkey" on table "condition_records"',
      DETAIL = format('Key (partition_id, id, key_size_ref)=(%s, %s, %s) is still referenced from table "condition_records".',
                      OLD.partition_id, OLD.id, OLD.key_size_ref);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER condition_record_sets_key_changed AFTER UPDATE ON condition_record_sets
  FOR EACH ROW WHEN (OLD.partition_id IS DISTINCT FROM NEW.partition_id OR OLD.id IS DISTINCT FROM NEW.id
                     OR OLD.key_size_ref IS DISTINCT FROM NEW.key_size_ref)
  EXECUTE FUNCTION rc_condition_record_sets_key_changed();
