-- Refusals of a value inside a statement, naming the field: a massedit's arithmetic meets a stored
-- attribute that is not a number (it would have become NULL), or an integer result beyond its
-- column (the database's "integer out of range" named no field). The server answers RC400 as a -4
-- on the field named in DETAIL (src/http/envelope.ts).

CREATE FUNCTION rc_refuse_value(field text, message text) RETURNS numeric
  LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'RC400', MESSAGE = message, DETAIL = field;
END $$;
