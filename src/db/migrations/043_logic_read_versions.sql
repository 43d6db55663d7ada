-- Versions of what pricing logics read, for the logic engine's cache of lookup rows and condition
-- records (issue 14; src/modules/formulas/read-cache.ts). A single /formulamanager.execute read each
-- lookup row and condition record it needed with one statement per pass, every time: two of its five
-- round trips, and ~two thirds of the database's time per call. Now each lookup table counts the
-- changes of its values (`values_version`) and each condition-record set those of its items
-- (`items_version`); a read-only evaluation reads these versions with the product and keeps what it
-- reads under them, so a later evaluation that sees the same versions reads nothing again.
--
-- A version changes in the transaction that changes the rows, at its commit: every snapshot sees
-- both the rows and the version of one moment. Each writing statement notes its tables and sets
-- (statement triggers over the transition tables, one row per owner and transaction in
-- `logic_read_changes`); a deferred constraint trigger applies the notes when the transaction
-- commits. Bumped at once instead, the version row's lock would be held from the first statement of a
-- load to its commit: concurrent loads into one set would wait for each other, and deadlock where one
-- also waits for the other's items (the set's exclusion of overlapping validity).

ALTER TABLE lookup_tables ADD COLUMN values_version bigint NOT NULL DEFAULT 0;
ALTER TABLE condition_record_sets ADD COLUMN items_version bigint NOT NULL DEFAULT 0;

CREATE TABLE logic_read_changes (
  tx bigint NOT NULL DEFAULT txid_current(),
  -- 'L': values of lookup table owner_id; 'C': items of condition-record set owner_id.
  kind text NOT NULL,
  partition_id bigint NOT NULL,
  owner_id bigint NOT NULL,
  PRIMARY KEY (tx, kind, partition_id, owner_id)
);

CREATE FUNCTION rc_lookup_values_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO logic_read_changes (kind, partition_id, owner_id)
    SELECT DISTINCT 'L', n.partition_id, n.table_ref::bigint FROM new_rows n
    ON CONFLICT DO NOTHING;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO logic_read_changes (kind, partition_id, owner_id)
    SELECT DISTINCT 'L', o.partition_id, o.table_ref::bigint FROM old_rows o
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION rc_condition_records_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO logic_read_changes (kind, partition_id, owner_id)
    SELECT DISTINCT 'C', n.partition_id, n.condition_record_set_id FROM new_rows n
    ON CONFLICT DO NOTHING;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO logic_read_changes (kind, partition_id, owner_id)
    SELECT DISTINCT 'C', o.partition_id, o.condition_record_set_id FROM old_rows o
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END
$$;

-- Three triggers per table: a trigger with transition tables takes one event.
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT * FROM (VALUES ('lookup_values', 'rc_lookup_values_changed'),
                                 ('lookup_matrix_values', 'rc_lookup_values_changed'),
                                 ('condition_records', 'rc_condition_records_changed')) AS x(tab, fn) LOOP
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows
                      FOR EACH STATEMENT EXECUTE FUNCTION %I()', t.tab || '_read_version_ins', t.tab, t.fn);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
                      FOR EACH STATEMENT EXECUTE FUNCTION %I()', t.tab || '_read_version_upd', t.tab, t.fn);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows
                      FOR EACH STATEMENT EXECUTE FUNCTION %I()', t.tab || '_read_version_del', t.tab, t.fn);
  END LOOP;
END
$$;

-- At commit: the transaction's notes become version changes (the first firing applies them all, in
-- owner order; the later ones of the same transaction find none left).
CREATE FUNCTION rc_logic_read_changes_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH done AS (
    DELETE FROM logic_read_changes WHERE tx = txid_current() RETURNING kind, partition_id, owner_id
  ), tables AS (
    UPDATE lookup_tables t SET values_version = t.values_version + 1
      FROM (SELECT partition_id, owner_id FROM done WHERE kind = 'L' ORDER BY 1, 2) d
     WHERE t.partition_id = d.partition_id AND t.id = d.owner_id
  )
  UPDATE condition_record_sets s SET items_version = s.items_version + 1
    FROM (SELECT partition_id, owner_id FROM done WHERE kind = 'C' ORDER BY 1, 2) d
   WHERE s.partition_id = d.partition_id AND s.id = d.owner_id;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER logic_read_changes_apply AFTER INSERT ON logic_read_changes
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION rc_logic_read_changes_apply();
