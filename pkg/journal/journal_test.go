package journal_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
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

// sent returns the events a row's message carries, of either form.
func sent(t *testing.T, r outboxRow) []events.Event {
	t.Helper()
	h := nats.Header{}
	for k, v := range r.Headers {
		h.Set(k, v)
	}
	evs, err := streams.DecodeEvents(h, r.Payload)
	require.NoError(t, err)
	return evs
}

// A unit of work's consecutive outcomes of a run are one batch message.
func TestAppendEnqueuesABatchOfTheNewOutcomes(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	runID := events.NewRunID()
	evs := []events.Event{newEvent(t, runID, "", events.RunStarted), newEvent(t, runID, "a", events.StepScheduled)}

	res, err := eventlogtest.Append(t.Context(), j, db.Pool, nil, evs...)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, []int64{res[0].RunSeq, res[1].RunSeq})

	rows := outboxRows(t, db.Pool)
	require.Len(t, rows, 1, "one batch")
	r := rows[0]
	require.Equal(t, "weft.events.out."+runID, r.Subject, "RunStarted and StepScheduled: no engine input")
	require.Equal(t, evs[0].EventID, r.DedupeID, "deterministic dedupe id: the first event's id")
	require.Equal(t, runID, r.OrderKey, "ordered per run")
	require.Equal(t, map[string]string{
		streams.HeaderEventFormat: streams.EventFormatBatch, streams.HeaderRunSeq: "1", streams.HeaderRunSeqLast: "2",
		streams.HeaderEventTypes: "RunStarted,StepScheduled",
	}, r.Headers)
	got := sent(t, r)
	require.Len(t, got, 2)
	for i, ev := range got {
		require.Equal(t, res[i].RunSeq, ev.RunSeq, "the payload carries the assigned runSeq")
		require.Equal(t, res[i].PersistedAt, ev.PersistedAt)
		require.Equal(t, evs[i].IdempotencyKey, ev.IdempotencyKey)
	}
}

// With the event form, every event is a message of its own, as before
// batches.
func TestAppendEnqueuesOneMessagePerEventInTheEventForm(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool), journal.WithEventForm(streams.EventFormEvent))
	runID := events.NewRunID()
	evs := []events.Event{newEvent(t, runID, "", events.RunStarted), newEvent(t, runID, "a", events.StepScheduled)}

	res, err := eventlogtest.Append(t.Context(), j, db.Pool, nil, evs...)
	require.NoError(t, err)
	rows := outboxRows(t, db.Pool)
	require.Len(t, rows, 2)
	for i, r := range rows {
		require.Equal(t, "weft.events.out."+runID, r.Subject)
		require.Equal(t, evs[i].EventID, r.DedupeID, "deterministic dedupe id: the event id")
		require.Equal(t, string(evs[i].EventType), r.Headers[streams.HeaderEventType])
		require.Empty(t, r.Headers[streams.HeaderEventFormat])
		var ev events.Event
		require.NoError(t, json.Unmarshal(r.Payload, &ev))
		require.Equal(t, res[i].RunSeq, ev.RunSeq)
	}
	require.Equal(t, "2", rows[1].Headers[streams.HeaderRunSeq])
}

// An input is a message of its own, which cuts the outcomes around it into
// two batches, in runSeq order.
func TestAnInputCutsTheBatch(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	runID := events.NewRunID()
	evs := []events.Event{newEvent(t, runID, "", events.RunStarted), newEvent(t, runID, "", events.SignalAccepted),
		newEvent(t, runID, "a", events.StepScheduled), newEvent(t, runID, "b", events.StepScheduled)}
	_, err := eventlogtest.Append(t.Context(), j, db.Pool, nil, evs...)
	require.NoError(t, err)

	rows := outboxRows(t, db.Pool)
	require.Len(t, rows, 3)
	require.Equal(t, []string{"weft.events.out." + runID, "weft.events.in." + runID, "weft.events.out." + runID},
		[]string{rows[0].Subject, rows[1].Subject, rows[2].Subject})
	require.Equal(t, string(events.SignalAccepted), rows[1].Headers[streams.HeaderEventType])
	var seqs []int64
	for _, r := range rows {
		for _, ev := range sent(t, r) {
			seqs = append(seqs, ev.RunSeq)
		}
	}
	require.Equal(t, []int64{1, 2, 3, 4}, seqs)
}

// A batch is cut before it passes MaxBatchBytes; an event larger than that
// alone is a batch of its own.
func TestABatchStaysWithinMaxBatchBytes(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool))
	runID := events.NewRunID()
	big := func(step string, n int) events.Event {
		ev, err := events.New(events.Spec{RunID: runID, StepID: step, LogicalAttemptID: "1", Type: events.StepCompleted,
			PlanVersion: "1", Data: events.StepCompletedData{Output: json.RawMessage(`"` + strings.Repeat("x", n) + `"`)}})
		require.NoError(t, err)
		return ev
	}
	half := journal.MaxBatchBytes / 2
	evs := []events.Event{big("a", half-1000), big("b", half-1000), big("c", half), big("d", journal.MaxBatchBytes+1)}
	_, err := eventlogtest.Append(t.Context(), j, db.Pool, nil, evs...)
	require.NoError(t, err)

	rows := outboxRows(t, db.Pool)
	var sizes []int
	for _, r := range rows {
		sizes = append(sizes, len(sent(t, r)))
		if len(sent(t, r)) > 1 {
			require.LessOrEqual(t, len(r.Payload), journal.MaxBatchBytes)
		}
	}
	require.Equal(t, []int{2, 1, 1}, sizes, "a and b; c, which would pass the bound; d, larger than it alone")
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
