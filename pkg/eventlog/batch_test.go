package eventlog_test

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

func batchEvent(t *testing.T, runID, step string) events.Event {
	t.Helper()
	ev, err := events.New(events.Spec{RunID: runID, StepID: step, LogicalAttemptID: "1", Type: events.StepStarted,
		PlanVersion: "1", Data: json.RawMessage(`{}`)})
	require.NoError(t, err)
	return ev
}

// appendBatch queues evs as one part with EventsAppendManyBatch.
func appendBatch(s *eventlog.Store, b *pgx.Batch, head *int64, evs ...events.Event) ([]eventlog.AppendResult, error) {
	res, err := s.EventsAppendManyBatch(b, []eventlog.RunAppend{{ExpectedHead: head, Events: evs}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// EventsAppendManyBatch appends once its batch is sent: runSeqs after the
// head, the compare-and-swap, duplicate keys.
func TestEventsAppendManyBatchAppends(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	s := eventlog.New(db.Pool)
	ctx := t.Context()
	runID := events.NewRunID()
	a, c := batchEvent(t, runID, "a"), batchEvent(t, runID, "c")

	b := &pgx.Batch{}
	zero := int64(0)
	res, err := appendBatch(s, b, &zero, a, batchEvent(t, runID, "b"))
	require.NoError(t, err)
	require.NoError(t, db.Pool.SendBatch(ctx, b).Close())
	require.Equal(t, []int64{1, 2}, []int64{res[0].RunSeq, res[1].RunSeq})
	require.True(t, res[0].Persisted)

	b = &pgx.Batch{}
	res, err = appendBatch(s, b, nil, c, batchEvent(t, runID, "a"))
	require.NoError(t, err)
	require.NoError(t, db.Pool.SendBatch(ctx, b).Close())
	require.Equal(t, eventlog.AppendResult{RunSeq: 3, Persisted: true, PersistedAt: res[0].PersistedAt}, res[0])
	require.True(t, res[1].Idempotent, "a's key is in the run")
	require.Equal(t, int64(1), res[1].RunSeq)

	b = &pgx.Batch{}
	_, err = appendBatch(s, b, &zero, batchEvent(t, runID, "d"))
	require.NoError(t, err)
	require.ErrorIs(t, db.Pool.SendBatch(ctx, b).Close(), eventlog.ErrConflict)
	head, err := s.RunHead(ctx, runID)
	require.NoError(t, err)
	require.Equal(t, int64(3), head)
}

func TestEventsAppendManyBatchRefusesBeforeQueuing(t *testing.T) {
	t.Parallel()
	s := eventlog.New(nil)
	b := &pgx.Batch{}
	_, err := appendBatch(s, b, nil, batchEvent(t, events.NewRunID(), "a"), batchEvent(t, events.NewRunID(), "b"))
	require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
	bad := batchEvent(t, events.NewRunID(), "a")
	bad.EventType = ""
	_, err = appendBatch(s, b, nil, bad)
	require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
	require.Zero(t, b.Len())
}

// A part with OnlyIf is appended at the run's head when its condition
// holds once the head is locked, and not at all, with no error, when it
// does not; it takes no expected head.
func TestEventsAppendManyBatchOnlyIf(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	s := eventlog.New(db.Pool)
	ctx := t.Context()
	runID := events.NewRunID()
	_, err := db.Pool.Exec(ctx, `CREATE TABLE open_runs (run_id uuid PRIMARY KEY)`)
	require.NoError(t, err)
	const open = `EXISTS (SELECT 1 FROM open_runs WHERE run_id = $1)`
	onlyIf := func(evs ...events.Event) []eventlog.AppendResult {
		b := &pgx.Batch{}
		res, err := s.EventsAppendManyBatch(b, []eventlog.RunAppend{{OnlyIf: open, Events: evs}})
		require.NoError(t, err)
		require.NoError(t, db.Pool.SendBatch(ctx, b).Close())
		return res[0]
	}
	res := onlyIf(batchEvent(t, runID, "a"))
	require.Equal(t, eventlog.AppendResult{}, res[0], "the run is not open: nothing appended")
	head, err := s.RunHead(ctx, runID)
	require.NoError(t, err)
	require.Zero(t, head)

	_, err = db.Pool.Exec(ctx, `INSERT INTO open_runs VALUES ($1)`, runID)
	require.NoError(t, err)
	res = onlyIf(batchEvent(t, runID, "a"), batchEvent(t, runID, "b"))
	require.Equal(t, []int64{1, 2}, []int64{res[0].RunSeq, res[1].RunSeq})
	require.True(t, res[0].Persisted && res[1].Persisted)
	res = onlyIf(batchEvent(t, runID, "a"))
	require.True(t, res[0].Idempotent, "a key already in the run is kept")

	zero := int64(0)
	_, err = s.EventsAppendManyBatch(&pgx.Batch{}, []eventlog.RunAppend{{OnlyIf: open, ExpectedHead: &zero,
		Events: []events.Event{batchEvent(t, runID, "c")}}})
	require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
}
