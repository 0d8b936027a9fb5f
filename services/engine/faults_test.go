package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/engine"
)

const chainPlan = `{"planId":"chain","planVersion":"1","steps":[
	{"id":"a","activity":"echo"},
	{"id":"b","activity":"echo","dependsOn":["a"]},
	{"id":"c","activity":"echo","dependsOn":["b"]},
	{"id":"d","activity":"echo","dependsOn":["c"]}]}`

// The NATS server restarts in the middle of a run (same port and store, as
// a real restart): the engine, the relay and the worker reconnect, and the
// run completes with every event once.
func TestNATSRestartMidRun(t *testing.T) {
	t.Parallel()
	s := setup(t, sweepConfig)
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, chainPlan))
	s.waitStepDone(t, runID, "a")
	s.nats.Restart()

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
}

// Every Postgres connection of the database is terminated, twice, while a
// run is in flight (rounds, relay session and workers lose them mid-use):
// the run completes, with every event once.
func TestPostgresConnectionsDroppedMidRun(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{RetryDelay: 50 * time.Millisecond})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, chainPlan))
	for _, step := range []string{"a", "b"} {
		s.waitStepDone(t, runID, step)
		_, err := s.db.Pool.Exec(t.Context(), `
			SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`)
		require.NoError(t, err)
	}
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
}

// waitStepDone waits until step's StepCompleted is in the log.
func (s *stack) waitStepDone(t *testing.T, runID, step string) {
	t.Helper()
	require.Eventually(t, func() bool {
		evs, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
		if err != nil { // a connection the test terminated: try again
			return false
		}
		for _, ev := range evs {
			if ev.EventType == events.StepCompleted && ev.StepID == step {
				return true
			}
		}
		return false
	}, waitFor, 5*time.Millisecond, "step %s completes", step)
}

// Two engines share the consumers and race on the same runs (the
// compare-and-swap and the batch fallback settle it): every run completes
// with each event once, and no run is started twice.
func TestTwoEnginesShareRuns(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{Concurrency: 2})
	s.runEngine(t, engine.Config{Concurrency: 3})
	rawWorker(t, s.js, "default", echo)
	var runIDs []string
	for range 20 {
		runIDs = append(runIDs, s.start(t, parsePlan(t, chainPlan)))
	}
	for _, runID := range runIDs {
		evs := s.waitTerminal(t, runID)
		require.Equal(t, events.RunCompleted, terminal(evs))
		requireOncePerAttempt(t, evs)
	}
}
