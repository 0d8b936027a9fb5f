-- The event log (pkg/eventlog, docs/event-log.md): run_events, the
-- append-only log of every run, and run_heads, its append authority.
--
-- SQLSTATEs raised here: WE409 = compare-and-swap on the run head failed;
-- WE405 = run_events is append-only (UPDATE, DELETE outside retention,
-- TRUNCATE).

CREATE TABLE run_events (
    run_id              uuid        NOT NULL,
    run_seq             bigint      NOT NULL CHECK (run_seq > 0),
    event_id            uuid        NOT NULL,
    step_id             text,
    engine_attempt_id   text,
    logical_attempt_id  text,
    event_type          text        NOT NULL CHECK (event_type <> ''),
    event_data          jsonb,
    idempotency_key     char(64)    NOT NULL CHECK (idempotency_key ~ '^[0-9a-f]{64}$'),
    emitted_at          timestamptz NOT NULL,
    persisted_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    adapter_version     text,
    engine_run_ref      jsonb,
    caused_by_signal_id text,
    parent_event_id     uuid,
    schema_version      smallint    NOT NULL CHECK (schema_version > 0),
    PRIMARY KEY (run_id, run_seq),
    UNIQUE (run_id, idempotency_key),
    -- An event id shares its run id's leading 48 bits (events.NewEventID),
    -- so equal event ids always land in the same partition, where the
    -- partition-local unique index on event_id refuses the second one.
    CONSTRAINT run_events_event_id_prefix
        CHECK (substr(event_id::text, 1, 13) = substr(run_id::text, 1, 13))
) PARTITION BY RANGE (run_id);

CREATE INDEX run_events_type_persisted ON run_events (event_type, persisted_at);

-- Run ids outside every monthly range (too old, too far ahead, not UUIDv7).
CREATE TABLE run_events_default PARTITION OF run_events DEFAULT;

-- The append authority: one row per run, locked by every append.
CREATE TABLE run_heads (
    run_id     uuid        PRIMARY KEY,
    head_seq   bigint      NOT NULL CHECK (head_seq >= 0),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Append-only: refuse UPDATE, TRUNCATE, and DELETE unless the transaction
-- set weft.retention (only weft_run_delete does).
CREATE FUNCTION weft_run_events_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('weft.retention', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'run_events is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'WE405',
              HINT = 'delete whole runs with weft_run_delete(run_id)';
END $$;

-- Row triggers on a partitioned table are cloned onto every partition.
CREATE TRIGGER run_events_append_only BEFORE UPDATE OR DELETE ON run_events
    FOR EACH ROW EXECUTE FUNCTION weft_run_events_guard();
-- Statement triggers are not, so each partition gets its own (below).
CREATE TRIGGER run_events_no_truncate BEFORE TRUNCATE ON run_events
    FOR EACH STATEMENT EXECUTE FUNCTION weft_run_events_guard();

-- weft_event_partition_prepare adds what a partition needs beyond what it
-- inherits: the unique index on event_id and the TRUNCATE guard.
CREATE FUNCTION weft_event_partition_prepare(part text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON %I (event_id)', part || '_event_id', part);
    EXECUTE format('CREATE OR REPLACE TRIGGER run_events_no_truncate BEFORE TRUNCATE ON %I
                    FOR EACH STATEMENT EXECUTE FUNCTION weft_run_events_guard()', part);
END $$;

SELECT weft_event_partition_prepare('run_events_default');

-- weft_uuid_month_floor returns the smallest UUIDv7 of the month holding m:
-- the month start's Unix milliseconds (UTC) in the first 48 bits, zeros after.
CREATE FUNCTION weft_uuid_month_floor(m date) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT (lpad(to_hex((extract(epoch FROM
                make_date(extract(year FROM m)::int, extract(month FROM m)::int, 1)::timestamp
                AT TIME ZONE 'UTC') * 1000)::bigint), 12, '0') || repeat('0', 20))::uuid
$$;

-- weft_event_partition_create creates the monthly partition of the month
-- starting at m unless it exists, and returns whether it did. Rows of that
-- month already in the default partition are moved into the new partition
-- (unchanged). Callers hold the partition advisory lock.
CREATE FUNCTION weft_event_partition_create(m date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    part text := 'run_events_' || to_char(m::timestamp, 'YYYYMM');
    lo   uuid := weft_uuid_month_floor(m);
    hi   uuid := weft_uuid_month_floor((m + interval '1 month')::date);
    prev text := current_setting('weft.retention', true);
BEGIN
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    -- Exclusive on the parent before anything else: every statement that
    -- planned against the old set of partitions (and might look for moved
    -- rows in the default partition) finishes first, every later one waits
    -- and re-plans. A weaker lock here deadlocks with, or hides rows from,
    -- concurrent appends.
    LOCK TABLE run_events IN ACCESS EXCLUSIVE MODE;
    EXECUTE format('CREATE TABLE %I (LIKE run_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
    PERFORM set_config('weft.retention', 'on', true);
    EXECUTE format('WITH moved AS (DELETE FROM run_events_default WHERE run_id >= $1 AND run_id < $2
                    RETURNING *) INSERT INTO %I SELECT * FROM moved', part) USING lo, hi;
    PERFORM set_config('weft.retention', coalesce(prev, ''), true);
    EXECUTE format('ALTER TABLE run_events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
    PERFORM weft_event_partition_prepare(part);
    RETURN true;
END $$;

-- weft_event_partitions_ensure creates the missing monthly partitions for
-- `months` months from the month holding from_month, and returns how many it
-- created. Idempotent; concurrent callers are serialised by an advisory lock.
CREATE FUNCTION weft_event_partitions_ensure(from_month date, months int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    m       date := make_date(extract(year FROM from_month)::int, extract(month FROM from_month)::int, 1);
    created int := 0;
BEGIN
    IF months IS NULL OR months < 1 THEN
        RAISE EXCEPTION 'weft_event_partitions_ensure: months must be at least 1, got %', months
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM pg_advisory_xact_lock(8675309001); -- "weft event partitions"
    FOR i IN 0 .. months - 1 LOOP
        IF weft_event_partition_create((m + make_interval(months => i))::date) THEN
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END $$;

SELECT weft_event_partitions_ensure((date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date, 5);

-- weft_event_append appends one event in one round trip and returns its
-- runSeq. The first statement takes the run head's row lock and advances
-- the head (creating the head row for a new run); the lock is held to the
-- end of the transaction, so appends of one run are serialised and see each
-- other. Then the optional compare-and-swap on the old head (else WE409,
-- which aborts the transaction and so undoes the advance), then the insert
-- at the new head. A duplicate idempotency key inserts nothing (ON
-- CONFLICT): the head goes back and the existing row's run_seq and
-- persisted_at are returned with o_persisted = false. The common path is
-- two statements; the duplicate path, rare, four.
CREATE FUNCTION weft_event_append(
    p_run_id uuid, p_event_id uuid, p_step_id text, p_engine_attempt_id text,
    p_logical_attempt_id text, p_event_type text, p_event_data jsonb,
    p_idempotency_key char(64), p_emitted_at timestamptz, p_adapter_version text,
    p_engine_run_ref jsonb, p_caused_by_signal_id text, p_parent_event_id uuid,
    p_schema_version smallint, p_expected_head bigint,
    OUT o_run_seq bigint, OUT o_persisted boolean, OUT o_persisted_at timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
    LOOP -- the head row may be deleted (weft_run_delete) while we wait for it
        UPDATE run_heads SET head_seq = head_seq + 1, updated_at = clock_timestamp()
        WHERE run_id = p_run_id RETURNING head_seq INTO o_run_seq;
        EXIT WHEN FOUND;
        INSERT INTO run_heads (run_id, head_seq) VALUES (p_run_id, 0) ON CONFLICT DO NOTHING;
    END LOOP;
    IF p_expected_head IS NOT NULL AND p_expected_head <> o_run_seq - 1 THEN
        RAISE EXCEPTION 'run % head is %, expected %', p_run_id, o_run_seq - 1, p_expected_head
            USING ERRCODE = 'WE409', DETAIL = (o_run_seq - 1)::text;
    END IF;
    INSERT INTO run_events (run_id, run_seq, event_id, step_id, engine_attempt_id,
        logical_attempt_id, event_type, event_data, idempotency_key, emitted_at,
        adapter_version, engine_run_ref, caused_by_signal_id, parent_event_id, schema_version)
    VALUES (p_run_id, o_run_seq, p_event_id, p_step_id, p_engine_attempt_id,
        p_logical_attempt_id, p_event_type, p_event_data, p_idempotency_key, p_emitted_at,
        p_adapter_version, p_engine_run_ref, p_caused_by_signal_id, p_parent_event_id, p_schema_version)
    ON CONFLICT (run_id, idempotency_key) DO NOTHING
    RETURNING persisted_at INTO o_persisted_at;
    IF FOUND THEN
        o_persisted := true;
        RETURN;
    END IF;
    UPDATE run_heads SET head_seq = head_seq - 1 WHERE run_id = p_run_id;
    SELECT e.run_seq, e.persisted_at INTO o_run_seq, o_persisted_at
    FROM run_events e WHERE e.run_id = p_run_id AND e.idempotency_key = p_idempotency_key;
    o_persisted := false;
END $$;

-- weft_run_delete is the retention path: it deletes every event of one run
-- and its head row, nothing else, and returns how many events it deleted.
-- The head is locked first so no append of the run is in flight.
CREATE FUNCTION weft_run_delete(p_run_id uuid) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    prev text := current_setting('weft.retention', true);
    n    bigint;
BEGIN
    PERFORM 1 FROM run_heads WHERE run_id = p_run_id FOR UPDATE;
    PERFORM set_config('weft.retention', 'on', true);
    DELETE FROM run_events WHERE run_id = p_run_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM set_config('weft.retention', coalesce(prev, ''), true);
    DELETE FROM run_heads WHERE run_id = p_run_id;
    RETURN n;
END $$;
