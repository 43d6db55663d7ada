-- A to-do item's priority pushed out of 1..5 by massedit arithmetic (`priority + 1` on a 5) was a -4
-- naming `data` (SQLSTATE 22023, a value the database refused): the request's field at fault is
-- `priority`. RC400 answers a -4 naming the field given as the DETAIL (src/http/envelope.ts).
CREATE OR REPLACE FUNCTION rc_to_do_items_priority() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'priority must be 1..5, not %', NEW.priority USING ERRCODE = 'RC400', DETAIL = 'priority';
END
$$;
