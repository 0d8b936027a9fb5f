package worker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// These tests drive the engine's "started" answer
// (task.ReconcileReply.Started): the log holds a keyed attempt's
// StepStarted and no outcome.

// Issue 16, defect 4, last gap: a keyed attempt began on one worker, which
// died with the server; the server came back without the delivery and
// handed the task to a second worker as delivery 1, beyond the results
// stream's dedupe window (the stream was created again, so its PubAck of
// the second StepStarted is not a duplicate and the bus cannot tell). The
// engine's lookup has no record but answers that the attempt started; the
// activity has no verify hook, so the second worker fails the attempt as
// indeterminate instead of running it again.
func TestKeyedAttemptStartedBeyondTheDedupeWindowDoesNotRunAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := keyedTask("charge", "1")
	act, fresh := b.firstWorkerLost(t, tk)
	require.NoError(t, fresh.js.DeleteStream(t.Context(), streams.ResultsStream), "the dedupe window is past")
	require.NoError(t, streams.Ensure(t.Context(), fresh.js, streams.Config{MaxBytes: 64 << 20}))
	engine := fresh.serveLookups(t) // no record: the first run's outcome never arrived
	engine.putStarted(tk.OperationID, tk.IdempotencyKey, task.ReconcileStarted{StepID: tk.StepID,
		LogicalAttemptID: "1", EngineAttemptID: "1", WorkerID: "first", StartedAt: time.Now().UTC()})
	results := fresh.results(t, tk.RunID)
	fresh.startWorker(t, nil, worker.Config{WorkerID: "second"},
		func(w *worker.Worker) { require.NoError(t, w.Register("charge", act.run)) })

	started := results.next()
	require.Equal(t, task.Started, started.Kind)
	require.Equal(t, "second", started.WorkerID, "the second StepStarted was stored anew: no duplicate PubAck")
	r := results.final()
	require.Equal(t, "second", r.WorkerID)
	require.Equal(t, "1", r.EngineAttemptID, "the server handed the task out again as delivery 1")
	requireFailed(t, tk, r, worker.CodeReconciliationIndeterminate, true)
	requireReconcile(t, tk, r, task.StatusIndeterminate, "")
	require.EqualValues(t, 1, act.calls.Load(), "the keyed activity ran once, on the first worker")
	require.Len(t, engine.lookups(), 1)
	fresh.requireTasksSettled(t)
}

// A delivery that may follow an earlier run looks the record up before it
// stores its own StepStarted, so the engine's "started" never names the
// asking delivery: here no earlier delivery of logical attempt 2 began it,
// and the engine answers "started" as soon as it sees the attempt's
// StepStarted; the activity runs, once.
func TestKeyedLookupComesBeforeTheOwnStepStarted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	engine := b.serveLookups(t)
	engine.answerFromBus(b.js)
	act := &counted{}
	tk := keyedTask("charge", "2")
	results := b.results(t, tk.RunID)
	b.startWorker(t, nil, worker.Config{},
		func(w *worker.Worker) { require.NoError(t, w.Register("charge", act.run)) })
	publishTask(t, b.js, tk)

	r := results.final()
	require.Equal(t, task.Completed, r.Kind, "%+v", r.Error)
	requireReconcile(t, tk, r, task.StatusCompleted, "")
	require.EqualValues(t, 1, act.runs.Load())
	require.Len(t, engine.lookups(), 1)
	b.requireTasksSettled(t)
}
