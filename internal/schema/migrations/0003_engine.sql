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
