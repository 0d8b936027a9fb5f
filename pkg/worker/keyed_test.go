package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// These tests reproduce a nats-server that restarts without the latest
// state of the task consumer, as one killed (kill -9) between two flushes
// of that state does: the task it delivered before comes back with a
// delivery count of 1. The embedded server cannot be killed, so the test
// stops it and puts back the consumer state file as it was before the
// delivery, which is what the killed server would have found on disk.

// consumerState is the task consumer's state file in the server's store.
type consumerState struct {
	path string
	data []byte
}

// saveConsumerState reads the default queue consumer's state as it is on
// disk now.
func (b *bundle) saveConsumerState(t *testing.T) consumerState {
	t.Helper()
	dir := b.nats.Server().JetStreamConfig().StoreDir
	path := filepath.Join(dir, "$G", "streams", streams.TasksStream, "obs", "tasks-"+worker.DefaultQueue, "o.dat")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return consumerState{path: path, data: data}
}

// restartLosingDeliveries stops the server, puts back the consumer state s,
// and starts the server again on the same store and port.
func (b *bundle) restartLosingDeliveries(t *testing.T, s consumerState, whileDown func()) {
	t.Helper()
	b.nats.Stop()
	require.NoError(t, os.WriteFile(s.path, s.data, 0o600))
	whileDown()
	b.nats.Restart()
}

// firstBlocks is a keyed activity whose first call blocks until release
// is closed; every call counts, and completes with {"call": n}.
type firstBlocks struct {
	calls   atomic.Int32
	started chan struct{}
	release chan struct{}
}

func newFirstBlocks() *firstBlocks {
	return &firstBlocks{started: make(chan struct{}), release: make(chan struct{})}
}

func (f *firstBlocks) run(ctx context.Context, _ worker.Input) (worker.Output, error) {
	n := f.calls.Add(1)
	if n == 1 {
		close(f.started)
		select {
		case <-f.release:
		case <-ctx.Done():
			return worker.Output{}, ctx.Err()
		}
	}
	return worker.NewOutput(map[string]int32{"call": n})
}

// Issue 16, defect 4: a keyed attempt ran, its result's publish and its
// nak failed while nats-server was down, and the server came back without
// the delivery, handing the task out again as delivery 1. The worker
// remembers the attempt it began and reports its outcome; the activity
// does not run again, though no engine answers lookups and there is no
// verifier.
func TestKeyedAttemptRunsOnceWhenTheServerForgetsTheDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	act := newFirstBlocks()
	b.startWorker(t, nil, worker.Config{RedeliveryDelay: 10 * time.Millisecond, PublishTimeout: time.Second},
		func(w *worker.Worker) { require.NoError(t, w.Register("charge", act.run)) })
	before := b.saveConsumerState(t)
	tk := keyedTask("charge", "1")
	publishTask(t, b.js, tk)
	<-act.started

	b.restartLosingDeliveries(t, before, func() {
		close(act.release) // the activity completes while the server is down
		b.waitLog(t, "final result not published", "nak failed")
	})

	fresh := *b
	fresh.js = b.nats.JetStream(t)
	r := fresh.results(t, tk.RunID).final()
	requireResult(t, tk, task.Completed, "1", r)
	require.JSONEq(t, `{"call":1}`, string(r.Output), "the first execution's result")
	requireReconcile(t, tk, r, task.StatusCompleted, "")
	fresh.requireTasksSettled(t)
	require.EqualValues(t, 1, act.calls.Load(), "the keyed activity ran once")

	started := b.logLines(t, "worker: attempt started", tk.RunID)
	require.Len(t, started, 2, "two deliveries")
	for _, l := range started {
		require.Equal(t, "1", l["engine_attempt_id"], "the server handed the task out again as delivery 1")
	}
	var ended []map[string]any
	require.Eventually(t, func() bool { // logged once the ack is confirmed
		ended = b.logLines(t, "worker: attempt ended", tk.RunID)
		return len(ended) >= 2
	}, waitFor, 10*time.Millisecond)
	require.Len(t, ended, 2)
	require.Equal(t, "activity", ended[0]["settled_by"])
	require.Equal(t, false, ended[0]["published"])
	require.Equal(t, "memory", ended[1]["settled_by"])
	require.Equal(t, true, ended[1]["acked"])
}

// The same loss, seen by a worker that did not run the attempt (the first
// worker died with it): a task stored before the worker started is
// reconciled though its delivery count is 1, and the verifier's answer
// keeps the activity from running again.
func TestKeyedTaskStoredBeforeTheWorkerStartedIsReconciled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doomed, conn := newFirstBlocks(), b.nats.Conn(t)
	b.startWorker(t, jetstreamOf(t, conn), worker.Config{WorkerID: "doomed"},
		func(w *worker.Worker) { require.NoError(t, w.Register("charge", doomed.run)) })
	t.Cleanup(func() { close(doomed.release) }) // before the worker's Stop
	before := b.saveConsumerState(t)
	tk := keyedTask("charge", "1")
	publishTask(t, b.js, tk)
	<-doomed.started

	// The doomed worker's process dies with the server: it reports
	// nothing, and the server forgets it delivered the task.
	b.restartLosingDeliveries(t, before, conn.Close)
	engine := b.serveLookups(t)
	survivor := &counted{}
	result := worker.Output{JSON: json.RawMessage(`{"receipt":"r-1"}`)}
	ver := &verifier{v: worker.Verification{State: worker.VerifyCompletedWithResult, Result: &result}}
	fresh := *b
	fresh.js = b.nats.JetStream(t)
	results := fresh.results(t, tk.RunID)
	fresh.startWorker(t, nil, worker.Config{WorkerID: "survivor"}, func(w *worker.Worker) {
		require.NoError(t, w.Register("charge", survivor.run, worker.WithVerify(ver.verify)))
	})
	r := results.final()
	requireResult(t, tk, task.Completed, "1", r)
	require.Equal(t, "survivor", r.WorkerID, "delivery 1 again, to the survivor")
	requireReconcile(t, tk, r, task.StatusCompleted, task.ReconciledByVerify)
	require.Zero(t, survivor.runs.Load(), "the activity did not run again")
	require.EqualValues(t, 1, ver.calls.Load())
	require.Len(t, engine.lookups(), 1, "the record was looked up first")
}

// firstWorkerLost has a worker named "first" begin keyed task tk of
// activity "charge", then closes that worker's connection and restarts the
// server without the delivery (restartLosingDeliveries), the activity
// still blocked: as the soak's nats-server kill left it. It returns the
// activity, shared by every worker as one external system, and a bundle
// on a fresh connection for a second worker.
func (b *bundle) firstWorkerLost(t *testing.T, tk task.Task) (*firstBlocks, *bundle) {
	t.Helper()
	act, conn := newFirstBlocks(), b.nats.Conn(t)
	b.startWorker(t, jetstreamOf(t, conn), worker.Config{WorkerID: "first"},
		func(w *worker.Worker) { require.NoError(t, w.Register("charge", act.run)) })
	t.Cleanup(func() { close(act.release) }) // before the worker's Stop
	before := b.saveConsumerState(t)
	publishTask(t, b.js, tk)
	<-act.started
	b.restartLosingDeliveries(t, before, conn.Close)
	fresh := *b
	fresh.js = b.nats.JetStream(t)
	return act, &fresh
}

// Issue 16, defect 4, across workers (the soak's step "ship"): a keyed
// attempt began on one worker, which then died with the server; the server
// came back without the delivery and handed the task to a second worker as
// delivery 1. The engine holds no outcome of the attempt (no record) and
// the activity has no verify hook, so nothing says the first run did not
// happen: the second worker finds the first one's StepStarted on the bus
// (a duplicate PubAck) and fails the attempt as indeterminate rather than
// run the activity again.
func TestKeyedAttemptBegunByAnotherWorkerDoesNotRunAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := keyedTask("charge", "1")
	act, fresh := b.firstWorkerLost(t, tk)
	engine := fresh.serveLookups(t) // no record: the first run's outcome never arrived
	results := fresh.results(t, tk.RunID)
	fresh.startWorker(t, nil, worker.Config{WorkerID: "second"},
		func(w *worker.Worker) { require.NoError(t, w.Register("charge", act.run)) })

	r := results.final()
	require.Equal(t, "second", r.WorkerID)
	require.Equal(t, "1", r.EngineAttemptID, "the server handed the task out again as delivery 1")
	requireFailed(t, tk, r, worker.CodeReconciliationIndeterminate, true)
	requireReconcile(t, tk, r, task.StatusIndeterminate, "")
	require.EqualValues(t, 1, act.calls.Load(), "the keyed activity ran once, on the first worker")
	require.Len(t, engine.lookups(), 1, "the record was looked up first")
	fresh.requireTasksSettled(t)
}

// A keyed attempt's StepStarted fails closed: while the bus cannot store
// it, the activity does not run and the task is given back; once it is
// stored, the activity runs, once. (An unkeyed attempt runs anyway:
// TestUnpublishedResultRedelivers.)
func TestKeyedAttemptRunsOnlyAfterItsStepStartedIsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.serveLookups(t) // the redelivery looks the record up: none
	act := &counted{}
	b.startWorker(t, nil, worker.Config{RedeliveryDelay: 10 * time.Millisecond, PublishTimeout: time.Second},
		func(w *worker.Worker) { require.NoError(t, w.Register("charge", act.run)) })
	require.NoError(t, b.js.DeleteStream(t.Context(), streams.ResultsStream))

	tk := keyedTask("charge", "1")
	publishTask(t, b.js, tk)
	b.waitLog(t, "StepStarted of a keyed attempt not stored; the activity does not run")
	require.Zero(t, act.runs.Load(), "the activity waits for its StepStarted")

	require.NoError(t, streams.Ensure(t.Context(), b.js, streams.Config{MaxBytes: 64 << 20}))
	results := b.results(t, tk.RunID)
	require.Equal(t, task.Started, results.next().Kind)
	r := results.final()
	require.Equal(t, task.Completed, r.Kind)
	requireReconcile(t, tk, r, task.StatusCompleted, "")
	b.requireTasksSettled(t)
	require.EqualValues(t, 1, act.runs.Load())
}
