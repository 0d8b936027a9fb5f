-- A run's run request id in its snapshot row (services/projector,
-- docs/read-api.md): GET /v1/runs?trigger=ID lists the runs a trigger
-- started, the Triggers page each trigger's last events.
--
-- run_request_id is the RunApproved's runRequestId, written by the
-- projector when it applies that event. NULL means not recorded yet: the
-- row was projected by a build older than this column; `weft projector
-- rebuild`, and every projector's rebuild pass at start, fill it from the
-- run's RunApproved in the log ('' for a run that had none).
--
-- A run a trigger or a schedule starts has the request id
-- "{triggerId}:{eventId}" or "{scheduleId}:{time}", and no other request id
-- holds a ':' (intake refuses it), nor does a trigger or schedule id. So
-- "the newest runs of trigger T" are the rows whose request id's part
-- before the first ':' is T, newest first: run_snapshots_source serves
-- them, pages included, without sorting a busy trigger's runs.
--
-- A nullable column without a default is additive and rewrites no rows:
-- the rows stay format 1 (docs/persisted-format.md). A build older than
-- this column leaves it NULL on the runs it approves; the next rebuild
-- pass fills it.
ALTER TABLE run_snapshots ADD COLUMN run_request_id text;

CREATE INDEX run_snapshots_source ON run_snapshots
    (tenant_id, split_part(run_request_id, ':', 1), created_at DESC, run_id DESC)
    WHERE strpos(run_request_id, ':') > 0;
