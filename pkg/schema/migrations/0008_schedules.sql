-- Schedules and event triggers (services/signal-gateway/internal/schedule
-- and internal/trigger, docs/schedules.md).
--
-- A schedule starts a run of its plan at every fire time of its cron
-- expression in its timezone. next_fire_at is the earliest fire time not
-- yet handled: a scheduler claims a due schedule (claim_token,
-- claimed_until: a lease, so one scheduler at a time fires it), and in one
-- transaction starts its runs through the run-request uniqueness of
-- run_requests (runRequestId "{scheduleId}:{scheduledFor}"), advances
-- next_fire_at and records what it skipped. A crash before that commit
-- leaves the lease to expire and the fire to another scheduler.
--
-- version is the row's persisted-format version (docs/persisted-format.md),
-- written as 1. recent_skips is a JSON array of api.SkippedFires.
CREATE TABLE schedules (
    tenant_id             text        NOT NULL,
    schedule_id           text        NOT NULL,
    version               smallint    NOT NULL CHECK (version > 0),
    project_id            text        NOT NULL,
    environment_id        text        NOT NULL,
    cron                  text        NOT NULL,
    timezone              text        NOT NULL,
    plan_id               text        NOT NULL,
    plan_version          text        NOT NULL,
    plan                  jsonb       NOT NULL,
    input                 jsonb,
    misfire_policy        text        NOT NULL CHECK (misfire_policy IN ('skip', 'catchup', 'compress')),
    max_catchup           integer     NOT NULL CHECK (max_catchup > 0),
    overlap_policy        text        NOT NULL
                          CHECK (overlap_policy IN ('skip', 'buffer-one', 'allow', 'cancel-previous')),
    paused                boolean     NOT NULL DEFAULT false,
    next_fire_at          timestamptz,
    last_fire_at          timestamptz,
    last_run_id           uuid,
    buffered_for          timestamptz,
    buffered_window       jsonb,
    skipped_misfire       bigint      NOT NULL DEFAULT 0,
    skipped_overlap       bigint      NOT NULL DEFAULT 0,
    skipped_catchup_limit bigint      NOT NULL DEFAULT 0,
    skipped_refused       bigint      NOT NULL DEFAULT 0,
    recent_skips          jsonb       NOT NULL DEFAULT '[]',
    claim_token           uuid,
    claimed_until         timestamptz,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, schedule_id)
);

-- The scheduler's scan: active schedules by their next fire time, and
-- those holding a buffered fire.
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE NOT paused;
CREATE INDEX schedules_buffered ON schedules (buffered_for) WHERE buffered_for IS NOT NULL AND NOT paused;

-- A trigger maps events to runs of its plan: an event's run request id is
-- "{triggerId}:{eventId}", so a redelivered event finds its run in
-- run_requests for as long as the gateway's run-request retention keeps
-- the record. version as for schedules.
CREATE TABLE triggers (
    tenant_id      text        NOT NULL,
    trigger_id     text        NOT NULL,
    version        smallint    NOT NULL CHECK (version > 0),
    project_id     text        NOT NULL,
    environment_id text        NOT NULL,
    plan_id        text        NOT NULL,
    plan_version   text        NOT NULL,
    plan           jsonb       NOT NULL,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, trigger_id)
);
