package eventlogtest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
)

func testValidationPersistsNothing(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	otherRun := runIDAt(t, time.Date(2001, 2, 3, 0, 0, 0, 0, time.UTC))
	bad := map[string]func(ev *events.Event){
		"run id not a uuid":     func(ev *events.Event) { ev.RunID = "run-1" },
		"run id upper case":     func(ev *events.Event) { ev.RunID = "01890A5D-AC96-774B-BCCE-B302099A8057" },
		"event id not a uuid":   func(ev *events.Event) { ev.EventID = "e-1" },
		"event id of other run": func(ev *events.Event) { ev.EventID = event(t, otherRun, "x").EventID },
		"empty event type":      func(ev *events.Event) { ev.EventType = "" },
		"key too short":         func(ev *events.Event) { ev.IdempotencyKey = "abc" },
		"key upper case":        func(ev *events.Event) { ev.IdempotencyKey = "A" + ev.IdempotencyKey[1:] },
		"key not hex":           func(ev *events.Event) { ev.IdempotencyKey = "g" + ev.IdempotencyKey[1:] },
		"zero emitted at":       func(ev *events.Event) { ev.EmittedAt = time.Time{} },
		"event data not json":   func(ev *events.Event) { ev.EventData = json.RawMessage(`{`) },
		"run ref not json":      func(ev *events.Event) { ev.EngineRunRef = json.RawMessage(`nope`) },
		"parent not a uuid":     func(ev *events.Event) { ev.ParentEventID = "p-1" },
		"negative schema":       func(ev *events.Event) { ev.SchemaVersion = -1 },
	}
	for name, mutate := range bad {
		ev := event(t, runID, name)
		mutate(&ev)
		_, err := l.appendOne(ctx, l.Pool, nil, ev)
		require.ErrorIs(t, err, eventlog.ErrInvalidEvent, name)

		// In a batch, after a valid event: nothing is sent, even on commit.
		err = pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
			_, err := l.append(ctx, tx, nil, event(t, runID, "valid"), ev)
			return err
		})
		require.ErrorIs(t, err, eventlog.ErrInvalidEvent, name)
	}
	err := pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
		_, err := l.append(ctx, tx, nil, event(t, runID, "a"), event(t, otherRun, "b"))
		return err
	})
	require.ErrorIs(t, err, eventlog.ErrInvalidEvent, "one batch, two runs")

	var n int
	require.NoError(t, l.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM run_events) + (SELECT count(*) FROM run_heads)`).Scan(&n))
	require.Zero(t, n, "nothing persisted")
}

// insertSQL bypasses the store, to show the database refuses on its own.
const insertSQL = `INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key, emitted_at, schema_version)
VALUES ($1, $2, $3, 'Raw', $4, now(), 1)`

func testDatabaseEnforcesRunSeqAndKeyUniqueness(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	_, err := l.appendOne(ctx, l.Pool, nil, event(t, runID, "a"))
	require.NoError(t, err)

	_, err = l.Pool.Exec(ctx, insertSQL, runID, 1, event(t, runID, "x").EventID, key("fresh"))
	requireCode(t, err, "23505") // (run_id, run_seq)
	_, err = l.Pool.Exec(ctx, insertSQL, runID, 2, event(t, runID, "x").EventID, key(runID+"|a"))
	requireCode(t, err, "23505") // (run_id, idempotency_key)
	_, err = l.Pool.Exec(ctx, insertSQL, runID, 2, event(t, runID, "x").EventID, "not-a-key")
	requireCode(t, err, "23514") // key format
	requireRun(t, l, runID, 1)
}

func testEventIDUniqueAcrossRunsAndPartitions(t *testing.T, l Log) {
	ctx := t.Context()
	// Same run, another key, same event id.
	runID := events.NewRunID()
	a := event(t, runID, "a")
	_, err := l.appendOne(ctx, l.Pool, nil, a)
	require.NoError(t, err)
	b := event(t, runID, "b")
	b.EventID = a.EventID
	_, err = l.appendOne(ctx, l.Pool, nil, b)
	require.ErrorIs(t, err, eventlog.ErrDuplicateEventID)

	// Two runs of the same month (created in the same millisecond, so they
	// share the 48-bit prefix), in a monthly and in the default partition.
	old := runIDAt(t, time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC))
	for _, first := range []string{runID, old} {
		second := sibling(t, first)
		ev := event(t, first, "shared")
		_, err = l.appendOne(ctx, l.Pool, nil, ev)
		require.NoError(t, err)
		dup := event(t, second, "shared")
		dup.EventID = ev.EventID
		_, err = l.appendOne(ctx, l.Pool, nil, dup)
		require.ErrorIs(t, err, eventlog.ErrDuplicateEventID, "runs %s and %s", first, second)
		_, err = l.Pool.Exec(ctx, insertSQL, second, 1, ev.EventID, key("raw"))
		requireCode(t, err, "23505")
		requireRun(t, l, second, 0)
	}

	// Runs of different months: the event id cannot carry the other run's
	// prefix, so it is refused before it could reach another partition.
	later := runIDAt(t, time.Now().AddDate(0, 1, 0))
	dup := event(t, later, "shared")
	dup.EventID = a.EventID
	_, err = l.appendOne(ctx, l.Pool, nil, dup)
	require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
	_, err = l.Pool.Exec(ctx, insertSQL, later, 1, a.EventID, key("raw"))
	requireCode(t, err, "23514") // run_events_event_id_prefix
	requireRun(t, l, later, 0)
	requireRun(t, l, runID, 2)
}

func testAppendOnly(t *testing.T, l Log) {
	ctx := t.Context()
	runs := []string{events.NewRunID(), runIDAt(t, time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))}
	for _, runID := range runs {
		_, err := l.appendOne(ctx, l.Pool, nil, event(t, runID, "a"))
		require.NoError(t, err)
	}
	tables := []string{"run_events", "run_events_default", monthPartition(time.Now())}
	for _, table := range tables {
		name := pgx.Identifier{table}.Sanitize()
		for _, stmt := range []string{
			`UPDATE ` + name + ` SET event_type = 'Changed'`,
			`UPDATE ` + name + ` SET run_seq = run_seq + 100`,
			`DELETE FROM ` + name,
			`TRUNCATE ` + name,
		} {
			_, err := l.Pool.Exec(ctx, stmt)
			requireCode(t, err, "WE405")
		}
	}
	parts := partitions(t, l)
	require.Len(t, parts, 6, "default, and the previous month to 3 months ahead")
	for _, p := range parts {
		_, err := l.Pool.Exec(ctx, `TRUNCATE `+pgx.Identifier{p}.Sanitize())
		requireCode(t, err, "WE405")
	}
	for _, runID := range runs {
		ev := requireRun(t, l, runID, 1)[0]
		require.Equal(t, events.StepCompleted, ev.EventType)
	}
}

func testRunDeleteRemovesWholeRun(t *testing.T, l Log) {
	ctx := t.Context()
	doomed, kept, other := events.NewRunID(), events.NewRunID(), events.NewRunID()
	for _, name := range []string{"a", "b", "c"} {
		for _, runID := range []string{doomed, kept, other} {
			_, err := l.appendOne(ctx, l.Pool, nil, event(t, runID, name))
			require.NoError(t, err)
		}
	}
	require.NoError(t, l.Store.RunDelete(ctx, doomed))
	requireRun(t, l, doomed, 0)
	require.Zero(t, countEvents(t, l, doomed))
	requireRun(t, l, kept, 3)
	require.NoError(t, l.Store.RunDelete(ctx, events.NewRunID()), "an unknown run")
	require.ErrorIs(t, l.Store.RunDelete(ctx, "x"), eventlog.ErrInvalidRunID)

	// The retention switch does not outlive the call in its transaction:
	// deleting another run's events right after is still refused.
	tx := begin(t, l)
	require.NoError(t, l.Store.RunDeleteTx(ctx, tx, kept))
	var inTx int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM run_events WHERE run_id = $1`, kept).Scan(&inTx))
	require.Zero(t, inTx, "RunDeleteTx deleted the run inside the transaction")
	require.Equal(t, 3, countEvents(t, l, kept), "and nothing outside it before commit")
	_, err := tx.Exec(ctx, `DELETE FROM run_events WHERE run_id = $1`, other)
	requireCode(t, err, "WE405")
	require.NoError(t, tx.Rollback(ctx))
	requireRun(t, l, kept, 3)
	requireRun(t, l, other, 3)

	// A deleted run id starts again at 1.
	res, err := l.appendOne(ctx, l.Pool, nil, event(t, doomed, "a"))
	require.NoError(t, err)
	require.Equal(t, eventlog.AppendResult{RunSeq: 1, Persisted: true, PersistedAt: res.PersistedAt}, res)
}

// testEventDataLimit: eventData exactly at the limit is appended; one byte
// more is refused before anything is written.
func testEventDataLimit(t *testing.T, l Log) {
	ctx := t.Context()
	const limit = 64
	require.NotNil(t, l.Limited, "Log.Limited is required")
	limited := Log{Store: l.Limited(limit), Pool: l.Pool}
	runID := events.NewRunID()
	withData := func(name string, n int) events.Event {
		ev := event(t, runID, name)
		ev.EventData = []byte(`"` + strings.Repeat("x", n-2) + `"`) // valid JSON of n bytes
		return ev
	}
	_, err := limited.appendOne(ctx, l.Pool, nil, withData("at", limit))
	require.NoError(t, err, "exactly at the limit")
	_, err = limited.appendOne(ctx, l.Pool, nil, withData("over", limit+1))
	require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
	require.ErrorContains(t, err, "over the limit of 64")
	requireRun(t, l, runID, 1)
	_, err = l.appendOne(ctx, l.Pool, nil, withData("default", limit+1))
	require.NoError(t, err, "the default limit is far larger")
}
