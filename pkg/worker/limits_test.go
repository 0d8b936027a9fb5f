package worker_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

func TestOversizeOutputIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	blob := strings.Repeat("x", 2000)
	b.startWorker(t, nil, worker.Config{MaxOutputBytes: 1024}, func(w *worker.Worker) {
		require.NoError(t, w.Register("big", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.NewOutput(map[string]string{"blob": blob})
		}))
		require.NoError(t, w.Register("many-artifacts", func(context.Context, worker.Input) (worker.Output, error) {
			arts := make([]events.ArtifactRef, 20)
			for i := range arts {
				arts[i] = events.ArtifactRef{URI: "s3://bucket/" + blob[:50], Kind: "log-bundle"}
			}
			return worker.Output{Artifacts: arts}, nil
		}))
		require.NoError(t, w.Register("fits", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{
				JSON:      []byte(`{ "blob" : "` + blob[:500] + `" }`),
				Artifacts: []events.ArtifactRef{{URI: "s3://bucket/key", Kind: "log-bundle", SizeBytes: 1 << 30}},
			}, nil
		}))
	})
	for _, activity := range []string{"big", "many-artifacts"} {
		tk := newTask(activity, "")
		results := b.results(t, tk.RunID)
		publishTask(t, b.js, tk)
		r := results.final()
		requireFailed(t, tk, r, worker.CodeOutputTooLarge, false)
		require.Contains(t, r.Error.Message, "limit of 1024")
	}
	tk := newTask("fits", "")
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	r := results.final()
	requireResult(t, tk, task.Completed, "1", r)
	require.Equal(t, `{"blob":"`+blob[:500]+`"}`, string(r.Output), "the output is compacted")
	require.Equal(t, []events.ArtifactRef{{URI: "s3://bucket/key", Kind: "log-bundle", SizeBytes: 1 << 30}}, r.Artifacts)

	require.NotContains(t, b.allResults(t), blob[:1000], "a refused output is never published")
	b.requireTasksSettled(t)
}

// With Concurrency N, N+1 blocking tasks start N activities; the last task
// is not even delivered until a slot frees.
func TestConcurrencyBound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	var running, peak atomic.Int32
	b.startWorker(t, nil, worker.Config{Concurrency: 2}, func(w *worker.Worker) {
		require.NoError(t, w.Register("gate", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				if p := peak.Load(); n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			return g.run(ctx, in)
		}))
	})
	for range 3 {
		publishTask(t, b.js, newTask("gate", ""))
	}
	g.awaitStart(t)
	g.awaitStart(t)
	cons, err := b.js.Consumer(t.Context(), streams.TasksStream, "tasks-default")
	require.NoError(t, err)
	info, err := cons.Info(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, info.NumAckPending, "two tasks are with the worker")
	require.EqualValues(t, 1, info.NumPending, "the third was not delivered")

	g.release <- struct{}{}
	g.awaitStart(t)
	close(g.release)
	b.requireTasksSettled(t)
	require.EqualValues(t, 2, peak.Load())
}

// A task that runs longer than AckWait stays with its worker: heartbeats
// keep JetStream from handing it out again.
func TestHeartbeatHoldsLongTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	b.startWorker(t, nil, worker.Config{AckWait: time.Second, Concurrency: 2}, func(w *worker.Worker) {
		require.NoError(t, w.Register("long", func(ctx context.Context, _ worker.Input) (worker.Output, error) {
			calls.Add(1)
			work := time.NewTimer(2500 * time.Millisecond) // two and a half AckWaits of work
			defer work.Stop()
			select {
			case <-work.C:
				return worker.Output{}, nil
			case <-ctx.Done():
				return worker.Output{}, ctx.Err()
			}
		}))
	})
	tk := newTask("long", "")
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	requireResult(t, tk, task.Completed, "1", results.final())
	b.requireTasksSettled(t)
	require.EqualValues(t, 1, calls.Load(), "the task was not redelivered")
}
