-- Condition records (issue 13): a change of a set's attribute meta (CRCIAM rows: attribute_meta with
-- condition_record_set_id) changes how its items' attributes are typed, so it changes the set's
-- items_version like a change of the items (migrations 043, 069): a pricing logic's cached items of
-- the set, typed by the old meta, were answered until some item of the set was written.

CREATE FUNCTION rc_attribute_meta_set_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'DELETE' AND NEW.condition_record_set_id IS NOT NULL THEN
    PERFORM rc_condition_records_note(NEW.partition_id, NEW.condition_record_set_id);
  END IF;
  IF TG_OP <> 'INSERT' AND OLD.condition_record_set_id IS NOT NULL THEN
    PERFORM rc_condition_records_note(OLD.partition_id, OLD.condition_record_set_id);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER attribute_meta_set_changed AFTER INSERT OR UPDATE OR DELETE ON attribute_meta
  FOR EACH ROW EXECUTE FUNCTION rc_attribute_meta_set_changed();
