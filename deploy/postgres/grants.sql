-- Per-service privileges on Weft's tables (docs/deploy.md). `weft migrate
-- --grants-file` runs this after the migrations, as weft_migrator, the
-- owner of every table, in one transaction; it is idempotent. The roles
-- come from roles.sql.
--
-- A migration that adds a table, a sequence or a function adds its grants
-- here: deploy/topology_test.go runs every service as its role, and
-- deploy/grants_test.go fails on a table or function this file does not
-- name.
--
-- Privileges follow each service's SQL: INSERT … ON CONFLICT DO UPDATE and
-- SELECT … FOR UPDATE need UPDATE, RETURNING needs SELECT on what it
-- returns. Functions run with their caller's privileges (none is SECURITY
-- DEFINER), so EXECUTE adds nothing the table grants do not allow.

-- The event log: the gateway appends a run's first events and signals, the
-- engine the rest; the projector reads it back to resync.
GRANT SELECT, INSERT ON run_events TO weft_gateway, weft_engine;
GRANT SELECT, INSERT, UPDATE ON run_heads TO weft_gateway, weft_engine;
GRANT SELECT ON run_events, run_heads TO weft_projector;
GRANT EXECUTE ON FUNCTION weft_event_append TO weft_gateway, weft_engine;
GRANT EXECUTE ON FUNCTION weft_events_append_new TO weft_engine;

-- The outbox: writers insert (the partition comes back through RETURNING)
-- and wake the relay; the relay claims, publishes, retries, deletes and
-- dead-letters, and keeps its wake-up state.
GRANT INSERT, SELECT (partition) ON outbox TO weft_gateway, weft_engine;
GRANT USAGE ON SEQUENCE outbox_id_seq TO weft_gateway, weft_engine;
GRANT SELECT ON outbox_wake TO weft_gateway, weft_engine;
GRANT EXECUTE ON FUNCTION weft_outbox_wake TO weft_gateway, weft_engine;
GRANT SELECT, UPDATE, DELETE ON outbox TO weft_relay;
GRANT SELECT, INSERT, UPDATE ON outbox_dead TO weft_relay;
GRANT SELECT, INSERT, UPDATE ON outbox_wake TO weft_relay;
GRANT EXECUTE ON FUNCTION weft_outbox_barrier TO weft_relay;

-- The engine's state: the runs it has not finished (the gateway enters a
-- run when it approves it, and counts them for admission), its timers, and
-- the engines' membership, by which they divide the runs' partitions.
GRANT SELECT, INSERT ON engine_runs TO weft_gateway;
GRANT SELECT, INSERT, UPDATE, DELETE ON engine_runs, engine_timers TO weft_engine;
GRANT SELECT, INSERT, UPDATE, DELETE ON engine_run_keys, engine_key_wakes, engine_key_turns TO weft_engine;
GRANT SELECT, INSERT, UPDATE, DELETE ON engine_members TO weft_engine;

-- Activity reconciliation records: the engine writes them in its rounds and
-- answers workers' lookups from them; retention deletes them with their
-- run (ON DELETE CASCADE from run_heads, run as weft_run_delete's caller).
GRANT SELECT, INSERT ON activity_reconciliations TO weft_engine;

-- Run checkpoints: the engine reads and rewrites them in its rounds;
-- retention deletes them with their run (ON DELETE CASCADE from run_heads).
GRANT SELECT, INSERT, UPDATE ON run_checkpoints TO weft_engine;

-- The gateway's idempotency records.
GRANT SELECT, INSERT, UPDATE, DELETE ON run_requests, signal_acceptances TO weft_gateway;

-- Schedules and event triggers: the gateway keeps them, and its scheduler
-- claims, fires and updates schedules (docs/schedules.md).
GRANT SELECT, INSERT, UPDATE, DELETE ON schedules, triggers TO weft_gateway;

-- The registry of plans: the gateway pushes versions, archives and
-- restores them (UPDATE of archived_at) and reads them to resolve a
-- start's planRef; versions are never deleted.
GRANT SELECT, INSERT, UPDATE ON plan_versions TO weft_gateway;
GRANT USAGE ON SEQUENCE plan_versions_seq_seq TO weft_gateway;
-- The engine resolves a child run's planRef (docs/plans.md, "Child runs").
GRANT SELECT ON plan_versions TO weft_engine;

-- Bulk jobs: the gateway records them with the runs they match, which it
-- reads from the projector's snapshots, works through them under a lease
-- and deletes them past their retention (docs/api.md, "Bulk operations").
GRANT SELECT, INSERT, UPDATE, DELETE ON bulk_jobs, bulk_job_runs TO weft_gateway;
GRANT SELECT ON run_snapshots TO weft_gateway;

-- The projector's snapshots and alerts.
GRANT SELECT, INSERT, UPDATE ON run_snapshots TO weft_projector;
GRANT SELECT, INSERT, UPDATE, DELETE ON projector_alerts TO weft_projector;

-- Owner only, on purpose: weft_schema_migrations; outbox_dead for writers;
-- weft_run_delete (retention) and the partition functions
-- (weft_event_partitions_ensure, weft_event_partition_create,
-- weft_event_partition_prepare, weft_uuid_month_floor), which an operator
-- runs as weft_migrator; weft_run_events_guard, a trigger function.
