-- A child run's parent in its snapshot row (services/projector,
-- docs/read-api.md): GET /v1/runs?parent=RUN_ID lists the child runs the
-- subPlan steps of run RUN_ID started, newest first.
--
-- parent_run_id is the run id of the RunApproved's parent (events.RunParent),
-- written by the projector when it applies that event. NULL means the run
-- has no parent, or not recorded yet: a child run a build older than this
-- column projected. `weft projector rebuild`, and every projector's rebuild
-- pass at start, fill it from the child's RunApproved in the log; a child
-- run is found by its run request id, "child:{parentRunId}:{stepId}:{attempt}"
-- (events.ChildRunRequestID).
--
-- run_snapshots_parent holds child runs alone, in the list's order, so that
-- it serves a parent's children newest first, pages included, without
-- sorting them.
--
-- A nullable column without a default is additive and rewrites no rows:
-- the rows stay format 1 (docs/persisted-format.md). A build older than
-- this column leaves it NULL on the children it approves; the next rebuild
-- pass fills it.
ALTER TABLE run_snapshots ADD COLUMN parent_run_id uuid;

CREATE INDEX run_snapshots_parent ON run_snapshots
    (tenant_id, parent_run_id, created_at DESC, run_id DESC)
    WHERE parent_run_id IS NOT NULL;
