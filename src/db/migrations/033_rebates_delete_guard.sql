-- Rebate record groups (migration 031): a delete by filter that meets a locked group, or one in a
-- running workflow, is refused with SQLSTATE RC409, which the server answers as a 409 (-1) carrying
-- this message (instead of 22023, a generic -4 that could not say why).

CREATE OR REPLACE FUNCTION rc_rebate_group_delete_guard() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  -- Depth 1 only: a partition's removal cascades through a foreign-key trigger (depth 2) and must pass.
  IF pg_trigger_depth() = 1 AND (OLD.locked OR OLD.workflow_status = 'SUBMITTED') THEN
    RAISE EXCEPTION 'Rebate record group % is locked or in a running workflow: nothing deleted', OLD.unique_name
      USING ERRCODE = 'RC409';
  END IF;
  RETURN OLD;
END $$;

-- `/fetch/RRG {data: {uniqueName}}` compares case-insensitively (textMatchStyle `exact`):
-- lower(unique_name) = lower($n), served by this index rather than a scan of every group.
CREATE INDEX IF NOT EXISTS rebate_record_groups_name_lower ON rebate_record_groups (partition_id, lower(unique_name));
