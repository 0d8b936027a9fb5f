package eventlog_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

// numbered returns evs with the runSeqs that follow head.
func numbered(head int64, evs ...events.Event) []events.Event {
	for i := range evs {
		evs[i].RunSeq = head + int64(i) + 1
	}
	return evs
}

// appendNew runs EventsAppendNewBatch of parts in a transaction of its
// own and returns its results and what sending the batch and committing
// returned.
func appendNew(t *testing.T, db *weftest.DB, s *eventlog.Store, parts []eventlog.RunAppend) ([][]eventlog.AppendResult, error) {
	t.Helper()
	var res [][]eventlog.AppendResult
	err := pgx.BeginFunc(t.Context(), db.Pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		var err error
		if res, err = s.EventsAppendNewBatch(b, parts); err != nil {
			return err
		}
		return tx.SendBatch(t.Context(), b).Close()
	})
	return res, err
}

// seed appends n events to a new run and returns its id.
func seed(t *testing.T, db *weftest.DB, s *eventlog.Store, n int) string {
	t.Helper()
	runID := events.NewRunID()
	for i := range n {
		_, err := eventlogtest.AppendLog(t.Context(), s, db.Pool, nil, batchEvent(t, runID, string(rune('a'+i))))
		require.NoError(t, err)
	}
	return runID
}

// EventsAppendNewBatch writes every part's events at the runSeqs they
// carry, all at one persistedAt, and its results say so.
func TestEventsAppendNewBatchWritesPredictedEvents(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	s := eventlog.New(db.Pool)
	run1, run2 := seed(t, db, s, 1), seed(t, db, s, 2)
	one, two, four := int64(1), int64(2), int64(4)
	parts := []eventlog.RunAppend{
		{ExpectedHead: &two, Events: numbered(2, batchEvent(t, run2, "x"), batchEvent(t, run2, "y"))},
		{ExpectedHead: &one, Events: numbered(1, batchEvent(t, run1, "x"))},
		{ExpectedHead: &four, Events: numbered(4, batchEvent(t, run2, "z"))},
	}
	res, err := appendNew(t, db, s, parts)
	require.NoError(t, err)
	want := eventlog.AppendResult{Persisted: true, PersistedAt: res[0][0].PersistedAt}
	require.False(t, want.PersistedAt.IsZero())
	for p, part := range parts {
		for i, ev := range part.Events {
			want.RunSeq = ev.RunSeq
			require.Equal(t, want, res[p][i])
		}
	}

	stored, err := s.EventsFetchRunsTx(t.Context(), db.Pool, []string{run1, run2})
	require.NoError(t, err)
	require.Len(t, stored[run1], 2)
	require.Len(t, stored[run2], 5)
	for _, ev := range append(parts[0].Events, parts[2].Events...) {
		got := stored[run2][ev.RunSeq-1]
		ev.EmittedAt, ev.PersistedAt = ev.EmittedAt.Truncate(time.Microsecond), want.PersistedAt
		require.Equal(t, ev, got)
	}
	requireHead(t, s, run2, 5)
}

func requireHead(t *testing.T, s *eventlog.Store, runID string, want int64) {
	t.Helper()
	head, err := s.RunHead(t.Context(), runID)
	require.NoError(t, err)
	require.Equal(t, want, head)
}

// Whatever differs from what the caller predicted writes nothing: a head
// that moved (or a run with none), an idempotency key or an event id
// already in the log.
func TestEventsAppendNewBatchWritesNothingUnpredicted(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	s := eventlog.New(db.Pool)
	run := seed(t, db, s, 2)
	stored, err := s.EventsFetchRunsTx(t.Context(), db.Pool, []string{run})
	require.NoError(t, err)
	zero, one, two := int64(0), int64(1), int64(2)
	fresh := func() events.Event { return batchEvent(t, run, "new") }
	sameKey := fresh()
	sameKey.IdempotencyKey = stored[run][0].IdempotencyKey
	sameID := fresh()
	sameID.EventID = stored[run][1].EventID
	newRun := events.NewRunID()

	for name, tc := range map[string]struct {
		part eventlog.RunAppend
		want error
	}{
		"head moved":     {eventlog.RunAppend{ExpectedHead: &one, Events: numbered(1, fresh())}, eventlog.ErrConflict},
		"no head":        {eventlog.RunAppend{ExpectedHead: &zero, Events: numbered(0, batchEvent(t, newRun, "a"))}, eventlog.ErrConflict},
		"key in the log": {eventlog.RunAppend{ExpectedHead: &two, Events: numbered(2, fresh(), sameKey)}, eventlog.ErrConflict},
		"id in the log":  {eventlog.RunAppend{ExpectedHead: &two, Events: numbered(2, sameID)}, eventlog.ErrDuplicateEventID},
	} {
		_, err := appendNew(t, db, s, []eventlog.RunAppend{tc.part})
		require.ErrorIs(t, err, tc.want, name)
	}

	requireHead(t, s, run, 2)
	requireHead(t, s, newRun, 0)
}

// Parts that do not say what the log must hold are refused before
// anything is queued.
func TestEventsAppendNewBatchRefusesBeforeQueuing(t *testing.T) {
	t.Parallel()
	s := eventlog.New(nil)
	run := events.NewRunID()
	one, two := int64(1), int64(2)
	skipped := numbered(1, batchEvent(t, run, "a"))
	skipped[0].RunSeq = 3
	invalid := numbered(1, batchEvent(t, run, "a"))
	invalid[0].EventType = ""
	for name, parts := range map[string][]eventlog.RunAppend{
		"no expected head": {{Events: numbered(0, batchEvent(t, run, "a"))}},
		"misnumbered":      {{ExpectedHead: &one, Events: skipped}},
		"parts overlap": {
			{ExpectedHead: &one, Events: numbered(1, batchEvent(t, run, "a"))},
			{ExpectedHead: &one, Events: numbered(1, batchEvent(t, run, "b"))},
		},
		"two runs in a part": {{ExpectedHead: &two, Events: numbered(2, batchEvent(t, run, "a"), batchEvent(t, events.NewRunID(), "b"))}},
		"invalid event":      {{ExpectedHead: &one, Events: invalid}},
	} {
		b := &pgx.Batch{}
		_, err := s.EventsAppendNewBatch(b, parts)
		require.ErrorIs(t, err, eventlog.ErrInvalidEvent, name)
		require.Zero(t, b.Len(), name)
	}
}
