-- Bulk jobs (services/signal-gateway/internal/bulk, docs/api.md "Bulk
-- operations"): one row per POST /v1/bulk, keyed by the caller's tenant
-- and bulkId. The request (action, filter, its digest) never changes; the
-- gateway that holds the job's lease (claim_token, claimed_until) works
-- through bulk_job_runs, the runs the filter matched when the job was
-- created, in seq order, and moves its cursor (the last seq done) with the
-- counters in one statement, so a job taken over after a crash redoes at
-- most its last batch, whose signals, with ids derived from the bulkId,
-- are answered as duplicates.
CREATE TABLE bulk_jobs (
    version           smallint    NOT NULL DEFAULT 1,
    tenant_id         text        NOT NULL,
    bulk_id           text        NOT NULL,
    action            text        NOT NULL,
    filter            jsonb       NOT NULL,
    request_digest    bytea       NOT NULL,
    -- the principal the job acts as, re-authorized at every action
    key_id            text        NOT NULL,
    role              text        NOT NULL,
    status            text        NOT NULL,
    matched           bigint      NOT NULL DEFAULT 0,
    done              bigint      NOT NULL DEFAULT 0,
    skipped           bigint      NOT NULL DEFAULT 0,
    failed            bigint      NOT NULL DEFAULT 0,
    skipped_reasons   jsonb       NOT NULL DEFAULT '{}',
    cursor_seq        bigint      NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    ended_at          timestamptz,
    claim_token       text,
    claimed_until     timestamptz,
    PRIMARY KEY (tenant_id, bulk_id)
);

CREATE INDEX bulk_jobs_running ON bulk_jobs (claimed_until) WHERE status = 'RUNNING';

-- The runs a job matched, numbered in the runs list's order (oldest
-- first), written once with the job.
CREATE TABLE bulk_job_runs (
    version   smallint NOT NULL DEFAULT 1,
    tenant_id text   NOT NULL,
    bulk_id   text   NOT NULL,
    seq       bigint NOT NULL,
    run_id    uuid   NOT NULL,
    PRIMARY KEY (tenant_id, bulk_id, seq),
    FOREIGN KEY (tenant_id, bulk_id) REFERENCES bulk_jobs ON DELETE CASCADE
);
