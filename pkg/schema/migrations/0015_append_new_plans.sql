-- weft_events_append_new (0010) moves the heads of the runs it is given
-- with an UPDATE that joins its arrays with run_heads, and the engine runs
-- it on generic plans. Each of those statements touches a few rows by
-- primary key; but a plan is only as good as the table's statistics, and
-- run_heads grows faster than autovacuum analyzes it while a fresh
-- database fills: the generic plan then hashed a seq scan of every head
-- (1.7 ms a call at 5,000 runs, against 0.4 ms through the key, and
-- growing with the table). Without hash and merge joins the planner has
-- only the nested loop over the arrays left, probing run_heads' key once
-- per run, whatever the statistics say. The INSERT's join of its two
-- arrays is small enough for a nested loop (a batch's events by its runs).
ALTER FUNCTION weft_events_append_new(uuid[], bigint[], uuid[], bigint[], uuid[], text[], text[], text[],
    text[], jsonb[], text[], timestamptz[], text[], jsonb[], text[], uuid[], smallint[])
    SET enable_hashjoin = off SET enable_mergejoin = off;
