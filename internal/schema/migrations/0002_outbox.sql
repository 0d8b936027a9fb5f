-- The transactional outbox (pkg/outbox, docs/outbox.md).
--
-- A writer inserts rows in the same transaction as the events they carry;
-- the relay publishes committed rows to JetStream in id order per partition
-- and deletes them once acked. Relay wake-ups travel on the NOTIFY channel
-- weft_outbox (payload: the partition number), sent by outbox.EnqueueTx and
-- delivered at commit.

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
