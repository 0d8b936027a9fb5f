package worker_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

func TestCancelNotice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	b.startWorker(t, nil, worker.Config{Concurrency: 4}, func(w *worker.Worker) {
		require.NoError(t, w.Register("gate", g.run))
	})
	build := newTask("gate", "")
	test := build
	test.StepID = "test"
	other := newTask("gate", "") // another run, same step id
	for _, tk := range []task.Task{build, test, other} {
		publishTask(t, b.js, tk)
		g.awaitStart(t)
	}
	run := b.results(t, build.RunID)

	// A notice naming a step stops that step only.
	sendCancel(t, b, task.Cancel{SchemaVersion: 1, RunID: build.RunID, StepIDs: []string{"build"}, Reason: "first"})
	r := run.await("build", task.Failed)
	requireFailed(t, build, r, worker.CodeCancelled, false)
	require.Equal(t, worker.CategoryCancelled, r.Error.Category)
	require.Equal(t, "the run was cancelled: first", r.Error.Message)

	// A notice naming no step stops every step of the run. Had the first
	// notice stopped this step, its message would say "first".
	sendCancel(t, b, task.Cancel{SchemaVersion: 1, RunID: test.RunID, Reason: "second"})
	r = run.await("test", task.Failed)
	requireFailed(t, test, r, worker.CodeCancelled, false)
	require.Equal(t, "the run was cancelled: second", r.Error.Message)

	// Neither notice touched the other run, whose activity completes.
	close(g.release)
	otherResults := b.results(t, other.RunID)
	requireResult(t, other, task.Started, "1", otherResults.next())
	requireResult(t, other, task.Completed, "1", otherResults.next())
	b.requireTasksSettled(t)
}

// sendCancel publishes c as the engine does, over core NATS, after a
// notice the worker cannot decode and must ignore.
func sendCancel(t *testing.T, b *bundle, c task.Cancel) {
	t.Helper()
	data, err := json.Marshal(c)
	require.NoError(t, err)
	subject, err := streams.CancelSubject(c.RunID)
	require.NoError(t, err)
	require.NoError(t, b.js.Conn().Publish(subject, []byte("not json")))
	require.NoError(t, b.js.Conn().Publish(subject, data))
	require.NoError(t, b.js.Conn().Flush())
}
