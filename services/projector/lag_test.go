package projector_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/weftrun/weft/services/projector"
)

// A projector that was down (a restart of `weft dev`) finds a backlog of
// events persisted an hour before it started. The downtime is not lag it
// could have avoided: catching up raises no PROJECTOR_LAG_HIGH (issue #19,
// item 14).
func TestRestartIsNotLag(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	// The run has a snapshot before the projector goes down, so that the
	// rebuild pass at the next start (runs with none, which measures no
	// lag) leaves it to the consumer.
	stop := s.serveWith(t, projector.Config{}, noop.NewMeterProvider()) // s.metrics reads the next one's
	runID := s.approve(t, "restart")
	s.waitRun(t, runID, atSeq(1), "approved")
	stop()
	// Events an hour old on the bus: what a projector down for an hour
	// finds at its start. (The log is append-only, so its persistedAt
	// cannot be aged; ResyncLag keeps the run on the bus's copies.)
	for _, ev := range s.appendLogOnly(t, lifecycle(t, runID)[:2]...) {
		ev.PersistedAt = ev.PersistedAt.Add(-time.Hour)
		s.publish(t, ev)
	}

	s.serve(t, projector.Config{ResyncLag: 2 * time.Hour})
	s.waitRun(t, runID, atSeq(3), "catches up")
	// The applied count is added after the lag alarm has judged the batch.
	require.Eventually(t, func() bool { return s.counter(t, "weft.projector.events.applied") >= 2 },
		waitFor, 10*time.Millisecond)
	require.NotContains(t, alertCodes(s.alerts(t)), projector.AlertLagHigh)
	require.Zero(t, s.counterWith(t, "weft.projector.alerts", projector.AlertLagHigh))
	require.NotContains(t, s.logs.String(), projector.AlertLagHigh, "nothing logged the alert")
	require.Positive(t, s.histogramCount(t, "weft.projector.lag"))
}

// Lag the projector could have avoided still alerts: with the relay down
// while the projector runs, an event waits past LagAlert, PROJECTOR_LAG_HIGH
// is raised when it is applied, and it clears once fresh events flow.
//
// The event is applied by the resync loop, which reads a run back from
// the log only once its snapshot has been behind the log's head for
// ResyncLag: the wait is the projector's own, and ResyncLag is far past
// LagAlert, so the event has waited past LagAlert when it is applied.
func TestLagAlertsWhileRunning(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{LagAlert: 200 * time.Millisecond, ResyncLag: 600 * time.Millisecond})
	// Once the run is projected the projector is consuming: what is
	// persisted from now on is lag it could have avoided. (The run has a
	// snapshot, so the rebuild loop, which measures no lag, leaves it.)
	runID := s.approve(t, "lag")
	s.waitRun(t, runID, atSeq(1), "approved")
	s.stopRelay(t)
	s.appendBus(t, lifecycle(t, runID)[:1]...)

	s.waitRun(t, runID, atSeq(2), "the resync reads the event back from the log, the relay down")
	require.Eventually(t, func() bool { return slices.Contains(alertCodes(s.alerts(t)), projector.AlertLagHigh) },
		waitFor, 10*time.Millisecond, "the lag alert is raised after the commit")
	requireLogged(t, s, `"alert":"PROJECTOR_LAG_HIGH"`, `"level":"WARN"`, `"severity":"P2"`)
	// Counted before the alarm judges the batch.
	require.GreaterOrEqual(t, s.counter(t, "weft.projector.resyncs"), int64(1))
	s.startRelay(t)

	// Fresh events flow (new runs, one at a time) until one batch
	// measures a lag under the threshold.
	require.Eventually(t, func() bool {
		s.waitRun(t, s.approve(t, "fresh"), atSeq(1), "approved")
		return !slices.Contains(alertCodes(s.alerts(t)), projector.AlertLagHigh)
	}, waitFor, time.Millisecond, "the lag alert clears; logs:\n%s", s.logs)
	require.Positive(t, s.histogramCount(t, "weft.projector.lag"))
}
