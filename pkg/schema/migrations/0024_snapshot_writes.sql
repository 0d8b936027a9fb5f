-- A run's snapshot is rewritten at each of the projector's batches that
-- carries its events, about five times in a three-step run's life. An
-- update that changes no indexed column is heap-only (HOT: no entry in any
-- of the table's indexes, and much less WAL) only when the new version
-- fits on the old one's page; at the default fillfactor of 100 the pages
-- are full, and four updates in five wrote every index (BENCHMARKS.md).
-- A fillfactor of 50 keeps half of each new page free for the versions of
-- the rows on it; dead versions are pruned from the page when it is next
-- read. Pages written before keep their fill. The updates that change the
-- status (an index column) still write every index.
--
-- Those write an entry in each index whose predicate the row meets, and
-- the labels index had none: GIN indexes a NULL too, so every run without
-- labels (most) wrote one at each of them. The runs list filters by
-- containment (labels @> $1), which implies labels IS NOT NULL, so the
-- partial index serves it as the whole one did.
--
-- A storage parameter and an index are no format change: the rows stay
-- format 1.
ALTER TABLE run_snapshots SET (fillfactor = 50);

DROP INDEX run_snapshots_labels;
CREATE INDEX run_snapshots_labels ON run_snapshots USING gin (labels jsonb_path_ops)
    WHERE labels IS NOT NULL;
