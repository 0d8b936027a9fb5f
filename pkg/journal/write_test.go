package journal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/tracing"
	"github.com/weftrun/weft/pkg/weftest"
)

func traced(ctx context.Context, b byte) context.Context {
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{b}, SpanID: trace.SpanID{b}, TraceFlags: trace.FlagsSampled}))
}

// startedRun returns a journal over a fresh database holding one run,
// whose RunStarted is its first event.
func startedRun(t *testing.T) (*weftest.DB, *journal.Journal, string) {
	t.Helper()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	runID := events.NewRunID()
	_, err := eventlogtest.Append(t.Context(), j, db.Pool, nil, newEvent(t, runID, "", events.RunStarted))
	require.NoError(t, err)
	return db, j, runID
}

// A read-then-write transaction on a pipetx.Tx costs the caller's two
// round trips plus nothing: BEGIN with the caller's read, the appends of
// two runs with the caller's own write, the outbox rows with COMMIT. Each
// persisted event gets one row with its runSeq and its own request's
// trace; a duplicate key gets none.
func TestWriteSharesTheCallersRoundTrips(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	pool, calls := db.CountedPool(t)
	j := journal.New(eventlog.New(pool))
	ctx := t.Context()
	runA, runB := events.NewRunID(), events.NewRunID()
	first := newEvent(t, runB, "a", events.StepStarted)
	_, err := eventlogtest.Append(ctx, j, pool, nil, first)
	require.NoError(t, err)

	before := calls.N()
	var pa, pb *journal.Appended
	err = pipetx.BeginFunc(ctx, pool, nil, func(tx *pipetx.Tx) error {
		w := j.Begin(tx)
		var n int
		w.Batch().Queue(`SELECT count(*) FROM outbox`).QueryRow(func(r pgx.Row) error { return r.Scan(&n) })
		if err := w.Flush(ctx); err != nil {
			return err
		}
		require.Equal(t, 1, n)
		zero := int64(0)
		var err error
		if pa, err = w.Append(traced(ctx, 1), &zero, newEvent(t, runA, "", events.RunStarted), newEvent(t, runA, "a", events.StepScheduled)); err != nil {
			return err
		}
		if pb, err = w.Append(ctx, nil, newEvent(t, runB, "a", events.StepStarted)); err != nil { // first's key: a duplicate
			return err
		}
		w.Batch().Queue(`SELECT 1`)
		if err := w.Flush(ctx); err != nil {
			return err
		}
		require.Equal(t, []int64{1, 2}, []int64{pa.Results()[0].RunSeq, pa.Results()[1].RunSeq})
		require.True(t, pb.Results()[0].Idempotent)
		return w.Commit(traced(ctx, 2))
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls.N()-before)

	rows := outboxRows(t, db.Pool)
	require.Len(t, rows, 2, "first's row, then runA's batch of two; none for the duplicate")
	want := tracing.InjectHeaders(traced(ctx, 1), nil)[tracing.HeaderTraceparent]
	for i, ev := range sent(t, rows[1]) {
		require.Equal(t, pa.Results()[i].RunSeq, ev.RunSeq)
		require.Equal(t, pa.Results()[i].PersistedAt, ev.PersistedAt)
	}
	require.Equal(t, want, rows[1].Headers[tracing.HeaderTraceparent], "the trace of the append's request, not the commit's")
	require.Empty(t, rows[0].Headers[tracing.HeaderTraceparent])
}

// Run is a transaction of its own: two round trips, BEGIN with the
// appends and COMMIT with the outbox rows, the Commit Run makes when fn
// leaves it; a Write rolled back, or whose fn fails, leaves nothing.
func TestRunIsTwoRoundTrips(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	pool, calls := db.CountedPool(t)
	j := journal.New(eventlog.New(pool))
	ctx := t.Context()
	runID := events.NewRunID()

	before := calls.N()
	res, err := eventlogtest.Append(ctx, j, pool, nil, newEvent(t, runID, "", events.RunStarted), newEvent(t, runID, "a", events.StepScheduled))
	require.NoError(t, err)
	require.Len(t, res, 2)
	require.Equal(t, 2, calls.N()-before)

	before = calls.N()
	err = j.Run(ctx, pool, func(w *journal.Write) error {
		_, err := w.Append(ctx, nil, newEvent(t, runID, "b", events.StepScheduled))
		if err != nil {
			return err
		}
		return w.Flush(ctx) // Run commits
	})
	require.NoError(t, err)
	require.Equal(t, 2, calls.N()-before)
	require.Len(t, outboxRows(t, db.Pool), 2, "committed by Run, with the appended event's row")

	err = j.Run(ctx, pool, func(w *journal.Write) error {
		_, err := w.Append(ctx, nil, newEvent(t, runID, "c", events.StepScheduled))
		require.NoError(t, err)
		require.NoError(t, w.Flush(ctx))
		require.NoError(t, w.Rollback(ctx))
		require.NoError(t, w.Rollback(ctx), "again: a no-op")
		require.ErrorIs(t, w.Commit(ctx), journal.ErrDone)
		return nil
	})
	require.NoError(t, err)
	boom := errors.New("boom")
	err = j.Run(ctx, pool, func(w *journal.Write) error {
		_, err := w.Append(ctx, nil, newEvent(t, runID, "d", events.StepScheduled))
		require.NoError(t, err)
		require.NoError(t, w.Flush(ctx))
		return boom
	})
	require.ErrorIs(t, err, boom)
	head, err := eventlog.New(db.Pool).RunHead(ctx, runID)
	require.NoError(t, err)
	require.Equal(t, int64(3), head)
	require.Len(t, outboxRows(t, db.Pool), 2, "nothing of the rolled-back or failed ones")
}

// A failure of the round trip that carries Run's COMMIT is a
// *pipetx.CommitError; one of an earlier round trip is not, and neither
// commits anything.
func TestRunTellsACommitFailure(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	ctx := t.Context()
	runID := events.NewRunID()
	for name, flush := range map[string]bool{"in the commit": false, "before it": true} {
		err := j.Run(ctx, db.Pool, func(w *journal.Write) error {
			_, err := w.Append(ctx, nil, newEvent(t, runID, name, events.StepScheduled))
			require.NoError(t, err)
			require.NoError(t, w.Flush(ctx))
			w.Batch().Queue(`SELECT 1/0`)
			if flush {
				if err := w.Flush(ctx); err != nil {
					return err
				}
			}
			return w.Commit(ctx)
		})
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, name)
		require.Equal(t, "22012", pgErr.Code, name)
		_, sent := errors.AsType[*pipetx.CommitError](err)
		require.Equal(t, !flush, sent, name)
	}
	head, err := eventlog.New(db.Pool).RunHead(ctx, runID)
	require.NoError(t, err)
	require.Zero(t, head)
	require.Empty(t, outboxRows(t, db.Pool))
}

// On a connection, neither a pool nor a transaction, Append begins a
// transaction of its own with the connection's Begin; a failed one
// leaves the connection out of any transaction, with nothing written.
func TestAppendOnAConnBeginsItsOwnTx(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	ctx := t.Context()
	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	runID := events.NewRunID()
	res, err := eventlogtest.Append(ctx, j, conn.Conn(), nil, newEvent(t, runID, "", events.RunStarted))
	require.NoError(t, err)
	require.True(t, res[0].Persisted)

	stale := int64(0)
	_, err = eventlogtest.Append(ctx, j, conn.Conn(), &stale, newEvent(t, runID, "a", events.StepScheduled))
	require.ErrorIs(t, err, eventlog.ErrConflict)
	require.Equal(t, byte('I'), conn.Conn().PgConn().TxStatus(), "rolled back")
	require.Len(t, outboxRows(t, db.Pool), 1)
}

// On a caller's plain transaction Commit sends the outbox rows and leaves
// the transaction to the caller: rolling it back discards the appends and
// their rows together.
func TestWriteOnACallersTxLeavesTheCommitToIt(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	ctx := t.Context()
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	w := j.Begin(tx)
	_, err = w.Append(ctx, nil, newEvent(t, events.NewRunID(), "", events.RunStarted))
	require.NoError(t, err)
	require.NoError(t, w.Commit(ctx))
	var n int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&n))
	require.Equal(t, 1, n, "in the caller's transaction")
	require.NoError(t, tx.Rollback(ctx))
	require.Empty(t, outboxRows(t, db.Pool))
}

func TestWriteRefusesInvalidEventsBeforeQueuing(t *testing.T) {
	t.Parallel()
	j := journal.New(eventlog.New(nil))
	ev := newEvent(t, events.NewRunID(), "", events.RunStarted)
	ev.RunID = "bad.run"
	w := j.Begin(&pipetx.Tx{})
	_, err := w.Append(t.Context(), nil, ev)
	require.Error(t, err)
	require.Zero(t, w.Batch().Len())
}

// AppendNew's events reach the outbox as Append's do, after the caller's
// own messages (Enqueue), with the trace of their part.
func TestAppendNewAndEnqueue(t *testing.T) {
	t.Parallel()
	db, j, runID := startedRun(t)
	ctx := t.Context()
	head := int64(1)
	ev := newEvent(t, runID, "a", events.StepScheduled)
	ev.RunSeq = 2
	own := outbox.Message{Subject: "weft.tasks.default", Payload: []byte(`{}`), DedupeID: "task-a"}
	sc := trace.SpanContextFromContext(traced(ctx, 1))

	var as []*journal.Appended
	err := j.Run(ctx, db.Pool, func(w *journal.Write) error {
		var err error
		if as, err = w.AppendNew(traced(ctx, 2), eventlog.RunAppend{ExpectedHead: &head, Events: []events.Event{ev}, Trace: sc}); err != nil {
			return err
		}
		w.Enqueue(own)
		return w.Commit(ctx)
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), as[0].Results()[0].RunSeq)

	rows := outboxRows(t, db.Pool)
	require.Len(t, rows, 3, "RunStarted's row, then the caller's message, then StepScheduled's")
	require.Equal(t, "task-a", rows[1].DedupeID)
	require.Empty(t, rows[1].Headers[tracing.HeaderTraceparent], "the caller's message keeps its own headers")
	got := sent(t, rows[2])
	require.Len(t, got, 1)
	require.Equal(t, int64(2), got[0].RunSeq)
	require.False(t, got[0].PersistedAt.IsZero())
	require.Equal(t, tracing.InjectHeaders(traced(ctx, 1), nil)[tracing.HeaderTraceparent], rows[2].Headers[tracing.HeaderTraceparent])
}
