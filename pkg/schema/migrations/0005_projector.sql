-- The projector's snapshots and alerts (services/projector, docs/read-api.md).
--
-- run_snapshots holds one row per run: the RunSnapshot the reducer built
-- (pkg/events) and its watermark, last_event_seq, the highest runSeq
-- applied. Both change together in one transaction, so a projector that
-- crashes resumes from the watermark and re-applying an event is a no-op.
-- Every writer locks the row (FOR UPDATE) before it reads the watermark, so
-- any number of projectors may run. The identity columns come from the
-- run's RunApproved and serve the read API's filters.
--
-- gap_seen_seq is set while the run is STALE: an event past a runSeq gap
-- was seen (gap_seen_seq is its runSeq) and the log has not yet yielded the
-- events in between. The snapshot never moves past the gap.
CREATE TABLE run_snapshots (
    run_id            uuid        PRIMARY KEY,
    tenant_id         text        NOT NULL DEFAULT '',
    project_id        text        NOT NULL DEFAULT '',
    environment_id    text        NOT NULL DEFAULT '',
    plan_id           text        NOT NULL DEFAULT '',
    plan_version      text        NOT NULL DEFAULT '',
    status            text        NOT NULL,
    last_event_seq    bigint      NOT NULL CHECK (last_event_seq >= 0),
    steps_total       integer     NOT NULL DEFAULT 0,
    steps_done        integer     NOT NULL DEFAULT 0,
    snapshot          jsonb       NOT NULL,
    plan_steps        jsonb,
    gap_seen_seq      bigint,
    gap_since         timestamptz,
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_persisted_at timestamptz,
    lag_ms            bigint,
    CHECK ((gap_seen_seq IS NULL) = (gap_since IS NULL)),
    CHECK (gap_seen_seq IS NULL OR gap_seen_seq > last_event_seq)
);

-- The runs list: newest first within a tenant, and its filters.
CREATE INDEX run_snapshots_list ON run_snapshots (tenant_id, created_at DESC, run_id DESC);
CREATE INDEX run_snapshots_status ON run_snapshots (tenant_id, status, created_at DESC, run_id DESC);
CREATE INDEX run_snapshots_plan ON run_snapshots (tenant_id, plan_id, created_at DESC, run_id DESC);
-- The stale runs the resync loop retries.
CREATE INDEX run_snapshots_stale ON run_snapshots (gap_since) WHERE gap_seen_seq IS NOT NULL;

-- projector_alerts holds the alerts that are active now (GET /v1/alerts).
-- A run's gap alert is written and deleted in the transaction that opens
-- and closes its gap; the lag alert is raised and cleared by whichever
-- projector measures the lag. alert_key is the code, or code:runId.
CREATE TABLE projector_alerts (
    alert_key  text        PRIMARY KEY,
    code       text        NOT NULL,
    severity   text        NOT NULL,
    run_id     uuid,
    tenant_id  text        NOT NULL DEFAULT '',
    message    text        NOT NULL,
    raised_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The resync loop's other scan: runs not yet ended whose snapshot has not
-- moved for a while, checked against their log's head. updated_at is left
-- out of every index, so a save that keeps the status can be a HOT update.
CREATE INDEX run_snapshots_open ON run_snapshots (run_id)
    WHERE status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED');
