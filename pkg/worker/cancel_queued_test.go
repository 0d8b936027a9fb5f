package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// recordingGate is a gate that also records the run and step of each call.
type recordingGate struct {
	*gate
	calls chan string
}

func newRecordingGate() *recordingGate {
	return &recordingGate{gate: newGate(), calls: make(chan string, 64)}
}

func (g *recordingGate) register(t *testing.T) func(*worker.Worker) {
	return func(w *worker.Worker) {
		require.NoError(t, w.Register("gate", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			g.calls <- in.RunID + "/" + in.StepID + "/" + in.LogicalAttemptID
			return g.run(ctx, in)
		}))
	}
}

// relayCancel publishes c as the engine's outbox relay does: a JetStream
// publish on weft.cancel.<runId>, stored by WEFT_CANCELS and delivered to
// the workers subscribed to the subject.
func relayCancel(t *testing.T, js jetstream.JetStream, c task.Cancel) {
	t.Helper()
	data, err := json.Marshal(c)
	require.NoError(t, err)
	subject, err := streams.CancelSubject(c.RunID)
	require.NoError(t, err)
	_, err = js.Publish(t.Context(), subject, data, jetstream.WithMsgID(c.RunID+"/cancel"))
	require.NoError(t, err)
}

// step returns tk as step id, logical attempt attempt.
func step(tk task.Task, id, attempt string) task.Task {
	tk.StepID, tk.LogicalAttemptID = id, attempt
	return tk
}

// requireCalls requires that the activity was called for exactly the
// attempts want (run/step/logical attempt), in any order.
func (g *recordingGate) requireCalls(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	for len(g.calls) > 0 {
		got = append(got, <-g.calls)
	}
	require.ElementsMatch(t, want, got)
}

// Issue #17 item 1: a worker with one slot is busy with another run's
// task while a run's tasks queue behind it; the run is cancelled; when
// the slot frees, the cancelled run's queued attempts are dropped, never
// started, terminated, and reported nothing; the worker goes on with the
// next run's task.
func TestQueuedAttemptsOfCancelledRunNotStarted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newRecordingGate()
	b.startWorker(t, nil, worker.Config{Concurrency: 1}, g.register(t))
	blocker := newTask("gate", "")
	publishTask(t, b.js, blocker)
	g.awaitStart(t)

	victim := newTask("gate", "")
	queued := []task.Task{step(victim, "a", "1"), step(victim, "b", "1"), step(victim, "c", "2")}
	for _, tk := range queued {
		publishTask(t, b.js, tk)
	}
	relayCancel(t, b.js, task.Cancel{SchemaVersion: 1, RunID: victim.RunID, StepIDs: []string{"a", "b", "c"},
		Attempts: map[string]string{"a": "1", "b": "1", "c": "2"}, Reason: "cancelled by signal stop"})
	next := newTask("gate", "")
	publishTask(t, b.js, next)

	g.release <- struct{}{} // the blocker completes; the slot frees
	g.awaitStart(t)         // the next run's task: the victim's were taken before it, in order
	g.release <- struct{}{}
	b.requireTasksSettled(t)
	g.requireCalls(t, blocker.RunID+"/build/1", next.RunID+"/build/1")
	requireNoResults(t, b, victim.RunID)
	require.Equal(t, 3, strings.Count(b.logs.String(), "worker: attempt of a cancelled run dropped, not started"))
}

// A worker that was not subscribed when the notice went out (started
// after the cancel) learns of it from WEFT_CANCELS and drops the run's
// attempts; an attempt the notice does not cover (the step's next logical
// attempt, as RETRY_STEP makes, or a step it does not name) still runs.
func TestMissedNoticeFoundInStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := newTask("gate", "")
	relayCancel(t, b.js, task.Cancel{SchemaVersion: 1, RunID: run.RunID, StepIDs: []string{"a", "b"},
		Attempts: map[string]string{"a": "1", "b": "3"}, Reason: "cancelled by signal stop"})
	for _, tk := range []task.Task{step(run, "a", "1"), step(run, "b", "2"), step(run, "a", "2"), step(run, "z", "1")} {
		publishTask(t, b.js, tk)
	}
	g := newRecordingGate()
	close(g.release)
	b.startWorker(t, nil, worker.Config{Concurrency: 1}, g.register(t))
	results := b.results(t, run.RunID)
	for _, id := range []string{"a", "z"} {
		r := results.await(id, task.Completed)
		require.Equal(t, map[string]string{"a": "2", "z": "1"}[id], r.LogicalAttemptID)
	}
	b.requireTasksSettled(t)
	g.requireCalls(t, run.RunID+"/a/2", run.RunID+"/z/1")
	require.Equal(t, 2, strings.Count(b.logs.String(), "worker: attempt of a cancelled run dropped, not started"))
}

// Without WEFT_CANCELS (a deployment that predates it) a worker still
// drops the attempts of a notice it heard, and runs the others: the
// lookup fails open.
func TestHeardNoticeWithoutCancelsStream(t *testing.T) {
	t.Parallel()
	b := setupWithoutStreams(t)
	for _, sc := range []jetstream.StreamConfig{streams.Tasks(streams.Config{MaxBytes: 64 << 20}), streams.Results(streams.Config{MaxBytes: 64 << 20})} {
		_, err := b.js.CreateStream(t.Context(), sc)
		require.NoError(t, err)
	}
	g := newRecordingGate()
	b.startWorker(t, nil, worker.Config{Concurrency: 1}, g.register(t))
	victim, other := newTask("gate", ""), newTask("gate", "")
	running := step(victim, "a", "1")
	publishTask(t, b.js, running)
	g.awaitStart(t)
	victimResults := b.results(t, victim.RunID)
	sendCancel(t, b, task.Cancel{SchemaVersion: 1, RunID: victim.RunID, Reason: "stop"})
	// The running attempt stopped: the worker has heard the notice.
	requireFailed(t, running, victimResults.await("a", task.Failed), worker.CodeCancelled, false)
	close(g.release)
	publishTask(t, b.js, step(victim, "b", "1"))
	publishTask(t, b.js, other)
	require.Equal(t, task.Completed, b.results(t, other.RunID).final().Kind)
	b.requireTasksSettled(t)
	g.requireCalls(t, victim.RunID+"/a/1", other.RunID+"/build/1")
	require.NotContains(t, b.allResults(t), `"stepId":"b"`, "the queued attempt reported nothing")
	require.Equal(t, 1, strings.Count(b.logs.String(), "worker: attempt of a cancelled run dropped, not started"))
	require.Contains(t, b.logs.String(), "worker: cancel notice lookup failed; starting the attempt", "the other run's lookup failed open")
}

// requireNoResults requires that WEFT_RESULTS holds nothing of run.
func requireNoResults(t *testing.T, b *bundle, runID string) {
	t.Helper()
	require.NotContains(t, b.allResults(t), runID)
}
