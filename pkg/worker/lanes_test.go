package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/weftrun/weft/internal/testkit/metrictest"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// publishTenantTask publishes tk on its tenant's lane, as the engine does,
// making the queue's lanes stream first.
func publishTenantTask(t *testing.T, js jetstream.JetStream, tk task.Task) {
	t.Helper()
	require.NoError(t, streams.EnsureTaskLanes(t.Context(), js, streams.Config{MaxBytes: 64 << 20}, tk.Queue))
	data, err := json.Marshal(tk)
	require.NoError(t, err)
	subject, err := streams.TenantTaskSubject(tk.Queue, tk.TenantID)
	require.NoError(t, err)
	_, err = js.PublishMsg(t.Context(), &nats.Msg{Subject: subject, Data: data},
		jetstream.WithMsgID(task.DedupeID(tk.RunID, tk.StepID, tk.LogicalAttemptID)))
	require.NoError(t, err)
}

func tenantTask(tenant, activity string) task.Task {
	tk := newTask(activity, "")
	tk.TenantID = tenant
	return tk
}

// starts records the tenant of each activity call, in order.
type starts chan string

func (s starts) next(t *testing.T) string {
	t.Helper()
	select {
	case tenant := <-s:
		return tenant
	case <-time.After(waitFor):
		require.FailNow(t, "no activity started")
		return ""
	}
}

// laneAckPending returns how many of the lane's tasks are delivered and
// not yet settled.
func (b *bundle) laneAckPending(t *testing.T, tenant string) int {
	t.Helper()
	cc, err := streams.TaskLaneConsumer(worker.DefaultQueue, streams.LaneToken(tenant), 0, 0)
	require.NoError(t, err)
	cons, err := b.js.Consumer(t.Context(), streams.TaskLanesStream(worker.DefaultQueue), cc.Durable)
	require.NoError(t, err)
	info, err := cons.Info(t.Context())
	require.NoError(t, err)
	return info.NumAckPending
}

// Issue #17's scenario, scaled down: tenant A queues 8 long tasks on the
// shared queue, then tenant B one quick task. With 2 slots busy with A's
// tasks, B's task takes the first slot that frees: it starts before any
// further task of A, and A's backlog stays in the stream, not in the
// worker.
func TestOneTenantsBacklogDoesNotStarveAnother(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	started := make(starts, 16)
	b.startWorker(t, nil, worker.Config{Concurrency: 2}, func(w *worker.Worker) {
		require.NoError(t, w.Register("sleep", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			started <- in.TenantID
			return g.run(ctx, in)
		}))
		require.NoError(t, w.Register("echo", func(_ context.Context, in worker.Input) (worker.Output, error) {
			started <- in.TenantID
			return worker.Output{JSON: []byte(`{}`)}, nil
		}))
	})
	for range 8 {
		publishTenantTask(t, b.js, tenantTask("tenant-a", "sleep"))
	}
	require.Equal(t, "tenant-a", started.next(t))
	require.Equal(t, "tenant-a", started.next(t))
	require.Equal(t, 2, b.laneAckPending(t, "tenant-a"), "never more tasks delivered than slots")

	quick := tenantTask("tenant-b", "echo")
	results := b.results(t, quick.RunID)
	publishTenantTask(t, b.js, quick)
	g.release <- struct{}{} // one of A's tasks ends: one slot frees
	require.Equal(t, "tenant-b", started.next(t), "B's task takes the first free slot")
	requireResult(t, quick, task.Completed, "1", results.final())

	require.Equal(t, "tenant-a", started.next(t), "then A's backlog goes on")
	close(g.release)
	for range 5 {
		require.Equal(t, "tenant-a", started.next(t))
	}
	b.requireTasksSettled(t)
}

// Two tenants with backlogs share the slots in turn.
func TestTenantsWithBacklogsTakeTurns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	started := make(starts, 16)
	b.startWorker(t, nil, worker.Config{Concurrency: 1}, func(w *worker.Worker) {
		require.NoError(t, w.Register("sleep", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			started <- in.TenantID
			return g.run(ctx, in)
		}))
	})
	publishTenantTask(t, b.js, tenantTask("a", "sleep"))
	require.Equal(t, "a", started.next(t))
	for range 3 {
		publishTenantTask(t, b.js, tenantTask("a", "sleep"))
	}
	for range 3 {
		publishTenantTask(t, b.js, tenantTask("b", "sleep"))
	}
	var order []string
	for range 6 {
		g.release <- struct{}{}
		order = append(order, started.next(t))
	}
	require.Equal(t, []string{"b", "a", "b", "a", "b", "a"}, order)
	g.release <- struct{}{}
	b.requireTasksSettled(t)
}

// Tasks of no tenant (from an engine before lanes) and tasks published
// before the worker started, on a lane it has never seen, all run.
func TestLegacyAndEarlierTenantTasksRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	early := tenantTask("early", "echo")
	earlyResults := b.results(t, early.RunID)
	publishTenantTask(t, b.js, early)
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{JSON: []byte(`{}`)}, nil
		}))
	})
	requireResult(t, early, task.Completed, "1", earlyResults.final())
	legacy := newTask("echo", "")
	legacyResults := b.results(t, legacy.RunID)
	publishTask(t, b.js, legacy)
	requireResult(t, legacy, task.Completed, "1", legacyResults.final())
	b.requireTasksSettled(t)
}

// A tenant lane's consumer deleted under a running worker (by an operator,
// or by the server once inactive) is created again, and its tasks run.
func TestLaneConsumerDeletedIsCreatedAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{JSON: []byte(`{}`)}, nil
		}))
	})
	for round := range 3 {
		tk := tenantTask("acme", "echo")
		results := b.results(t, tk.RunID)
		publishTenantTask(t, b.js, tk)
		requireResult(t, tk, task.Completed, "1", results.final())
		if round < 2 {
			require.NoError(t, b.js.DeleteConsumer(t.Context(), streams.TaskLanesStream(worker.DefaultQueue), "tasks-default~acme"))
		}
	}
	b.requireTasksSettled(t)
}

func TestLaneConfigEdges(t *testing.T) {
	t.Parallel()
	require.NoError(t, worker.Config{LaneInactiveThreshold: time.Second}.Validate())
	require.ErrorIs(t, worker.Config{LaneInactiveThreshold: time.Second - time.Millisecond}.Validate(), worker.ErrInvalidConfig)
	require.NoError(t, worker.Config{LanePollInterval: time.Nanosecond}.Validate())
	require.ErrorIs(t, worker.Config{LanePollInterval: -time.Nanosecond}.Validate(), worker.ErrInvalidConfig)
	require.ErrorIs(t, worker.Config{Queue: "a~b"}.Validate(), worker.ErrInvalidConfig)
	c := worker.Config{}.WithDefaults()
	require.Equal(t, worker.DefaultLanePollInterval, c.LanePollInterval)
	require.Equal(t, streams.DefaultLaneInactiveThreshold, c.LaneInactiveThreshold)
}

// Two workers of one slot each share the lanes: B's task, once each busy
// worker has seen it published, takes the first slot that frees on
// either, and the lane never has more tasks delivered than the workers
// have slots.
func TestTenantFairnessAcrossWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	started := make(starts, 16)
	var readers []*sdkmetric.ManualReader
	for range 2 {
		mp, reader := metrictest.Provider()
		readers = append(readers, reader)
		b.startWorker(t, nil, worker.Config{Concurrency: 1, MeterProvider: mp}, func(w *worker.Worker) {
			require.NoError(t, w.Register("sleep", func(ctx context.Context, in worker.Input) (worker.Output, error) {
				started <- in.TenantID
				return g.run(ctx, in)
			}))
		})
	}
	for range 6 {
		publishTenantTask(t, b.js, tenantTask("a", "sleep"))
	}
	require.Equal(t, "a", started.next(t))
	require.Equal(t, "a", started.next(t))
	require.Equal(t, 2, b.laneAckPending(t, "a"))
	publishTenantTask(t, b.js, tenantTask("b", "sleep"))
	for _, r := range readers { // each busy worker has seen b's task and holds b's lane
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Equal(c, int64(2), metrictest.Sum(t, r, "weft.worker.lanes"))
		}, waitFor, 5*time.Millisecond)
	}
	g.release <- struct{}{}
	require.Equal(t, "b", started.next(t))
	close(g.release)
	for range 4 {
		require.Equal(t, "a", started.next(t))
	}
	b.requireTasksSettled(t)
}

// A tenant id that is not a plain lane token (here with a '.') travels on
// its hashed lane.
func TestHashedLaneTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", func(_ context.Context, in worker.Input) (worker.Output, error) {
			return worker.NewOutput(map[string]string{"tenant": in.TenantID})
		}))
	})
	tk := tenantTask("acme.eu", "echo")
	results := b.results(t, tk.RunID)
	publishTenantTask(t, b.js, tk)
	r := results.final()
	requireResult(t, tk, task.Completed, "1", r)
	require.JSONEq(t, `{"tenant":"acme.eu"}`, string(r.Output))
	_, err := b.js.Consumer(t.Context(), streams.TaskLanesStream(worker.DefaultQueue), "tasks-default~"+streams.LaneToken("acme.eu"))
	require.NoError(t, err)
	b.requireTasksSettled(t)
}
