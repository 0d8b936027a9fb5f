package worker

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// meterName names the worker's meter.
const meterName = "github.com/weftrun/weft/pkg/worker"

// workerMetrics are the worker's own instruments (the queue consumer's are
// streams.Keeper's):
//
//	weft.worker.attempts.held  counter  attempts not started because the
//	                                    run's cancel subject held a message
//	                                    that is not the run's notice
//	weft.worker.lanes          up-down  the tenant lanes the worker pulls
//	                                    from (a consumer on the server each)
//
// Held attempts are nakked and come back; a count that keeps growing means
// someone is publishing on weft.cancel.* who should not (docs/security.md).
type workerMetrics struct {
	held  metric.Int64Counter
	lanes metric.Int64UpDownCounter
}

func newWorkerMetrics(mp metric.MeterProvider) (workerMetrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	meter := mp.Meter(meterName)
	held, err := meter.Int64Counter("weft.worker.attempts.held", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts not started because the run's cancel subject held a message that is not the run's notice."))
	if err != nil {
		return workerMetrics{}, fmt.Errorf("worker: metrics: %w", err)
	}
	lanes, err := meter.Int64UpDownCounter("weft.worker.lanes", metric.WithUnit("{lane}"),
		metric.WithDescription("The tenant lanes the worker pulls tasks from, each a consumer on the server."))
	if err != nil {
		return workerMetrics{}, fmt.Errorf("worker: metrics: %w", err)
	}
	return workerMetrics{held: held, lanes: lanes}, nil
}

func (m workerMetrics) attemptHeld(ctx context.Context) { m.held.Add(ctx, 1) }

// lanesChanged adds n (negative: removes) to the tenant lanes held.
func (m workerMetrics) lanesChanged(ctx context.Context, n int) { m.lanes.Add(ctx, int64(n)) }
