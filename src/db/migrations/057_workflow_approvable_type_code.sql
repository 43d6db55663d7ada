-- Workflows (issue 16): a workflow names its approvable by the approvable's own typedId. A grid
-- item's workflows have the code `CGI` (one approvable type for every key number), but the item's
-- typedId is `12.CGI2`: `approvableTypedId` answered `12.CGI`, which no fetch or submit took.
-- The approvable's own type code is kept with the workflow where it differs from `code`
-- (src/modules/workflows/approvables.ts, ApprovableRecord.typeCode), and the view answers it.

ALTER TABLE workflows ADD COLUMN approvable_type_code text;

UPDATE workflows w SET approvable_type_code = 'CGI' || i.key_number
  FROM calc_grid_items i
 WHERE w.code = 'CGI' AND i.partition_id = w.partition_id AND i.id = w.approvable_id;

DROP VIEW workflows_v;
CREATE VIEW workflows_v AS
SELECT w.*, w.approvable_id::text || '.' || coalesce(w.approvable_type_code, w.code) AS approvable_typed_id,
       u.login_name AS submitted_by_name,
       s.name AS current_step_name
  FROM workflows w
  LEFT JOIN users u ON u.partition_id = w.partition_id AND u.id = w.submitted_by
  LEFT JOIN workflow_steps s
    ON s.partition_id = w.partition_id AND s.workflow_id = w.id AND s.step_no = w.current_step;
