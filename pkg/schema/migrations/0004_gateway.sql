-- The signal gateway's records (services/signal-gateway, docs/api.md).
--
-- run_requests makes run starts idempotent (execution-semantics §3): one
-- row per (tenantId, projectId, environmentId, planId, planVersion,
-- runRequestId), keyed by the SHA-256 of that tuple, written in the
-- transaction that appends the run's RunApproved. A repeat of the tuple
-- finds the row and starts nothing. The tuple is kept beside its hash so a
-- repeat is checked against it field by field.
CREATE TABLE run_requests (
    request_key    bytea       PRIMARY KEY CHECK (length(request_key) = 32),
    tenant_id      text        NOT NULL,
    project_id     text        NOT NULL,
    environment_id text        NOT NULL,
    plan_id        text        NOT NULL,
    plan_version   text        NOT NULL,
    run_request_id text        NOT NULL,
    run_id         uuid        NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL
);

-- The retention job's scan.
CREATE INDEX run_requests_expires ON run_requests (expires_at);

-- signal_acceptances holds the accepted-response record of every accepted
-- signal (tier0 contract, "Signal Idempotency"): insert-or-read on
-- (run_id, signal_name, signal_id), written in the transaction that
-- appends the SignalAccepted event (the signal's payload) and its outbox
-- row. response is the canonical AcceptedSignalResult a repeat is answered
-- with. Rows expire after the gateway's retention; the retention job
-- removes them, after which the same tuple is a new signal.
CREATE TABLE signal_acceptances (
    run_id      uuid        NOT NULL,
    signal_name text        NOT NULL,
    signal_id   text        NOT NULL,
    version     smallint    NOT NULL CHECK (version > 0),
    storage_key text        NOT NULL,
    response    jsonb       NOT NULL,
    accepted_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (run_id, signal_name, signal_id)
);

-- The per-run rate limit counts a run's acceptances of the last minute.
CREATE INDEX signal_acceptances_rate ON signal_acceptances (run_id, accepted_at);

-- The retention job's scan.
CREATE INDEX signal_acceptances_expires ON signal_acceptances (expires_at);

-- A signal's payload is its SignalAccepted event, whose logicalAttemptId is
-- the signal's storage key. The gateway looks a payload up by key prefix to
-- find one left without its acceptance record; "C" collation makes a
-- prefix a contiguous, bytewise range of the index.
CREATE INDEX run_events_signal_payload ON run_events (run_id, logical_attempt_id COLLATE "C")
    WHERE event_type = 'SignalAccepted';
