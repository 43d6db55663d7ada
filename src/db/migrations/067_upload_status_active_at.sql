-- File loads (/loaddata.file): when the status record last showed life — bytes of its upload
-- arriving (touched as they do), the upload's end (its load begins). Maintenance ends a load without
-- a job as abandoned only when that is older than twice the synchronous time-out: counted from the
-- record's creation, an upload slower than that (a large file on a slow line) lost its file while it
-- was still arriving (src/modules/files/upload-status.ts, closeAbandonedLoads).
ALTER TABLE upload_status ADD COLUMN active_at timestamptz;
