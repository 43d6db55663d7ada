-- Data change requests (migration 019): two deletes that left work in flight without its rules are
-- refused with SQLSTATE RC409, answered as a 409 (-1) carrying the message, on every delete path
-- (`/delete/DCR`, `/delete/DCRT`, their batch and forcefilter forms).
-- - A DCR waiting in a workflow (SUBMITTED) or approved and being applied (APPROVED): deleting it
--   left the workflow pointing at nothing. Withdraw the workflow first.
-- - A DCR type that a DCR not yet APPLIED uses: deleting it lifted its field restriction from
--   those DCRs.
-- Depth 1 only: a partition's removal cascades through foreign-key triggers (depth 2) and must pass.

CREATE FUNCTION rc_dcr_delete_guard() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  IF pg_trigger_depth() = 1 AND OLD.status IN ('SUBMITTED', 'APPROVED') THEN
    RAISE EXCEPTION '% is %: withdraw its workflow before deleting it; nothing deleted', OLD.unique_name, OLD.status
      USING ERRCODE = 'RC409';
  END IF;
  RETURN OLD;
END $$;

CREATE TRIGGER dcrs_delete_guard BEFORE DELETE ON dcrs
  FOR EACH ROW EXECUTE FUNCTION rc_dcr_delete_guard();

CREATE FUNCTION rc_dcr_type_delete_guard() RETURNS trigger
  LANGUAGE plpgsql AS $$
DECLARE
  used text;
BEGIN
  IF pg_trigger_depth() = 1 THEN
    SELECT d.unique_name INTO used FROM dcrs d
     WHERE d.partition_id = OLD.partition_id AND d.dcr_type = OLD.unique_name AND d.status <> 'APPLIED'
     ORDER BY d.id LIMIT 1;
    IF used IS NOT NULL THEN
      RAISE EXCEPTION 'DCR type % is used by % (not yet applied): nothing deleted', OLD.unique_name, used
        USING ERRCODE = 'RC409';
    END IF;
  END IF;
  RETURN OLD;
END $$;

CREATE TRIGGER dcr_types_delete_guard BEFORE DELETE ON dcr_types
  FOR EACH ROW EXECUTE FUNCTION rc_dcr_type_delete_guard();
