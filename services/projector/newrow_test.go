package projector_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/projector"
)

// snapshotWrite is one row version written to run_snapshots: by an
// INSERT or an UPDATE, at a watermark.
type snapshotWrite struct {
	Op  string
	Seq int64
}

// recordSnapshotWrites makes the test's database record, with a trigger,
// every row version written to run_snapshots by a transaction that
// committed, and returns a function that reads a run's, in order.
func (s *stack) recordSnapshotWrites(t *testing.T) func(runID string) []snapshotWrite {
	t.Helper()
	for _, sql := range []string{
		`CREATE TABLE test_snapshot_writes (n bigserial PRIMARY KEY, run_id uuid NOT NULL, op text NOT NULL,
			last_event_seq bigint NOT NULL)`,
		`CREATE FUNCTION test_record_snapshot_write() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO test_snapshot_writes (run_id, op, last_event_seq) VALUES (NEW.run_id, TG_OP, NEW.last_event_seq);
			RETURN NULL;
		END $$`,
		`CREATE TRIGGER test_record_snapshot_write AFTER INSERT OR UPDATE ON run_snapshots
			FOR EACH ROW EXECUTE FUNCTION test_record_snapshot_write()`,
	} {
		_, err := s.db.Pool.Exec(t.Context(), sql)
		require.NoError(t, err)
	}
	return func(runID string) []snapshotWrite {
		rows, err := s.db.Pool.Query(t.Context(),
			`SELECT op, last_event_seq FROM test_snapshot_writes WHERE run_id = $1 ORDER BY n`, runID)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[snapshotWrite])
		require.NoError(t, err)
		return out
	}
}

// newRowConfig keeps the resync loop and the rebuild away from the runs
// of a test (none is ResyncLag old): only bus batches write their rows.
func newRowConfig(cfg projector.Config) projector.Config {
	cfg.ResyncLag = time.Hour
	return cfg
}

// A new run's row is written once, whole, by the batch that brings its
// first event: one INSERT of the projected row, never a placeholder and
// then an update; the run reads as its log says, and its later batches
// update that row. A forged message of a run the log does not have, in
// the same stream, is terminated and gets no row and no alert.
func TestNewRunRowIsWrittenOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	writes := s.recordSnapshotWrites(t)
	runID := s.approve(t, "once")
	ghost := events.NewRunID()
	terminated := s.terminations(t)
	seq := s.publishSeq(t, forgedRunFailed(t, ghost, 1))
	s.serve(t, newRowConfig(projector.Config{}))

	v := s.waitRun(t, runID, atSeq(1), "approved")
	require.Equal(t, []snapshotWrite{{"INSERT", 1}}, writes(runID), "one insert, of the projected row")
	require.Equal(t, api.RunIdentity{TenantID: tenant, ProjectID: "proj", EnvironmentID: "dev", PlanID: "once", PlanVersion: "v1"},
		v.RunIdentity)
	require.Equal(t, []api.PlanStep{{ID: "a", Activity: "echo", Kind: "activity", DependsOn: []string{}},
		{ID: "b", Activity: "echo", Kind: "activity", DependsOn: []string{"a"}}}, v.Plan.Steps)
	s.requireMatchesLog(t, v)

	requireTerminated(t, terminated, seq)
	requireLogged(t, s, `"alert":"PROJECTOR_FORGED_EVENT"`, ghost, "the log has no such run")
	require.Empty(t, writes(ghost), "no row for a run the log does not have")
	var n int
	require.NoError(t, s.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM projector_alerts WHERE run_id = $1`, ghost).Scan(&n))
	require.Zero(t, n, "no alert row for a run the log does not have")

	s.appendBus(t, lifecycle(t, runID)...)
	v = s.waitRun(t, runID, atSeq(6), "completes")
	s.requireMatchesLog(t, v)
	all := writes(runID)
	require.Equal(t, snapshotWrite{"INSERT", 1}, all[0])
	for _, w := range all[1:] {
		require.Equal(t, "UPDATE", w.Op, "the row is inserted once: %v", all)
	}
}

// A row of a new run that someone else creates between the batch's lock
// and its writes (here the test, from its own connection, as another
// projector's batch of the same run or a resync would) fails the batch's
// insert, a unique violation: nothing of the batch commits, its message
// comes back, and the run is projected on the row that exists, its
// message acked, nothing lost.
func TestNewRunRowCreatedMeanwhile(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	writes := s.recordSnapshotWrites(t)
	runID := s.approve(t, "meanwhile")
	var (
		mu        sync.Mutex
		created   bool
		createErr error
	)
	createOnce := func(int) {
		mu.Lock()
		defer mu.Unlock()
		if created {
			return
		}
		created = true
		// Bounded: a projector that had created the row ahead of its lock
		// would hold this insert until it commits.
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_, createErr = s.db.Pool.Exec(ctx,
			`INSERT INTO run_snapshots (run_id, status, last_event_seq, snapshot) VALUES ($1, 'PENDING', 0, '{}')`, runID)
	}
	s.serve(t, newRowConfig(projector.Config{RetryDelay: 10 * time.Millisecond,
		TestingKnobs: projector.TestingKnobs{BeforeCommit: createOnce}}))

	v := s.waitRun(t, runID, atSeq(1), "approved, on the redelivery")
	mu.Lock()
	require.True(t, created)
	require.NoError(t, createErr, "the batch had written no row of the run before its commit")
	mu.Unlock()
	s.requireMatchesLog(t, v)
	requireLogged(t, s, "batch failed; messages will be redelivered", "run_snapshots_pkey")
	require.Equal(t, []snapshotWrite{{"INSERT", 0}, {"UPDATE", 1}}, writes(runID),
		"the test's row, then the redelivered batch's update; the failed insert left nothing")
	require.Eventually(t, func() bool {
		c, err := s.js.Consumer(t.Context(), streams.EventsStream, projector.Consumer)
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	}, waitFor, 10*time.Millisecond, "the run's message is acked")
}
