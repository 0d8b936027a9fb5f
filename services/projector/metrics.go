package projector

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// meterName is the instrumentation scope of the projector's metrics.
const meterName = "github.com/weftrun/weft/services/projector"

// metrics are the projector's instruments:
//
//	weft.projector.lag             histogram (s)  persistedAt (or this process's start) to applied, per event
//	weft.projector.events.applied  counter        events applied to snapshots
//	weft.projector.resyncs         counter        runs read back from the log
//	weft.projector.rebuilt         counter        runs without a snapshot rebuilt from the log
//	weft.projector.alerts          counter        alerts raised, by code
//	weft.projector.events.forged   counter        bus events the log refutes, dropped, by reason
//	weft.projector.listen.lost     counter        LISTEN connections lost (every long poll rechecks)
//
// the gauges of gauges.go (open gaps, runs by status), and the read API's
// instruments, on the same meter (internal/readapi: requests refused, long
// polls open).
type metrics struct {
	meter   metric.Meter
	lag     metric.Float64Histogram
	applied metric.Int64Counter
	resyncs metric.Int64Counter
	rebuilt metric.Int64Counter
	alerts  metric.Int64Counter
	forged  metric.Int64Counter
	// listenLost counts failures of the LISTEN connection (listen.go).
	listenLost metric.Int64Counter
}

// lagBuckets are the lag histogram's bounds in seconds, dense around the
// 1 s SLA and the 5 s and 10 s thresholds.
var lagBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2, 5, 10, 30, 60}

func newMetrics(mp metric.MeterProvider) (metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter(meterName)
	ms := metrics{meter: m}
	var err error
	if ms.lag, err = m.Float64Histogram("weft.projector.lag", metric.WithUnit("s"),
		metric.WithDescription("Projection lag: from an event's persistedAt to its snapshot's commit."),
		metric.WithExplicitBucketBoundaries(lagBuckets...)); err != nil {
		return ms, err
	}
	if ms.applied, err = m.Int64Counter("weft.projector.events.applied",
		metric.WithDescription("Events applied to run snapshots.")); err != nil {
		return ms, err
	}
	if ms.resyncs, err = m.Int64Counter("weft.projector.resyncs",
		metric.WithDescription("Runs whose events were read back from the log: a gap, lag or a stale run.")); err != nil {
		return ms, err
	}
	if ms.rebuilt, err = m.Int64Counter("weft.projector.rebuilt",
		metric.WithDescription("Runs that had no snapshot, rebuilt from the log.")); err != nil {
		return ms, err
	}
	if ms.alerts, err = m.Int64Counter("weft.projector.alerts",
		metric.WithDescription("Alerts raised, by code.")); err != nil {
		return ms, err
	}
	if ms.forged, err = m.Int64Counter("weft.projector.events.forged",
		metric.WithDescription("Bus events the log refutes (forged), dropped and never applied, by reason.")); err != nil {
		return ms, err
	}
	ms.listenLost, err = m.Int64Counter("weft.projector.listen.lost",
		metric.WithDescription("LISTEN connections for other projectors' commits lost; each reconnection wakes every long poll to recheck."))
	return ms, err
}
