package engine_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/worker"
	"github.com/weftrun/weft/services/engine"
)

// keptConsumers are durable consumers of an engine (those of partition
// 0, which the one engine holds) and a worker of the default queue.
var keptConsumers = []struct{ stream, durable string }{
	{streams.EventsStream, engine.PartitionConsumer(streams.EventsStream, 0)},
	{streams.ResultsStream, engine.PartitionConsumer(streams.ResultsStream, 0)},
	{streams.TasksStream, "tasks-default"},
}

// consumerStack is a stack with an engine whose metrics h serves, an SDK
// worker of the default queue, and the readiness checks of their
// consumers and streams.
type consumerStack struct {
	*stack
	h      http.Handler
	probes *health.Probes
}

func setupConsumers(t *testing.T) *consumerStack {
	t.Helper()
	s := newStack(t)
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s.runEngine(t, engine.Config{MeterProvider: mp})
	startSDKWorker(t, s.nats.JetStream(t), "w", func(context.Context, worker.Input) (worker.Output, error) {
		return worker.NewOutput(map[string]bool{"ok": true})
	})
	var checks []health.Check
	for _, name := range []string{streams.EventsStream, streams.TasksStream, streams.ResultsStream} {
		checks = append(checks, health.Stream(s.js, name))
	}
	for _, c := range keptConsumers {
		checks = append(checks, health.Consumer(s.js, c.stream, c.durable))
	}
	probes, err := health.New(0, checks...)
	require.NoError(t, err)
	return &consumerStack{stack: s, h: h, probes: probes}
}

// runCompletes starts a one-step run and waits for it to complete.
func (s *consumerStack) runCompletes(t *testing.T) {
	t.Helper()
	runID := s.start(t, parsePlan(t, `{"planId":"k","planVersion":"1","steps":[{"id":"a","activity":"work"}]}`))
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, runID)))
}

// Every consumer deleted under a running engine and worker (the soak's
// "delete a consumer" fault) is created again, and runs flow again; each
// re-creation is counted.
func TestConsumersDeletedUnderARunningEngineAreCreatedAgain(t *testing.T) {
	t.Parallel()
	s := setupConsumers(t)
	s.runCompletes(t)

	for _, c := range keptConsumers {
		require.NoError(t, s.js.DeleteConsumer(t.Context(), c.stream, c.durable))
	}
	s.runCompletes(t)

	metricstest.WaitFor(t, s.h, waitFor, func(sc metricstest.Scrape) bool {
		ev, ok1 := sc.Sum("weft_consumer_recreations_total", map[string]string{"consumer": keptConsumers[0].durable})
		res, ok2 := sc.Sum("weft_consumer_recreations_total", map[string]string{"consumer": keptConsumers[1].durable})
		return ok1 && ok2 && ev >= 1 && res >= 1
	})
	require.True(t, s.probes.Check(t.Context()).Ready())
}

// The streams deleted and created again as `weft migrate` does: while they
// are gone /readyz names every missing consumer and the gauge shows them
// missing; once the streams are back the consumers are created again and
// runs flow.
func TestStreamsRecreatedUnderARunningEngine(t *testing.T) {
	t.Parallel()
	s := setupConsumers(t)
	s.runCompletes(t)
	// A run of another partition may complete before partition 0's
	// consumers are created: readiness follows.
	require.Eventually(t, func() bool { return s.probes.Check(t.Context()).Ready() }, waitFor, 10*time.Millisecond)

	for _, name := range []string{streams.EventsStream, streams.TasksStream, streams.ResultsStream} {
		require.NoError(t, s.js.DeleteStream(t.Context(), name))
	}
	r := s.probes.Check(t.Context())
	require.Equal(t, []string{"stream WEFT_EVENTS", "stream WEFT_TASKS", "stream WEFT_RESULTS",
		"consumer engine-events-0", "consumer engine-results-0", "consumer tasks-default"}, r.Failing)
	metricstest.WaitFor(t, s.h, waitFor, func(sc metricstest.Scrape) bool {
		ev, ok1 := sc.Sum("weft_consumer_missing", map[string]string{"consumer": keptConsumers[0].durable})
		res, ok2 := sc.Sum("weft_consumer_missing", map[string]string{"consumer": keptConsumers[1].durable})
		return ok1 && ok2 && ev == 1 && res == 1
	})

	require.NoError(t, streams.Ensure(t.Context(), s.js, streams.Config{MaxBytes: 256 << 20})) // weft migrate
	s.runCompletes(t)
	require.Eventually(t, func() bool { return s.probes.Check(t.Context()).Ready() }, waitFor, 10*time.Millisecond)
	scrape := metricstest.Get(t, s.h)
	require.Zero(t, scrape.Count(t, "weft_consumer_missing", map[string]string{"consumer": keptConsumers[0].durable}))
}
