-- Record history (src/engine/history.ts): an upsert (INSERT ... ON CONFLICT DO UPDATE) or UPDATE that
-- waited for a concurrent writer of the same row writes the row's newest version, but its history
-- read the row's old values from the statement's snapshot, taken before that writer committed: two
-- concurrent integrates of a new key recorded two ADDs, and changes recorded stale "old" values. The
-- history CTE calls this when the row it wrote is not one version past the row it read; the
-- serialization failure (40001) rolls the statement back, and the server runs the transaction again
-- (src/db/pg.ts) with a snapshot that sees the other writer's row.

CREATE FUNCTION rc_stale_snapshot(record_id bigint) RETURNS boolean
  LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'record % was changed by a concurrent write while this one waited; run it again', record_id
    USING ERRCODE = '40001';
END $$;
