-- Indexes that follow what users filter on (issue 11). For business keys and label/name:
--   (partition_id, col)                        equals, inSet, ranges, sort (the unique key does this
--                                               for business keys already)
--   (partition_id, lower(col) text_pattern_ops) iEquals, iStartsWith and startsWith (the compiler
--                                               emits lower(col) LIKE lower($n); see criteria.ts)
--   gin (lower(col) gin_trgm_ops)               iContains, iEndsWith, contains, endsWith (pg_trgm)
-- Custom attributes get indexes only when their attribute meta says `indexed` (src/engine/indexes.ts
-- creates and drops those, named rcx_*). The safe casts of migration 002 are IMMUTABLE already, so
-- typed attributes can have expression indexes on rc_try_numeric(attributeN) etc.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

ALTER TABLE attribute_meta ADD COLUMN indexed boolean NOT NULL DEFAULT false;

CREATE INDEX rc_products_sku_lower ON products (partition_id, lower(sku) text_pattern_ops);
CREATE INDEX rc_products_sku_trgm ON products USING gin (lower(sku) gin_trgm_ops);
CREATE INDEX rc_products_label ON products (partition_id, label);
CREATE INDEX rc_products_label_lower ON products (partition_id, lower(label) text_pattern_ops);
CREATE INDEX rc_products_label_trgm ON products USING gin (lower(label) gin_trgm_ops);
CREATE INDEX rc_customers_customer_id_lower ON customers (partition_id, lower(customer_id) text_pattern_ops);
CREATE INDEX rc_customers_customer_id_trgm ON customers USING gin (lower(customer_id) gin_trgm_ops);
CREATE INDEX rc_customers_name ON customers (partition_id, name);
CREATE INDEX rc_customers_name_lower ON customers (partition_id, lower(name) text_pattern_ops);
CREATE INDEX rc_customers_name_trgm ON customers USING gin (lower(name) gin_trgm_ops);
CREATE INDEX rc_sellers_seller_id_lower ON sellers (partition_id, lower(seller_id) text_pattern_ops);
CREATE INDEX rc_sellers_seller_id_trgm ON sellers USING gin (lower(seller_id) gin_trgm_ops);
CREATE INDEX rc_sellers_name ON sellers (partition_id, name);
CREATE INDEX rc_sellers_name_lower ON sellers (partition_id, lower(name) text_pattern_ops);
CREATE INDEX rc_sellers_name_trgm ON sellers USING gin (lower(name) gin_trgm_ops);
CREATE INDEX rc_product_extensions_sku_lower ON product_extensions (partition_id, lower(sku) text_pattern_ops);
CREATE INDEX rc_product_extensions_sku_trgm ON product_extensions USING gin (lower(sku) gin_trgm_ops);
CREATE INDEX rc_customer_extensions_customer_id_lower ON customer_extensions (partition_id, lower(customer_id) text_pattern_ops);
CREATE INDEX rc_customer_extensions_customer_id_trgm ON customer_extensions USING gin (lower(customer_id) gin_trgm_ops);
CREATE INDEX rc_seller_extensions_seller_id_lower ON seller_extensions (partition_id, lower(seller_id) text_pattern_ops);
CREATE INDEX rc_seller_extensions_seller_id_trgm ON seller_extensions USING gin (lower(seller_id) gin_trgm_ops);
