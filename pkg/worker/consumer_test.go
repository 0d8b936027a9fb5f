package worker_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// keptWorker is a running echo worker of the default queue whose metrics
// h serves.
type keptWorker struct {
	*bundle
	h http.Handler
}

func startKeptWorker(t *testing.T) *keptWorker {
	t.Helper()
	b := setup(t)
	mp, h, err := metrics.New()
	require.NoError(t, err)
	b.startWorker(t, nil, worker.Config{MeterProvider: mp}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", echo))
	})
	return &keptWorker{bundle: b, h: h}
}

// consumerExists reports whether the queue's durable consumer exists, as
// the service's readiness check of it asks.
func (k *keptWorker) consumerExists(t *testing.T) bool {
	t.Helper()
	_, err := k.js.Consumer(t.Context(), streams.TasksStream, "tasks-default")
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// taskCompletes publishes a task and waits for its completed result.
func (k *keptWorker) taskCompletes(t *testing.T) {
	t.Helper()
	tk := newTask("echo", `{"n":1}`)
	results := k.results(t, tk.RunID)
	publishTask(t, k.js, tk)
	requireResult(t, tk, task.Completed, "1", results.await("build", task.Completed))
}

// The task consumer deleted under a running worker is created again: tasks
// flow again, and the re-creation is counted.
func TestTaskConsumerDeletedUnderAWorkerIsCreatedAgain(t *testing.T) {
	t.Parallel()
	k := startKeptWorker(t)
	k.taskCompletes(t)

	require.NoError(t, k.js.DeleteConsumer(t.Context(), streams.TasksStream, "tasks-default"))
	k.taskCompletes(t)
	scrape := metricstest.Get(t, k.h)
	require.Equal(t, int64(1), scrape.Count(t, "weft_consumer_recreations_total", map[string]string{"consumer": "tasks-default"}))
	require.True(t, k.consumerExists(t))
}

// WEFT_TASKS deleted and created again (`weft migrate`) under a running
// worker: while it is gone /readyz names the consumer and the gauge shows
// it missing; then the consumer is created again and tasks flow.
func TestWorkerSurvivesTheTasksStreamRecreated(t *testing.T) {
	t.Parallel()
	k := startKeptWorker(t)
	k.taskCompletes(t)

	require.NoError(t, k.js.DeleteStream(t.Context(), streams.TasksStream))
	require.False(t, k.consumerExists(t))
	metricstest.WaitFor(t, k.h, waitFor, func(s metricstest.Scrape) bool {
		v, ok := s.Sum("weft_consumer_missing", map[string]string{"consumer": "tasks-default"})
		return ok && v == 1
	})

	require.NoError(t, streams.Ensure(context.Background(), k.js, streams.Config{MaxBytes: 64 << 20}))
	k.taskCompletes(t)
	require.True(t, k.consumerExists(t))
}

// A worker started while its task consumer cannot be created (WEFT_TASKS
// not there yet: a failure that may be transient) starts anyway: /readyz
// names the consumer and the gauge shows it missing until it is created,
// and then tasks flow.
func TestWorkerStartsWhileItsConsumerCannotBeCreated(t *testing.T) {
	t.Parallel()
	b := setupWithoutStreams(t)
	mp, h, err := metrics.New()
	require.NoError(t, err)
	b.startWorker(t, nil, worker.Config{MeterProvider: mp}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", echo))
	})
	k := &keptWorker{bundle: b, h: h}
	require.False(t, k.consumerExists(t))
	scrape := metricstest.Get(t, h)
	require.Equal(t, int64(1), scrape.Count(t, "weft_consumer_missing", map[string]string{"consumer": "tasks-default"}))
	require.Contains(t, b.logs.String(), "creating the consumer at start failed")

	require.NoError(t, streams.Ensure(t.Context(), b.js, streams.Config{MaxBytes: 64 << 20}))
	k.taskCompletes(t)
	require.True(t, k.consumerExists(t))
}

// A worker still waiting for its consumer stops at once.
func TestWorkerWaitingForItsConsumerStops(t *testing.T) {
	t.Parallel()
	b := setupWithoutStreams(t)
	w, err := worker.New(b.js, worker.Config{Logger: b.logger})
	require.NoError(t, err)
	require.NoError(t, w.Start(t.Context()))
	require.NoError(t, w.Stop(t.Context()))
}

// A worker whose NATS connection closes for good stops by itself, says
// so in its log and in Err, instead of pulling in vain for ever; a worker
// stopped by Stop has no Err.
func TestWorkerStopsWhenItsConnectionClosesForGood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	nc := b.nats.Conn(t)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	w, err := worker.New(js, worker.Config{Logger: b.logger})
	require.NoError(t, err)
	require.NoError(t, w.Register("echo", echo))
	require.NoError(t, w.Start(t.Context()))
	require.NoError(t, w.Err(), "running")

	nc.Close()
	select {
	case <-w.Stopped():
	case <-time.After(time.Minute):
		t.Fatalf("the worker did not stop; logs:\n%s", b.logs.String())
	}
	require.ErrorIs(t, w.Err(), worker.ErrConnectionClosed)
	require.Contains(t, b.logs.String(), "the NATS connection is closed for good; the worker stops taking tasks")
	require.NoError(t, w.Stop(t.Context()), "Stop after it stopped is a no-op")

	other, err := worker.New(b.js, worker.Config{Logger: b.logger})
	require.NoError(t, err)
	require.NoError(t, other.Start(t.Context()))
	require.NoError(t, other.Stop(t.Context()))
	require.NoError(t, other.Err(), "a stop asked for is no failure")
}
