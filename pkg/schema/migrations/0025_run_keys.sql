-- Run concurrency keys (docs/flow-control.md; the engine's admission,
-- internal/policy/admission keys.go). A slot is one limit of one plan in
-- one environment and, but under GROUP_ROUND_ROBIN, one value of its key.
--
-- engine_run_keys holds the slots each started run holds, with its group
-- (below): admission counts a slot's holders here, and a run's end
-- deletes its rows and wakes its slots.
CREATE TABLE engine_run_keys (
    run_id    uuid NOT NULL,
    slot      text NOT NULL,
    key_group text NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, slot)
);
CREATE INDEX engine_run_keys_slot ON engine_run_keys (slot);

-- A run that found a slot full waits on that one slot, in engine_runs:
-- key_slot names it, key_group is its turn in the queue (its value of the
-- plan's fairness key, its tenant by default, or of the limit's key under
-- GROUP_ROUND_ROBIN) and key_weight how many runs of its group a visit
-- starts, key_limit the limit it evaluated, priority its start's. The
-- queue of a slot is its waiters in this index's order: higher priorities
-- first, then (within one) in turn across groups, then first come, first
-- served.
ALTER TABLE engine_runs
    ADD COLUMN key_slot  text,
    ADD COLUMN key_group text NOT NULL DEFAULT '',
    ADD COLUMN key_weight integer NOT NULL DEFAULT 1,
    ADD COLUMN key_limit integer NOT NULL DEFAULT 0,
    ADD COLUMN priority  smallint NOT NULL DEFAULT 3;
CREATE INDEX engine_runs_key_queue ON engine_runs (key_slot, priority DESC, key_group, approved_at, run_id)
    WHERE key_slot IS NOT NULL;

-- An environment's queue (the engine's run-queue reconciler) takes higher
-- priorities first too: its index orders by priority, then approval.
DROP INDEX engine_runs_queued;
CREATE INDEX engine_runs_queued ON engine_runs (priority DESC, approved_at, run_id)
    WHERE queued_at IS NOT NULL AND started_at IS NULL;

-- A run that waits on a slot waits for a wake, not a sweep: leaving the
-- waiters out of the sweep's index keeps its walk at the runs in flight,
-- however many runs wait on a key (its scan filters on key_slot IS NULL).
DROP INDEX engine_runs_sweep;
CREATE INDEX engine_runs_sweep ON engine_runs (swept_at NULLS FIRST, run_id) WHERE key_slot IS NULL;

-- A slot some run left, to offer its waiters a start. The run's end
-- writes it in the transaction that ends the run; an engine deletes it
-- once it has offered the slot's room (so a wake outlives the crash of
-- the engine that was serving it), or keeps it, with a newer woken_at,
-- when another run left meanwhile. A queue's turn is the group it last
-- started runs of and how many of them in that visit (a visit starts as
-- many as the group's weight); the row lives while the queue has waiters, and, under
-- GROUP_ROUND_ROBIN, while its slot's runs start.
CREATE TABLE engine_key_wakes (
    slot     text        PRIMARY KEY,
    woken_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- A schedule's or a trigger's runs start with its priority (0: the
-- default, 3).
ALTER TABLE schedules ADD COLUMN priority smallint NOT NULL DEFAULT 0;
ALTER TABLE triggers ADD COLUMN priority smallint NOT NULL DEFAULT 0;

CREATE TABLE engine_key_turns (
    slot      text    PRIMARY KEY,
    key_group text    NOT NULL,
    used      integer NOT NULL DEFAULT 0
);
