package eventlogtest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
)

func testAppendAssignsGapFreeRunSeq(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	head, err := l.Store.RunHead(ctx, runID)
	require.NoError(t, err)
	require.Zero(t, head, "an unknown run's head")
	evs, err := l.Store.EventsFetchAfter(ctx, runID, 0, 0)
	require.NoError(t, err)
	require.Empty(t, evs)

	for i := range 5 {
		res, err := l.appendOne(ctx, l.Pool, nil, event(t, runID, fmt.Sprint("e", i)))
		require.NoError(t, err)
		require.Equal(t, eventlog.AppendResult{RunSeq: int64(i + 1), Persisted: true, PersistedAt: res.PersistedAt}, res)
		require.False(t, res.PersistedAt.IsZero())
		require.Equal(t, time.UTC, res.PersistedAt.Location())
	}
	requireRun(t, l, runID, 5)
}

func testDuplicateKeyReturnsExistingRunSeq(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	first := event(t, runID, "a")
	r1, err := l.appendOne(ctx, l.Pool, nil, first)
	require.NoError(t, err)
	_, err = l.appendOne(ctx, l.Pool, nil, event(t, runID, "b"))
	require.NoError(t, err)

	// Same key, another event id and payload: a redelivery of the same fact.
	dup := event(t, runID, "a")
	dup.EventData = json.RawMessage(`{"other":true}`)
	r3, err := l.appendOne(ctx, l.Pool, nil, dup)
	require.NoError(t, err)
	require.Equal(t, eventlog.AppendResult{RunSeq: 1, Idempotent: true, Persisted: false, PersistedAt: r1.PersistedAt}, r3)

	// The same inside a transaction, and with the original event itself.
	tx := begin(t, l)
	r4, err := l.appendOne(ctx, tx, nil, first)
	require.NoError(t, err)
	require.Equal(t, r3, r4)
	require.NoError(t, tx.Commit(ctx))

	evs := requireRun(t, l, runID, 2)
	require.Equal(t, first.EventID, evs[0].EventID, "the stored event is the first one")
	require.JSONEq(t, string(first.EventData), string(evs[0].EventData))
}

func testRoundTripsEveryField(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	parent := event(t, runID, "parent")
	_, err := l.appendOne(ctx, l.Pool, nil, parent)
	require.NoError(t, err)
	ev := event(t, runID, "child")
	ev.EngineAttemptID = "3"
	ev.LogicalAttemptID = "2"
	ev.EventData = json.RawMessage(`{"b": [1, 2], "a": {"x": null}}`)
	ev.AdapterVersion = "weft/0.1"
	ev.EngineRunRef = json.RawMessage(`{"stream": "weft.events", "seq": 7}`)
	ev.CausedBySignalID = "sig-42"
	ev.ParentEventID = parent.EventID
	ev.RunSeq, ev.PersistedAt = 99, time.Unix(1, 0) // assigned by the log: ignored
	res, err := l.appendOne(ctx, l.Pool, nil, ev)
	require.NoError(t, err)

	got := requireRun(t, l, runID, 2)[1]
	require.JSONEq(t, string(ev.EventData), string(got.EventData))
	require.JSONEq(t, string(ev.EngineRunRef), string(got.EngineRunRef))
	want := ev
	want.RunSeq, want.PersistedAt = res.RunSeq, res.PersistedAt
	want.EventData, want.EngineRunRef = got.EventData, got.EngineRunRef
	require.Equal(t, want, got)

	// Absent optional fields come back absent; schema version 0 means current.
	bare := events.Event{RunID: runID, EventID: event(t, runID, "x").EventID, EventType: "Custom",
		IdempotencyKey: key("bare"), EmittedAt: time.Now().UTC().Truncate(time.Microsecond)}
	res, err = l.appendOne(ctx, l.Pool, nil, bare)
	require.NoError(t, err)
	got = requireRun(t, l, runID, 3)[2]
	want = bare
	want.SchemaVersion, want.RunSeq, want.PersistedAt = events.SchemaVersion, res.RunSeq, res.PersistedAt
	require.Equal(t, want, got)
}

func testFetchAfterWatermark(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	const n = eventlog.DefaultFetchLimit + 1
	evs := make([]events.Event, n)
	for i := range evs {
		evs[i] = event(t, runID, fmt.Sprint("e", i))
	}
	require.NoError(t, pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
		_, err := l.append(ctx, tx, nil, evs...)
		return err
	}))

	page, err := l.Store.EventsFetchAfter(ctx, runID, 0, 0)
	require.NoError(t, err)
	require.Len(t, page, eventlog.DefaultFetchLimit, "limit 0 means the default")
	for i, ev := range page {
		require.Equal(t, int64(i+1), ev.RunSeq)
		require.Equal(t, evs[i].EventID, ev.EventID)
		require.JSONEq(t, string(evs[i].EventData), string(ev.EventData))
	}
	page, err = l.Store.EventsFetchAfter(ctx, runID, page[len(page)-1].RunSeq, -1)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, int64(n), page[0].RunSeq)

	page, err = l.Store.EventsFetchAfter(ctx, runID, 5, 3)
	require.NoError(t, err)
	require.Equal(t, []int64{6, 7, 8}, seqs(page))

	other, unknown := events.NewRunID(), events.NewRunID()
	_, err = l.appendOne(ctx, l.Pool, nil, event(t, other, "x"))
	require.NoError(t, err)
	byRun, err := l.Store.EventsFetchRunsTx(ctx, l.Pool, []string{runID, other, unknown})
	require.NoError(t, err)
	require.Len(t, byRun[runID], n, "whole runs, beyond the default page")
	require.Equal(t, []int64{1}, seqs(byRun[other]))
	require.NotContains(t, byRun, unknown, "a run with no events has no key")
	for i, ev := range byRun[runID] {
		require.Equal(t, int64(i+1), ev.RunSeq)
	}
	_, err = l.Store.EventsFetchRunsTx(ctx, l.Pool, []string{"x"})
	require.ErrorIs(t, err, eventlog.ErrInvalidRunID)

	page, err = l.Store.EventsFetchAfter(ctx, runID, n, 10)
	require.NoError(t, err)
	require.Empty(t, page, "nothing after the head")

	_, err = l.Store.EventsFetchAfter(ctx, "not-a-uuid", 0, 0)
	require.ErrorIs(t, err, eventlog.ErrInvalidRunID)
	_, err = l.Store.RunHead(ctx, "01890A5D-AC96-774B-BCCE-B302099A8057")
	require.ErrorIs(t, err, eventlog.ErrInvalidRunID, "upper case is not canonical")
}

func testCompareAndSwap(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	res, err := l.appendOne(ctx, l.Pool, expect(0), event(t, runID, "a"))
	require.NoError(t, err)
	require.Equal(t, int64(1), res.RunSeq)
	res, err = l.appendOne(ctx, l.Pool, expect(1), event(t, runID, "b"))
	require.NoError(t, err)
	require.Equal(t, int64(2), res.RunSeq)

	for _, stale := range []int64{0, 1, 3} {
		_, err = l.appendOne(ctx, l.Pool, expect(stale), event(t, runID, "c"))
		require.ErrorIs(t, err, eventlog.ErrConflict)
		var conflict *eventlog.ConflictError
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, eventlog.ConflictError{RunID: runID, Expected: stale, Head: 2}, *conflict)
	}
	// The head check comes first, even for a duplicate key.
	_, err = l.appendOne(ctx, l.Pool, expect(1), event(t, runID, "a"))
	require.ErrorIs(t, err, eventlog.ErrConflict)
	// A conflict inside a transaction aborts it.
	tx := begin(t, l)
	_, err = l.appendOne(ctx, tx, expect(7), event(t, runID, "d"))
	require.ErrorIs(t, err, eventlog.ErrConflict)
	_, err = tx.Exec(ctx, "SELECT 1")
	requireCode(t, err, "25P02")
	require.NoError(t, tx.Rollback(ctx))

	requireRun(t, l, runID, 2)
	res, err = l.appendOne(ctx, l.Pool, expect(2), event(t, runID, "c"))
	require.NoError(t, err)
	require.Equal(t, int64(3), res.RunSeq)
}

func testBatchAppend(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	_, err := l.appendOne(ctx, l.Pool, nil, event(t, runID, "a"))
	require.NoError(t, err)
	zero := int64(0)
	one := int64(1)
	tx := begin(t, l)
	res, err := l.append(ctx, tx, &one, event(t, runID, "b"), event(t, runID, "a"), event(t, runID, "c"), event(t, runID, "b"))
	require.NoError(t, err)
	require.Equal(t, []int64{2, 1, 3, 2}, resultSeqs(res))
	require.Equal(t, []bool{true, false, true, false}, []bool{res[0].Persisted, res[1].Persisted, res[2].Persisted, res[3].Persisted})
	require.Equal(t, []bool{false, true, false, true}, []bool{res[0].Idempotent, res[1].Idempotent, res[2].Idempotent, res[3].Idempotent})

	// The transaction sees its own appends; nothing is visible outside yet.
	head, err := l.Store.RunHeadTx(ctx, tx, runID)
	require.NoError(t, err)
	require.Equal(t, int64(3), head)
	inTx, err := l.Store.EventsFetchAfterTx(ctx, tx, runID, 1, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 3}, seqs(inTx))
	requireRun(t, l, runID, 1)
	require.NoError(t, tx.Commit(ctx))
	requireRun(t, l, runID, 3)

	// Empty batch: a no-op, whatever the expected head.
	require.NoError(t, pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
		res, err := l.append(ctx, tx, &zero)
		require.Empty(t, res)
		return err
	}))
	requireRun(t, l, runID, 3)
}

func testBatchCompareAndSwapConflict(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	zero := int64(0)
	require.NoError(t, pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
		_, err := l.append(ctx, tx, &zero, event(t, runID, "a"), event(t, runID, "b"))
		return err
	}))
	for _, stale := range []int64{0, 1, 5} {
		tx := begin(t, l)
		_, err := l.append(ctx, tx, &stale, event(t, runID, "c"), event(t, runID, "d"), event(t, runID, "e"))
		require.ErrorIs(t, err, eventlog.ErrConflict)
		_, err = tx.Exec(ctx, "SELECT 1")
		requireCode(t, err, "25P02") // the caller's transaction is aborted
		require.NoError(t, tx.Rollback(ctx))
	}
	requireRun(t, l, runID, 2)
}

func testRollbackLeavesNoGap(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	_, err := l.appendOne(ctx, l.Pool, nil, event(t, runID, "a"))
	require.NoError(t, err)

	tx := begin(t, l)
	res, err := l.appendOne(ctx, tx, nil, event(t, runID, "b"))
	require.NoError(t, err)
	require.Equal(t, int64(2), res.RunSeq)
	_, err = l.append(ctx, tx, nil, event(t, runID, "c"), event(t, runID, "d"))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	requireRun(t, l, runID, 1)

	b := event(t, runID, "b")
	res, err = l.appendOne(ctx, l.Pool, nil, b)
	require.NoError(t, err)
	require.Equal(t, eventlog.AppendResult{RunSeq: 2, Persisted: true, PersistedAt: res.PersistedAt}, res,
		"the rolled-back key is free again and runSeq 2 is reused")
	require.Equal(t, b.EventID, requireRun(t, l, runID, 2)[1].EventID)

	// A brand-new run rolled back leaves no head behind.
	other := events.NewRunID()
	tx = begin(t, l)
	_, err = l.appendOne(ctx, tx, nil, event(t, other, "a"))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	requireRun(t, l, other, 0)
}

func seqs(evs []events.Event) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.RunSeq
	}
	return out
}

func resultSeqs(res []eventlog.AppendResult) []int64 {
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = r.RunSeq
	}
	return out
}

// testAppendManyAcrossRuns: one call appends parts of several runs, and
// chained parts of one run, in one round trip; a stale head in any part
// writes nothing of any part.
func testAppendManyAcrossRuns(t *testing.T, l Log) {
	ctx := t.Context()
	r1, r2 := events.NewRunID(), events.NewRunID()
	zero, two := int64(0), int64(2)
	var res [][]eventlog.AppendResult
	require.NoError(t, pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
		var err error
		res, err = l.appendMany(ctx, tx, []eventlog.RunAppend{
			{ExpectedHead: &zero, Events: []events.Event{event(t, r1, "a"), event(t, r1, "b")}},
			{ExpectedHead: &zero, Events: []events.Event{event(t, r2, "a")}},
			{ExpectedHead: &two, Events: []events.Event{event(t, r1, "c")}}, // after the first part
			{Events: []events.Event{event(t, r2, "a")}},                     // a duplicate key
		})
		return err
	}))
	require.Equal(t, []int64{1, 2}, []int64{res[0][0].RunSeq, res[0][1].RunSeq})
	require.Equal(t, int64(1), res[1][0].RunSeq)
	require.Equal(t, int64(3), res[2][0].RunSeq)
	require.True(t, res[3][0].Idempotent)
	require.Equal(t, int64(1), res[3][0].RunSeq, "the duplicate returns the existing runSeq")
	requireRun(t, l, r1, 3)
	requireRun(t, l, r2, 1)

	tx := begin(t, l)
	three := int64(3)
	_, err := l.appendMany(ctx, tx, []eventlog.RunAppend{
		{ExpectedHead: &three, Events: []events.Event{event(t, r1, "d")}},
		{ExpectedHead: &zero, Events: []events.Event{event(t, r2, "b")}}, // stale
	})
	require.ErrorIs(t, err, eventlog.ErrConflict)
	require.NoError(t, tx.Rollback(ctx))
	requireRun(t, l, r1, 3)
	requireRun(t, l, r2, 1)
}
