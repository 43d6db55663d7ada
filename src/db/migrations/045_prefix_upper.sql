-- Prefix searches as ranges (issue 11; src/engine/criteria/compile.ts `prefixRange`). The least text
-- above every text that starts with p, in byte order (the order of text_pattern_ops' ~<~): p with
-- its last character's code point raised by one, past the surrogates (U+D7FF → U+E000), which
-- UTF-8 never holds. UTF-8 keeps code point order in byte order, so every text starting with p is
-- below it. NULL for '' and for a last character of U+10FFFF (no text is above those); the compiler
-- never asks for either. IMMUTABLE, so that a prepared statement's generic plan evaluates it once
-- as an index bound.
CREATE OR REPLACE FUNCTION rc_prefix_upper(p text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
  SELECT CASE
           WHEN p = '' OR ascii(right(p, 1)) = 1114111 THEN NULL
           WHEN ascii(right(p, 1)) = 55295 THEN left(p, -1) || chr(57344)
           ELSE left(p, -1) || chr(ascii(right(p, 1)) + 1)
         END
$$;
