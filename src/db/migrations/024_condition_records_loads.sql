-- Spliced loads of condition records (/loaddata/CRCP, src/modules/conditionrecords/splice.ts) check
-- overlaps set-based and write each item with its set's key size and user groups themselves: when a
-- transaction says so (rc.crci_checked = 'on'), the per-row trigger of migration 014 leaves at once
-- instead of looking up the set and probing for an overlap per row. The exclusion constraint still
-- guards the invariant.

CREATE OR REPLACE FUNCTION rc_condition_records_before() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  s record;
  clash record;
BEGIN
  IF coalesce(current_setting('rc.crci_checked', true), '') = 'on' THEN
    RETURN NEW;
  END IF;
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
  IF NEW.valid_to >= NEW.valid_from THEN
    SELECT c.id, c.valid_from, c.valid_to INTO clash FROM condition_records c
     WHERE c.partition_id = NEW.partition_id AND c.condition_record_set_id = NEW.condition_record_set_id
       AND c.key_sig = rc_condition_key_sig(NEW.key1, NEW.key2, NEW.key3, NEW.key4, NEW.key5, NEW.key6,
                                            NEW.key7, NEW.key8, NEW.key9, NEW.key10, NEW.key11, NEW.key12)
       AND c.valid_from <= NEW.valid_to AND c.valid_to >= NEW.valid_from
       AND c.id IS DISTINCT FROM NEW.id
       -- On insert, an item with the same start is the same business key: the unique index answers
       -- it (a duplicate), or the upsert's ON CONFLICT updates it (checked again as an update).
       AND (TG_OP = 'UPDATE' OR c.valid_from <> NEW.valid_from)
     LIMIT 1;
    IF FOUND THEN
      RAISE EXCEPTION USING
        ERRCODE = '23P01',
        CONSTRAINT = 'condition_records_overlap',
        MESSAGE = format('The validity %s..%s overlaps item %s.CRCI (valid %s..%s) with the same keys',
                         NEW.valid_from, NEW.valid_to, clash.id, clash.valid_from, clash.valid_to),
        DETAIL = 'validFrom';
    END IF;
  END IF;
  RETURN NEW;
END
$$;
