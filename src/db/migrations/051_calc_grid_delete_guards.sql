-- Calculation grids (migration 030): deletes that left work in flight without its record are
-- refused with SQLSTATE RC409, answered as a 409 (-1) carrying the message, on every delete path
-- (`/delete/CG`, `/delete/CGI{k}`, their batch and forcefilter forms).
-- - An item waiting in a workflow (SUBMITTED): deleting it (or its grid) left the workflow
--   pointing at nothing, still approvable. Deny or withdraw the workflow first.
-- - A grid whose calculation job is queued or running: the job then failed on a foreign key.
--   Cancel the job (or let it end) first.
-- Depth 1 only: a partition's removal cascades through foreign-key triggers (depth 2) and must pass;
-- so does a grid's removal of its items (checked here on the grid instead).

CREATE FUNCTION rc_calc_grid_item_delete_guard() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  IF pg_trigger_depth() = 1 AND OLD.workflow_status = 'SUBMITTED' THEN
    RAISE EXCEPTION 'Item %.CGI% is waiting in a workflow: deny or withdraw it before deleting it; nothing deleted',
      OLD.id, OLD.key_number USING ERRCODE = 'RC409';
  END IF;
  RETURN OLD;
END $$;

CREATE TRIGGER calc_grid_items_delete_guard BEFORE DELETE ON calc_grid_items
  FOR EACH ROW EXECUTE FUNCTION rc_calc_grid_item_delete_guard();

CREATE FUNCTION rc_calc_grid_delete_guard() RETURNS trigger
  LANGUAGE plpgsql AS $$
DECLARE
  running text;
  waiting text;
BEGIN
  IF pg_trigger_depth() = 1 THEN
    IF OLD.jst_id IS NOT NULL THEN
      SELECT j.status INTO running FROM jobs j
       WHERE j.partition_id = OLD.partition_id AND j.id = OLD.jst_id
         AND j.status NOT IN ('FINISHED', 'FAILED', 'CANCELLED');
      IF running IS NOT NULL THEN
        RAISE EXCEPTION 'Calculation grid % is being calculated (job %.JST): cancel the job or wait for it before deleting the grid; nothing deleted',
          OLD.id, OLD.jst_id USING ERRCODE = 'RC409';
      END IF;
    END IF;
    SELECT i.id::text || '.CGI' || i.key_number INTO waiting FROM calc_grid_items i
     WHERE i.partition_id = OLD.partition_id AND i.grid_id = OLD.id AND i.workflow_status = 'SUBMITTED'
     ORDER BY i.id LIMIT 1;
    IF waiting IS NOT NULL THEN
      RAISE EXCEPTION 'Calculation grid % holds item % waiting in a workflow: deny or withdraw it before deleting the grid; nothing deleted',
        OLD.id, waiting USING ERRCODE = 'RC409';
    END IF;
  END IF;
  RETURN OLD;
END $$;

CREATE TRIGGER calc_grids_delete_guard BEFORE DELETE ON calc_grids
  FOR EACH ROW EXECUTE FUNCTION rc_calc_grid_delete_guard();
