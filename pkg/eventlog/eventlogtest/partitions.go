package eventlogtest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
)

func testDefaultAndMonthlyPartitions(t *testing.T, l Log) {
	ctx := t.Context()
	now := time.Now()
	cases := map[string]string{
		runIDAt(t, now):                                         monthPartition(now),
		runIDAt(t, now.AddDate(0, -1, 0)):                       monthPartition(now.AddDate(0, -1, 0)),
		runIDAt(t, time.Date(2001, 2, 3, 0, 0, 0, 0, time.UTC)): "run_events_default",
		runIDAt(t, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)): "run_events_default",
	}
	for runID, partition := range cases {
		for _, name := range []string{"a", "b", "c", "b"} {
			_, err := l.appendOne(ctx, l.Pool, nil, event(t, runID, name))
			require.NoError(t, err)
		}
		_, err := l.appendOne(ctx, l.Pool, expect(2), event(t, runID, "d"))
		require.ErrorIs(t, err, eventlog.ErrConflict)
		res, err := l.appendOne(ctx, l.Pool, expect(3), event(t, runID, "d"))
		require.NoError(t, err)
		require.Equal(t, int64(4), res.RunSeq)
		requireRun(t, l, runID, 4)
		require.Equal(t, []string{partition}, partitionOf(t, l, runID))
	}
	fresh := events.NewRunID()
	_, err := l.appendOne(ctx, l.Pool, nil, event(t, fresh, "a"))
	require.NoError(t, err)
	require.NotEqual(t, []string{"run_events_default"}, partitionOf(t, l, fresh), "new runs land in a monthly partition")
}

func testPartitionsEnsureIdempotentAndConcurrent(t *testing.T, l Log) {
	ctx := t.Context()
	from := time.Date(2040, 1, 15, 12, 0, 0, 0, time.UTC)
	before := partitions(t, l)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = l.Store.PartitionsEnsure(ctx, from, 3) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, l.Store.PartitionsEnsure(ctx, from.AddDate(0, 1, 0), 3), "overlapping")
	// 00:30 on 1 May in UTC+1 is still April in UTC: nothing new.
	require.NoError(t, l.Store.PartitionsEnsure(ctx, time.Date(2040, 5, 1, 0, 30, 0, 0, time.FixedZone("", 3600)), 1))
	after := partitions(t, l)
	require.ElementsMatch(t, append(before, "run_events_204001", "run_events_204002", "run_events_204003", "run_events_204004"), after)
	require.Error(t, l.Store.PartitionsEnsure(ctx, from, 0))

	// Month bounds are exact, in UTC milliseconds.
	bounds := map[time.Time]string{
		time.Date(2039, 12, 31, 23, 59, 59, 999e6, time.UTC): "run_events_default",
		time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC):          "run_events_204001",
		time.Date(2040, 2, 29, 23, 59, 59, 999e6, time.UTC):  "run_events_204002",
		time.Date(2040, 3, 1, 0, 0, 0, 0, time.UTC):          "run_events_204003",
		time.Date(2040, 4, 30, 23, 59, 59, 999e6, time.UTC):  "run_events_204004",
		time.Date(2040, 5, 1, 0, 0, 0, 0, time.UTC):          "run_events_default",
	}
	for at, partition := range bounds {
		runID := runIDAt(t, at)
		_, err := l.appendOne(ctx, l.Pool, nil, event(t, runID, "a"))
		require.NoError(t, err)
		require.Equal(t, []string{partition}, partitionOf(t, l, runID), "run at %s", at)
	}
	requirePartitionsGuarded(t, l)
}

// requirePartitionsGuarded checks every partition has the unique event_id
// index and both append-only triggers.
func requirePartitionsGuarded(t *testing.T, l Log) {
	t.Helper()
	for _, p := range partitions(t, l) {
		var unique bool
		require.NoError(t, l.Pool.QueryRow(t.Context(), `
			SELECT i.indisunique FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE i.indrelid = $1::regclass AND c.relname = $2
			  AND i.indkey::text = (SELECT attnum::text FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'event_id')`,
			p, p+"_event_id").Scan(&unique), p)
		require.True(t, unique, p)
		rows, err := l.Pool.Query(t.Context(), `SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass ORDER BY 1`, p)
		require.NoError(t, err)
		triggers, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, []string{"run_events_append_only", "run_events_no_truncate"}, triggers, p)
	}
}

func testPartitionsEnsureMovesDefaultRows(t *testing.T, l Log) {
	ctx := t.Context()
	at := time.Date(2050, 6, 10, 0, 0, 0, 0, time.UTC)
	runID := runIDAt(t, at)
	for _, name := range []string{"a", "b", "c"} {
		_, err := l.appendOne(ctx, l.Pool, nil, event(t, runID, name))
		require.NoError(t, err)
	}
	require.Equal(t, []string{"run_events_default"}, partitionOf(t, l, runID))
	before := requireRun(t, l, runID, 3)

	require.NoError(t, l.Store.PartitionsEnsure(ctx, at, 1))
	require.Equal(t, []string{"run_events_205006"}, partitionOf(t, l, runID))
	require.Equal(t, before, requireRun(t, l, runID, 3), "moved unchanged")

	res, err := l.appendOne(ctx, l.Pool, nil, event(t, runID, "b"))
	require.NoError(t, err)
	require.Equal(t, int64(2), res.RunSeq)
	require.True(t, res.Idempotent)
	res, err = l.appendOne(ctx, l.Pool, expect(3), event(t, runID, "d"))
	require.NoError(t, err)
	require.Equal(t, int64(4), res.RunSeq)
	require.Equal(t, []string{"run_events_205006"}, partitionOf(t, l, runID))

	dup := event(t, sibling(t, runID), "x")
	dup.EventID = before[0].EventID
	_, err = l.appendOne(ctx, l.Pool, nil, dup)
	require.ErrorIs(t, err, eventlog.ErrDuplicateEventID)
	_, err = l.Pool.Exec(ctx, `UPDATE run_events_205006 SET event_type = 'Changed'`)
	requireCode(t, err, "WE405")
	requirePartitionsGuarded(t, l)
}

// testPartitionsEnsureDuringAppends creates a month's partition while
// writers append to runs of that month, some of whose events are already in
// the default partition. Nothing may be lost, duplicated or refused.
func testPartitionsEnsureDuringAppends(t *testing.T, l Log) {
	ctx := t.Context()
	const runs, perRun = 8, 30
	at := time.Date(2060, 3, 10, 0, 0, 0, 0, time.UTC)
	runIDs := make([]string, runs)
	for i := range runIDs {
		runIDs[i] = runIDAt(t, at)
	}
	var out outcomes
	var appended atomic.Int64
	started := make(chan struct{})
	var once sync.Once
	var ensureErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		<-started
		ensureErr = l.Store.PartitionsEnsure(ctx, at, 1)
	})
	for _, runID := range runIDs {
		wg.Go(func() {
			for i := range perRun {
				name := fmt.Sprint("e", i)
				out.appendNamed(ctx, l, runID, name)
				if i > 0 { // a redelivery of the previous event
					prev := fmt.Sprint("e", i-1)
					out.appendNamed(ctx, l, runID, prev)
				}
				if appended.Add(1) == runs*2 {
					once.Do(func() { close(started) })
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, ensureErr)
	names := make([]string, perRun)
	for i := range names {
		names[i] = fmt.Sprint("e", i)
	}
	for _, runID := range runIDs {
		out.check(t, l, runID, names)
		require.Equal(t, []string{"run_events_206003"}, partitionOf(t, l, runID))
	}
}

// partitions lists the partitions of run_events.
func partitions(t *testing.T, l Log) []string {
	t.Helper()
	rows, err := l.Pool.Query(t.Context(),
		`SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'run_events'::regclass`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}
