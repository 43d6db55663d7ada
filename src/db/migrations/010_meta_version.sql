-- A per-partition counter of attribute-meta changes. Every request reads it with its credentials, so
-- a process may keep the attribute types of a type in memory and know exactly when they are stale
-- (see src/engine/context.ts). The trigger covers every write path, bulk loads and SQL included.

ALTER TABLE partitions ADD COLUMN meta_version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION rc_bump_meta_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE partitions SET meta_version = meta_version + 1
   WHERE id IN (SELECT DISTINCT partition_id FROM changed);
  RETURN NULL;
END
$$;

CREATE TRIGGER attribute_meta_inserted AFTER INSERT ON attribute_meta
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION rc_bump_meta_version();
CREATE TRIGGER attribute_meta_updated AFTER UPDATE ON attribute_meta
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION rc_bump_meta_version();
CREATE TRIGGER attribute_meta_deleted AFTER DELETE ON attribute_meta
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION rc_bump_meta_version();
