-- Calculation grids (migration 030): the grid's `itemCount`, `calculatedCount` and `errorCount`
-- were set only when a calculation ended, so items added (`/add/CGI{k}`) or deleted (`/delete/CGI{k}`,
-- batch, forcefilter) since then left them wrong (12 items shown while 5 remained). They are now kept
-- by the statement that adds or deletes items, in its transaction: `calculatedCount` the items with
-- results, `errorCount` those whose calculation failed (an error); the others (added since the last
-- run) wait for the next calculation, whose end counts them all again.
-- Statement-level triggers with transition tables: one UPDATE per grid touched and statement, not
-- one per item (a calculation's COPY of 100,000 items updates its grid once). The update takes the
-- grid row's FOR NO KEY UPDATE lock, which does not conflict with the FOR KEY SHARE of accept and
-- reject, so a delete of items and an accept of them cannot deadlock on the grid row.

CREATE FUNCTION rc_calc_grid_counts_added() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  UPDATE calc_grids g
     SET item_count = g.item_count + c.n, calculated_count = g.calculated_count + c.ok,
         error_count = g.error_count + c.failed
    FROM (SELECT partition_id, grid_id, count(*) AS n, count(*) FILTER (WHERE calculation_results IS NOT NULL) AS ok,
                   count(*) FILTER (WHERE error IS NOT NULL) AS failed
            FROM added GROUP BY partition_id, grid_id) c
   WHERE g.partition_id = c.partition_id AND g.id = c.grid_id;
  RETURN NULL;
END $$;

CREATE FUNCTION rc_calc_grid_counts_removed() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  UPDATE calc_grids g
     SET item_count = greatest(g.item_count - c.n, 0),
         calculated_count = greatest(g.calculated_count - c.ok, 0),
         error_count = greatest(g.error_count - c.failed, 0)
    FROM (SELECT partition_id, grid_id, count(*) AS n, count(*) FILTER (WHERE calculation_results IS NOT NULL) AS ok,
                   count(*) FILTER (WHERE error IS NOT NULL) AS failed
            FROM removed GROUP BY partition_id, grid_id) c
   WHERE g.partition_id = c.partition_id AND g.id = c.grid_id;
  RETURN NULL;
END $$;

CREATE TRIGGER calc_grid_items_counts_added AFTER INSERT ON calc_grid_items
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION rc_calc_grid_counts_added();
CREATE TRIGGER calc_grid_items_counts_removed AFTER DELETE ON calc_grid_items
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION rc_calc_grid_counts_removed();

-- Grids counted before this migration may be stale already: count them once.
UPDATE calc_grids g
   SET item_count = coalesce(c.n, 0), calculated_count = coalesce(c.ok, 0),
       error_count = coalesce(c.failed, 0)
  FROM calc_grids g2
  LEFT JOIN (SELECT partition_id, grid_id, count(*) AS n, count(*) FILTER (WHERE calculation_results IS NOT NULL) AS ok,
                   count(*) FILTER (WHERE error IS NOT NULL) AS failed
               FROM calc_grid_items GROUP BY partition_id, grid_id) c
    ON c.partition_id = g2.partition_id AND c.grid_id = g2.id
 WHERE g.partition_id = g2.partition_id AND g.id = g2.id;
