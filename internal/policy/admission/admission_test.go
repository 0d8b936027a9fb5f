package admission_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

func TestLimitsFor(t *testing.T) {
	t.Parallel()
	l := admission.Limits{
		Default:        admission.Limit{MaxConcurrentRuns: 10},
		PerEnvironment: map[string]admission.Limit{"prod": {MaxConcurrentRuns: 2, Policy: admission.Reject, RetryAfter: time.Minute}},
	}
	require.Equal(t, admission.Limit{MaxConcurrentRuns: 10, Policy: admission.Queue, RetryAfter: 5 * time.Second, DelayBy: 10 * time.Second}, l.For("dev"))
	require.Equal(t, admission.Limit{MaxConcurrentRuns: 2, Policy: admission.Reject, RetryAfter: time.Minute, DelayBy: 10 * time.Second}, l.For("prod"))
	require.NoError(t, l.Validate())
	require.Error(t, admission.Limits{Default: admission.Limit{MaxConcurrentRuns: -1}}.Validate())
	require.Error(t, admission.Limits{PerEnvironment: map[string]admission.Limit{"x": {Policy: "DROP"}}}.Validate())
}

// insertRun registers a run of env, started or not, and returns its id.
func insertRun(t *testing.T, db *weftest.DB, env string, started bool) string {
	t.Helper()
	id := events.NewRunID()
	_, err := db.Pool.Exec(t.Context(), `INSERT INTO engine_runs (run_id, environment_id, started_at)
		VALUES ($1, $2, CASE WHEN $3 THEN now() END)`, id, env, started)
	require.NoError(t, err)
	return id
}

func inTx[T any](t *testing.T, db *weftest.DB, fn func(tx pgx.Tx) (T, error)) (T, error) {
	t.Helper()
	var out T
	err := pgx.BeginFunc(t.Context(), db.Pool, func(tx pgx.Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

func TestRoomCountsStartedRunsOfTheEnvironment(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	lim := admission.Limit{MaxConcurrentRuns: 2}
	room := func(env string) bool {
		r, err := inTx(t, db, func(tx pgx.Tx) (admission.Room, error) {
			return admission.RoomTx(t.Context(), tx, env, lim, events.NewRunID(), 3)
		})
		require.NoError(t, err)
		return r.Free()
	}
	insertRun(t, db, "a", true)
	insertRun(t, db, "a", false) // approved, not started: holds no place
	insertRun(t, db, "b", true)
	insertRun(t, db, "b", true)
	require.True(t, room("a"))
	require.False(t, room("b"), "at the edge: 2 of 2")
	full, err := inTx(t, db, func(tx pgx.Tx) (admission.Room, error) {
		return admission.RoomTx(t.Context(), tx, "b", lim, events.NewRunID(), 3)
	})
	require.NoError(t, err)
	require.Equal(t, admission.Room{Started: 2, Limit: 2}, full, "what a RunQueued's reason says")
	insertRun(t, db, "a", true)
	require.False(t, room("a"))
	r, err := inTx(t, db, func(tx pgx.Tx) (admission.Room, error) {
		return admission.RoomTx(t.Context(), tx, "b", admission.Limit{}, events.NewRunID(), 3)
	})
	require.NoError(t, err)
	require.True(t, r.Free(), "no limit: always room")
}

func TestCheckRejectRefusesAtTheLimit(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	lim := admission.Limit{MaxConcurrentRuns: 2, Policy: admission.Reject, RetryAfter: 7 * time.Second}
	check := func() error {
		_, err := inTx(t, db, func(tx pgx.Tx) (struct{}, error) {
			return struct{}{}, admission.CheckRejectTx(t.Context(), tx, "r", lim)
		})
		return err
	}
	insertRun(t, db, "r", true)
	require.NoError(t, check(), "1 of 2")
	insertRun(t, db, "r", false) // approved runs count too: they are about to start
	err := check()
	require.ErrorIs(t, err, admission.ErrRejected)
	var rej *admission.RejectedError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, 7*time.Second, rej.RetryAfter)
	require.Equal(t, 2, rej.Limit)

	queue := lim
	queue.Policy = admission.Queue
	_, err = inTx(t, db, func(tx pgx.Tx) (struct{}, error) {
		return struct{}{}, admission.CheckRejectTx(t.Context(), tx, "r", queue)
	})
	require.NoError(t, err, "QUEUE admits every run at approval")
}

// Queued runs start first come, first served: with room, a run may start
// only if no run approved before it waits in the queue.
func TestRoomKeepsTheQueueInOrder(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	lim := admission.Limit{MaxConcurrentRuns: 1}
	older := insertRun(t, db, "q", false)
	newer := insertRun(t, db, "q", false)
	_, err := db.Pool.Exec(t.Context(), `UPDATE engine_runs SET queued_at = now()`)
	require.NoError(t, err)
	roomOf := func(id string) admission.Room {
		r, err := inTx(t, db, func(tx pgx.Tx) (admission.Room, error) { return admission.RoomTx(t.Context(), tx, "q", lim, id, 3) })
		require.NoError(t, err)
		return r
	}
	room := func(id string) bool { return roomOf(id).Free() }
	require.Equal(t, admission.Room{Limit: 1, Ahead: 1}, roomOf(newer), "an older run is queued")
	require.False(t, room(newer), "an older run is queued")
	require.True(t, room(older), "the oldest queued run goes first")
	fresh := insertRun(t, db, "q", false)
	require.False(t, room(fresh), "a fresh approval waits behind the queue")
}
