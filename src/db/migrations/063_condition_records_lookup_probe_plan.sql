-- Condition records (issue 13): the look-up's probe (conditionrecords/lookup.ts) takes the key index
-- whatever the statistics. On a set loaded moments before (its ANALYZE runs once the loads settle;
-- PGlite has no autovacuum), the planner took the key1 index (partition, set) for the probe and
-- filtered every item of the set by its signature, once per tuple: a look-up of the 15,000 items just
-- loaded took 62 s on PostgreSQL and 118 s on PGlite (0.2-0.4 s once analyzed), and under
-- concurrent loads ran into the 180 s time-out. As the writers' overlap check does (migration 056),
-- the probe runs with sorting disabled: `ORDER BY valid_from DESC` then has one plan without a sort,
-- the key index (partition, set, key signature, validFrom). A function, because a setting applies to
-- the statements of a function that carries it; the look-up's statement reads its rows. PL/pgSQL with
-- its generic plan kept per connection: as an SQL function the statement was planned on every call
-- (+0.15-0.3 ms a single-tuple look-up, a logic's), and a generic plan is the same for any batch
-- (one probe per signature).
--
-- The item valid on day p_day of set p_set for each signature of p_sigs (n: its 1-based position),
-- for the signatures that have one, with the columns a look-up answers.

CREATE FUNCTION rc_condition_records_at(p_partition bigint, p_set bigint, p_sigs text[], p_day date)
  RETURNS TABLE (n bigint, id bigint, valid_from date, valid_to date, condition_value numeric, unit_of_measure text, currency text, price_unit numeric, version integer, attribute1 text, attribute2 text, attribute3 text, attribute4 text, attribute5 text, attribute6 text, attribute7 text, attribute8 text, attribute9 text, attribute10 text, attribute11 text, attribute12 text, attribute13 text, attribute14 text, attribute15 text, attribute16 text, attribute17 text, attribute18 text, attribute19 text, attribute20 text, attribute21 text, attribute22 text, attribute23 text, attribute24 text, attribute25 text, attribute26 text, attribute27 text, attribute28 text, attribute29 text, attribute30 text)
  LANGUAGE plpgsql STABLE SET enable_sort = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY SELECT q.n, c.id, c.valid_from, c.valid_to, c.condition_value, c.unit_of_measure, c.currency, c.price_unit, c.version, c.attribute1, c.attribute2, c.attribute3, c.attribute4, c.attribute5, c.attribute6, c.attribute7, c.attribute8, c.attribute9, c.attribute10, c.attribute11, c.attribute12, c.attribute13, c.attribute14, c.attribute15, c.attribute16, c.attribute17, c.attribute18, c.attribute19, c.attribute20, c.attribute21, c.attribute22, c.attribute23, c.attribute24, c.attribute25, c.attribute26, c.attribute27, c.attribute28, c.attribute29, c.attribute30
    FROM unnest(p_sigs) WITH ORDINALITY AS q(sig, n)
   CROSS JOIN LATERAL (
     SELECT c.id, c.valid_from, c.valid_to, c.condition_value, c.unit_of_measure, c.currency, c.price_unit, c.version, c.attribute1, c.attribute2, c.attribute3, c.attribute4, c.attribute5, c.attribute6, c.attribute7, c.attribute8, c.attribute9, c.attribute10, c.attribute11, c.attribute12, c.attribute13, c.attribute14, c.attribute15, c.attribute16, c.attribute17, c.attribute18, c.attribute19, c.attribute20, c.attribute21, c.attribute22, c.attribute23, c.attribute24, c.attribute25, c.attribute26, c.attribute27, c.attribute28, c.attribute29, c.attribute30 FROM condition_records c
      WHERE c.partition_id = p_partition AND c.condition_record_set_id = p_set AND c.key_sig = q.sig
        AND c.valid_from <= p_day AND c.valid_to >= p_day
      -- At most one item is valid on a day: the latest start on or before it.
      ORDER BY c.valid_from DESC
      LIMIT 1) c;
END
$$;
