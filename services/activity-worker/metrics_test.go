package activityworker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
	activityworker "github.com/weftrun/weft/services/activity-worker"
)

// TestQueueDepthGauges: with one slot held by a long sleep, further tasks
// wait in the queue; the gauges, read from the task consumer at scrape
// time, show them pending and the sleep in flight, under the queue's name.
func TestQueueDepthGauges(t *testing.T) {
	t.Parallel()
	srv := weftest.NewNATS(t)
	js := srv.JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{MaxBytes: 64 << 20}))
	mp, h, err := metrics.New()
	require.NoError(t, err)
	svc, err := activityworker.New(srv.Conn(t), activityworker.Config{
		Concurrency: 1, DrainTimeout: 100 * time.Millisecond, MeterProvider: mp,
	})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		require.Error(t, <-ran, "the drain of the long sleep is cut short, and Run says so")
	})

	queue := map[string]string{"queue": "default"}
	gauges := func(s metricstest.Scrape) (pending, inFlight float64, ok bool) {
		p, okP := s.Sum("weft_worker_tasks_pending", queue)
		f, okF := s.Sum("weft_worker_tasks_in_flight", queue)
		return p, f, okP && okF
	}
	publish(t, js, newTask("sleep", `{"ms":600000}`))
	metricstest.WaitFor(t, h, waitFor, func(s metricstest.Scrape) bool {
		p, f, ok := gauges(s)
		return ok && p == 0 && f == 1
	})
	for range 3 {
		publish(t, js, newTask("echo", `{"message":"waiting"}`))
	}
	s := metricstest.WaitFor(t, h, waitFor, func(s metricstest.Scrape) bool {
		p, _, ok := gauges(s)
		return ok && p == 3
	})
	_, f, _ := gauges(s)
	require.InDelta(t, 1.0, f, 0, "one slot: only the sleep is delivered")
}

// publish puts tk on its task queue.
func publish(t *testing.T, js jetstream.JetStream, tk task.Task) {
	t.Helper()
	data, err := json.Marshal(tk)
	require.NoError(t, err)
	_, err = js.PublishMsg(t.Context(), &nats.Msg{Subject: "weft.tasks." + tk.Queue, Data: data},
		jetstream.WithMsgID(task.DedupeID(tk.RunID, tk.StepID, tk.LogicalAttemptID)))
	require.NoError(t, err)
}
