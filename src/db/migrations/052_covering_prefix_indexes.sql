-- Prefix searches answered by their index alone (issue 11). The prefix indexes of migration 012 on
-- the business keys and label/name of products, customers and sellers (`iStartsWith`, `startsWith`,
-- `iStartsWithPattern`: the compiler's `lower(col) LIKE lower($n)`) now carry the column itself and
-- the row id (INCLUDE). PostgreSQL answers a query from an expression index alone (an index-only
-- scan) only when the index holds every column the query names, and the filter names `col` inside
-- lower(). So the count of a page's totalRows, and the ids of the page itself (src/engine/fetch.ts,
-- `idsByIndex`), come from the index alone; the page then reads only its own rows. Before, a prefix
-- matching 1,111 of 100,000 products read all 1,111 rows for the count, and ~1,300 in id order for a
-- page of 100: the statement ran 3.9–4.5 ms, with the covering index 1.0–1.4 ms (PostgreSQL, 2 cores).
-- An entry now holds the text twice (its lower case and itself): such a field's text and its lower
-- case together take at most 2,600 bytes of UTF-8 (src/engine/value-check.ts; keys, at most 255
-- characters, always fit). The extension tables' keys keep their plain index: those types are
-- soft-deleted, and their pages filter on the deletion too, which the index does not hold.

-- A table holding a text too large for the covering entry (stored before this rule) keeps the plain
-- index for that column: its prefix matches are answered as before (the page's SQL is the same
-- either way, only its plan differs).

DO $$
DECLARE
  ix record;
BEGIN
  FOR ix IN SELECT * FROM (VALUES
      ('rc_products_sku_lower', 'products', 'sku'),
      ('rc_products_label_lower', 'products', 'label'),
      ('rc_customers_customer_id_lower', 'customers', 'customer_id'),
      ('rc_customers_name_lower', 'customers', 'name'),
      ('rc_sellers_seller_id_lower', 'sellers', 'seller_id'),
      ('rc_sellers_name_lower', 'sellers', 'name')) AS v(name, tbl, col)
  LOOP
    BEGIN
      EXECUTE format('DROP INDEX %I', ix.name);
      EXECUTE format('CREATE INDEX %I ON %I (partition_id, lower(%I) text_pattern_ops) INCLUDE (%I, id)',
                     ix.name, ix.tbl, ix.col, ix.col);
    EXCEPTION WHEN program_limit_exceeded THEN
      -- The block's own changes are undone: the plain index is there as before.
      RAISE WARNING 'index % keeps its plain definition: %', ix.name, SQLERRM;
    END;
  END LOOP;
END
$$;
