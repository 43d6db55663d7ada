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

DROP INDEX rc_products_sku_lower;
CREATE INDEX rc_products_sku_lower ON products (partition_id, lower(sku) text_pattern_ops) INCLUDE (sku, id);
DROP INDEX rc_products_label_lower;
CREATE INDEX rc_products_label_lower ON products (partition_id, lower(label) text_pattern_ops) INCLUDE (label, id);
DROP INDEX rc_customers_customer_id_lower;
CREATE INDEX rc_customers_customer_id_lower ON customers (partition_id, lower(customer_id) text_pattern_ops) INCLUDE (customer_id, id);
DROP INDEX rc_customers_name_lower;
CREATE INDEX rc_customers_name_lower ON customers (partition_id, lower(name) text_pattern_ops) INCLUDE (name, id);
DROP INDEX rc_sellers_seller_id_lower;
CREATE INDEX rc_sellers_seller_id_lower ON sellers (partition_id, lower(seller_id) text_pattern_ops) INCLUDE (seller_id, id);
DROP INDEX rc_sellers_name_lower;
CREATE INDEX rc_sellers_name_lower ON sellers (partition_id, lower(name) text_pattern_ops) INCLUDE (name, id);
