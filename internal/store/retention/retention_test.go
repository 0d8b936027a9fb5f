package retention_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/store/retention"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// run writes a run's log of the given event types, and, for a run the
// engine still holds, its engine_runs row; every run gets a snapshot row,
// a signal acceptance and a timer, which die with it.
func run(t *testing.T, pool *pgxpool.Pool, held bool, types ...events.Type) string {
	t.Helper()
	ctx := t.Context()
	id := events.NewRunID()
	log := eventlog.New(pool)
	for _, typ := range types {
		ev, err := events.New(events.Spec{RunID: id, Type: typ, PlanVersion: "v1"})
		require.NoError(t, err)
		_, err = eventlogtest.AppendLog(ctx, log, pool, nil, ev)
		require.NoError(t, err)
	}
	if held {
		_, err := pool.Exec(ctx, `INSERT INTO engine_runs (run_id) VALUES ($1)`, id)
		require.NoError(t, err)
	}
	for _, q := range []string{
		`INSERT INTO run_snapshots (run_id, status, last_event_seq, snapshot) VALUES ($1, 'RUNNING', 1, '{}')`,
		`INSERT INTO signal_acceptances (run_id, signal_name, signal_id, version, storage_key, response, accepted_at, expires_at)
		 VALUES ($1, 'PAUSE', 's1', 1, 'k', '{}', now(), now() + interval '1 day')`,
		`INSERT INTO engine_timers (run_id, step_id, logical_attempt, kind, due_at) VALUES ($1, 'a', 1, 'retry', now())`,
		`INSERT INTO run_checkpoints (run_id, checkpoint_version, format_version, covered_seq, state) VALUES ($1, 1, 1, 1, '{}')`,
	} {
		_, err := pool.Exec(ctx, q, id)
		require.NoError(t, err)
	}
	return id
}

// present reports, per table, whether the run has rows there.
func present(t *testing.T, pool *pgxpool.Pool, runID string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, table := range []string{"run_events", "run_heads", "run_snapshots", "signal_acceptances", "engine_timers", "run_checkpoints"} {
		var n int
		q := fmt.Sprintf(`SELECT count(*) FROM %s WHERE run_id = $1`, table)
		require.NoError(t, pool.QueryRow(t.Context(), q, runID).Scan(&n))
		out[table] = n > 0
	}
	return out
}

func requireKept(t *testing.T, pool *pgxpool.Pool, runID, why string) {
	t.Helper()
	for table, ok := range present(t, pool, runID) {
		require.True(t, ok, "%s: %s rows of run %s are gone", why, table, runID)
	}
}

func requireDeleted(t *testing.T, pool *pgxpool.Pool, runID string) {
	t.Helper()
	for table, ok := range present(t, pool, runID) {
		require.False(t, ok, "run %s still has %s rows", runID, table)
	}
}

// later is a clock d after now.
func later(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

func TestPassDeletesOnlyRunsEndedPastTheRetention(t *testing.T) {
	db := weftest.NewDB(t)
	pool := db.Pool
	completed := run(t, pool, false, events.RunApproved, events.RunStarted, events.RunCompleted)
	failed := run(t, pool, false, events.RunApproved, events.RunStarted, events.RunFailed)
	cancelled := run(t, pool, false, events.RunApproved, events.RunCancelled)
	running := run(t, pool, true, events.RunApproved, events.RunStarted)
	pending := run(t, pool, false, events.RunApproved)
	// The engine still holds a run that has a terminal event (it has not
	// yet run the round that releases it): not ended for retention.
	releasing := run(t, pool, true, events.RunApproved, events.RunCompleted)
	// An event appended after the end moves the run's clock.
	touched := run(t, pool, false, events.RunApproved, events.RunCompleted)
	_, err := pool.Exec(t.Context(), `UPDATE run_heads SET updated_at = now() + interval '40 days' WHERE run_id = $1`, touched)
	require.NoError(t, err)

	rep, err := retention.New(pool, retention.Config{RunRetention: 30 * 24 * time.Hour}).Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, rep.RunsDeleted, "nothing ended 30 days ago yet")
	requireKept(t, pool, completed, "inside the retention")

	k := retention.New(pool, retention.Config{RunRetention: 30 * 24 * time.Hour, Now: later(31 * 24 * time.Hour)})
	rep, err = k.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, rep.RunsDeleted)
	for _, id := range []string{completed, failed, cancelled} {
		requireDeleted(t, pool, id)
	}
	requireKept(t, pool, running, "running")
	requireKept(t, pool, pending, "awaiting approval")
	requireKept(t, pool, releasing, "held by the engine")
	requireKept(t, pool, touched, "appended to inside the retention")

	rep, err = k.Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, rep.RunsDeleted, "a second pass finds nothing left")
}

func TestPassDeletesInBatches(t *testing.T) {
	db := weftest.NewDB(t)
	var ids []string
	for range 5 {
		ids = append(ids, run(t, db.Pool, false, events.RunApproved, events.RunCompleted))
	}
	k := retention.New(db.Pool, retention.Config{RunRetention: time.Hour, Batch: 2, Now: later(2 * time.Hour)})
	rep, err := k.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 5, rep.RunsDeleted)
	for _, id := range ids {
		requireDeleted(t, db.Pool, id)
	}
}

func TestNegativeRetentionKeepsEveryRun(t *testing.T) {
	db := weftest.NewDB(t)
	id := run(t, db.Pool, false, events.RunApproved, events.RunCompleted)
	k := retention.New(db.Pool, retention.Config{RunRetention: -1, Now: later(10 * 365 * 24 * time.Hour)})
	rep, err := k.Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, rep.RunsDeleted)
	require.Positive(t, rep.PartitionsCreated, "partitions are still kept ahead")
	requireKept(t, db.Pool, id, "retention off")
}

func TestPassCreatesPartitionsAheadOfTheCalendar(t *testing.T) {
	db := weftest.NewDB(t)
	now := time.Date(2031, time.May, 17, 12, 0, 0, 0, time.UTC)
	k := retention.New(db.Pool, retention.Config{PartitionsAhead: 2, Now: func() time.Time { return now }})
	rep, err := k.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, rep.PartitionsCreated)
	for _, part := range []string{"run_events_203105", "run_events_203106"} {
		var exists bool
		require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT to_regclass($1) IS NOT NULL`, part).Scan(&exists))
		require.True(t, exists, part)
	}
	rep, err = k.Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, rep.PartitionsCreated, "idempotent")
}

func TestRunStopsWithItsContext(t *testing.T) {
	db := weftest.NewDB(t)
	id := run(t, db.Pool, false, events.RunApproved, events.RunCompleted)
	ctx, cancel := context.WithCancel(t.Context())
	k := retention.New(db.Pool, retention.Config{RunRetention: time.Hour, Now: later(2 * time.Hour)})
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx, time.Hour) }()
	require.Eventually(t, func() bool {
		var n int
		err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM run_heads WHERE run_id = $1`, id).Scan(&n)
		return err == nil && n == 0
	}, time.Minute, 20*time.Millisecond, "the first pass runs at once")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}
