-- Labels and the runs list's filters (services/projector, docs/read-api.md
-- "Listing runs"): GET /v1/runs?label=KEY=VALUE, planVersion,
-- createdAfter/createdBefore, endedAfter/endedBefore, rerunOf and schedule,
-- each served by an index.
--
-- run_snapshots.labels is the run's labels (the RunApproved's labels, a
-- JSON object of strings), NULL when it has none. The filter
-- label=K1=V1&label=K2=V2 is one containment, labels @> '{"K1":"V1","K2":"V2"}',
-- which run_snapshots_labels (GIN, jsonb_path_ops: containment only, the
-- smaller of the two GIN operator classes) answers for any number of
-- labels at once, without a join; the runs it finds are then sorted by
-- creation time.
--
-- run_snapshots.rerun_of is, on a rerun, the run id of its source
-- (the RunApproved's rerunOf.runId), as parent_run_id (migration 0020) is
-- a child's parent; run_snapshots_rerun_of holds reruns alone, in the
-- list's order.
--
-- run_snapshots.ended_at is the snapshot's completedAt: when a run ended
-- (COMPLETED, FAILED or CANCELLED); NULL while it has not, and again when
-- a FAILED run is resumed. run_snapshots_ended serves the ended range.
--
-- run_snapshots_plan_version serves planVersion, which the list takes
-- with plan only, newest first.
--
-- The projector writes the three columns from the snapshot each time it
-- saves a run. Rows saved by a build older than these columns have them
-- NULL: every projector's rebuild pass at start fills them, from the
-- stored snapshot, for the ended runs; a run that has not ended gets them
-- at its next event.
--
-- schedules.labels and triggers.labels are the labels of the runs the
-- schedule or trigger starts, NULL when none.
--
-- Nullable columns without a default are additive and rewrite no rows:
-- the rows stay format 1 (docs/persisted-format.md).
ALTER TABLE run_snapshots
    ADD COLUMN labels jsonb,
    ADD COLUMN rerun_of uuid,
    ADD COLUMN ended_at timestamptz;

CREATE INDEX run_snapshots_labels ON run_snapshots USING gin (labels jsonb_path_ops);

CREATE INDEX run_snapshots_rerun_of ON run_snapshots
    (tenant_id, rerun_of, created_at DESC, run_id DESC)
    WHERE rerun_of IS NOT NULL;

CREATE INDEX run_snapshots_ended ON run_snapshots (tenant_id, ended_at)
    WHERE ended_at IS NOT NULL;

CREATE INDEX run_snapshots_plan_version ON run_snapshots
    (tenant_id, plan_id, plan_version, created_at DESC, run_id DESC);

ALTER TABLE schedules ADD COLUMN labels jsonb;

ALTER TABLE triggers ADD COLUMN labels jsonb;
