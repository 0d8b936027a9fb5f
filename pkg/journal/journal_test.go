package journal_test

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

type outboxRow struct {
	Subject, DedupeID, OrderKey string
	Headers                     map[string]string
	Payload                     []byte
}

func outboxRows(t *testing.T, pool *pgxpool.Pool) []outboxRow {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT subject, dedupe_id, order_key, headers, payload FROM outbox ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		require.NoError(t, rows.Scan(&r.Subject, &r.DedupeID, &r.OrderKey, &r.Headers, &r.Payload))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

func newEvent(t *testing.T, runID, stepID string, typ events.Type) events.Event {
	t.Helper()
	ev, err := events.New(events.Spec{RunID: runID, StepID: stepID, LogicalAttemptID: "1", Type: typ, PlanVersion: "1"})
	require.NoError(t, err)
	return ev
}

func TestAppendEnqueuesOneMessagePerNewEvent(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	runID := events.NewRunID()
	evs := []events.Event{newEvent(t, runID, "", events.RunStarted), newEvent(t, runID, "a", events.StepScheduled)}

	res, err := eventlogtest.Append(t.Context(), j, db.Pool, nil, evs...)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, []int64{res[0].RunSeq, res[1].RunSeq})

	rows := outboxRows(t, db.Pool)
	require.Len(t, rows, 2)
	for i, r := range rows {
		require.Equal(t, "weft.events.out."+runID, r.Subject, "RunStarted and StepScheduled: no engine input")
		require.Equal(t, evs[i].EventID, r.DedupeID, "deterministic dedupe id: the event id")
		require.Equal(t, runID, r.OrderKey, "ordered per run")
		require.Equal(t, string(evs[i].EventType), r.Headers[streams.HeaderEventType])
		var sent events.Event
		require.NoError(t, json.Unmarshal(r.Payload, &sent))
		require.Equal(t, res[i].RunSeq, sent.RunSeq, "the payload carries the assigned runSeq")
		require.Equal(t, res[i].PersistedAt, sent.PersistedAt)
		require.Equal(t, evs[i].IdempotencyKey, sent.IdempotencyKey)
	}
	require.Equal(t, "2", rows[1].Headers[streams.HeaderRunSeq])
}

func TestAppendDuplicateEnqueuesNothing(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	runID := events.NewRunID()
	first := newEvent(t, runID, "a", events.StepStarted)
	_, err := eventlogtest.Append(t.Context(), j, db.Pool, nil, first)
	require.NoError(t, err)

	redelivered := newEvent(t, runID, "a", events.StepStarted) // same key, new event id
	res, err := eventlogtest.Append(t.Context(), j, db.Pool, nil, redelivered)
	require.NoError(t, err)
	require.True(t, res[0].Idempotent)
	require.Equal(t, int64(1), res[0].RunSeq)
	require.Len(t, outboxRows(t, db.Pool), 1, "the duplicate reached neither the log nor the bus")
}

func TestAppendConflictWritesNothing(t *testing.T) {
	t.Parallel()
	db, j, runID := startedRun(t)
	stale := int64(0)
	_, err := eventlogtest.Append(t.Context(), j, db.Pool, &stale, newEvent(t, runID, "a", events.StepScheduled))
	require.ErrorIs(t, err, eventlog.ErrConflict)
	head, err := eventlog.New(db.Pool).RunHead(t.Context(), runID)
	require.NoError(t, err)
	require.Equal(t, int64(1), head)
	require.Len(t, outboxRows(t, db.Pool), 1, "the losing round enqueued nothing")
}

func TestAppendRefusesInvalidRunIDBeforeWriting(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	ev := newEvent(t, events.NewRunID(), "", events.RunStarted)
	ev.RunID = "bad.run"
	_, err := eventlogtest.Append(t.Context(), j, db.Pool, nil, ev)
	require.Error(t, err)
	require.Empty(t, outboxRows(t, db.Pool))
}
