-- The outbox's primary key becomes (partition, id), replacing both the key
-- on id and outbox_partition_id. The relay reads a partition's rows in id
-- order and settles them by partition and id; with the key on id beside
-- the partition's index, the planner could take either for a claim, and on
-- a plan cached while the outbox looked empty it walked the key on id,
-- reading every partition's rows to find one partition's (BENCHMARKS.md,
-- ninth session). One index now serves the claim, the settlements and
-- uniqueness, and each enqueued row updates one index fewer.
--
-- The outbox holds the rows not yet relayed, a handful in normal
-- operation, so rebuilding the key holds its writers briefly.
ALTER TABLE outbox DROP CONSTRAINT outbox_pkey, ADD CONSTRAINT outbox_pkey PRIMARY KEY (partition, id);
DROP INDEX outbox_partition_id;
