-- Condition records (issue 13): two rules kept by the database, so that every path keeps them — the
-- general `/delete/{TC}`, `/delete/{TC}/batch`, `/delete/{TC}/batch/forcefilter` and any later one.
-- Both refuse with SQLSTATE RC400, which the server answers as a -4 naming the field in DETAIL.
-- Depth 1 only: a partition's removal cascades through foreign-key triggers (depth 2) and must pass.
--
-- 1. A set that holds items is deleted only with force: `/delete/CRCS` with `force: true` sets
--    rc.crcs_force for the set it deletes (src/modules/conditionrecords/service.ts); then the set's
--    items go with it (rc_condition_record_sets_deleted, migration 041).
CREATE FUNCTION rc_condition_record_sets_delete_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  IF pg_trigger_depth() = 1 AND current_setting('rc.crcs_force', true) IS DISTINCT FROM 'on' THEN
    SELECT count(*) INTO n FROM condition_records c
     WHERE c.partition_id = OLD.partition_id AND c.condition_record_set_id = OLD.id;
    IF n > 0 THEN
      RAISE EXCEPTION 'set % holds % items: delete them first, or delete the set with /delete/CRCS and force: true to delete it with its items',
        OLD.unique_name, n
        USING ERRCODE = 'RC400', DETAIL = 'force';
    END IF;
  END IF;
  RETURN OLD;
END
$$;
CREATE TRIGGER condition_record_sets_delete_guard BEFORE DELETE ON condition_record_sets
  FOR EACH ROW EXECUTE FUNCTION rc_condition_record_sets_delete_guard();

-- 2. The history of items (CRCIH) is read-only: written by the server, never deleted through the API.
CREATE FUNCTION rc_condition_records_history_read_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF pg_trigger_depth() = 1 THEN
    RAISE EXCEPTION 'CRCIH is read-only: the history of condition record items is written by the server'
      USING ERRCODE = 'RC400', DETAIL = 'typeCode';
  END IF;
  RETURN OLD;
END
$$;
CREATE TRIGGER condition_records_history_read_only BEFORE DELETE ON condition_records_history
  FOR EACH ROW EXECUTE FUNCTION rc_condition_records_history_read_only();
