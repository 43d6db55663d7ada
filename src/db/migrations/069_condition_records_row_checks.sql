-- Condition records (issue 13): no transition tables on items' inserts and updates. The set check
-- (migrations 041, 044) and the logic engine's read-version notes (043) ran as statement triggers over
-- the statement's new rows, and PostgreSQL copies every written row into a transition table for them
-- whether or not the triggers then do anything: ~40 ms of a 10,000-item insert's ~130 (the capture,
-- not the triggers' own ~8 ms), and as much again for the old and new rows of a spliced load's cuts.
-- Both now run in the per-row trigger every writer but the bulk loader already fires
-- (`condition_records_before`), each once per set and transaction:
-- - the set check: an inserted item, or one moved to another set, locks its set FOR KEY SHARE (as the
--   foreign key did) and must name an existing set of its key size — the same SQLSTATE 23503,
--   constraint name and texts as before;
-- - the note of the item's set (and of the set it left) in logic_read_changes, once per set and
--   transaction (a transaction-local setting remembers the sets noted; a savepoint rolled back drops
--   both the notes and that memory).
-- The bulk loader (src/modules/conditionrecords/splice-apply.ts, `rc.crci_checked`) skips that trigger
-- and does both for its chunk's sets with `rc_condition_records_sets_written`, once per chunk.
-- Deletes keep their statement triggers (CRCIH and the notes of deleted items).

CREATE FUNCTION rc_condition_records_note(p bigint, s bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  k text := p::text || ':' || s::text || ',';
  noted text := coalesce(current_setting('rc.crc_noted', true), '');
BEGIN
  IF position(',' || k IN ',' || noted) = 0 THEN
    INSERT INTO logic_read_changes (kind, partition_id, owner_id) VALUES ('C', p, s) ON CONFLICT DO NOTHING;
    PERFORM set_config('rc.crc_noted', noted || k, true);
  END IF;
END
$$;

CREATE FUNCTION rc_condition_records_set_missing(p bigint, s bigint, key_size text) RETURNS void
  LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING
    ERRCODE = '23503',
    CONSTRAINT = 'condition_records_partition_id_condition_record_set_id_key_fkey',
    TABLE = 'condition_records',
    MESSAGE = 'insert or update on table "condition_records" violates foreign key constraint "condition_records_partition_id_condition_record_set_id_key_fkey"',
    DETAIL = format('Key (partition_id, condition_record_set_id, key_size_ref)=(%s, %s, %s) is not present in table "condition_record_sets".',
                    p, s, key_size);
END
$$;

-- The bulk loader's chunk: its sets locked and checked, and noted, once.
CREATE FUNCTION rc_condition_records_sets_written(p bigint, sets bigint[], key_sizes text[]) RETURNS void
  LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  PERFORM 1 FROM condition_record_sets s WHERE s.partition_id = p AND s.id = ANY(sets) FOR KEY SHARE OF s;
  SELECT x.s, x.k INTO bad FROM unnest(sets, key_sizes) AS x(s, k)
   WHERE NOT EXISTS (SELECT 1 FROM condition_record_sets c WHERE c.partition_id = p AND c.id = x.s AND c.key_size_ref = x.k)
   LIMIT 1;
  IF FOUND THEN
    PERFORM rc_condition_records_set_missing(p, bad.s, bad.k);
  END IF;
  PERFORM rc_condition_records_note(p, s) FROM unnest(sets) s;
END
$$;

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

DROP TRIGGER condition_records_set_inserted ON condition_records;
DROP TRIGGER condition_records_set_updated ON condition_records;
DROP TRIGGER condition_records_read_version_ins ON condition_records;
DROP TRIGGER condition_records_read_version_upd ON condition_records;
DROP FUNCTION rc_condition_records_set_check();
