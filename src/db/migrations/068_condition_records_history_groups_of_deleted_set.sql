-- Who reads a CRCIH row is decided by its set's userGroupViewDetails as it is now (src/engine/context.ts,
-- rowScope with currentGroups); a row whose set is gone fell back to the groups its item had when it
-- was deleted, so deleting a set restricted since then opened its history to everyone. A set's delete
-- now leaves its last groups on its history rows. Depth 1 only: a partition's removal cascades to its
-- sets and history rows alike.
CREATE OR REPLACE FUNCTION rc_condition_record_sets_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM condition_records c
   WHERE c.partition_id = OLD.partition_id AND c.condition_record_set_id = OLD.id
     AND c.key_size_ref = OLD.key_size_ref;
  IF pg_trigger_depth() = 1 THEN
    UPDATE condition_records_history h
       SET user_group_view_details = OLD.user_group_view_details, user_group_edit = OLD.user_group_edit
     WHERE h.partition_id = OLD.partition_id AND h.condition_record_set_id = OLD.id
       AND (h.user_group_view_details IS DISTINCT FROM OLD.user_group_view_details
            OR h.user_group_edit IS DISTINCT FROM OLD.user_group_edit);
  END IF;
  RETURN NULL;
END
$$;
