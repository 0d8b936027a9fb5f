package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/pkg/worker"
)

// laneTenants are the two ways a task reaches a worker: on the queue's own
// subject (a task of no tenant, as every task was before tenant lanes) and
// on a tenant's lane.
var laneTenants = []struct{ name, tenant string }{{"queue", ""}, {"lane", "acme"}}

// BenchmarkWorkerThroughput measures how many tasks of one tenant a worker
// of 4 slots takes and settles per second with an activity that returns at
// once: the tasks are all in the stream when the worker starts, so the
// figure is the worker's pulling, running, reporting and acking.
func BenchmarkWorkerThroughput(b *testing.B) {
	for _, lt := range laneTenants {
		b.Run("via="+lt.name, func(b *testing.B) {
			ctx := context.Background()
			js := laneBenchJS(b)
			for i := range b.N {
				publishBenchTask(b, js, lt.tenant, "noop", i)
			}
			var done atomic.Int64
			all := make(chan struct{})
			b.ResetTimer()
			start := time.Now()
			startBenchWorker(b, js, 4, func(context.Context, worker.Input) (worker.Output, error) {
				if done.Add(1) == int64(b.N) {
					close(all)
				}
				return worker.Output{JSON: []byte(`{}`)}, nil
			})
			<-all
			waitTasksSettled(ctx, b, js)
			report(b, b.N, time.Since(start), "tasks/s", nil)
		})
	}
}

// BenchmarkWorkerIdleLatency measures the delay from a task's publish to
// its activity's start on an idle worker, one task at a time: the figure a
// person starting a one-step run waits for.
func BenchmarkWorkerIdleLatency(b *testing.B) {
	for _, lt := range laneTenants {
		b.Run("via="+lt.name, func(b *testing.B) {
			js := laneBenchJS(b)
			began := make(chan time.Time, 1)
			startBenchWorker(b, js, 4, func(context.Context, worker.Input) (worker.Output, error) {
				began <- time.Now()
				return worker.Output{JSON: []byte(`{}`)}, nil
			})
			// The first task finds the lane (a consumer to create); the
			// figure is the steady state.
			publishBenchTask(b, js, lt.tenant, "noop", -1)
			<-began
			var lat latencies
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				sent := time.Now()
				publishBenchTask(b, js, lt.tenant, "noop", i)
				lat.add((<-began).Sub(sent))
			}
			report(b, b.N, time.Since(start), "tasks/s", &lat)
		})
	}
}

// starveBacklog and starveTask are issue #17's scenario, scaled: tenant A
// queues 40 tasks of 50 ms on a worker of 4 slots, then tenant B one
// quick task.
const (
	starveBacklog = 40
	starveTask    = 50 * time.Millisecond
)

// BenchmarkTenantStarvation measures how long tenant B's one task waits to
// start behind tenant A's backlog, in milliseconds (b_wait_ms) and in A's
// task durations (b_wait_tasks). With B on A's subject (via=queue, as
// before lanes) it waits for A's whole backlog; on its own lane for at
// most one of A's tasks.
func BenchmarkTenantStarvation(b *testing.B) {
	for _, lt := range []struct{ name, a, b string }{{"queue", "", ""}, {"lane", "tenant-a", "tenant-b"}} {
		b.Run("via="+lt.name, func(b *testing.B) {
			var waited time.Duration
			for range b.N {
				waited += starveOnce(b, lt.a, lt.b)
			}
			mean := waited / time.Duration(b.N)
			b.ReportMetric(float64(mean.Microseconds())/1000, "b_wait_ms")
			b.ReportMetric(float64(mean)/float64(starveTask), "b_wait_tasks")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func starveOnce(b *testing.B, tenantA, tenantB string) time.Duration {
	b.Helper()
	b.StopTimer()
	js := laneBenchJS(b)
	began := make(chan time.Time, 1)
	var aStarted atomic.Int64
	fourBusy := make(chan struct{})
	startBenchWorker(b, js, 4, func(ctx context.Context, in worker.Input) (worker.Output, error) {
		if in.StepID == "quick" {
			began <- time.Now()
			return worker.Output{JSON: []byte(`{}`)}, nil
		}
		if aStarted.Add(1) == 4 {
			close(fourBusy)
		}
		select {
		case <-time.After(starveTask):
		case <-ctx.Done():
		}
		return worker.Output{JSON: []byte(`{}`)}, nil
	})
	for i := range starveBacklog {
		publishBenchTask(b, js, tenantA, "slow", i)
	}
	<-fourBusy
	b.StartTimer()
	sent := time.Now()
	publishBenchTask(b, js, tenantB, "quick", -1)
	return (<-began).Sub(sent)
}

func laneBenchJS(b *testing.B) jetstream.JetStream {
	b.Helper()
	js := weftest.NewNATS(b).JetStream(b)
	if err := streams.Ensure(context.Background(), js, streams.Config{MaxBytes: 1 << 30}); err != nil {
		b.Fatal(err)
	}
	if err := streams.EnsureTaskLanes(context.Background(), js, streams.Config{MaxBytes: 1 << 30}, worker.DefaultQueue); err != nil {
		b.Fatal(err)
	}
	return js
}

// startBenchWorker starts a worker of the default queue with one activity
// for every activity name the benchmarks use, and stops it at cleanup.
func startBenchWorker(b *testing.B, js jetstream.JetStream, slots int, fn worker.ActivityFunc) {
	b.Helper()
	w, err := worker.New(js, worker.Config{Concurrency: slots})
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"noop", "slow", "quick"} {
		if err := w.Register(name, fn); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = w.Stop(ctx)
	})
}

// publishBenchTask publishes the task of a new run of tenant (none when
// empty) as the engine does; step is "quick" when i is negative, else
// "s<i>".
func publishBenchTask(b *testing.B, js jetstream.JetStream, tenant, activity string, i int) {
	b.Helper()
	step := "quick"
	if i >= 0 {
		step = fmt.Sprintf("s%d", i)
	}
	tk := task.Task{SchemaVersion: task.SchemaVersion, RunID: events.NewRunID(), StepID: step, LogicalAttemptID: "1",
		PlanVersion: "v1", Activity: activity, Queue: worker.DefaultQueue, TimeoutMillis: 60_000,
		ScheduledAt: time.Now().UTC(), TenantID: tenant}
	tk.IdempotencyKey = "bench-" + tk.RunID
	data, err := json.Marshal(tk)
	if err != nil {
		b.Fatal(err)
	}
	subject := "weft.tasks." + worker.DefaultQueue
	if tenant != "" {
		subject += "." + tenant
	}
	if _, err := js.PublishMsg(context.Background(), &nats.Msg{Subject: subject, Data: data},
		jetstream.WithMsgID(task.DedupeID(tk.RunID, tk.StepID, tk.LogicalAttemptID))); err != nil {
		b.Fatal(err)
	}
}

// waitTasksSettled waits until WEFT_TASKS and the queue's lanes stream
// are empty: every task acked.
func waitTasksSettled(ctx context.Context, b *testing.B, js jetstream.JetStream) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if tasksLeft(ctx, b, js, streams.TasksStream) == 0 && tasksLeft(ctx, b, js, streams.TaskLanesStream(worker.DefaultQueue)) == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatal("the tasks were not all acked in 2 minutes")
}

// tasksLeft returns how many tasks stream holds, or -1 when it cannot
// tell.
func tasksLeft(ctx context.Context, b *testing.B, js jetstream.JetStream, name string) int {
	b.Helper()
	s, err := js.Stream(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return -1
	}
	return int(info.State.Msgs)
}
