-- Condition records (issue 13): room on each page for a new version of its items. A spliced load
-- (/loaddata/CRCP) cuts the items it overlaps in place — most keep their validFrom and only their
-- validTo, the spliced fields, version and audit columns change — so with free space on the item's
-- page the new version is a heap-only tuple: none of the three indexes (primary key, key + validity,
-- key1) gets an entry for it. On a full page (fillfactor 100, the default) every cut wrote three index
-- entries and a new page: a 5,000-item cut measured ~2-3× slower. 90 leaves room for about five new
-- versions per 8 kB page (~50 items) for ~11% more table. Pages written before this migration keep
-- their fill until rewritten (VACUUM FULL, CLUSTER); new items get the room at once.

ALTER TABLE condition_records SET (fillfactor = 90);
