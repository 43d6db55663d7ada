-- Condition records (issue 13): the single-item writers' overlap check (migrations 038, 053, 055) probes
-- the key index whatever the statistics. Without statistics of condition_records (a set loaded by
-- /loaddata/CRCP moments before: its VACUUM (ANALYZE) runs once the loads settle, and PGlite has no
-- autovacuum) the planner took the key1 index (partition, set) for the probe, estimated as cheap,
-- and filtered every item of the set by its signature, once per written item: a mass edit of the
-- validity of 5,000 items of a 50,000-item set read 250,000,000 rows (PGlite: ~0.9 s a probe, over
-- an hour for the edit, the embedded server frozen; ~1 ms a probe by the key index). The planner
-- took it from ~30,000 items of short keys, ~5,000 of 60-character ones (a larger key index), and
-- the generic plan PL/pgSQL keeps is as blind. `ORDER BY valid_from` with sorting
-- disabled (for this function's statements only) leaves one plan without a sort: the key index
-- (partition, set, key signature, validFrom), as the loads' probe does (conditionrecords/splice-apply.ts).
-- The clash answered is now the earliest overlapping item.

CREATE OR REPLACE FUNCTION rc_condition_records_before() RETURNS trigger LANGUAGE plpgsql
  SET enable_sort = off AS $$
DECLARE
  s record;
  clash record;
  sig text;
BEGIN
  IF TG_OP = 'INSERT' OR NEW.condition_record_set_id IS DISTINCT FROM OLD.condition_record_set_id THEN
    SELECT key_size_ref, user_group_edit, user_group_view_details INTO s
      FROM condition_record_sets WHERE partition_id = NEW.partition_id AND id = NEW.condition_record_set_id;
    IF FOUND THEN
      NEW.key_size_ref := coalesce(NEW.key_size_ref, s.key_size_ref);
      NEW.user_group_edit := s.user_group_edit;
      NEW.user_group_view_details := s.user_group_view_details;
    END IF;
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.valid_from = OLD.valid_from AND NEW.valid_to = OLD.valid_to
     AND NEW.condition_record_set_id = OLD.condition_record_set_id
     AND ROW(NEW.key1, NEW.key2, NEW.key3, NEW.key4, NEW.key5, NEW.key6, NEW.key7, NEW.key8, NEW.key9, NEW.key10, NEW.key11, NEW.key12)
         IS NOT DISTINCT FROM
         ROW(OLD.key1, OLD.key2, OLD.key3, OLD.key4, OLD.key5, OLD.key6, OLD.key7, OLD.key8, OLD.key9, OLD.key10, OLD.key11, OLD.key12) THEN
    RETURN NEW; -- neither keys nor validity changed: nothing can newly overlap
  END IF;
  IF NEW.valid_to < NEW.valid_from THEN
    RETURN NEW; -- the CHECK constraint refuses it
  END IF;
  -- The check below is only sound when its query sees what committed writers of the same keys
  -- wrote while this one waited for their lock: READ COMMITTED (every writer of the server).
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'condition record items are written in READ COMMITTED transactions'
      USING ERRCODE = '25001';
  END IF;
  sig := rc_condition_key_sig(NEW.key1, NEW.key2, NEW.key3, NEW.key4, NEW.key5, NEW.key6,
                              NEW.key7, NEW.key8, NEW.key9, NEW.key10, NEW.key11, NEW.key12);
  PERFORM pg_advisory_xact_lock_shared(
    hashtextextended('rc_crc:' || NEW.partition_id::text || ':' || NEW.condition_record_set_id::text, 0));
  -- One of 512 locks per partition for the key tuple (migration 055).
  PERFORM pg_advisory_xact_lock(
    hashtextextended('rc_crci:' || NEW.partition_id::text || ':'
                     || (hashtextextended(NEW.condition_record_set_id::text || ':' || sig, 0) & 511)::text, 0));
  SELECT c.id, c.valid_from, c.valid_to INTO clash FROM condition_records c
   WHERE c.partition_id = NEW.partition_id AND c.condition_record_set_id = NEW.condition_record_set_id
     AND c.key_sig = sig
     AND c.valid_from <= NEW.valid_to AND c.valid_to >= NEW.valid_from
     AND c.id IS DISTINCT FROM NEW.id
     -- On insert, an item with the same start is the same business key: the unique index answers
     -- it (a duplicate), or the upsert's ON CONFLICT updates it (checked again as an update).
     AND (TG_OP = 'UPDATE' OR c.valid_from <> NEW.valid_from)
   ORDER BY c.valid_from
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING
      ERRCODE = '23P01',
      CONSTRAINT = 'condition_records_overlap',
      MESSAGE = format('The validity %s..%s overlaps item %s.CRCI (valid %s..%s) with the same keys',
                       NEW.valid_from, NEW.valid_to, clash.id, clash.valid_from, clash.valid_to),
      DETAIL = 'validFrom';
  END IF;
  RETURN NEW;
END
$$;
