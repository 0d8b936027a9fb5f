package projector_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/weftrun/weft/internal/testkit/metrictest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/projector"
)

// lifecycle returns a run's events after RunApproved, through completion.
func lifecycle(t *testing.T, runID string) []events.Event {
	t.Helper()
	return []events.Event{
		step(t, runID, "", events.RunStarted, nil),
		step(t, runID, "a", events.StepScheduled, events.StepScheduledData{Activity: "echo", Queue: "default"}),
		step(t, runID, "a", events.StepStarted, events.StepStartedData{}),
		step(t, runID, "a", events.StepCompleted, events.StepCompletedData{
			Artifacts: []events.ArtifactRef{{URI: "s3://b/k", Kind: "report"}}}),
		step(t, runID, "", events.RunCompleted, nil),
	}
}

func TestProjectsRunsInOrder(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approve(t, "hello")
	s.appendBus(t, lifecycle(t, runID)[:3]...)
	s.appendBus(t, lifecycle(t, runID)[3:]...)

	v := s.waitRun(t, runID, func(v api.RunView) bool { return v.Status == events.RunStatusCompleted }, "completes")
	require.Equal(t, int64(6), v.LastEventSeq)
	require.False(t, v.Stale)
	require.Equal(t, "hello", v.PlanID)
	require.Equal(t, tenant, v.TenantID)
	require.Equal(t, []api.PlanStep{{ID: "a", Activity: "echo", Kind: "activity", DependsOn: []string{}},
		{ID: "b", Activity: "echo", Kind: "activity", DependsOn: []string{"a"}}}, v.Plan.Steps)
	s.requireMatchesLog(t, v)
}

// A message the bus delivers twice, or a stale copy, changes nothing.
func TestDuplicatesAreIgnored(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approve(t, "dup")
	s.appendBus(t, lifecycle(t, runID)[:2]...)
	s.waitRun(t, runID, atSeq(3), "reaches runSeq 3")

	evs, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
	require.NoError(t, err)
	for _, ev := range evs { // every event again, as new messages
		s.publish(t, ev)
	}
	s.appendBus(t, lifecycle(t, runID)[2:]...)
	v := s.waitRun(t, runID, atSeq(6), "completes")
	s.requireMatchesLog(t, v)
	require.Equal(t, int64(6), s.counter(t, "weft.projector.events.applied"), "each event applied once")
}

// Events the bus delivers out of order are never applied past the gap: the
// projector reads the missing ones from the log and the run goes on.
func TestGapClosedFromTheLog(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approve(t, "reorder")
	s.waitRun(t, runID, atSeq(1), "approved")

	// runSeq 2 and 3 reach the log; only 3 reaches the bus.
	late := s.appendLogOnly(t, lifecycle(t, runID)[:2]...)
	s.publish(t, late[1])

	v := s.waitRun(t, runID, atSeq(3), "resyncs through the gap")
	s.requireMatchesLog(t, v)
	require.GreaterOrEqual(t, s.counter(t, "weft.projector.resyncs"), int64(1))
}

// A gap the log cannot close yet (here a gap in the log itself: the bus
// carries only verified events, so a gap the log does not have closes at
// once) halts the run: STALE, a P1 alert in the log and in GET /v1/alerts,
// and the snapshot stays at the event before the gap while other runs keep
// flowing. When the log fills the gap the run resumes and the alert
// clears.
func TestGapHaltsTheRunUntilItCloses(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approve(t, "gap")
	other := s.approve(t, "other")
	s.waitRun(t, runID, atSeq(1), "approved")

	s.openLogGap(t, runID, 1)

	v := s.waitRun(t, runID, func(v api.RunView) bool { return v.Stale }, "goes STALE")
	require.Equal(t, int64(1), v.LastEventSeq, "nothing past the gap")
	require.Equal(t, &api.RunGap{AfterSeq: 1, SeenSeq: 3, Since: v.Gap.Since}, v.Gap)
	require.Contains(t, s.alerts(t), projector.Alert{Code: projector.AlertGap, Severity: projector.SeverityP1,
		RunID: runID, Message: "runSeq gap: applied up to 1, saw 3; events 2 to 2 are missing"})
	requireLogged(t, s, `"alert":"PROJECTOR_GAP_DETECTED"`, `"level":"ERROR"`, runID)
	require.Equal(t, int64(1), s.counterWith(t, "weft.projector.alerts", projector.AlertGap))

	s.appendBus(t, lifecycle(t, other)...) // other runs keep flowing
	s.waitRun(t, other, atSeq(6), "the other run completes")
	v, _ = s.run(t, runID)
	require.True(t, v.Stale, "still stale")

	s.appendLogAt(t, lifecycle(t, runID)[0], 2) // the log fills its gap
	v = s.waitRun(t, runID, atSeq(3), "resumes")
	s.requireMatchesLog(t, v)
	require.NotContains(t, alertCodes(s.alerts(t)), projector.AlertGap)
	requireLogged(t, s, `"cleared":true`, runID)
}

// The metrics count every tenant's runs, so the public API listener does
// not serve them: they go to the MeterProvider, which the command serves on
// its ops listener (cmd/weft, ops_test.go), and GET /metrics here is 404.
func TestNoMetricsOnTheAPIListener(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approve(t, "metrics")
	s.waitRun(t, runID, atSeq(1), "approved")
	// The counter is recorded after the commit that makes the run readable.
	require.Eventually(t, func() bool { return s.counter(t, "weft.projector.events.applied") > 0 },
		waitFor, 10*time.Millisecond, "the metrics are recorded")

	for _, path := range []string{"/metrics", "/metrics/"} {
		resp, err := http.Get(s.url + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.NotContains(t, string(body), "weft_projector", path)
	}
}

// With the outbox relay down the bus carries nothing, yet the resync loop
// brings the snapshot to the log's head; when the relay returns, its
// backlog is all duplicates.
func TestResyncWhileTheRelayIsDown(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{ResyncLag: 200 * time.Millisecond})
	runID := s.approve(t, "relay")
	s.waitRun(t, runID, atSeq(1), "approved")

	s.stopRelay(t)
	s.appendBus(t, lifecycle(t, runID)...)
	v := s.waitRun(t, runID, atSeq(6), "resyncs from the log with the relay down")
	require.False(t, s.outboxEmpty(t), "the relay has not run")

	s.startRelay(t)
	require.Eventually(t, func() bool { return s.outboxEmpty(t) }, waitFor, 10*time.Millisecond)
	v2 := s.waitRun(t, runID, atSeq(6), "unchanged")
	require.Equal(t, v.UpdatedAt, v2.UpdatedAt, "the relayed backlog applied nothing")
	s.requireMatchesLog(t, v2)
}

// With more open runs than ResyncScan, each pass of the resync loop checks
// the next ResyncScan of them against the log and wraps around at the
// end: every run behind its log is still found, a pass later per chunk.
func TestResyncScansOpenRunsAChunkAPass(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{ResyncLag: 200 * time.Millisecond, ResyncEvery: 50 * time.Millisecond, ResyncScan: 1})
	runs := make([]string, 3)
	for i := range runs {
		runs[i] = s.approve(t, fmt.Sprintf("chunk-%d", i))
		s.waitRun(t, runs[i], atSeq(1), "approved")
	}

	// Each run stays open after its resync: the scan reaches the next one
	// only by moving on.
	s.stopRelay(t)
	for _, runID := range runs {
		s.appendBus(t, lifecycle(t, runID)[:3]...)
	}
	for _, runID := range runs {
		v := s.waitRun(t, runID, atSeq(4), "resynced from the log, one run a pass")
		require.Equal(t, events.RunStatusRunning, v.Status)
		s.requireMatchesLog(t, v)
	}
}

// alerts returns GET /v1/alerts for tenant acme.
func (s *stack) alerts(t *testing.T) []projector.Alert {
	t.Helper()
	var out struct {
		Alerts []projector.Alert `json:"alerts"`
	}
	require.Equal(t, 200, s.get(t, readerToken, "/v1/alerts", &out))
	for i := range out.Alerts {
		out.Alerts[i].RaisedAt = time.Time{}
	}
	return out.Alerts
}

func alertCodes(alerts []projector.Alert) []string {
	codes := make([]string, len(alerts))
	for i, a := range alerts {
		codes[i] = a.Code
	}
	return codes
}

func (s *stack) outboxEmpty(t *testing.T) bool {
	t.Helper()
	var n int
	require.NoError(t, s.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox`).Scan(&n))
	return n == 0
}

// requireLogged asserts that one log line holds every part.
func requireLogged(t *testing.T, s *stack, parts ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for line := range strings.SplitSeq(s.logs.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
		return false
	}, waitFor, 10*time.Millisecond, "a log line with %q; logs:\n%s", parts, s.logs)
}

// collect reads the projector's metrics.
func (s *stack) collect(t *testing.T) []metricdata.Metrics {
	t.Helper()
	return metrictest.Collect(t, s.metrics)
}

// counter sums the counter's data points.
func (s *stack) counter(t *testing.T, name string) int64 {
	t.Helper()
	return metrictest.Sum(t, s.metrics, name)
}

// counterWith sums the counter's data points whose code attribute is code.
func (s *stack) counterWith(t *testing.T, name, code string) int64 {
	t.Helper()
	return metrictest.Sum(t, s.metrics, name, "code", code)
}

func (s *stack) histogramCount(t *testing.T, name string) uint64 {
	t.Helper()
	var n uint64
	for _, m := range s.collect(t) {
		if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
			for _, dp := range h.DataPoints {
				n += dp.Count
			}
		}
	}
	return n
}

// A run whose every message the bus lost (here: appended to the log with
// no outbox row) still gets its snapshot: the resync loop looks at runs
// approved about ResyncLag ago that have none.
func TestRunTheBusNeverCarried(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{ResyncLag: 200 * time.Millisecond, ResyncEvery: 100 * time.Millisecond})
	runID := events.NewRunID()
	approved := step(t, runID, "", events.RunApproved, events.RunApprovedData{TenantID: tenant, PlanID: "unseen", PlanVersion: "v1"})
	s.appendLogOnly(t, append([]events.Event{approved}, lifecycle(t, runID)...)...)

	v := s.waitRun(t, runID, atSeq(6), "read from the log")
	require.Equal(t, events.RunStatusCompleted, v.Status)
	s.requireMatchesLog(t, v)
}

// A cancelled run's in-flight attempts end CANCELLED in its snapshot, with
// an end time, so that no reader shows them running (issue 16, defect 6).
func TestCancelledRunEndsItsInFlightSteps(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approve(t, "cancel")
	s.appendBus(t, lifecycle(t, runID)[:3]...)
	s.appendBus(t, step(t, runID, "", events.RunCancelled, events.RunCancelledData{Reason: "cancelled by signal s-1"}))

	v := s.waitRun(t, runID, atSeq(5), "is cancelled")
	require.Equal(t, events.RunStatusCancelled, v.Status)
	require.Len(t, v.Steps, 1)
	a := v.Steps[0]
	require.Equal(t, events.StepStatusCancelled, a.Status)
	require.NotNil(t, a.CompletedAt)
	require.Equal(t, &events.StepError{Code: events.CodeCancelled, Message: "cancelled by signal s-1"}, a.Error)
	s.requireMatchesLog(t, v)
}

// A run whose first message the bus lost gets its row from its next one,
// well before the resync loop would look for it: the batch that finds no
// row for a run it did not expect to be new (no runSeq 1 among its events)
// creates the row in a second round trip and resyncs the run from the log.
func TestRunWhoseFirstMessageTheBusLost(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{ResyncLag: time.Hour})
	runID := events.NewRunID()
	approved := step(t, runID, "", events.RunApproved, events.RunApprovedData{TenantID: tenant, PlanID: "first-lost", PlanVersion: "v1"})
	s.appendLogOnly(t, approved)
	s.appendBus(t, lifecycle(t, runID)...)

	v := s.waitRun(t, runID, atSeq(6), "created by a later event's batch")
	require.Equal(t, events.RunStatusCompleted, v.Status)
	s.requireMatchesLog(t, v)
}
