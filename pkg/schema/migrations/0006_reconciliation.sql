-- Activity result reconciliation (tier0 contract, "Activity Result
-- Reconciliation"; docs/reconciliation.md). One record per scheduled
-- operation of a keyed activity step, unique by (run, activity, operation,
-- idempotency key). The engine writes it in the transaction of the
-- attempt's terminal event (StepCompleted, StepFailed, StepRetryScheduled,
-- or RunCancelled for an attempt in flight), first outcome wins, and
-- answers workers' lookups from it (weft.engine.reconcile). The row is
-- task.ReconcileRecord, version 1. result, error and diagnostics are json,
-- not jsonb, so a record reads back byte for byte as the engine wrote it.
--
-- The table is additive: a build that predates it never reads it, and a
-- step without a record behaves as before reconciliation (at-least-once
-- dispatch). Records live as long as their run: the foreign key on the
-- run's head row deletes them when retention deletes the run
-- (weft_run_delete), and never before.
CREATE TABLE activity_reconciliations (
    run_id          uuid        NOT NULL REFERENCES run_heads (run_id) ON DELETE CASCADE,
    activity_name   text        NOT NULL CHECK (activity_name <> ''),
    operation_id    text        NOT NULL CHECK (operation_id <> ''),
    idempotency_key text        NOT NULL CHECK (idempotency_key <> ''),
    version         smallint    NOT NULL CHECK (version > 0),
    step_id         text        NOT NULL,
    logical_attempt integer     NOT NULL CHECK (logical_attempt > 0),
    status          text        NOT NULL
        CHECK (status IN ('completed', 'failed', 'cancelled', 'timed-out', 'indeterminate')),
    result          json,
    error           json,
    reconciled_by   text        NOT NULL DEFAULT '',
    diagnostics     json,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (run_id, activity_name, operation_id, idempotency_key),
    -- A result only on a completed record; every other record says why.
    CHECK (result IS NULL OR status = 'completed'),
    CHECK (result IS NOT NULL OR error IS NOT NULL)
);
