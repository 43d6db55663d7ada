-- Record history at bulk-load speed (issue 12): the foreign key to partitions costs a per-row check
-- on every history insert (10,000 per loaded chunk) and protects nothing the API can do (partitions
-- are never deleted through it; an operator deleting one removes its history with
-- `DELETE FROM record_history WHERE partition_id = ...`). partition_id still leads every index.
ALTER TABLE record_history DROP CONSTRAINT IF EXISTS record_history_partition_id_fkey;
