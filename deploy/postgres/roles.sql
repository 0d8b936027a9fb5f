-- Weft's Postgres roles, least privilege (docs/deploy.md). Run once by a
-- superuser in Weft's database: the compose file mounts it into the
-- postgres image's /docker-entrypoint-initdb.d, which runs it when the
-- data volume is first created. It is idempotent.
--
--   weft_migrator   owns the schema "weft" and everything `weft migrate`
--                   creates in it; nothing else.
--   weft_gateway    starts runs and accepts signals.
--   weft_engine     drives runs.
--   weft_relay      publishes the outbox to NATS.
--   weft_projector  keeps the snapshots and serves the read API.
--
-- The activity worker has no role: it never touches Postgres.
--
-- Table privileges are granted per table by grants.sql, which
-- `weft migrate --grants-file` runs after each migration, as the owner.
-- Here, default privileges make sure nothing the migrator creates is
-- usable by anyone else until grants.sql says so: functions included
-- (Postgres grants EXECUTE to PUBLIC by default).
--
-- Passwords are set apart (20-weft-passwords.sh) so that this file holds
-- no secret.

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['weft_migrator', 'weft_gateway', 'weft_engine', 'weft_relay', 'weft_projector'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created meanwhile by a concurrent run of this script
            END;
        END IF;
        -- Unqualified names (every query of Weft's) resolve in schema weft.
        EXECUTE format('ALTER ROLE %I IN DATABASE %I SET search_path = weft', r, current_database());
    END LOOP;
    -- Only Weft's roles (and superusers) connect to Weft's database.
    EXECUTE format('REVOKE ALL ON DATABASE %I FROM PUBLIC', current_database());
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO weft_migrator, weft_gateway, weft_engine, weft_relay, weft_projector',
        current_database());
END $$;

CREATE SCHEMA IF NOT EXISTS weft AUTHORIZATION weft_migrator;
REVOKE ALL ON SCHEMA weft FROM PUBLIC;
GRANT USAGE ON SCHEMA weft TO weft_gateway, weft_engine, weft_relay, weft_projector;
-- Nothing of Weft's lives in public; nobody creates anything there.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- Tables and sequences are private to their owner by default; functions
-- are not, so that default is revoked (globally: Postgres cannot revoke a
-- global default per schema).
ALTER DEFAULT PRIVILEGES FOR ROLE weft_migrator REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
