// Package metrics exposes a service's OpenTelemetry metrics in the
// Prometheus text format: New returns a MeterProvider to hand to the
// service and the http.Handler that serves its metrics at /metrics.
package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// New returns a MeterProvider whose instruments are read, at each scrape,
// by the returned handler. Each call has its own registry, so two services
// in one process (weft dev) do not collide. Beside the instruments, the
// handler serves the Go runtime's metrics (go_goroutines, go_memstats_…,
// go_gc_duration_seconds) and the process's (process_cpu_seconds_total,
// process_resident_memory_bytes, process_open_fds, … where the OS reports
// them): the same collectors, once per registry.
func New() (metric.MeterProvider, http.Handler, error) {
	reg := prometheus.NewRegistry()
	if err := registerRuntime(reg); err != nil {
		return nil, nil, err
	}
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	return mp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// registerRuntime adds the Go runtime and process collectors to reg.
func registerRuntime(reg *prometheus.Registry) error {
	for name, c := range map[string]prometheus.Collector{
		"go":      collectors.NewGoCollector(),
		"process": collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("metrics: register the %s collector: %w", name, err)
		}
	}
	return nil
}
