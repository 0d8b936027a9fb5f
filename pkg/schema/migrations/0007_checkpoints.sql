-- Run checkpoints (services/engine, docs/checkpoints.md): the engine's
-- folded state of a run (decide.State) as of covered_seq, so that a round
-- loads the checkpoint and only the events after it instead of the whole
-- log. One row per run, the latest checkpoint; a round rewrites it, in its
-- own transaction, when enough history has accumulated since
-- covered_seq. A checkpoint is derived data: the event log stays the only
-- source of truth, and a run without a row (or with a row this build
-- cannot read) is folded from runSeq 1.
--
--   checkpoint_version  1 for a run's first checkpoint, one more per
--                       rewrite: the value the cas-required ownership
--                       mode compares, with run_heads.head_seq, before a
--                       round commits.
--   format_version      the record's format (decide.CheckpointFormat);
--                       a reader ignores formats newer than its own, and
--                       never overwrites them.
--   covered_seq         the runSeq of the last event the state includes.
--   state               the record (JSON, docs/persisted-format.md).
--
-- Every write of a row holds the run's head row lock (run_heads, FOR
-- UPDATE, taken by the round's append or its ownership check), so a reader
-- holding that lock sees the latest checkpoint. Rows live as long as their
-- run: the foreign key deletes them with the head row when retention
-- deletes the run (weft_run_delete).
CREATE TABLE run_checkpoints (
    run_id             uuid        PRIMARY KEY REFERENCES run_heads (run_id) ON DELETE CASCADE,
    checkpoint_version bigint      NOT NULL CHECK (checkpoint_version > 0),
    format_version     smallint    NOT NULL CHECK (format_version > 0),
    covered_seq        bigint      NOT NULL CHECK (covered_seq > 0),
    state              jsonb       NOT NULL,
    written_at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
