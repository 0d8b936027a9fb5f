-- weft_events_append_new appends the events of many runs in two
-- statements, for a writer that knows each run's head and that every event
-- is new (the engine's batched rounds: eventlog.Store.EventsAppendNewBatch,
-- docs/event-log.md, "Appending many new events"). weft_event_append costs
-- two statements per event, and a statement's executor start-up on
-- run_events (its partition's four indexes and five CHECK constraints, set
-- up again for every statement) costs more than the row it inserts.
--
-- Per run, p_heads[i] must be at p_expected[i] (the compare-and-swap; else
-- WE409, DETAIL the run id); the heads are locked in array order. The
-- run's events, in array order, are numbered from there, gap-free, and
-- must carry exactly those numbers in p_run_seq (the caller has decided
-- from every event up to the head, and knows them). An event whose
-- idempotency key or event id is already in the log fails the call
-- (23505): nothing is deduplicated here. Every failure aborts the
-- transaction, so either all the events are written or none. Every event
-- is persisted at one time, read once the heads are locked (so after every
-- event of their runs before them), which the function returns.
CREATE FUNCTION weft_events_append_new(
    p_heads uuid[], p_expected bigint[],
    p_run_id uuid[], p_run_seq bigint[], p_event_id uuid[], p_step_id text[],
    p_engine_attempt_id text[], p_logical_attempt_id text[], p_event_type text[],
    p_event_data jsonb[], p_idempotency_key text[], p_emitted_at timestamptz[],
    p_adapter_version text[], p_engine_run_ref jsonb[], p_caused_by_signal_id text[],
    p_parent_event_id uuid[], p_schema_version smallint[])
RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
    n         bigint;
    moved     uuid;
    persisted timestamptz;
BEGIN
    UPDATE run_heads h SET head_seq = h.head_seq + x.n, updated_at = clock_timestamp()
    FROM (SELECT u.run_id, u.expected, (SELECT count(*) FROM unnest(p_run_id) AS r WHERE r = u.run_id) AS n
          FROM unnest(p_heads, p_expected) AS u(run_id, expected)) AS x
    WHERE h.run_id = x.run_id AND h.head_seq = x.expected;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> cardinality(p_heads) THEN
        SELECT u.run_id INTO moved FROM unnest(p_heads, p_expected) AS u(run_id, expected)
        LEFT JOIN run_heads h ON h.run_id = u.run_id
        WHERE h.head_seq IS DISTINCT FROM u.expected LIMIT 1;
        RAISE EXCEPTION 'run % head is not the expected one', moved
            USING ERRCODE = 'WE409', DETAIL = coalesce(moved::text, 'a run listed twice');
    END IF;
    persisted := clock_timestamp();
    INSERT INTO run_events (run_id, run_seq, event_id, step_id, engine_attempt_id,
        logical_attempt_id, event_type, event_data, idempotency_key, emitted_at, persisted_at,
        adapter_version, engine_run_ref, caused_by_signal_id, parent_event_id, schema_version)
    SELECT v.run_id, v.run_seq, v.event_id, v.step_id, v.engine_attempt_id, v.logical_attempt_id,
        v.event_type, v.event_data, v.idempotency_key, v.emitted_at, persisted,
        v.adapter_version, v.engine_run_ref, v.caused_by_signal_id, v.parent_event_id, v.schema_version
    FROM (SELECT e.*, x.expected + row_number() OVER (PARTITION BY e.run_id ORDER BY e.ord) AS numbered
          FROM unnest(p_run_id, p_run_seq, p_event_id, p_step_id, p_engine_attempt_id,
              p_logical_attempt_id, p_event_type, p_event_data, p_idempotency_key, p_emitted_at,
              p_adapter_version, p_engine_run_ref, p_caused_by_signal_id, p_parent_event_id,
              p_schema_version) WITH ORDINALITY
              AS e(run_id, run_seq, event_id, step_id, engine_attempt_id, logical_attempt_id,
                   event_type, event_data, idempotency_key, emitted_at, adapter_version,
                   engine_run_ref, caused_by_signal_id, parent_event_id, schema_version, ord)
          JOIN unnest(p_heads, p_expected) AS x(run_id, expected) ON x.run_id = e.run_id) AS v
    WHERE v.run_seq = v.numbered;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> cardinality(p_run_id) THEN
        RAISE EXCEPTION 'weft_events_append_new: % of % events carry their run''s next runSeqs', n, cardinality(p_run_id)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN persisted;
END $$;
