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
//
// Held attempts are nakked and come back; a count that keeps growing means
// someone is publishing on weft.cancel.* who should not (docs/security.md).
type workerMetrics struct {
	held metric.Int64Counter
}

func newWorkerMetrics(mp metric.MeterProvider) (workerMetrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	held, err := mp.Meter(meterName).Int64Counter("weft.worker.attempts.held", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts not started because the run's cancel subject held a message that is not the run's notice."))
	if err != nil {
		return workerMetrics{}, fmt.Errorf("worker: metrics: %w", err)
	}
	return workerMetrics{held: held}, nil
}

func (m workerMetrics) attemptHeld(ctx context.Context) { m.held.Add(ctx, 1) }
