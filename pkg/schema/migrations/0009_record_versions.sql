-- Every persisted record carries its format version (docs/persisted-format.md).
-- These tables predate that rule; their rows are all format 1.
--
-- The DEFAULT of a version column stays 1 for good: a writer of format 1
-- (every build of today) leaves the column to it, and a build that writes
-- a later format states its version explicitly. So a later migration never
-- changes what an older writer, still running during a rolling upgrade,
-- records. A reader acts only on the versions it knows (each table's
-- reader is named in docs/persisted-format.md).
--
-- Adding a column with a constant default rewrites no rows (Postgres 11+).
ALTER TABLE outbox             ADD COLUMN version smallint NOT NULL DEFAULT 1 CHECK (version > 0);
ALTER TABLE outbox_dead        ADD COLUMN version smallint NOT NULL DEFAULT 1 CHECK (version > 0);
ALTER TABLE run_requests       ADD COLUMN version smallint NOT NULL DEFAULT 1 CHECK (version > 0);
ALTER TABLE engine_timers      ADD COLUMN version smallint NOT NULL DEFAULT 1 CHECK (version > 0);
ALTER TABLE engine_runs        ADD COLUMN version smallint NOT NULL DEFAULT 1 CHECK (version > 0);
ALTER TABLE run_snapshots      ADD COLUMN version smallint NOT NULL DEFAULT 1 CHECK (version > 0);
ALTER TABLE projector_alerts   ADD COLUMN version smallint NOT NULL DEFAULT 1 CHECK (version > 0);
