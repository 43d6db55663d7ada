-- Condition records: an add that overlaps several items names the earliest in the way, also when
-- that one starts on the same day (README: "a -4 on validFrom naming the earliest item in the way …
-- — an add with the keys and validFrom of an existing item too"). The row check of migration 069
-- left same-start items out of its probe on insert (the unique index answers those), and so named a
-- later item whenever another overlapped too. It now finds the earliest overlapping item whatever
-- its start, and on insert leaves a same-start one to the unique index (a duplicate, answered
-- naming it) or to the upsert's ON CONFLICT (checked again as an update): only an earlier start is
-- raised here.

CREATE OR REPLACE FUNCTION rc_condition_records_before() RETURNS trigger LANGUAGE plpgsql
  SET enable_sort = off AS $$
DECLARE
  s record;
  clash record;
  sig text;
BEGIN
  IF TG_OP = 'INSERT' OR NEW.partition_id IS DISTINCT FROM OLD.partition_id
     OR NEW.condition_record_set_id IS DISTINCT FROM OLD.condition_record_set_id
     OR NEW.key_size_ref IS DISTINCT FROM OLD.key_size_ref THEN
    SELECT key_size_ref, user_group_edit, user_group_view_details INTO s
      FROM condition_record_sets WHERE partition_id = NEW.partition_id AND id = NEW.condition_record_set_id
       FOR KEY SHARE;
    IF NOT FOUND OR s.key_size_ref IS DISTINCT FROM coalesce(NEW.key_size_ref, s.key_size_ref) THEN
      PERFORM rc_condition_records_set_missing(NEW.partition_id, NEW.condition_record_set_id, NEW.key_size_ref);
    END IF;
    NEW.key_size_ref := s.key_size_ref;
    NEW.user_group_edit := s.user_group_edit;
    NEW.user_group_view_details := s.user_group_view_details;
  END IF;
  PERFORM rc_condition_records_note(NEW.partition_id, NEW.condition_record_set_id);
  IF TG_OP = 'UPDATE' AND (NEW.partition_id, NEW.condition_record_set_id) IS DISTINCT FROM (OLD.partition_id, OLD.condition_record_set_id) THEN
    PERFORM rc_condition_records_note(OLD.partition_id, OLD.condition_record_set_id);
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
   ORDER BY c.valid_from
   LIMIT 1;
  -- On insert, an earliest item with the same start is the same business key: the unique index
  -- answers it (a duplicate), or the upsert's ON CONFLICT updates it (checked again as an update).
  IF FOUND AND (TG_OP = 'UPDATE' OR clash.valid_from <> NEW.valid_from) THEN
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
