package projector_test

import (
	"math"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/projector"
)

// replicaLagMetric is the read replica's lag gauge, as Prometheus names it.
const replicaLagMetric = "weft_projector_read_replica_lag_seconds"

// newStandbyStack is newStack on a private primary of its own, migrated,
// with a streaming hot standby; it returns the stack, whose db is the
// primary, and a pool on the standby.
func newStandbyStack(t *testing.T) (*stack, *pgxpool.Pool) {
	t.Helper()
	primary, standby := weftest.NewStandbyDB(t)
	s := &stack{db: primary, nats: weftest.NewNATS(t), logs: &weftest.Buffer{}, metrics: sdkmetric.NewManualReader()}
	s.js = s.nats.JetStream(t)
	s.log = eventlog.New(s.db.Pool)
	s.journal = journal.New(s.log)
	require.NoError(t, streams.Ensure(t.Context(), s.js, streams.Config{MaxBytes: 256 << 20}))
	s.startRelay(t)
	return s, standby.Pool
}

// pauseReplay pauses the standby's replay and returns once it is paused,
// with the position it stopped at.
func pauseReplay(t *testing.T, standby *pgxpool.Pool) {
	t.Helper()
	_, err := standby.Exec(t.Context(), "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var state string
		require.NoError(t, standby.QueryRow(t.Context(), "SELECT pg_get_wal_replay_pause_state()").Scan(&state))
		return state == "paused"
	}, waitFor, 10*time.Millisecond, "replay pauses")
}

func resumeReplay(t *testing.T, standby *pgxpool.Pool) {
	t.Helper()
	_, err := standby.Exec(t.Context(), "SELECT pg_wal_replay_resume()")
	require.NoError(t, err)
}

// replayedLSN is the standby's replayed WAL position, in bytes.
func replayedLSN(t *testing.T, standby *pgxpool.Pool) int64 {
	t.Helper()
	var lsn int64
	require.NoError(t, standby.QueryRow(t.Context(), "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint").Scan(&lsn))
	return lsn
}

// waitPrimary waits until the primary's snapshot of the run is at seq.
func (s *stack) waitPrimary(t *testing.T, runID string, seq int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		var at int64
		err := s.db.Pool.QueryRow(t.Context(), "SELECT last_event_seq FROM run_snapshots WHERE run_id = $1", runID).Scan(&at)
		return err == nil && at >= seq
	}, waitFor, 10*time.Millisecond, "the primary has run %s at runSeq %d", runID, seq)
}

// With a ReadPool on a hot standby, the read API answers from the standby:
// a run the projector committed on the primary is not found while the
// standby's replay is paused, and is once it resumes. A long poll waiting
// for the run's next runSeq is not woken by the commit on the primary
// while the standby lacks it (it would reread the old snapshot and wait
// again, here for an hour: WaitRecheck), but once the standby has replayed
// it, and then answers the new runSeq from its first reread.
func TestReadPoolServesTheAPIFromTheStandby(t *testing.T) {
	t.Parallel()
	s, standby := newStandbyStack(t)
	var waits atomic.Int64
	fenced := make(chan int64, 1024)
	listening := make(chan struct{}, 1)
	s.serve(t, projector.Config{ReadPool: standby, WaitRecheck: time.Hour, MaxWait: time.Hour,
		ReplicaLagEvery: 10 * time.Millisecond, TestingKnobs: projector.TestingKnobs{
			LongPollWaiting: func() { waits.Add(1) },
			ReplayFenced: func(lsn int64) {
				select {
				case fenced <- lsn:
				default:
				}
			},
			Listening: func(uint32) {
				select {
				case listening <- struct{}{}:
				default:
				}
			},
		}})
	<-listening
	runID := s.approve(t, "standby")
	s.waitRun(t, runID, atSeq(1), "approved, read from the standby")

	pauseReplay(t, standby)
	paused := replayedLSN(t, standby)
	other := s.approve(t, "other")
	s.waitPrimary(t, other, 1)
	require.Equal(t, http.StatusNotFound, s.get(t, readerToken, "/v1/runs/"+other, nil),
		"the standby, paused, has not the run the primary has")

	answer := s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=2&timeout=1h")
	require.Eventually(t, func() bool { return waits.Load() >= 1 }, waitFor, time.Millisecond, "the long poll waits")
	s.appendBus(t, lifecycle(t, runID)[:1]...)
	s.waitPrimary(t, runID, 2)
	require.Eventually(t, func() bool {
		for {
			select {
			case lsn := <-fenced:
				if lsn > paused {
					return true
				}
			default:
				return false
			}
		}
	}, waitFor, time.Millisecond, "a wakeup waits for the standby to replay past %d", paused)
	requireWaiting(t, answer)
	before := waits.Load()

	resumeReplay(t, standby)
	r := <-answer
	require.NoError(t, r.err)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var v api.RunView
	r.decode(t, &v)
	require.Equal(t, int64(2), v.LastEventSeq, "the long poll answers the change, not its timeout")
	require.Equal(t, before, waits.Load(), "woken once the standby had the change: no stale reread, no wait again")
	s.waitRun(t, other, atSeq(1), "the other run, once replayed")
}

// The standby's replay lag is measured (the gauge
// weft_projector_read_replica_lag_seconds) and added to the lag the API
// reports (lagMs): 0 while the standby keeps up, growing while its replay
// is paused behind a change on the primary, and back to 0 once it resumes.
func TestReadPoolLagIsReported(t *testing.T) {
	t.Parallel()
	s, standby := newStandbyStack(t)
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s.serveWith(t, projector.Config{ReadPool: standby, ReplicaLagEvery: 10 * time.Millisecond}, mp)
	runID := s.approve(t, "lag")
	s.waitRun(t, runID, atSeq(1), "approved")
	var stored int64
	require.NoError(t, s.db.Pool.QueryRow(t.Context(), "SELECT lag_ms FROM run_snapshots WHERE run_id = $1", runID).Scan(&stored))
	s.requireCaughtUp(t, h, runID, stored)

	pauseReplay(t, standby)
	other := s.approve(t, "other") // WAL the paused standby does not replay
	s.waitPrimary(t, other, 1)
	sc := metricstest.WaitFor(t, h, waitFor, func(sc metricstest.Scrape) bool {
		v, ok := sc.Sum(replicaLagMetric, nil)
		return ok && v >= 0.05 // it grows while replay is paused: wait for whole milliseconds to compare
	})
	replica, _ := sc.Sum(replicaLagMetric, nil)
	v, ok := s.run(t, runID)
	require.True(t, ok)
	require.GreaterOrEqual(t, v.LagMs, stored+int64(math.Floor(replica*1000)),
		"lagMs adds the replica's lag (%v s, and growing) to the stored lag (%d ms)", replica, stored)

	resumeReplay(t, standby)
	s.requireCaughtUp(t, h, runID, stored)
	s.waitRun(t, other, atSeq(1), "the other run, once replayed")
}

// requireCaughtUp waits until the replica lag gauge reads 0 and the API's
// lagMs of the run is its stored lag alone.
func (s *stack) requireCaughtUp(t *testing.T, h http.Handler, runID string, stored int64) {
	t.Helper()
	metricstest.WaitFor(t, h, waitFor, func(sc metricstest.Scrape) bool {
		v, ok := sc.Sum(replicaLagMetric, nil)
		return ok && v == 0
	})
	s.waitRun(t, runID, func(v api.RunView) bool { return v.LagMs == stored }, "lagMs is the stored lag alone")
}
