package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
	"github.com/weftrun/weft/services/engine"
)

// timeoutsConfig fires timers promptly: these tests use short timeouts
// and wait for their outcome.
var timeoutsConfig = engine.Config{TimerPollInterval: 20 * time.Millisecond}

// startQueueWorker starts a worker of queue with activity "work" until
// the test ends (faults_test.go's startSDKWorker serves "default" only).
func startQueueWorker(t *testing.T, s *stack, queue string, fn worker.ActivityFunc) {
	t.Helper()
	w, err := worker.New(s.nats.JetStream(t), worker.Config{Queue: queue, WorkerID: "w-" + queue, AckWait: 5 * time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Register("work", fn))
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, w.Stop(ctx))
	})
}

// stepErrors returns the error code of each StepRetryScheduled and
// StepFailed of step, in log order.
func stepErrors(t *testing.T, evs []events.Event, step string) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		if e.StepID != step {
			continue
		}
		switch e.EventType {
		case events.StepRetryScheduled:
			var d events.StepRetryScheduledData
			require.NoError(t, e.Data(&d))
			out = append(out, d.Error.Code)
		case events.StepFailed:
			var d events.StepFailedData
			require.NoError(t, e.Data(&d))
			out = append(out, d.Error.Code)
		default:
		}
	}
	return out
}

// A task nobody takes fails its attempt with SCHEDULE_TO_START_TIMEOUT
// and is retried; when the retries are spent the run fails. The queued
// tasks got cancel notices: a worker that comes to the queue afterwards
// drops them without running the activity.
func TestScheduleToStartTimeoutOfATaskNobodyTakes(t *testing.T) {
	t.Parallel()
	s := setup(t, timeoutsConfig)
	runID := s.start(t, parsePlan(t, `{"planId":"s2s","planVersion":"1","steps":[
		{"id":"lonely","activity":"work","queue":"nobody","scheduleToStartTimeout":"200ms",
		 "retry":{"maxAttempts":2,"initialBackoff":"10ms","maxBackoff":"10ms"}}]}`))

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunFailed, terminal(evs))
	require.Equal(t, []string{"SCHEDULE_TO_START_TIMEOUT", "SCHEDULE_TO_START_TIMEOUT"}, stepErrors(t, evs, "lonely"))
	require.NotContains(t, types(evs), events.StepStarted)

	// The notices are in WEFT_CANCELS; the last one covers both attempts.
	cancels, err := s.js.Stream(t.Context(), streams.CancelsStream)
	require.NoError(t, err)
	subject, err := streams.CancelSubject(runID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		m, err := cancels.GetLastMsgForSubject(t.Context(), subject)
		if err != nil {
			return false
		}
		var c task.Cancel
		return json.Unmarshal(m.Data, &c) == nil && c.Covers("lonely", "2")
	}, waitFor, 10*time.Millisecond, "the second attempt's notice reaches WEFT_CANCELS")

	calls := make(chan string, 4)
	startQueueWorker(t, s, "nobody", func(_ context.Context, in worker.Input) (worker.Output, error) {
		calls <- in.LogicalAttemptID
		return worker.Output{}, nil
	})
	tasks, err := s.js.Consumer(t.Context(), streams.TasksStream, "tasks-nobody")
	require.Eventually(t, func() bool {
		if err != nil {
			tasks, err = s.js.Consumer(t.Context(), streams.TasksStream, "tasks-nobody")
			return false
		}
		info, ierr := tasks.Info(t.Context())
		return ierr == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Consumer >= 2
	}, waitFor, 10*time.Millisecond, "the worker takes both queued tasks and settles them")
	require.Empty(t, calls, "neither timed-out attempt ran")
}

// A worker that stops heartbeating fails its attempt with
// HEARTBEAT_TIMEOUT: the activity's context is cancelled by the notice,
// and the retry gets the last heartbeat's details. The retry heartbeats
// past the timeout and completes: fresh heartbeats re-arm the timer and
// write no event.
func TestHeartbeatTimeoutRetriesWithTheLastDetails(t *testing.T) {
	t.Parallel()
	s := setup(t, timeoutsConfig)
	stopped := make(chan error, 1)
	resumed := make(chan json.RawMessage, 1)
	release := make(chan struct{})
	startQueueWorker(t, s, "default", func(ctx context.Context, in worker.Input) (worker.Output, error) {
		if in.LogicalAttemptID == "1" {
			if err := in.Heartbeat(ctx, map[string]int{"offset": 3}); err != nil {
				return worker.Output{}, err
			}
			<-ctx.Done() // stops heartbeating, as a hung activity would
			stopped <- context.Cause(ctx)
			return worker.Output{}, ctx.Err()
		}
		resumed <- in.LastHeartbeat
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if err := in.Heartbeat(ctx, map[string]int{"offset": 4}); err != nil {
				return worker.Output{}, err
			}
			select {
			case <-release:
				return worker.NewOutput(map[string]string{"resumedFrom": string(in.LastHeartbeat)})
			case <-ctx.Done():
				return worker.Output{}, ctx.Err()
			case <-tick.C:
			}
		}
	})
	runID := s.start(t, parsePlan(t, `{"planId":"hb","planVersion":"1","steps":[
		{"id":"crawl","activity":"work","heartbeatTimeout":"1s",
		 "retry":{"maxAttempts":2,"initialBackoff":"10ms","maxBackoff":"10ms"}}]}`))

	select {
	case cause := <-stopped:
		require.ErrorContains(t, cause, "HEARTBEAT_TIMEOUT", "the cancel notice ended the silent attempt")
	case <-time.After(waitFor):
		require.FailNow(t, "the silent attempt was never stopped")
	}
	require.JSONEq(t, `{"offset":3}`, string(<-resumed))

	// The retry's heartbeat timer fires while it heartbeats, and is armed
	// again, later, with no event; then the retry may finish.
	var first time.Time
	require.Eventually(t, func() bool {
		var due time.Time
		err := s.db.Pool.QueryRow(t.Context(), `SELECT due_at FROM engine_timers
			WHERE run_id = $1 AND step_id = 'crawl' AND logical_attempt = 2 AND kind = 'heartbeat'`, runID).Scan(&due)
		if err != nil {
			return false
		}
		if first.IsZero() {
			first = due
		}
		return due.After(first)
	}, waitFor, 10*time.Millisecond, "the retry's heartbeat timer is re-armed")
	close(release)

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	require.Equal(t, []string{"HEARTBEAT_TIMEOUT"}, stepErrors(t, evs, "crawl"))
	for _, e := range evs {
		require.NotContains(t, string(e.EventType), "Heartbeat", "heartbeats are not events")
	}
	kv, err := s.js.KeyValue(t.Context(), task.HeartbeatsBucket)
	require.NoError(t, err)
	entry, err := kv.Get(t.Context(), task.HeartbeatKey(runID, "crawl"))
	require.NoError(t, err)
	var last task.Heartbeat
	require.NoError(t, json.Unmarshal(entry.Value(), &last))
	require.Equal(t, "2", last.LogicalAttemptID)
	require.JSONEq(t, `{"offset":4}`, string(last.Details))
}

// A run that outlives its runTimeout fails with RUN_TIMEOUT: the attempt
// in flight fails with it and its worker is told to stop, the steps not
// yet run are skipped.
func TestRunTimeoutFailsTheRun(t *testing.T) {
	t.Parallel()
	s := setup(t, timeoutsConfig)
	stopped := make(chan error, 1)
	startQueueWorker(t, s, "default", func(ctx context.Context, _ worker.Input) (worker.Output, error) {
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return worker.Output{}, ctx.Err()
	})
	runID := s.start(t, parsePlan(t, `{"planId":"slow","planVersion":"1","runTimeout":"1s","steps":[
		{"id":"slow","activity":"work","timeout":"1h"},
		{"id":"after","activity":"work","dependsOn":["slow"]}]}`))

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunFailed, terminal(evs))
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	require.Equal(t, "RUN_TIMEOUT", snap.Error.Code)
	require.Equal(t, map[string]events.StepStatus{"slow": events.StepStatusFailed, "after": events.StepStatusSkipped},
		stepStatuses(t, runID, evs))
	require.Equal(t, []string{"RUN_TIMEOUT"}, stepErrors(t, evs, "slow"))
	select {
	case cause := <-stopped:
		require.ErrorContains(t, cause, "runTimeout", "the cancel notice stopped the activity")
	case <-time.After(waitFor):
		require.FailNow(t, "the in-flight activity was never stopped")
	}
}
