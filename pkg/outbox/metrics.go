package outbox

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/boot/scrapecache"
)

// meterName is the instrumentation scope of the relay's metrics.
const meterName = "github.com/weftrun/weft/pkg/outbox"

// gaugeTimeout bounds the query behind the depth and age gauges.
const gaugeTimeout = 2 * time.Second

// relayMetrics are a relay's instruments, nil without a MeterProvider:
//
//	weft.outbox.publish.latency  histogram (s)        enqueue (row insert) to ack, per row deleted
//	weft.outbox.depth            gauge {row}           rows in the outbox, all partitions
//	weft.outbox.oldest_age       gauge (s)             age of the oldest row (0 when empty)
//	weft.outbox.relayed          counter {message}     rows settled by this relay, by result
//
// The gauges read the whole outbox at scrape time, kept for
// scrapecache.DefaultTTL so a burst of scrapes costs one query, and every
// relay of a deployment reports the same figure: aggregate them with max,
// not sum.
type relayMetrics struct {
	latency metric.Float64Histogram
	depth   metric.Int64ObservableGauge
	age     metric.Float64ObservableGauge
	relayed metric.Int64ObservableCounter
	meter   metric.Meter
}

// latencyBuckets are the publish latency's bounds in seconds: a healthy
// relay acks within milliseconds; a backlog or a bus outage takes seconds.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Result attribute values of weft.outbox.relayed.
var relayedResults = [...]string{"published", "duplicate", "failed", "dead_lettered"}

func newRelayMetrics(mp metric.MeterProvider) (*relayMetrics, error) {
	if mp == nil {
		return nil, nil
	}
	m := &relayMetrics{meter: mp.Meter(meterName)}
	var err error
	if m.latency, err = m.meter.Float64Histogram("weft.outbox.publish.latency", metric.WithUnit("s"),
		metric.WithDescription("Outbox publish latency: from the row's insert to JetStream's ack."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...)); err != nil {
		return nil, err
	}
	if m.depth, err = m.meter.Int64ObservableGauge("weft.outbox.depth", metric.WithUnit("{row}"),
		metric.WithDescription("Rows waiting in the outbox, all partitions (every relay reports the same figure).")); err != nil {
		return nil, err
	}
	if m.age, err = m.meter.Float64ObservableGauge("weft.outbox.oldest_age", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest row waiting in the outbox; 0 when it is empty.")); err != nil {
		return nil, err
	}
	m.relayed, err = m.meter.Int64ObservableCounter("weft.outbox.relayed", metric.WithUnit("{message}"),
		metric.WithDescription("Outbox rows this relay settled, by result: published, duplicate, failed (a failure charged to the row), dead_lettered (also counted as failed)."))
	return m, err
}

// observePublish records one acked row's enqueue→ack latency.
func (m *relayMetrics) observePublish(ctx context.Context, enqueuedAt, ackedAt time.Time) {
	if m == nil {
		return
	}
	m.latency.Record(ctx, max(ackedAt.Sub(enqueuedAt), 0).Seconds())
}

// outboxStatsSQL counts the outbox and reads the oldest row's age from
// the first row of each partition, through the primary key (ids are drawn
// in insert order, give or take the transactions in flight), on the
// database clock.
const outboxStatsSQL = `
SELECT (SELECT count(*) FROM outbox),
       coalesce(extract(epoch FROM clock_timestamp() - min(first.created_at)), 0)::float8
FROM generate_series(0, $1::int - 1) AS p,
     LATERAL (SELECT created_at FROM outbox WHERE partition = p ORDER BY id LIMIT 1) AS first`

// depthReading is one read of the depth and age gauges.
type depthReading struct {
	rows      int64
	oldestAge float64 // seconds
}

// outboxDepth reads the outbox's depth and oldest age, within gaugeTimeout.
func (r *Relay) outboxDepth(ctx context.Context) (depthReading, error) {
	ctx, cancel := context.WithTimeout(ctx, gaugeTimeout)
	defer cancel()
	var d depthReading
	if err := r.pool.QueryRow(ctx, outboxStatsSQL, Partitions).Scan(&d.rows, &d.oldestAge); err != nil {
		return d, fmt.Errorf("outbox: depth gauge: %w", err)
	}
	return d, nil
}

// observeGauges registers the relay's scrape-time callbacks, none without
// metrics; the registration is unregistered when the relay stops.
func (r *Relay) observeGauges() (metric.Registration, error) {
	m := r.metrics
	if m == nil {
		return nil, nil
	}
	attrs := make([]metric.ObserveOption, len(relayedResults))
	for i, v := range relayedResults {
		attrs[i] = metric.WithAttributes(attribute.String("result", v))
	}
	depth := scrapecache.New(0, r.outboxDepth)
	reg, err := m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st := r.Stats()
		for i, n := range []uint64{st.Published, st.Duplicates, st.Failures, st.DeadLettered} {
			o.ObserveInt64(m.relayed, int64(n), attrs[i]) //nolint:gosec // a count never reaches 2^63
		}
		d, err := depth.Get(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(m.depth, d.rows)
		o.ObserveFloat64(m.age, max(d.oldestAge, 0))
		return nil
	}, m.depth, m.age, m.relayed)
	if err != nil {
		return nil, fmt.Errorf("outbox: metrics: %w", err)
	}
	return reg, nil
}

// unregister ends a scrape-time registration; nil is a no-op. The error,
// which the SDK returns only for a registration it does not know, is
// dropped: there is nothing left to undo.
func unregister(reg metric.Registration) {
	if reg != nil {
		_ = reg.Unregister()
	}
}
