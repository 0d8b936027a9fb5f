package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/services/engine"
)

// TestEngineMetrics runs a one-step plan with the engine's MeterProvider
// and reads its series back: the events the rounds appended, by type, and
// the rounds' durations, by outcome.
func TestEngineMetrics(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s := setup(t, engine.Config{MeterProvider: mp})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"metrics","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`))
	s.waitTerminal(t, runID)

	// A round's duration is recorded after its commit, so the run can be
	// seen ended before its last round is timed: wait for both rounds.
	sc := metricstest.WaitFor(t, h, waitFor, func(sc metricstest.Scrape) bool {
		decided, _ := sc.Sum("weft_engine_round_duration_seconds_count", map[string]string{"outcome": "decided"})
		return decided >= 2
	})
	appended := func(typ string) int64 {
		return sc.Count(t, "weft_events_appended_total", map[string]string{"event_type": typ})
	}
	require.Equal(t, int64(1), appended("RunStarted"))
	require.Equal(t, int64(1), appended("StepScheduled"))
	require.Equal(t, int64(1), appended("StepCompleted"))
	require.Equal(t, int64(1), appended("RunCompleted"))
	_, approved := sc.Sum("weft_events_appended_total", map[string]string{"event_type": "RunApproved"})
	require.False(t, approved, "the approval was written by the test's journal, not the engine's")

	// RunApproved starts the run and the step's result completes it: two
	// rounds at least, each timed (the worker's StepStarted and
	// StepCompleted may share one round when they arrive together).
	decided := sc.Value(t, "weft_engine_round_duration_seconds_count", map[string]string{"outcome": "decided"})
	require.GreaterOrEqual(t, decided, 2.0)
	require.Positive(t, sc.Value(t, "weft_engine_round_duration_seconds_sum", map[string]string{"outcome": "decided"}))
	_, failed := sc.Sum("weft_engine_round_duration_seconds_count", map[string]string{"outcome": "error"})
	require.False(t, failed, "no round failed")
}
