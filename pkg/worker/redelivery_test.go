package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// A worker stopped mid-activity reports nothing and gives the task back;
// a second worker runs it as delivery 2 of the same logical attempt, under
// the same keys.
func TestStopMidActivityRedelivers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, second := newGate(), newGate()
	// A short AckWait: worker a's connection stays open after its Stop, so
	// the server may still hold a's abandoned pull request and hand the
	// Nak'd task to it; the task then comes back after AckWait.
	const ackWait = 2 * time.Second
	a := b.startWorker(t, nil, worker.Config{WorkerID: "a", AckWait: ackWait}, func(w *worker.Worker) {
		require.NoError(t, w.Register("gate", first.run))
	})
	tk := newTask("gate", `{}`)
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	require.Equal(t, "1", first.awaitStart(t).EngineAttemptID)
	requireResult(t, tk, task.Started, "1", results.next())

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, a.Stop(cancelled), context.Canceled, "the drain is cut short")

	b.startWorker(t, b.nats.JetStream(t), worker.Config{WorkerID: "b", AckWait: ackWait}, func(w *worker.Worker) {
		require.NoError(t, w.Register("gate", second.run))
	})
	in := second.awaitStart(t)
	// Delivery 2, or 3 when the Nak'd task first went to worker a's stale
	// pull request and came back after AckWait.
	require.Contains(t, []string{"2", "3"}, in.EngineAttemptID, "a later delivery of the task")
	require.Equal(t, "1", in.LogicalAttemptID)
	require.Equal(t, tk.IdempotencyKey, in.IdempotencyKey)
	close(second.release)

	// Worker b's StepStarted has the key of worker a's: JetStream stored it
	// once, so the next result is b's StepCompleted.
	completed := results.next()
	requireResult(t, tk, task.Completed, in.EngineAttemptID, completed)
	require.Equal(t, "b", completed.WorkerID)
	b.requireTasksSettled(t)
}

// A worker whose connection dies mid-activity loses its task to AckWait:
// JetStream hands it to a second worker as delivery 2.
func TestCrashedWorkerTaskIsRedelivered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	crashed, survivor := newGate(), newGate()
	conn := b.nats.Conn(t)
	js := jetstreamOf(t, conn)
	b.startWorker(t, js, worker.Config{WorkerID: "crashed", AckWait: time.Second}, func(w *worker.Worker) {
		require.NoError(t, w.Register("gate", crashed.run))
	})
	tk := newTask("gate", "")
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	crashed.awaitStart(t)
	requireResult(t, tk, task.Started, "1", results.next())
	conn.Close()

	b.startWorker(t, b.nats.JetStream(t), worker.Config{WorkerID: "survivor", AckWait: time.Second}, func(w *worker.Worker) {
		require.NoError(t, w.Register("gate", survivor.run))
	})
	require.Equal(t, "2", survivor.awaitStart(t).EngineAttemptID)
	close(survivor.release)
	requireResult(t, tk, task.Completed, "2", results.next())
	b.requireTasksSettled(t)
	close(crashed.release) // the dead worker's activity ends, and its result goes nowhere
}

// When the final result cannot be written, the task is not acked but
// redelivered, and the activity runs again; StepStarted fails open.
func TestUnpublishedResultRedelivers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	b.startWorker(t, nil, worker.Config{RedeliveryDelay: 10 * time.Millisecond, PublishTimeout: time.Second},
		func(w *worker.Worker) { require.NoError(t, w.Register("gate", g.run)) })
	require.NoError(t, b.js.DeleteStream(t.Context(), streams.ResultsStream))

	tk := newTask("gate", "")
	publishTask(t, b.js, tk)
	require.Equal(t, "1", g.awaitStart(t).EngineAttemptID, "the activity runs though StepStarted was not stored")
	g.release <- struct{}{} // delivery 1 completes, and its result has nowhere to go
	require.Equal(t, "2", g.awaitStart(t).EngineAttemptID, "the task was not acked")

	require.NoError(t, streams.Ensure(t.Context(), b.js, streams.Config{MaxBytes: 64 << 20}))
	results := b.results(t, tk.RunID)
	g.release <- struct{}{}
	requireResult(t, tk, task.Completed, "2", results.next())
	b.requireTasksSettled(t)
	require.Contains(t, b.logs.String(), "StepStarted not published; running the activity anyway")
	require.Contains(t, b.logs.String(), "final result not published")
}

func jetstreamOf(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}
