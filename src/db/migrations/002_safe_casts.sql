-- Safe casts of text-stored custom attributes (see src/engine/criteria.ts): a value that does not
-- parse as the attribute's type is NULL, never an error that fails the whole query.

CREATE OR REPLACE FUNCTION rc_try_numeric(v text) RETURNS numeric
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  IF v !~ '^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$' THEN
    RETURN NULL;
  END IF;
  BEGIN
    RETURN v::numeric;
  EXCEPTION WHEN data_exception THEN
    RETURN NULL;
  END;
END
$$;

CREATE OR REPLACE FUNCTION rc_try_date(v text) RETURNS date
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  IF v !~ '^\s*\d{4}-\d{2}-\d{2}\s*$' THEN
    RETURN NULL;
  END IF;
  BEGIN
    RETURN v::date;
  EXCEPTION WHEN data_exception THEN
    RETURN NULL;
  END;
END
$$;

CREATE OR REPLACE FUNCTION rc_try_timestamptz(v text) RETURNS timestamptz
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  IF v !~* '^\s*\d{4}-\d{2}-\d{2}([t ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(\s*(z|[-+]\d{2}(:?\d{2})?))?)?\s*$' THEN
    RETURN NULL;
  END IF;
  BEGIN
    IF v ~* '\d{2}:\d{2}(:\d{2}(\.\d+)?)?\s*(z|[-+]\d{2}(:?\d{2})?)\s*$' THEN
      RETURN v::timestamptz;
    END IF;
    RETURN v::timestamp AT TIME ZONE 'UTC';
  EXCEPTION WHEN data_exception THEN
    RETURN NULL;
  END;
END
$$;

CREATE OR REPLACE FUNCTION rc_try_boolean(v text) RETURNS boolean
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  RETURN v::boolean;
EXCEPTION WHEN data_exception THEN
  RETURN NULL;
END
$$;
