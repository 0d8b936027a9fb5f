-- The engines that are running, for dividing the runs' partitions among
-- them (services/engine, docs/scaling.md "Partitioned engines").
--
-- Each engine upserts its row every second or so (heartbeat_at) and
-- deletes it when it stops. The engines whose heartbeat is younger than
-- the partition lease are the members; each computes the same division of
-- the partitions from the same members (a bounded-load rendezvous hash),
-- and consumes its share. A row older than the lease is a dead engine's:
-- its partitions move, and the next heartbeat of any engine deletes the
-- row once it is ten leases old. The database's clock decides, so the
-- engines' clocks need not agree.
CREATE TABLE engine_members (
    engine_id    text        PRIMARY KEY,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);
