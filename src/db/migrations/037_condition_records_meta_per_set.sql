-- Condition records (issue 13): the attribute meta of items (CRCIAM) is kept per set, as the issue
-- asks ("typed through the set's attribute meta"): each CRCIAM row names its set, and the items of a
-- set read their attributes with that set's meta only. Also: an item's validTo may be left out (an
-- open-ended item, valid up to 9999-12-31).
--
-- attribute_meta keeps its unique key (partition, owner type, name, field): for owner CRCI, `name`
-- holds the set id as text, copied from the new column by a trigger, so two sets may describe the
-- same attribute differently and upserts by set + fieldName meet the existing row. The set's
-- deletion removes its meta (the foreign key cascades).

ALTER TABLE attribute_meta ADD COLUMN condition_record_set_id bigint;
ALTER TABLE attribute_meta ADD CONSTRAINT attribute_meta_condition_record_set
  FOREIGN KEY (partition_id, condition_record_set_id)
  REFERENCES condition_record_sets (partition_id, id) ON DELETE CASCADE;

-- Meta rows of the partition-wide era describe every set of their partition: one copy per set.
INSERT INTO attribute_meta (partition_id, owner_type, name, field_name, label, field_type, required_field,
                            read_only, indexed, created_by, last_update_by, condition_record_set_id)
SELECT m.partition_id, m.owner_type, s.id::text, m.field_name, m.label, m.field_type, m.required_field,
       m.read_only, m.indexed, m.created_by, m.last_update_by, s.id
  FROM attribute_meta m
  JOIN condition_record_sets s ON s.partition_id = m.partition_id
 WHERE m.owner_type = 'CRCI' AND m.name = '';
DELETE FROM attribute_meta WHERE owner_type = 'CRCI' AND condition_record_set_id IS NULL;

ALTER TABLE attribute_meta ADD CONSTRAINT attribute_meta_crci_per_set
  CHECK ((owner_type = 'CRCI') = (condition_record_set_id IS NOT NULL));

CREATE FUNCTION rc_attribute_meta_crci_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.name := NEW.condition_record_set_id::text;
  RETURN NEW;
END
$$;
CREATE TRIGGER attribute_meta_crci_name BEFORE INSERT OR UPDATE ON attribute_meta
  FOR EACH ROW WHEN (NEW.owner_type = 'CRCI') EXECUTE FUNCTION rc_attribute_meta_crci_name();

ALTER TABLE condition_records ALTER COLUMN valid_to SET DEFAULT '9999-12-31';
