package activityworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/boot/scrapecache"
	"github.com/weftrun/weft/pkg/streams"
)

// meterName is the instrumentation scope of the worker's metrics.
const meterName = "github.com/weftrun/weft/services/activity-worker"

// queueInfoTimeout bounds the consumer-info request behind the queue
// gauges.
const queueInfoTimeout = 2 * time.Second

// queueGauges observe the served queue's durable consumer at scrape time,
// one JetStream request per scrapecache.DefaultTTL at most:
//
//	weft.worker.tasks.pending    gauge {task}  tasks waiting, not yet delivered to any worker, by queue
//	weft.worker.tasks.in_flight  gauge {task}  tasks delivered and not yet acked, by queue
//
// The consumer is shared by every worker of the queue, so every worker
// reports the same figures: aggregate them with max, not sum. Before the
// consumer exists (no worker has started) nothing is reported.
type queueGauges struct {
	js       jetstream.JetStream
	durable  string
	attrs    metric.ObserveOption
	pending  metric.Int64ObservableGauge
	inFlight metric.Int64ObservableGauge
	cache    *scrapecache.Cache[queueReading]
}

// registerQueueGauges registers the gauges of queue's consumer on mp and
// returns their registration, to unregister when the service stops; nil
// mp registers nothing.
func registerQueueGauges(mp metric.MeterProvider, js jetstream.JetStream, queue string) (metric.Registration, error) {
	if mp == nil {
		return nil, nil
	}
	cc, err := streams.TaskConsumer(queue, 0)
	if err != nil {
		return nil, err
	}
	m := mp.Meter(meterName)
	g := &queueGauges{js: js, durable: cc.Durable, attrs: metric.WithAttributes(attribute.String("queue", queue))}
	g.cache = scrapecache.New(0, g.read)
	if g.pending, err = m.Int64ObservableGauge("weft.worker.tasks.pending", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks of the queue waiting for a worker (the task consumer's pending messages).")); err != nil {
		return nil, fmt.Errorf("activity-worker: metrics: %w", err)
	}
	if g.inFlight, err = m.Int64ObservableGauge("weft.worker.tasks.in_flight", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks of the queue delivered to a worker and not yet acked.")); err != nil {
		return nil, fmt.Errorf("activity-worker: metrics: %w", err)
	}
	reg, err := m.RegisterCallback(g.observe, g.pending, g.inFlight)
	if err != nil {
		return nil, fmt.Errorf("activity-worker: metrics: %w", err)
	}
	return reg, nil
}

// queueReading is one read of the queue's consumer.
type queueReading struct {
	found             bool // the consumer exists
	pending, inFlight int64
}

// observe reports the queue's consumer, as read at most
// scrapecache.DefaultTTL ago.
func (g *queueGauges) observe(ctx context.Context, o metric.Observer) error {
	r, err := g.cache.Get(ctx)
	if err != nil || !r.found {
		return err
	}
	o.ObserveInt64(g.pending, r.pending, g.attrs)
	o.ObserveInt64(g.inFlight, r.inFlight, g.attrs)
	return nil
}

// read asks JetStream for the consumer's info, within queueInfoTimeout.
func (g *queueGauges) read(ctx context.Context) (queueReading, error) {
	ctx, cancel := context.WithTimeout(ctx, queueInfoTimeout)
	defer cancel()
	cons, err := g.js.Consumer(ctx, streams.TasksStream, g.durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return queueReading{}, nil
	}
	if err != nil {
		return queueReading{}, fmt.Errorf("activity-worker: task queue gauge: %w", err)
	}
	info := cons.CachedInfo()
	return queueReading{found: true,
		pending:  int64(info.NumPending), //nolint:gosec // a message count never reaches 2^63
		inFlight: int64(info.NumAckPending)}, nil
}
