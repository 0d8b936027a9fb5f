-- The transactional outbox (pkg/outbox, docs/outbox.md).
--
-- A writer inserts rows in the same transaction as the events they carry;
-- the relay publishes committed rows to JetStream in id order per partition
-- and deletes them once acked. Relay wake-ups travel on the NOTIFY channel
-- weft_outbox (payload: the partition number), sent by outbox.EnqueueTx
-- while the partition's relay is idle (outbox_wake, below) and delivered at
-- commit.

CREATE TABLE outbox (
    id              bigserial   PRIMARY KEY,
    -- hash(order_key) mod outbox.Partitions; one relay owns a partition at a time.
    partition       integer     NOT NULL CHECK (partition >= 0),
    -- Messages with one order_key (a run id) reach the bus in id order.
    order_key       text        NOT NULL,
    subject         text        NOT NULL CHECK (subject <> ''),
    -- A JSON object of header name to value.
    headers         jsonb       NOT NULL DEFAULT '{}'::jsonb,
    payload         bytea       NOT NULL,
    -- Sent as Nats-Msg-Id: deterministic (an event id), never random.
    dedupe_id       text        NOT NULL CHECK (dedupe_id <> ''),
    -- Publish failures charged to this row so far.
    attempts        integer     NOT NULL DEFAULT 0,
    -- Set after a failure: the row, and every later row of its order_key,
    -- waits until then.
    next_attempt_at timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- "The next rows of my partition in id order": the relay's claim.
CREATE INDEX outbox_partition_id ON outbox (partition, id);

-- The rows in backoff, few in normal operation: the claim's "is an earlier
-- row of this order_key waiting?" probe and the relay's next-due lookup.
CREATE INDEX outbox_backoff ON outbox (partition, order_key, id)
    WHERE next_attempt_at IS NOT NULL;

-- Rows that failed MaxAttempts times, moved here in one transaction with
-- their deletion from outbox. An operator inspects them and may move one
-- back into outbox (docs/outbox.md, "Dead letters").
CREATE TABLE outbox_dead (
    id              bigint      PRIMARY KEY, -- the row's id in outbox
    partition       integer     NOT NULL,
    order_key       text        NOT NULL,
    subject         text        NOT NULL,
    headers         jsonb       NOT NULL,
    payload         bytea       NOT NULL,
    dedupe_id       text        NOT NULL,
    attempts        integer     NOT NULL,
    next_attempt_at timestamptz,
    last_error      text        NOT NULL,
    created_at      timestamptz NOT NULL,
    failed_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX outbox_dead_failed_at ON outbox_dead (failed_at);

-- Waking the relay (docs/outbox.md, "Waking the relay"). A NOTIFY in a
-- committing transaction takes a database-wide lock that it holds through
-- the commit's WAL flush, so notifying on every enqueue serialises every
-- writer's commit. Writers therefore notify only while the partition's relay
-- is idle and has said so (armed). UNLOGGED: the state is not worth a WAL
-- record, and after a crash the table is empty, which writers read as
-- "notify" (the safe default).
CREATE UNLOGGED TABLE outbox_wake (
    partition integer PRIMARY KEY CHECK (partition >= 0),
    -- true: the relay serving this partition found nothing to do and waits
    -- for a notification; false: it is claiming and needs none.
    armed     boolean NOT NULL
);

-- weft_outbox_wake is called by outbox.EnqueueTx with the partitions it
-- wrote to. Per partition it first tries a shared advisory lock held to the
-- end of the transaction (class 0x776f7877, "woxw"). A relay that arms the
-- partition then takes the same lock exclusively (weft_outbox_barrier), so
-- it waits for every writer holding it, which may have checked before the
-- arming, and claims again after they commit. With the lock, the writer
-- checks the partition's state in a statement with a fresh snapshot (a
-- volatile function under READ COMMITTED) and notifies if the relay is armed
-- or its state unknown. Without it (a relay is arming right now) the writer
-- notifies anyway, and it never waits. Under REPEATABLE READ or SERIALIZABLE
-- the snapshot is the transaction's and may predate an arming, so it always
-- notifies.
CREATE FUNCTION weft_outbox_wake(parts int[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    quiet int[]; -- partitions that provably need no notification
BEGIN
    SELECT coalesce(array_agg(p), '{}') INTO quiet
    FROM unnest(parts) AS p
    WHERE pg_try_advisory_xact_lock_shared(x'776f7877'::int, p);
    IF current_setting('transaction_isolation') = 'read committed' THEN
        SELECT coalesce(array_agg(w.partition), '{}') INTO quiet
        FROM outbox_wake w WHERE w.partition = ANY (quiet) AND NOT w.armed;
    ELSE
        quiet := '{}';
    END IF;
    PERFORM pg_notify('weft_outbox', p::text) FROM unnest(parts) AS p WHERE NOT p = ANY (quiet);
END $$;

-- weft_outbox_barrier waits until no writer holds the partition's shared
-- wake lock, for at most wait_ms, and reports whether it got there. The
-- relay calls it after arming the partition, in a statement of its own.
CREATE FUNCTION weft_outbox_barrier(p int, wait_ms int) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('lock_timeout', wait_ms || 'ms', true);
    PERFORM pg_advisory_xact_lock(x'776f7877'::int, p);
    RETURN true;
EXCEPTION WHEN lock_not_available THEN
    RETURN false;
END $$;
