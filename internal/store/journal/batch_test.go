package journal_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/store/journal"
	"github.com/weftrun/weft/internal/testkit/weftest"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/tracing"
)

func traced(ctx context.Context, b byte) context.Context {
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{b}, SpanID: trace.SpanID{b}, TraceFlags: trace.FlagsSampled}))
}

// Appends of two runs queued in one batch after BEGIN, then their outbox
// rows queued with the COMMIT: each persisted event gets one row with its
// runSeq and its own request's trace; a duplicate key gets none.
func TestAppendBatchAndOutboxBatchCommitTogether(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	ctx := t.Context()
	runA, runB := events.NewRunID(), events.NewRunID()
	first := newEvent(t, runB, "a", events.StepStarted)
	_, err := j.Append(ctx, db.Pool, nil, first)
	require.NoError(t, err)

	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue("begin")
	zero := int64(0)
	pa, err := j.AppendBatch(traced(ctx, 1), b, &zero, newEvent(t, runA, "", events.RunStarted), newEvent(t, runA, "a", events.StepScheduled))
	require.NoError(t, err)
	pb, err := j.AppendBatch(ctx, b, nil, newEvent(t, runB, "a", events.StepStarted)) // first's key: a duplicate
	require.NoError(t, err)
	require.NoError(t, conn.SendBatch(ctx, b).Close())
	require.Equal(t, []int64{1, 2}, []int64{pa.Results()[0].RunSeq, pa.Results()[1].RunSeq})
	require.True(t, pb.Results()[0].Idempotent)

	b = &pgx.Batch{}
	require.NoError(t, j.OutboxBatch(traced(ctx, 2), b, pa, pb))
	b.Queue("commit")
	require.NoError(t, conn.SendBatch(ctx, b).Close())

	rows := outboxRows(t, db.Pool)
	require.Len(t, rows, 3, "first's row, then runA's two; none for the duplicate")
	want := tracing.InjectHeaders(traced(ctx, 1), nil)[tracing.HeaderTraceparent]
	for i, r := range rows[1:] {
		var sent events.Event
		require.NoError(t, json.Unmarshal(r.Payload, &sent))
		require.Equal(t, pa.Results()[i].RunSeq, sent.RunSeq)
		require.Equal(t, pa.Results()[i].PersistedAt, sent.PersistedAt)
		require.Equal(t, want, r.Headers[tracing.HeaderTraceparent], "the trace of the append's request, not the batch's")
	}
	require.Empty(t, rows[0].Headers[tracing.HeaderTraceparent])
}

// startedRun returns a journal over a fresh database holding one run,
// whose RunStarted is its first event.
func startedRun(t *testing.T) (*weftest.DB, *journal.Journal, string) {
	t.Helper()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	runID := events.NewRunID()
	_, err := j.Append(t.Context(), db.Pool, nil, newEvent(t, runID, "", events.RunStarted))
	require.NoError(t, err)
	return db, j, runID
}

func TestAppendBatchConflictFailsTheBatch(t *testing.T) {
	t.Parallel()
	db, j, runID := startedRun(t)
	ctx := t.Context()

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	b := &pgx.Batch{}
	stale := int64(0)
	_, err = j.AppendBatch(ctx, b, &stale, newEvent(t, runID, "a", events.StepScheduled))
	require.NoError(t, err)
	require.ErrorIs(t, tx.SendBatch(ctx, b).Close(), eventlog.ErrConflict)
}

func TestAppendBatchRefusesInvalidEventsBeforeQueuing(t *testing.T) {
	t.Parallel()
	j := journal.New(eventlog.New(nil))
	ev := newEvent(t, events.NewRunID(), "", events.RunStarted)
	ev.RunID = "bad.run"
	b := &pgx.Batch{}
	_, err := j.AppendBatch(t.Context(), b, nil, ev)
	require.Error(t, err)
	require.Zero(t, b.Len())
}

// AppendNewBatch's events reach the outbox as AppendBatch's do, after the
// caller's own messages when OutboxBatchWith is given some.
func TestAppendNewBatchAndOutboxBatchWith(t *testing.T) {
	t.Parallel()
	db, j, runID := startedRun(t)
	ctx := t.Context()
	head := int64(1)
	ev := newEvent(t, runID, "a", events.StepScheduled)
	ev.RunSeq = 2
	own := outbox.Message{Subject: "weft.tasks.default", Payload: []byte(`{}`), DedupeID: "task-a"}

	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		pending, err := j.AppendNewBatch(traced(ctx, 1), b, []eventlog.RunAppend{{ExpectedHead: &head, Events: []events.Event{ev}}}, nil)
		if err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		b = &pgx.Batch{}
		if err := j.OutboxBatchWith(ctx, b, []outbox.Message{own}, pending...); err != nil {
			return err
		}
		return tx.SendBatch(ctx, b).Close()
	})
	require.NoError(t, err)

	rows := outboxRows(t, db.Pool)
	require.Len(t, rows, 3, "RunStarted's row, then the caller's message, then StepScheduled's")
	require.Equal(t, "task-a", rows[1].DedupeID)
	var sent events.Event
	require.NoError(t, json.Unmarshal(rows[2].Payload, &sent))
	require.Equal(t, int64(2), sent.RunSeq)
	require.False(t, sent.PersistedAt.IsZero())
	require.Equal(t, tracing.InjectHeaders(traced(ctx, 1), nil)[tracing.HeaderTraceparent], rows[2].Headers[tracing.HeaderTraceparent])
}
