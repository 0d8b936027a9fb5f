-- Durable engine timers (services/engine): retry backoffs and waitSignal
-- timeouts. A timer is written in the same transaction as the round that
-- decided it, so it survives restarts with the events that explain it; the
-- engine's timer loop delivers each due timer as a round of its run, and
-- that round deletes it. A timer already deleted (another engine fired it)
-- makes the round a no-op.
CREATE TABLE engine_timers (
    run_id          uuid        NOT NULL,
    step_id         text        NOT NULL,
    logical_attempt integer     NOT NULL CHECK (logical_attempt > 0),
    kind            text        NOT NULL CHECK (kind <> ''),
    due_at          timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, step_id, logical_attempt, kind)
);

-- "What is due next": the timer loop's scan.
CREATE INDEX engine_timers_due ON engine_timers (due_at);

-- The runs the engine has not finished (services/engine, "Sweeps" and
-- "Backpressure"). A run enters in the transaction that approves it
-- (services/signal-gateway/runstart) and leaves in the round that ends it. The sweep
-- re-drives the runs in here whose log has not moved for a while, in case
-- the bus lost a message: swept_at keeps two engines, or two sweeps, from
-- re-driving one run at once. started_at counts the run against its
-- environment's limit of concurrent runs; queued_at marks a run the QUEUE
-- policy parked, which the run-queue reconciler starts, oldest first.
CREATE TABLE engine_runs (
    run_id         uuid        PRIMARY KEY,
    environment_id text        NOT NULL DEFAULT '',
    approved_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at     timestamptz,
    queued_at      timestamptz,
    swept_at       timestamptz
);

-- The runs that hold a place in their environment: admission's count.
CREATE INDEX engine_runs_started ON engine_runs (environment_id) WHERE started_at IS NOT NULL;

-- The run queue, oldest first.
CREATE INDEX engine_runs_queued ON engine_runs (approved_at) WHERE queued_at IS NOT NULL AND started_at IS NULL;
