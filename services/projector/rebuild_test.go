package projector_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/projector"
)

// oldRunID returns a fresh run id of a run created age ago: older than the
// resync loop's window of runs it looks for without a snapshot.
func oldRunID(age time.Duration) string {
	id := uuid.Must(uuid.NewV7())
	floor := uuid.MustParse(events.RunIDFloor(time.Now().Add(-age)))
	copy(id[:6], floor[:6])
	return id.String()
}

// wipeMix projects finished and in-flight runs created an hour ago, stops
// the projector and deletes every snapshot, as the soak of issue 16 did.
// It returns the finished and the in-flight runs.
func wipeMix(t *testing.T, s *stack, n int) (finished, inFlight []string) {
	t.Helper()
	stop := s.serve(t, projector.Config{})
	for range n {
		id := oldRunID(time.Hour)
		s.approveAs(t, id)
		s.appendBus(t, lifecycle(t, id)...)
		finished = append(finished, id)
		id = oldRunID(time.Hour)
		s.approveAs(t, id)
		s.appendBus(t, lifecycle(t, id)[:3]...)
		inFlight = append(inFlight, id)
	}
	for _, id := range finished {
		s.waitRun(t, id, atSeq(6), "completes")
	}
	for _, id := range inFlight {
		s.waitRun(t, id, atSeq(4), "starts its step")
	}
	stop()
	_, err := s.db.Pool.Exec(t.Context(), `DELETE FROM run_snapshots`)
	require.NoError(t, err)
	return finished, inFlight
}

// A projector started on a wiped run_snapshots rebuilds every run of the
// log, finished or not, while the runs in flight go on receiving live
// events (issue 16, defect 3).
func TestRebuildsWipedSnapshotsAtStart(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	finished, inFlight := wipeMix(t, s, 4)

	s.serve(t, projector.Config{})
	for _, id := range inFlight { // live events race the rebuild
		s.appendBus(t, lifecycle(t, id)[3:]...)
	}
	for _, id := range append(finished, inFlight...) {
		v := s.waitRun(t, id, atSeq(6), "is rebuilt and completes")
		require.Equal(t, events.RunStatusCompleted, v.Status)
		s.requireMatchesLog(t, v)
	}
}

// A projector that is running finds runs whose snapshots were deleted
// under it and rebuilds them.
func TestRebuildsSnapshotsDeletedWhileRunning(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	id := oldRunID(time.Hour)
	s.approveAs(t, id)
	s.appendBus(t, lifecycle(t, id)...)
	s.waitRun(t, id, atSeq(6), "completes")

	_, err := s.db.Pool.Exec(t.Context(), `DELETE FROM run_snapshots WHERE run_id = $1`, id)
	require.NoError(t, err)
	s.requireMatchesLog(t, s.waitRun(t, id, atSeq(6), "is rebuilt"))
}

// Rebuild (`weft projector rebuild`) is one pass over the log: it
// rebuilds the runs without a snapshot, and a second pass finds none.
func TestRebuildOnDemand(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	finished, inFlight := wipeMix(t, s, 3)

	r, err := projector.NewRebuilder(s.db.Pool, projector.Config{})
	require.NoError(t, err)
	st, err := r.Rebuild(t.Context())
	require.NoError(t, err)
	require.Equal(t, 6, st.Rebuilt)
	require.Equal(t, 6, st.Scanned)

	s.serve(t, projector.Config{})
	for _, id := range finished {
		s.requireMatchesLog(t, s.waitRun(t, id, atSeq(6), "is there"))
	}
	for _, id := range inFlight {
		s.requireMatchesLog(t, s.waitRun(t, id, atSeq(4), "is there"))
	}
	st, err = r.Rebuild(t.Context())
	require.NoError(t, err)
	require.Zero(t, st.Rebuilt, "nothing left to rebuild")
	require.Equal(t, 6, st.Scanned)
}
