-- An import created from a file is LOADING while its file is staged chunk by chunk (outside one
-- transaction), then DRAFT: until then it is neither submitted nor edited, so that no submit applies
-- part of the file and no change is staged into an import already APPLIED.

ALTER TABLE imports DROP CONSTRAINT imports_status_check;
ALTER TABLE imports ADD CONSTRAINT imports_status_check
  CHECK (status IN ('LOADING', 'DRAFT', 'APPLIED', 'FAILED'));
