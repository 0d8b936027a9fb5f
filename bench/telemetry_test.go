package bench

import (
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/pkg/plan"
)

// telemetry is the providers an end-to-end load's services report to;
// the zero value reports nothing (the services' nil path).
type telemetry struct {
	meters metric.MeterProvider
	tracer trace.TracerProvider
}

// BenchmarkEndToEndTelemetry is BenchmarkEndToEnd's live linear3 load with
// the relay, the engine and the worker reporting as `weft dev` and the
// service commands make them: metrics to a Prometheus-backed
// MeterProvider, spans to an SDK TracerProvider without an exporter (the
// default when no OTEL_* variable asks for export). Compared with the
// untelemetered figure, it is the cost of metrics and tracing.
func BenchmarkEndToEndTelemetry(b *testing.B) {
	p, err := plan.Parse([]byte(linear3Plan), plan.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	mp, _, err := metrics.New()
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(b.Context()) })
	for range b.N {
		load := runE2ELoad(b, p, false, telemetry{meters: mp, tracer: tp}, nil)
		reportE2E(b, load.db, load.elapsed, true)
	}
}
