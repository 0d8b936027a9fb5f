package worker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// An attempt that ends before Config.StartedAfter publishes its final
// result alone: no StepStarted, before or after it.
func TestShortAttemptReportsOnlyItsOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, nil, worker.Config{WorkerID: "w", StartedAfter: time.Hour}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", echo))
	})
	tk := newTask("echo", `{"n":1}`)
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)

	completed := results.next()
	requireResult(t, tk, task.Completed, "1", completed)
	require.Equal(t, "w", completed.WorkerID, "the engine records StepStarted from the outcome's worker")
	b.requireTasksSettled(t)
	require.NotContains(t, b.allResults(t), `"kind":"StepStarted"`, "StepStarted is never sent")
}

// An attempt still running after Config.StartedAfter publishes StepStarted
// while it runs, and its final result after it.
func TestLongAttemptReportsStartedWhileRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	b.startWorker(t, nil, worker.Config{StartedAfter: time.Millisecond}, func(w *worker.Worker) {
		require.NoError(t, w.Register("gate", g.run))
	})
	tk := newTask("gate", "")
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	g.awaitStart(t)

	requireResult(t, tk, task.Started, "1", results.next())
	close(g.release)
	requireResult(t, tk, task.Completed, "1", results.next())
	b.requireTasksSettled(t)
}
