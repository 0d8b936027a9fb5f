package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"

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

// Results arrive out of order (completed before started) and twice, the
// second copy under another message id, as after JetStream's duplicate
// window has passed: the engine records each once and the run completes.
func TestDuplicateAndOutOfOrderResults(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorkerFn(t, s.js, "default", func(tk task.Task, report func(task.Result)) {
		done := echo(tk)
		report(done)
		report(task.NewResult(tk, task.Started, "", "raw"))
		// The same result under another message id: the bus stores it again;
		// the engine dedupes on the result's idempotency key.
		publishResultAs(t, s.js, done, done.IdempotencyKey+"/copy")
	})
	runID := s.start(t, parsePlan(t, chainPlan))
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
}

// A worker dies mid-activity (its connection drops): after AckWait the
// task goes to another worker as delivery 2 of the same logical attempt,
// and the run completes with that result.
func TestWorkerKilledMidActivity(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	started := make(chan struct{}, 1)
	doomedConn := s.nats.Conn(t)
	doomedJS, err := jetstream.New(doomedConn)
	require.NoError(t, err)
	startSDKWorker(t, doomedJS, "doomed", func(ctx context.Context, in worker.Input) (worker.Output, error) {
		started <- struct{}{}
		<-ctx.Done() // never finishes on its own
		return worker.Output{}, ctx.Err()
	})
	runID := s.start(t, parsePlan(t, `{"planId":"k","planVersion":"1","steps":[{"id":"a","activity":"work"}]}`))
	<-started
	doomedConn.Close() // the crash: no result, no ack, no nak

	startSDKWorker(t, s.nats.JetStream(t), "survivor", func(context.Context, worker.Input) (worker.Output, error) {
		return worker.NewOutput(map[string]bool{"ok": true})
	})
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
	for _, ev := range evs {
		if ev.EventType == events.StepCompleted {
			require.Equal(t, "1", ev.LogicalAttemptID, "the same logical attempt")
			require.Equal(t, "2", ev.EngineAttemptID, "its second delivery")
		}
	}
}

// startSDKWorker runs a pkg/worker worker with one activity, "work", and a
// one-second AckWait, stopped when the test ends.
func startSDKWorker(t *testing.T, js jetstream.JetStream, id string, fn worker.ActivityFunc) *worker.Worker {
	t.Helper()
	w, err := worker.New(js, worker.Config{WorkerID: id, AckWait: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Register("work", fn))
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.Stop(ctx) // the doomed worker's activity never returns: cut it short
	})
	return w
}

// A worker reports a completed result larger than the engine's limit (a
// worker not using the SDK, which refuses such outputs itself): the engine
// fails the attempt with RESULT_TOO_LARGE instead of failing its round on
// every redelivery. At the limit the result is recorded.
func TestOversizeResultFailsTheAttempt(t *testing.T) {
	t.Parallel()
	const limit = 1024
	s := setup(t, engine.Config{MaxResultBytes: limit})
	rawWorker(t, s.js, "default", func(tk task.Task) task.Result {
		r := task.NewResult(tk, task.Completed, "", "raw")
		size := limit // the output is exactly at the limit for step "fits"
		if tk.StepID == "huge" {
			size = limit + 1
		}
		r.Output = json.RawMessage(`"` + strings.Repeat("x", size-2) + `"`)
		return r
	})
	runID := s.start(t, parsePlan(t, `{"planId":"big","planVersion":"1","steps":[
		{"id":"fits","activity":"x"},{"id":"huge","activity":"x","dependsOn":["fits"]}]}`))
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunFailed, terminal(evs))
	var failure events.StepFailedData
	for _, ev := range evs {
		if ev.EventType == events.StepFailed && ev.StepID == "huge" {
			require.NoError(t, ev.Data(&failure))
		}
		require.False(t, ev.EventType == events.StepCompleted && ev.StepID == "huge")
	}
	require.Equal(t, engine.CodeResultTooLarge, failure.Error.Code)
	require.False(t, failure.Error.Retryable)
}

// CANCEL reaches the worker: the running activity's context is cancelled
// through the engine's cancel notice, and the run ends CANCELLED.
func TestCancelStopsRunningActivity(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	started, stopped := make(chan struct{}, 1), make(chan error, 1)
	startSDKWorker(t, s.nats.JetStream(t), "w", func(ctx context.Context, _ worker.Input) (worker.Output, error) {
		started <- struct{}{}
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return worker.Output{}, ctx.Err()
	})
	runID := s.start(t, parsePlan(t, `{"planId":"c","planVersion":"1","steps":[{"id":"a","activity":"work","timeout":"1h"}]}`))
	<-started
	s.signal(t, runID, "CANCEL", "stop", `{}`)
	require.Equal(t, events.RunCancelled, terminal(s.waitTerminal(t, runID)))
	select {
	case cause := <-stopped:
		require.ErrorContains(t, cause, "cancel", "the activity was stopped by the cancel notice, not its timeout")
	case <-time.After(waitFor):
		t.Fatal("the running activity was not cancelled")
	}
}

// A worker reports a failure whose message is huge: the engine records
// the failure with the message cut, rather than an event the log refuses.
func TestHugeErrorMessageIsCut(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", func(tk task.Task) task.Result {
		r := task.NewResult(tk, task.Failed, "", "raw")
		r.Error = &events.StepError{Code: "LOUD", Message: strings.Repeat("é", 3<<20), Retryable: false}
		return r
	})
	runID := s.start(t, parsePlan(t, `{"planId":"loud","planVersion":"1","steps":[{"id":"a","activity":"x"}]}`))
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunFailed, terminal(evs))
	for _, ev := range evs {
		if ev.EventType == events.StepFailed {
			var d events.StepFailedData
			require.NoError(t, ev.Data(&d))
			require.Equal(t, "LOUD", d.Error.Code)
			require.Less(t, len(d.Error.Message), 5<<10)
			require.True(t, utf8.ValidString(d.Error.Message))
			require.True(t, strings.HasSuffix(d.Error.Message, "…(truncated by the engine)"))
		}
	}
}
