-- The registry of plans (services/signal-gateway/internal/registry,
-- docs/api.md "Registered plans"): the versions of each plan of a tenant's
-- project, pushed through the gateway. A version is immutable but for
-- archived_at; a start may name one by planRef instead of carrying its
-- plan, and its run records the plan in full (RunApproved), so the log
-- never reads this table.
--
-- plan is the validated plan document; plan_digest the SHA-256 of its
-- canonical JSON (keys sorted, no white space), by which a repeated push
-- is told from a conflicting one. seq orders versions newest first and is
-- the lists' cursor. archived_at is NULL while the version may be
-- started.
CREATE TABLE plan_versions (
    seq          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    version      smallint    NOT NULL CHECK (version > 0),
    tenant_id    text        NOT NULL,
    project_id   text        NOT NULL,
    plan_id      text        NOT NULL,
    plan_version text        NOT NULL CHECK (plan_version <> 'latest'),
    plan         jsonb       NOT NULL,
    plan_digest  bytea       NOT NULL CHECK (length(plan_digest) = 32),
    created_at   timestamptz NOT NULL,
    archived_at  timestamptz,
    UNIQUE (tenant_id, project_id, plan_id, plan_version)
);

-- A plan's versions newest first, and "latest": the newest not archived.
CREATE INDEX plan_versions_newest ON plan_versions (tenant_id, project_id, plan_id, seq DESC);
-- A tenant's versions newest first (GET /v1/plans).
CREATE INDEX plan_versions_tenant ON plan_versions (tenant_id, seq DESC);
