// Package metrics exposes a service's OpenTelemetry metrics in the
// Prometheus text format: New returns a MeterProvider to hand to the
// service and the http.Handler that serves its metrics at /metrics.
package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// New returns a MeterProvider whose instruments are read, at each scrape,
// by the returned handler. Each call has its own registry, so two services
// in one process (weft dev) do not collide.
func New() (metric.MeterProvider, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	return mp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}
